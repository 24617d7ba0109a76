/*
 * Every fixture binlog decodes; rows agree with mariadb-binlog -vv (run here)
 * where it can decode them, and with the values quoted in the MANIFEST where
 * it cannot (compressed payloads, partial JSON, tagged GTIDs, JSON values).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "binlog.h"
#include "binlog_ref.h"
#include "evt_json.h"
#include "json_oracle.h"

#define FIX TB_FIXTURES_DIR "/binlog/"

typedef struct negative {
    const char *name;
    const char *needle; /* expected in the error message */
} negative;

static const negative negatives[] = {
    {"negative-truncated-after-magic.000001", "byte offset 4: truncated event header"},
    {"mysql-5.2.2dev-wl2325-r.000001", "byte offset 650 (TABLE_MAP"},
    {"mysql-5.1.30-incident.000001", "byte offset 106 (INCIDENT"},
};

static const negative *find_negative(const char *name)
{
    for (size_t i = 0; i < sizeof(negatives) / sizeof(negatives[0]); i++)
        if (strcmp(negatives[i].name, name) == 0)
            return &negatives[i];
    return NULL;
}

/* Decode path, comparing event i with ref row i (when ref given). */
static tb_code decode_compare(const char *path, const ref_rows *ref, size_t *nrows, tb_buf *why, tb_error *err)
{
    binlog_reader *r = NULL;
    *nrows = 0;
    tb_code rc = binlog_open_file(path, 0, &r, err);
    while (rc == TB_OK) {
        evt_event *ev = NULL;
        rc = binlog_next(r, 0, &ev, err);
        if (rc != TB_OK || !ev)
            break;
        if (ref && *nrows < ref->n && why->len == 0) {
            tb_buf w;
            tb_buf_init(&w, 0);
            if (!ref_match(&ref->rows[*nrows], ev, &w))
                tb_buf_printf(why, "row %zu: %s", *nrows + 1, tb_buf_cstr(&w));
            tb_buf_free(&w);
        }
        (*nrows)++;
    }
    binlog_close(r);
    return rc;
}

Test(fixtures, every_file_decodes_and_matches_the_reference)
{
    DIR *dir = opendir(FIX);
    cr_assert_not_null(dir, "fixtures missing at %s", FIX);
    struct dirent *de;
    int files = 0, compared = 0, failures = 0;
    tb_buf report;
    tb_buf_init(&report, 0);
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "MANIFEST.md") == 0)
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s%s", FIX, de->d_name);
        files++;
        ref_rows ref;
        cr_assert(ref_run(path, &ref), "cannot run mariadb-binlog");
        tb_buf why;
        tb_buf_init(&why, 0);
        tb_error err;
        tb_error_clear(&err);
        size_t n = 0;
        tb_code rc = decode_compare(path, &ref, &n, &why, &err);
        const negative *neg = find_negative(de->d_name);
        bool ok = true;
        if (neg) {
            if (rc == TB_OK || !strstr(err.msg, neg->needle) || !strstr(err.msg, de->d_name)) {
                tb_buf_printf(&report, "%s: expected an error with '%s' and the file name, got rc=%d '%s'\n",
                              de->d_name, neg->needle, rc, err.msg);
                ok = false;
            }
        } else if (rc != TB_OK) {
            tb_buf_printf(&report, "%s: %s\n", de->d_name, err.msg);
            ok = false;
        }
        if (why.len) {
            tb_buf_printf(&report, "%s: %s\n", de->d_name, tb_buf_cstr(&why));
            ok = false;
        }
        if (ref.exit_status == 0 && n != ref.n && !neg) {
            tb_buf_printf(&report, "%s: %zu rows, reference %zu\n", de->d_name, n, ref.n);
            ok = false;
        }
        if (n < ref.n) {
            tb_buf_printf(&report, "%s: only %zu rows, reference printed %zu\n", de->d_name, n, ref.n);
            ok = false;
        }
        if (ref.n)
            compared++;
        cr_log_info("%-55s rows=%zu reference=%zu (exit %d) %s", de->d_name, n, ref.n, ref.exit_status,
                    ok ? "ok" : "FAIL");
        failures += !ok;
        tb_buf_free(&why);
        ref_free(&ref);
    }
    closedir(dir);
    cr_assert_geq(files, 52, "expected the 52 fixture files, found %d", files);
    cr_assert_geq(compared, 25, "too few files compared with the reference: %d", compared);
    cr_assert_eq(failures, 0, "%d files failed:\n%s", failures, tb_buf_cstr(&report));
    tb_buf_free(&report);
}

