/* Unit tests of the status file API (app_status.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_status.h"
#include "cfg_file.h"
#include "evt_json.h"

Test(app_status, json_has_every_field_and_nulls_for_unknowns)
{
    app_status st = {.name = "n", .state = "starting", .position = NULL, .lag_ms = -1, .events_behind = -1,
                     .events_per_sec = NAN, .started_ms = 5, .updated_ms = 7};
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    cr_assert_eq(app_status_json(&st, &b, &err), TB_OK, "%s", err.msg);
    char want[512];
    snprintf(want, sizeof(want),
             "{\"name\":\"n\",\"pid\":%ld,\"state\":\"starting\",\"started_ms\":5,\"updated_ms\":7,\"position\":null,"
             "\"position_text\":null,\"lag_ms\":null,\"events_behind\":null,\"events_total\":0,\"events_per_sec\":0,"
             "\"snapshot\":{\"state\":\"none\",\"rows\":0},\"error\":null}",
             (long)getpid());
    cr_assert_str_eq(b.data, want);
    tb_buf text;
    tb_buf_init(&text, 0);
    cr_assert_eq(app_status_format("f", b.data, b.len, 7, &text, &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(strstr(text.data, "lag:            unknown\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "position:       none (nothing committed yet)\n"), "%s", text.data);
    tb_buf_free(&text);
    tb_buf_free(&b);
}

Test(app_status, default_path_follows_offsets_file)
{
    cfg *c = cfg_new();
    tb_error err;
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(app_status_path(c, &b), TB_OK);
    cr_assert_str_eq(b.data, "tributary.status.json");
    cr_assert_eq(cfg_set(c, "offsets.file", "/var/lib/tb/shop.offsets", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "name", "shop", "t", &err), TB_OK);
    tb_buf_reset(&b);
    cr_assert_eq(app_status_path(c, &b), TB_OK);
    cr_assert_str_eq(b.data, "/var/lib/tb/shop.status.json");
    cr_assert_eq(cfg_set(c, "status.file", "/run/x.json", "t", &err), TB_OK);
    tb_buf_reset(&b);
    cr_assert_eq(app_status_path(c, &b), TB_OK);
    cr_assert_str_eq(b.data, "/run/x.json");
    tb_buf_free(&b);
    cfg_free(c);
}

Test(app_status, write_is_atomic_and_formats_back)
{
    char dir[] = "/tmp/tb-status-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/s.json", dir);
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_SQLITE_LOG;
    p.seq = 42;
    app_status st = {.name = "x", .state = "failed", .position = &p, .lag_ms = 0, .events_behind = 0,
                     .events_total = 9, .events_per_sec = 2.5, .snapshot_state = "running", .snapshot_rows = 5,
                     .error = "source lost", .started_ms = 1000, .updated_ms = 61000};
    tb_error err;
    cr_assert_eq(app_status_write(path, &st, &err), TB_OK, "%s", err.msg);
    st.events_total = 10;
    cr_assert_eq(app_status_write(path, &st, &err), TB_OK, "%s", err.msg);
    tb_buf json, text;
    tb_buf_init(&json, 0);
    tb_buf_init(&text, 0);
    cr_assert_eq(cfg_file_read(path, 0, &json, &err), TB_OK);
    cr_assert_eq(json.data[json.len - 1], '\n');
    cr_assert_eq(app_status_format(path, json.data, json.len, 63500, &text, &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(strstr(text.data, "position:       sqlite-log;seq=42\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "events total:   10\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "throughput:     2.5 events/s\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "updated:        1970-01-01T00:01:01.000Z (2.5 s ago)\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "snapshot:       running (5 rows)\n"), "%s", text.data);
    cr_assert_not_null(strstr(text.data, "last error:     source lost\n"), "%s", text.data);
    tb_buf_reset(&text);
    cr_assert_eq(app_status_format(path, "[1]", 3, 0, &text, &err), TB_ERR_CORRUPT);
    char want[200];
    snprintf(want, sizeof(want), "%s: not a status file: no updated_ms", path);
    cr_assert_str_eq(err.msg, want);
    tb_buf_free(&json);
    tb_buf_free(&text);
    tb_position_free(&p);
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
