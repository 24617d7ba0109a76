/*
 * tributary offsets show|set: read or reset the stored source position
 * (DESIGN 6) in the offsets store the configuration names
 * (offsets.storage=kafka: topic <name>.offsets; file: offsets.file).
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "evt_json.h"
#include "ksink.h"
#include "tb_position.h"

static void offsets_usage(FILE *out)
{
    fprintf(out,
            "usage: tributary offsets show --config FILE [--set key=value]...\n"
            "       tributary offsets set  --config FILE --position TEXT [--set key=value]...\n"
            "\n"
            "show  print the stored position of connector <name>: its text form on the\n"
            "      line 'text: ...' and its JSON form on the line 'json: ...'\n"
            "      ('text: none' / 'json: null' when nothing is stored)\n"
            "set   store a position given in text form, for example\n"
            "        mariadb;server_id=1;file=mysql-bin.000003;pos=1234;row=0;gtid=0-1-7\n"
            "        mysql;server_id=1;file=binlog.000002;pos=157;row=0;gtid=<uuid:1-5>\n"
            "        sqlite-log;seq=42\n"
            "      or 'none' to forget the position (the next run starts per snapshot.mode).\n"
            "      Stop the connector first: a running connector overwrites it.\n"
            "\n"
            "Where: offsets.storage=kafka -> topic <name>.offsets (key: the name as a JSON\n"
            "string); offsets.storage=file -> offsets.file.\n");
}

static int offsets_print(const tb_position *pos)
{
    tb_buf text, json;
    tb_buf_init(&text, 0);
    tb_buf_init(&json, 0);
    tb_code rc = tb_position_format(pos, &text);
    if (rc == TB_OK) {
        if (pos->kind == TB_POS_NONE)
            rc = tb_buf_puts(&json, "null");
        else
            rc = evt_position_to_json(pos, &json);
    }
    if (rc == TB_OK)
        printf("text: %s\njson: %s\n", tb_buf_cstr(&text), tb_buf_cstr(&json));
    tb_buf_free(&text);
    tb_buf_free(&json);
    return rc == TB_OK ? 0 : 1;
}

int cmd_offsets(int argc, char **argv)
{
    int status = 0;
    cfg *c = NULL;
    tb_error err;
    tb_position pos;
    tb_error_clear(&err);
    tb_position_init(&pos);

    if (app_wants_help(argc, argv)) {
        offsets_usage(stdout);
        return 0;
    }
    if (argc < 2 || (strcmp(argv[1], "show") != 0 && strcmp(argv[1], "set") != 0)) {
        offsets_usage(stderr);
        return 2;
    }
    if (app_load_config(&argc, argv, &c, &err) != TB_OK) {
        status = app_fail("offsets", &err);
        goto out;
    }
    const char *action = argc > 1 ? argv[1] : NULL;
    const char *text = NULL;
    bool bad = action == NULL;
    for (int i = 2; !bad && i < argc; i++) {
        if (strcmp(argv[i], "--position") == 0 && i + 1 < argc)
            text = argv[++i];
        else if (strncmp(argv[i], "--position=", 11) == 0)
            text = argv[i] + 11;
        else
            bad = true;
    }
    if (!bad && strcmp(action, "show") == 0 && text == NULL) {
        if (ksink_offsets_read(c, &pos, &err) != TB_OK) {
            status = app_fail("offsets", &err);
            goto out;
        }
        status = offsets_print(&pos);
    } else if (!bad && strcmp(action, "set") == 0 && text != NULL) {
        if (tb_position_parse(text, &pos, &err) != TB_OK) {
            tb_error_prefix(&err, TB_ERR_CONFIG, "--position '%s': ", text);
            status = app_fail("offsets", &err);
            goto out;
        }
        if (ksink_offsets_write(c, &pos, &err) != TB_OK) {
            status = app_fail("offsets", &err);
            goto out;
        }
        printf("stored for connector %s:\n", cfg_get_str(c, CFGK_NAME));
        status = offsets_print(&pos);
    } else {
        offsets_usage(stderr);
        status = 2;
    }
out:
    tb_position_free(&pos);
    cfg_free(c);
    return status;
}