/* ------------------------------------------------------------ MANIFEST values */

typedef struct captured {
    char op;
    char table[128];
    char before[65536], after[65536];
    char txid[256];
    char gtid[512];
    bool last;
} captured;

static size_t capture_all(const char *name, captured *out, size_t max, tb_error *err, tb_code *rcp)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s%s", FIX, name);
    binlog_reader *r = NULL;
    size_t n = 0;
    tb_code rc = binlog_open_file(path, 0, &r, err);
    tb_buf b;
    tb_buf_init(&b, 0);
    while (rc == TB_OK) {
        evt_event *ev = NULL;
        rc = binlog_next(r, 0, &ev, err);
        if (rc != TB_OK || !ev)
            break;
        if (n < max) {
            captured *c = &out[n];
            memset(c, 0, sizeof(*c));
            c->op = (char)evt_event_op(ev);
            snprintf(c->table, sizeof(c->table), "%s.%s", evt_table_db(evt_event_table(ev)),
                     evt_table_name(evt_event_table(ev)));
            if (evt_event_has_image(ev, EVT_BEFORE)) {
                tb_buf_reset(&b);
                evt_json_row(ev, EVT_BEFORE, &b, NULL);
                snprintf(c->before, sizeof(c->before), "%s", tb_buf_cstr(&b));
            }
            if (evt_event_has_image(ev, EVT_AFTER)) {
                tb_buf_reset(&b);
                evt_json_row(ev, EVT_AFTER, &b, NULL);
                snprintf(c->after, sizeof(c->after), "%s", tb_buf_cstr(&b));
            }
            snprintf(c->txid, sizeof(c->txid), "%s", evt_event_txid(ev) ? evt_event_txid(ev) : "");
            const tb_position *p = evt_event_position(ev);
            snprintf(c->gtid, sizeof(c->gtid), "%s", p && p->gtid_set ? p->gtid_set : "");
            c->last = evt_event_last_in_tx(ev);
        }
        n++;
    }
    tb_buf_free(&b);
    binlog_close(r);
    *rcp = rc;
    return n;
}

static captured caps[8];

Test(manifest, transaction_payload_zstd_movies)
{
    tb_error err;
    tb_code rc;
    size_t n = capture_all("mysql-8.0.28-transaction-payload-zstd.000001", caps, 8, &err, &rc);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    cr_assert_eq(n, 1);
    cr_assert_eq(caps[0].op, 'u');
    cr_assert_str_eq(caps[0].table, "demo.movies");
    json_t *b = jo_parse_s(caps[0].before), *a = jo_parse_s(caps[0].after);
    cr_assert(jo_expect_at(b, JO_PATH("@1"), "1") && jo_expect_at(b, JO_PATH("@2"), "\"Once Upon a Time in the West\"") &&
                  jo_expect_at(b, JO_PATH("@5"), "\"Western\""),
              "before: %s", caps[0].before);
    cr_assert(jo_expect_at(a, JO_PATH("@1"), "1") && jo_expect_at(a, JO_PATH("@5"), "\"Western|Action\""), "after: %s",
              caps[0].after);
    json_decref(b);
    json_decref(a);
    cr_assert(caps[0].last);
}

