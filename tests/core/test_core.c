#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tb_buf.h"
#include "tb_clock.h"
#include "tb_error.h"
#include "tb_log.h"
#include "tb_position.h"

Test(buf, append_grows_and_terminates)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(tb_buf_printf(&b, "%d,", i), TB_OK);
    cr_assert_eq(b.len, strlen(b.data));
    cr_assert(strncmp(b.data, "0,1,2,", 6) == 0);
    tb_buf_free(&b);
    tb_buf_free(&b);
    tb_buf_free(NULL);
}

Test(buf, bound_is_enforced_without_truncation)
{
    tb_buf b;
    tb_buf_init(&b, 8);
    cr_assert_eq(tb_buf_puts(&b, "12345678"), TB_OK);
    cr_assert_eq(tb_buf_puts(&b, "9"), TB_ERR_NOMEM);
    cr_assert_str_eq(b.data, "12345678");
    tb_buf_free(&b);
}

Test(buf, base64_round_trip)
{
    const char *cases[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        tb_buf e, d;
        tb_buf_init(&e, 0);
        tb_buf_init(&d, 0);
        cr_assert_eq(tb_buf_base64(&e, cases[i], strlen(cases[i])), TB_OK);
        cr_assert_str_eq(tb_buf_cstr(&e), want[i]);
        cr_assert_eq(tb_base64_decode(e.data ? e.data : "", e.len, &d), TB_OK);
        cr_assert_eq(d.len, strlen(cases[i]));
        cr_assert(d.len == 0 || memcmp(d.data, cases[i], d.len) == 0);
        tb_buf_free(&e);
        tb_buf_free(&d);
    }
    tb_buf d;
    tb_buf_init(&d, 0);
    cr_assert_eq(tb_base64_decode("Zm9*", 4, &d), TB_ERR_INVALID);
    cr_assert_eq(tb_base64_decode("Zm9", 3, &d), TB_ERR_INVALID);
    tb_buf_free(&d);
}

Test(error, set_prefix_and_exit_codes)
{
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(tb_error_set(&err, TB_ERR_CORRUPT, false, "bad event at offset %d", 120), TB_ERR_CORRUPT);
    tb_error_prefix(&err, TB_ERR_CORRUPT, "%s: ", "file.000001");
    cr_assert_str_eq(err.msg, "file.000001: bad event at offset 120");
    cr_assert_eq(err.code, TB_ERR_CORRUPT);
    cr_assert_eq(tb_code_exit_status(TB_ERR_CONFIG), 2);
    cr_assert_eq(tb_code_exit_status(TB_ERR_UNSUPPORTED), 1);
    cr_assert_eq(tb_code_exit_status(TB_ERR_KAFKA), 1);
    cr_assert_eq(tb_code_exit_status(TB_OK), 0);
    cr_assert_eq(tb_error_set(NULL, TB_ERR_IO, true, "x"), TB_ERR_IO);
}

/* A prefix whose leading part the message already starts with says it once. */
Test(error, prefix_not_repeated)
{
    tb_error err;
    tb_error_clear(&err);
    tb_error_set(&err, TB_ERR_SOURCE, true, "source 127.0.0.1:1: cannot connect: refused");
    tb_error_prefix(&err, TB_ERR_SOURCE, "%s: %s", "source 127.0.0.1:1", "");
    cr_assert_str_eq(err.msg, "source 127.0.0.1:1: cannot connect: refused");
    tb_error_prefix(&err, TB_ERR_SOURCE, "%s: %s", "source 127.0.0.1:1", "not reachable within 5 s: ");
    cr_assert_str_eq(err.msg, "source 127.0.0.1:1: not reachable within 5 s: cannot connect: refused");
    tb_error_set(&err, TB_ERR_SOURCE, true, "source 127.0.0.2:1: cannot connect");
    tb_error_prefix(&err, TB_ERR_SOURCE, "source 127.0.0.1:1: ");
    cr_assert_str_eq(err.msg, "source 127.0.0.1:1: source 127.0.0.2:1: cannot connect");
}

