/*
 * tributary decode --wal DBFILE [--prefix P] [--name N]: print the committed
 * transactions currently in DBFILE-wal as JSON-line events, offline and
 * read-only. Frames are taken while their salts and checksum chain validate
 * (no wal-index is used, no lock is taken); before-images come from the
 * database file, so they are exact only if no checkpoint ran after the WAL's
 * frames were written (the usual case for a WAL that was not checkpointed).
 * Called by cmd_decode() when --wal is given.
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "evt_json.h"
#include "sqlcap.h"
#include "tb_buf.h"


int cmd_decode_wal(int argc, char **argv)
{
    const char *path = NULL, *prefix = "tributary", *name = NULL;
    if (app_wants_help(argc, argv)) {
        printf("usage: tributary decode --wal DBFILE [--prefix P] [--name DB]\n"
               "Print the committed transactions in DBFILE-wal as JSON lines {topic,key,value}.\n");
        return 0;
    }
    tb_error err;
    tb_error_clear(&err);
    const app_optspec spec[] = {{"--wal", &path, NULL}, {"--prefix", &prefix, NULL}, {"--name", &name, NULL}};
    if (app_parse_opts(argc, argv, 1, spec, sizeof(spec) / sizeof(spec[0]), &err) != TB_OK)
        return app_fail("decode", &err);
    if (!path) {
        tb_error_set(&err, TB_ERR_CONFIG, false, "--wal DBFILE is required");
        return app_fail("decode", &err);
    }
    sqlcap_opts o = {.path = path, .dbname = name, .offline = true};
    sqlcap *c = NULL;
    tb_code rc = sqlcap_open_opts(&o, NULL, &c, &err);
    evt_codec_opts co = {.topic_prefix = prefix, .name = "decode"};
    evt_rendered r;
    tb_buf line;
    evt_rendered_init(&r);
    tb_buf_init(&line, 0);
    while (rc == TB_OK) {
        evt_event *ev = NULL;
        rc = sqlcap_next(c, 0, &ev, &err);
        if (rc != TB_OK || !ev)
            break;
        if ((rc = evt_render(&co, ev, &r, &err)) != TB_OK)
            break;
        for (size_t i = 0; i < r.n && rc == TB_OK; i++) {
            tb_buf_reset(&line);
            rc = evt_json_line(r.topic, r.msgs[i].key, r.msgs[i].key_len, r.msgs[i].value, r.msgs[i].value_len, &line);
            if (rc == TB_OK) {
                fwrite(line.data, 1, line.len, stdout);
                fputc('\n', stdout);
            }
        }
    }
    if (rc == TB_ERR_NOT_FOUND)
        rc = TB_OK;
    fflush(stdout);
    evt_rendered_free(&r);
    tb_buf_free(&line);
    sqlcap_close(c);
    if (rc != TB_OK)
        return app_fail("decode", &err);
    return 0;
}