Test(manifest, gtid_transaction_payload_json_enum_set)
{
    tb_error err;
    tb_code rc;
    size_t n = capture_all("mysql-8.0.31-gtid-transaction-payload-zstd.000057", caps, 8, &err, &rc);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(caps[0].table, "a.b");
    cr_assert_str_eq(caps[0].after, "{\"@1\":1}");
    cr_assert_eq(caps[1].op, 'u');
    cr_assert_str_eq(caps[1].table, "a.test_table_3");
    cr_assert(jo_expect_text_at(caps[1].after, strlen(caps[1].after), JO_PATH("@10"), "{\"c\":1}"));
    cr_assert_eq(caps[2].op, 'c');
    cr_assert(jo_expect_text_at(caps[2].after, strlen(caps[2].after), JO_PATH("@10"), "{\"c\":1}"));
    cr_assert(!caps[1].last && caps[2].last);
    cr_assert_str_eq(caps[2].txid, "76f3e7be-6720-11ed-9cad-0242ac110002:13");
    /* PREVIOUS_GTIDS 1-10, 11 is the CREATE TABLE (a DDL transaction), 12 and 13 the payloads */
    cr_assert_str_eq(caps[2].gtid, "76f3e7be-6720-11ed-9cad-0242ac110002:1-13");
}

Test(manifest, tagged_gtid)
{
    tb_error err;
    tb_code rc;
    size_t n = capture_all("mysql-9.6.0-gtid-tagged.000001", caps, 8, &err, &rc);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(caps[0].table, "test.orders");
    cr_assert_str_eq(caps[0].txid, "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3");
    /* PREVIOUS_GTIDS [1,14) untagged and mytag [1,3), plus this transaction mytag:3 */
    cr_assert_str_eq(caps[0].gtid, "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-3");
    cr_assert_str_eq(caps[0].after, "{\"@1\":3,\"@2\":100,\"@3\":\"250.00\"}");
}

Test(manifest, enum_set_full_metadata)
{
    tb_error err;
    tb_code rc;
    size_t n = capture_all("mysql-8.0.28-enum-set-full-metadata.000001", caps, 8, &err, &rc);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    cr_assert_eq(n, 3);
    /* WRITE: ENUM index 1, SET 0b101; UPDATE after: ('field1','field_2', ENUM 2, SET 0b1010) */
    json_t *a0 = jo_parse_s(caps[0].after), *a1 = jo_parse_s(caps[1].after);
    const char *f1 = json_string_value(json_object_get(a0, "f1"));
    cr_assert(f1 && strncmp(f1, "0123456789", 10) == 0, "f1: %s", caps[0].after);
    cr_assert(jo_expect_at(a0, JO_PATH("f3"), "\"var1\"") && jo_expect_at(a0, JO_PATH("f4"), "[\"one\",\"three\"]") &&
                  jo_expect_at(a0, JO_PATH("f5"), "\"0123456789\""),
              "%s", caps[0].after);
    cr_assert(jo_expect_at(a1, JO_PATH("f1"), "\"field1\"") && jo_expect_at(a1, JO_PATH("f2"), "\"field_2\"") &&
                  jo_expect_at(a1, JO_PATH("f3"), "\"variant2\"") && jo_expect_at(a1, JO_PATH("f4"), "[\"two\",\"four\"]"),
              "%s", caps[1].after);
    json_decref(a0);
    json_decref(a1);
    cr_assert_eq(caps[2].op, 'd');
}

Test(manifest, partial_json_with_minimal_before_image)
{
    tb_error err;
    tb_code rc;
    static captured many[20];
    size_t n = capture_all("mysql-8.0.22-json-partial-update.000001", many, 20, &err, &rc);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    cr_assert_eq(n, 18); /* 6 inserts, 6 full updates, 6 partial updates */
    /* the full UPDATE before it: age 24 -> 25 for id 1 */
    cr_assert_str_eq(many[6].after, "{\"@1\":1,\"@2\":{\"age\":25,\"data\":\"xxxxxxxxxx\",\"name\":\"Joe\"},\"@3\":\"Joe\",\"@4\":25}");
    /* PARTIAL_UPDATE_ROWS: before image has only the key; the JSON diff cannot be
     * applied and the column is left out; the generated columns are there */
    cr_assert_str_eq(many[12].before, "{\"@1\":1}");
    cr_assert_str_eq(many[12].after, "{\"@3\":\"Joe\",\"@4\":26}");
    cr_assert_eq(many[12].op, 'u');
}