/* `return tb_error_prefix(err, rc, ...)` returns the failed call's code whether
 * or not the caller passed an error struct, and keeps the retriable flag. */
Test(error, prefix_returns_the_given_code)
{
    cr_assert_eq(tb_error_prefix(NULL, TB_ERR_SOURCE, "ctx: "), TB_ERR_SOURCE);
    cr_assert_eq(tb_error_prefix(NULL, TB_ERR_NOMEM, "ctx: "), TB_ERR_NOMEM);
    tb_error err;
    tb_error_set(&err, TB_ERR_IO, true, "read failed");
    cr_assert_eq(tb_error_prefix(&err, TB_ERR_IO, "%s: ", "f.db"), TB_ERR_IO);
    cr_assert_str_eq(err.msg, "f.db: read failed");
    cr_assert(err.retriable);
    cr_assert_eq(tb_error_prefix(&err, TB_ERR_CONFIG, "--x: "), TB_ERR_CONFIG);
    cr_assert_eq(err.code, TB_ERR_CONFIG);
}

static char captured[4096];
static void capture_sink(tb_log_level level, const char *line, void *opaque)
{
    (void)level;
    (void)opaque;
    strncat(captured, line, sizeof(captured) - strlen(captured) - 1);
}

Test(log, level_filter_and_syslog_routing)
{
    tb_log_level lvl;
    cr_assert(tb_log_parse_level("DEBUG", &lvl));
    cr_assert_eq(lvl, TB_LOG_DEBUG);
    cr_assert_not(tb_log_parse_level("loud", &lvl));
    captured[0] = '\0';
    tb_log_set_sink(capture_sink, NULL);
    tb_log_set_level(TB_LOG_WARN);
    TB_INFO("test", "hidden");
    cr_assert_eq(captured[0], '\0');
    tb_log_syslog(3, "rdkafka", "broker down");
    cr_assert(strstr(captured, "ERROR rdkafka: broker down") != NULL);
    tb_log_set_sink(NULL, NULL);
}

static void round_trip(const tb_position *p)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(tb_position_format(p, &b), TB_OK);
    tb_position q;
    tb_position_init(&q);
    tb_error err;
    cr_assert_eq(tb_position_parse(tb_buf_cstr(&b), &q, &err), TB_OK, "%s", err.msg);
    cr_assert(tb_position_equal(p, &q), "%s", tb_buf_cstr(&b));
    tb_buf b2;
    tb_buf_init(&b2, 0);
    tb_position_format(&q, &b2);
    cr_assert_str_eq(tb_buf_cstr(&b), tb_buf_cstr(&b2));
    tb_position_free(&q);
    tb_buf_free(&b);
    tb_buf_free(&b2);
}

Test(position, text_round_trips)
{
    tb_position p;
    tb_position_init(&p);
    round_trip(&p);
    p.kind = TB_POS_MYSQL;
    p.server_id = 4294967295u;
    p.pos = 1234;
    tb_position_set_file(&p, "mysql bin;%=.000003");
    tb_position_set_gtid(&p, "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:tag:1-3,abc:7");
    round_trip(&p);
    p.mariadb = true;
    tb_position_set_gtid(&p, "0-1-7,1-2-3");
    round_trip(&p);
    tb_position_free(&p);
    p.kind = TB_POS_SQLITE_WAL;
    p.salt1 = 1;
    p.salt2 = 4000000000u;
    p.frame = 77;
    p.cksum1 = 5;
    p.cksum2 = 6;
    p.db_pages = 9;
    p.gen_seq = 3;
    p.inode = 123456789012ull;
    round_trip(&p);
    tb_position_init(&p);
    p.kind = TB_POS_SQLITE_LOG;
    p.seq = 9223372036854775807LL;
    round_trip(&p);
}

