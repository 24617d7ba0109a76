/*
 * Allocation-failure injection (SQLite's *fault tests, curl's torture mode): each operation
 * below runs again and again with its 1st, 2nd, 3rd ... allocation failing, until a run in which
 * no allocation failed. Every failing run must end with an error code (never a crash, a NULL
 * dereference or undefined behaviour: the sanitizers watch) and free what it allocated
 * (LeakSanitizer checks at the child's exit); the last run must succeed with the same result as
 * a run without injection.
 *
 * The allocator is wrapped at link time (-Wl,--wrap=malloc,... in CMakeLists.txt): every call
 * from the project's static libraries and from this file goes through the __wrap_ functions;
 * libc's, Jansson's and Criterion's own allocations do not.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binlog.h"
#include "cfg.h"
#include "evt_json.h"
#include "tb_buf.h"
#include "tb_position.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static long oom_countdown = -1; /* -1: off; N: the allocation after N more succeeds fails */
static long oom_failed;         /* allocations failed since the last arm */
static long oom_calls;          /* allocations seen since the last arm */

static int oom_hit(void)
{
    oom_calls++;
    if (oom_countdown < 0)
        return 0;
    if (oom_countdown-- == 0) {
        oom_failed++;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n) { return oom_hit() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return oom_hit() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return oom_hit() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return oom_hit() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return oom_hit() ? NULL : __real_strndup(s, n); }

typedef tb_code (*oom_op)(const void *arg, tb_buf *result);

/* Run op with allocation n failing, for n = 0, 1, ... until a run where none failed; that run's
 * result must equal a clean run's. Returns the number of allocations of a clean run. */
static long oom_loop(const char *what, oom_op op, const void *arg)
{
    tb_buf want, got;
    tb_buf_init(&want, 0);
    tb_buf_init(&got, 0);
    oom_countdown = -1;
    oom_calls = 0;
    cr_assert_eq(op(arg, &want), TB_OK, "%s: fails without injection", what);
    long clean_calls = oom_calls;
    for (long n = 0;; n++) {
        tb_buf_reset(&got);
        oom_failed = 0;
        oom_calls = 0;
        oom_countdown = n;
        tb_code rc = op(arg, &got);
        oom_countdown = -1;
        if (!oom_failed) {
            cr_assert_eq(rc, TB_OK, "%s: no allocation failed, yet %s", what, tb_code_name(rc));
            cr_assert(got.len == want.len && (want.len == 0 || memcmp(got.data, want.data, want.len) == 0),
                      "%s: the run after %ld injected failures differs from a clean one", what, n);
            break;
        }
        /* A failed allocation that the code can do without (a cache, a message buffer) may
         * still end in TB_OK, but then with the clean result. */
        if (rc == TB_OK)
            cr_assert(got.len == want.len && (want.len == 0 || memcmp(got.data, want.data, want.len) == 0),
                      "%s: allocation %ld failed, the call said ok, and its result differs", what, n);
        cr_assert_lt(n, 10 * clean_calls + 1000, "%s: no end to the allocations", what);
    }
    tb_buf_free(&want);
    tb_buf_free(&got);
    return clean_calls;
}

/* ---------------------------------------------------------------- configuration */

static tb_code op_config(const void *arg, tb_buf *result)
{
    const char *path = arg;
    tb_error err;
    cfg *c = cfg_new();
    if (!c)
        return TB_ERR_NOMEM;
    tb_code rc = cfg_load_file(c, path, &err);
    if (rc == TB_OK)
        rc = cfg_validate(c, &err);
    if (rc == TB_OK)
        rc = tb_buf_printf(result, "%s|%s|%d|%s", cfg_get_str(c, "name"), cfg_get_str(c, "kafka.linger.ms"),
                           cfg_get_bool(c, "exactly.once"), cfg_get_str(c, "key.columns.shop.t"));
    cfg_free(c);
    return rc;
}

Test(oom, config)
{
    static const char text[] = "name=shop\nsource.type=mysql\nsource.host=127.0.0.1\nsource.port=3306\n"
                               "source.user=tributary\nsource.password=secret\ntopic.prefix=shop\n"
                               "kafka.bootstrap.servers=127.0.0.1:9092\ntables.include=shop[.].*\n"
                               "key.columns.shop.t=a,b\nexactly.once=true\nkafka.linger.ms=5\n";
    char path[] = "/tmp/tb-oom-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    long n = oom_loop("config", op_config, path);
    unlink(path);
    cr_log_info("config: %ld allocations", n);
}

/* ---------------------------------------------------------------- positions */

static tb_code op_position(const void *arg, tb_buf *result)
{
    (void)arg;
    tb_position p;
    tb_position_init(&p);
    tb_error err;
    tb_code rc = tb_position_parse("mysql;file=mysql-bin.000003;pos=4711;row=2;server_id=7;"
                                   "gtid=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5",
                                   &p, &err);
    if (rc == TB_OK)
        rc = tb_position_format(&p, result);
    tb_position_free(&p);
    return rc;
}

Test(oom, position)
{
    oom_loop("position", op_position, NULL);
}

/* ---------------------------------------------------------------- binlog decoding + JSON */

/* Every event of a binlog file decoded and rendered as the connector sends it. */
static tb_code op_binlog(const void *arg, tb_buf *result)
{
    const char *path = arg;
    binlog_reader *r = NULL;
    tb_error err;
    evt_rendered out;
    evt_rendered_init(&out);
    evt_codec_opts o;
    memset(&o, 0, sizeof o);
    o.topic_prefix = "oom";
    o.name = "oom";
    o.now_ms = 1;
    tb_code rc = binlog_open_file(path, 4, &r, &err);
    while (rc == TB_OK) {
        evt_event *ev = NULL;
        rc = binlog_next(r, 0, &ev, &err);
        if (rc != TB_OK || !ev) {
            if (rc == TB_OK && binlog_at_end(r))
                break;
            continue;
        }
        rc = evt_render(&o, ev, &out, &err);
        for (size_t i = 0; rc == TB_OK && i < out.n; i++) {
            rc = tb_buf_printf(result, "%s %.*s %.*s\n", out.topic, (int)out.msgs[i].key_len,
                               out.msgs[i].key ? out.msgs[i].key : "", (int)out.msgs[i].value_len,
                               out.msgs[i].value ? out.msgs[i].value : "-");
        }
    }
    evt_rendered_free(&out);
    binlog_close(r);
    return rc;
}

static void binlog_case(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/binlog/%s", TB_FIXTURES_DIR, name);
    long n = oom_loop(name, op_binlog, path);
    cr_log_info("%s: %ld allocations", name, n);
}

Test(oom, binlog_rows_v2_types)
{
    binlog_case("mysql-5.7.30-update-rows-v2-types.000001");
}

Test(oom, binlog_gtid_tagged)
{
    binlog_case("mysql-9.6.0-gtid-tagged.000001");
}

Test(oom, binlog_payload_zstd)
{
    binlog_case("mysql-8.0.28-transaction-payload-zstd.000001");
}

Test(oom, binlog_enum_set)
{
    binlog_case("mysql-8.0.28-enum-set-full-metadata.000001");
}

Test(oom, binlog_json_partial)
{
    binlog_case("mysql-8.0.22-json-partial-update.000001");
}

Test(oom, binlog_decimal_date)
{
    binlog_case("mysql-8.0.31-decimal-date-lineitem.000733");
}

Test(oom, binlog_emoji_gtid_rows)
{
    binlog_case("mysql-5.7.40-gtid-rows-emoji.000080");
}

Test(oom, binlog_invisible_columns)
{
    binlog_case("mysql-8.0.26-invisible-columns-full-metadata.000001");
}