/* The comparator itself must notice a wrong value. */
Test(fixtures, comparator_detects_a_changed_value)
{
    ref_rows ref;
    cr_assert(ref_run(FIX "mysql-5.7.30-update-rows-v2-types.000001", &ref));
    cr_assert_eq(ref.n, 1);
    cr_assert(ref.rows[0].nimg[1] >= 9);
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open_file(FIX "mysql-5.7.30-update-rows-v2-types.000001", 0, &r, &err), TB_OK);
    evt_event *ev = NULL;
    cr_assert_eq(binlog_next(r, 0, &ev, &err), TB_OK);
    cr_assert_not_null(ev);
    tb_buf why;
    tb_buf_init(&why, 0);
    cr_assert(ref_match(&ref.rows[0], ev, &why), "%s", tb_buf_cstr(&why));
    for (int k = 0; k < 3; k++) {
        /* @2 'xd' -> 'xe', @9 4.0000 -> 4.0001, @8 4 -> 5 */
        ref_val *v = &ref.rows[0].img[1][k == 0 ? 1 : k == 1 ? 8 : 7];
        char *saved = v->text;
        v->text = strdup(k == 0 ? "'xe'" : k == 1 ? "4.0001" : "5");
        tb_buf_reset(&why);
        cr_assert_not(ref_match(&ref.rows[0], ev, &why), "changed @%d not detected", v->col);
        free(v->text);
        v->text = saved;
    }
    tb_buf_free(&why);
    binlog_close(r);
    ref_free(&ref);
}

/* ------------------------------------------------------------ the command */