Test(position, parse_errors_name_the_field)
{
    tb_position p;
    tb_position_init(&p);
    tb_error err;
    cr_assert_neq(tb_position_parse("postgres;lsn=1", &p, &err), TB_OK);
    cr_assert(strstr(err.msg, "unknown kind"));
    cr_assert_neq(tb_position_parse("mysql;pos=abc", &p, &err), TB_OK);
    cr_assert(strstr(err.msg, "'pos'"), "%s", err.msg);
    cr_assert_neq(tb_position_parse("mysql;server_id=4294967296", &p, &err), TB_OK);
    cr_assert_neq(tb_position_parse("sqlite-wal;bogus=1", &p, &err), TB_OK);
    cr_assert(strstr(err.msg, "bogus"));
    cr_assert_neq(tb_position_parse("mysql;file=a%2", &p, &err), TB_OK);
    cr_assert_eq(p.kind, TB_POS_NONE);
}

Test(position, copy_is_deep)
{
    tb_position a, b;
    tb_position_init(&a);
    tb_position_init(&b);
    a.kind = TB_POS_MYSQL;
    tb_position_set_file(&a, "f.000001");
    tb_position_set_gtid(&a, "0-1-2");
    cr_assert_eq(tb_position_copy(&b, &a), TB_OK);
    tb_position_free(&a);
    cr_assert_str_eq(b.file, "f.000001");
    cr_assert_str_eq(b.gtid_set, "0-1-2");
    tb_position_free(&b);
    tb_position_free(NULL);
}

Test(clock, monotonic_and_wall)
{
    int64_t m0 = tb_mono_ms(), u0 = tb_mono_us();
    int64_t w = tb_wall_ms();
    time_t t = time(NULL);
    cr_assert_leq(llabs(w / 1000 - (int64_t)t), 1, "wall %lld vs time() %lld", (long long)w, (long long)t);
    cr_assert_leq(llabs(u0 / 1000 - m0), 1);
    int64_t prev = m0;
    for (int i = 0; i < 1000; i++) {
        int64_t m = tb_mono_ms();
        cr_assert_geq(m, prev, "the monotonic clock never goes back");
        prev = m;
    }
}

#include "tb_num.h"

Test(num, strict_decimal)
{
    uint64_t v = 7;
    cr_expect(tb_parse_u64("0", UINT64_MAX, &v) && v == 0);
    cr_expect(tb_parse_u64("18446744073709551615", UINT64_MAX, &v) && v == UINT64_MAX);
    cr_expect(!tb_parse_u64("18446744073709551616", UINT64_MAX, &v));
    cr_expect(!tb_parse_u64("99999999999999999999999", UINT64_MAX, &v));
    cr_expect(tb_parse_u64("4294967295", UINT32_MAX, &v) && v == UINT32_MAX);
    cr_expect(!tb_parse_u64("4294967296", UINT32_MAX, &v));
    v = 7;
    static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "1x", "0x10", "1.0", "--5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect(!tb_parse_u64(bad[i], UINT64_MAX, &v), "accepted '%s'", bad[i]);
    cr_expect_eq(v, 7, "a refused text left *out alone");
    cr_expect(tb_parse_u64_n("12345", 3, UINT64_MAX, &v) && v == 123);
    cr_expect(!tb_parse_u64_n("12345", 0, UINT64_MAX, &v));
    cr_expect(!tb_parse_u64(NULL, UINT64_MAX, &v));
}

/* A buffer reads as its text so far from its first reservation on: a decoder that reserved room
 * and appended nothing (an empty JSON string) leaves "", not uninitialised bytes. */
Test(buf, reserved_buffer_is_terminated)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(tb_buf_reserve(&b, 64), TB_OK);
    cr_expect_str_eq(tb_buf_cstr(&b), "");
    cr_assert_eq(tb_buf_puts(&b, "abc"), TB_OK);
    cr_assert_eq(tb_buf_reserve(&b, 4096), TB_OK);
    cr_expect_str_eq(tb_buf_cstr(&b), "abc");
    tb_buf_free(&b);
}