static int run_cmd(const char *args, tb_buf *out)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s/app/tributary' decode %s 2>&1", TB_BINARY_DIR, args);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        tb_buf_append(out, buf, n);
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static size_t count_lines(const char *s, const char *prefix)
{
    size_t n = 0;
    for (const char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += strncmp(p, prefix, strlen(prefix)) == 0;
    return n;
}

Test(decode_cmd, prints_json_lines_and_names_the_damage)
{
    tb_buf out;
    tb_buf_init(&out, 0);
    cr_assert_eq(run_cmd("--binlog " FIX "mysql-8.2.0-integer-types-update.000001 --prefix p", &out), 0);
    cr_assert_eq(count_lines(tb_buf_cstr(&out), "{\"topic\":\"p.test.int_table\""), 2, "%s", tb_buf_cstr(&out));
    tb_buf_reset(&out);
    cr_assert_eq(run_cmd("--binlog " FIX "mysql-8.2.0-integer-types-update.000001 --format row", &out), 0);
    { /* the update's row image among the lines, read with Jansson */
        size_t n = 0;
        for (const char *l = tb_buf_cstr(&out), *nl; (nl = strchr(l, '\n')); l = nl + 1) {
            json_t *v = jo_parse(l, (size_t)(nl - l));
            n += jo_equal_at(v, JO_PATH("value"), "{\"@1\":1,\"@2\":22,\"@3\":222,\"@4\":1111,\"@5\":11111,\"@6\":1}");
            json_decref(v);
        }
        cr_assert_eq(n, 1, "%s", tb_buf_cstr(&out));
    }
    tb_buf_reset(&out);
    /* corrupt input: the events before it, then the error with file and offset, exit 1 */
    char tmp[] = "/tmp/tb-binlog-cut-XXXXXX";
    int fd = mkstemp(tmp);
    cr_assert_geq(fd, 0);
    FILE *in = fopen(FIX "mysql-5.7.40-gtid-rows-emoji.000080", "rb");
    char buf[4096];
    size_t n = fread(buf, 1, 1800, in); /* cut in the middle of the events */
    fclose(in);
    cr_assert_eq(write(fd, buf, n), (ssize_t)n);
    close(fd);
    char args[256];
    snprintf(args, sizeof(args), "--binlog %s", tmp);
    int st = run_cmd(args, &out);
    unlink(tmp);
    cr_assert_eq(st, 1, "%s", tb_buf_cstr(&out));
    cr_assert_gt(count_lines(tb_buf_cstr(&out), "{\"topic\""), 0, "%s", tb_buf_cstr(&out));
    cr_assert(strstr(tb_buf_cstr(&out), tmp) && strstr(tb_buf_cstr(&out), "byte offset"), "%s", tb_buf_cstr(&out));
    tb_buf_reset(&out);
    cr_assert_eq(run_cmd("--binlog /nonexistent/file", &out), 1);
    tb_buf_reset(&out);
    cr_assert_eq(run_cmd("--format xml --binlog x", &out), 2);
    tb_buf_free(&out);
}

Test(decode_cmd, start_position_skips_earlier_transactions)
{
    /* integer-types-update: the INSERT transaction, then the UPDATE one; start at the
     * position after the first (taken from the first event's commit position) */
    binlog_reader *r = NULL;
    tb_error err;
    cr_assert_eq(binlog_open_file(FIX "mysql-8.2.0-integer-types-update.000001", 0, &r, &err), TB_OK);
    evt_event *e = NULL;
    cr_assert_eq(binlog_next(r, 0, &e, &err), TB_OK);
    cr_assert(e && evt_event_last_in_tx(e));
    uint64_t after_first = evt_event_position(e)->pos;
    binlog_close(r);
    cr_assert_eq(binlog_open_file(FIX "mysql-8.2.0-integer-types-update.000001", after_first, &r, &err), TB_OK);
    cr_assert_eq(binlog_next(r, 0, &e, &err), TB_OK);
    cr_assert_not_null(e);
    cr_assert_eq(evt_event_op(e), EVT_OP_UPDATE);
    cr_assert_eq(binlog_next(r, 0, &e, &err), TB_OK);
    cr_assert_null(e);
    cr_assert(binlog_at_end(r));
    binlog_close(r);
}

/* DDL-only transactions (GTID + QUERY, no XID) advance the position and the GTID set. */
Test(positions, ddl_transactions_commit)
{
    static const struct {
        const char *file;
        const char *gtid_suffix;
    } cases[] = {
        {"mysql-5.7.22-gtid-ddl-table-view.000001", ":1-4"},
        {"mysql-5.7.30-query.000001", ":1-2"},
        {"mysql-5.6.41-gtid-reserved-word.000001", ":1-6"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s%s", FIX, cases[i].file);
        binlog_reader *r = NULL;
        tb_error err;
        cr_assert_eq(binlog_open_file(path, 0, &r, &err), TB_OK);
        evt_event *e = NULL;
        do
            cr_assert_eq(binlog_next(r, 0, &e, &err), TB_OK, "%s", err.msg);
        while (e);
        const tb_position *p = binlog_position(r);
        cr_assert_not_null(p->gtid_set, "%s", cases[i].file);
        size_t gl = strlen(p->gtid_set), sl = strlen(cases[i].gtid_suffix);
        cr_assert(gl > sl && strcmp(p->gtid_set + gl - sl, cases[i].gtid_suffix) == 0, "%s: %s", cases[i].file,
                  p->gtid_set);
        /* at the end: after the last event, or at 4 of the next file after a ROTATE */
        cr_assert(p->file && (p->pos > 4 || strcmp(p->file, cases[i].file) != 0), "%s: %s:%llu", cases[i].file,
                  p->file ? p->file : "-", (unsigned long long)p->pos);
        binlog_close(r);
    }
}
