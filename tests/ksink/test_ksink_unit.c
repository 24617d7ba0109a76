/*
 * Unit tests of the Kafka sink pieces that need no broker:
 *   murmur2/kafka_vectors: the test's own murmur2 gives Kafka's UtilsTest values
 *     (so the integration test's partition check rests on a verified reference);
 *   offsets/key_is_json_string: the offsets record key is the name as a JSON string;
 *   offsets/file_round_trip, file_none, file_atomic_no_temp_left, file_bad_content;
 *   open/refuses_weakened_producer: kafka.acks=1, enable.idempotence=false, another
 *     partitioner or a transactional.id are refused;
 *   open/eos_needs_kafka_offsets.
 */
#include <dirent.h>
#include <sys/stat.h>

#include "ksink_test_util.h"
#include "ksink_int.h"
#include "tb_log.h"

Test(murmur2, kafka_vectors)
{
    /* Kafka's clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java testMurmur2 */
    struct { const char *s; int32_t h; } v[] = {
        {"21", -973932308},
        {"foobar", -790332482},
        {"a-little-bit-long-string", -985981536},
        {"a-little-bit-longer-string", -1486304829},
        {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
        {"abc", 479470107},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        cr_expect_eq(kt_murmur2(v[i].s, strlen(v[i].s)), v[i].h, "murmur2(%s) = %d, want %d", v[i].s,
                     kt_murmur2(v[i].s, strlen(v[i].s)), v[i].h);
}

Test(offsets, key_is_json_string)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(ksink_offsets_key("shop", &b), TB_OK);
    cr_assert_str_eq(tb_buf_cstr(&b), "\"shop\"");
    tb_buf_reset(&b);
    cr_assert_eq(ksink_offsets_key("a\"b\\c", &b), TB_OK);
    cr_assert_str_eq(tb_buf_cstr(&b), "\"a\\\"b\\\\c\"");
    tb_buf_free(&b);
}

static char kt_dir[256];

static cfg *file_cfg(const char *file)
{
    snprintf(kt_dir, sizeof kt_dir, "/tmp/ksink-unit-XXXXXX");
    cr_assert_not_null(mkdtemp(kt_dir));
    cfg *c = cfg_new();
    kt_set(c, "name", "unit");
    kt_set(c, "offsets.storage", "file");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", kt_dir, file);
    kt_set(c, "offsets.file", path);
    return c;
}

static void rm_dir(void)
{
    DIR *d = opendir(kt_dir);
    if (!d)
        return;
    struct dirent *de;
    char path[600];
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", kt_dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(kt_dir);
}

Test(offsets, file_round_trip)
{
    cfg *c = file_cfg("o.offsets");
    tb_error err;
    tb_position in, out;
    kt_pos(&in, 4242);
    cr_assert_eq(tb_position_set_gtid(&in, "0-1-7,1-2-3"), TB_OK);
    tb_position_init(&out);
    cr_assert_eq(ksink_offsets_write(c, &in, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_offsets_read(c, &out, &err), TB_OK, "%s", err.msg);
    cr_assert(tb_position_equal(&in, &out));
    /* overwrite with a later one */
    in.pos = 5000;
    cr_assert_eq(ksink_offsets_write(c, &in, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(ksink_offsets_read(c, &out, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(out.pos, 5000);
    /* the file holds the text form */
    char path[512], buf[512];
    snprintf(path, sizeof path, "%s/o.offsets", kt_dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(buf, sizeof buf, f));
    fclose(f);
    cr_assert_str_eq(buf, "mariadb;server_id=1;file=mysql-bin.000001;pos=5000;row=0;gtid=0-1-7,1-2-3\n");
    tb_position_free(&in);
    tb_position_free(&out);
    rm_dir();
    cfg_free(c);
}

Test(offsets, file_none)
{
    cfg *c = file_cfg("missing.offsets");
    tb_error err;
    tb_position out;
    kt_pos(&out, 1);
    cr_assert_eq(ksink_offsets_read(c, &out, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(out.kind, TB_POS_NONE);
    tb_position none;
    tb_position_init(&none);
    cr_assert_eq(ksink_offsets_write(c, &none, &err), TB_OK, "%s", err.msg);
    kt_pos(&out, 1);
    cr_assert_eq(ksink_offsets_read(c, &out, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(out.kind, TB_POS_NONE);
    rm_dir();
    cfg_free(c);
}

Test(offsets, file_atomic_no_temp_left)
{
    cfg *c = file_cfg("a.offsets");
    tb_error err;
    tb_position in;
    for (int i = 0; i < 20; i++) {
        kt_pos(&in, 100 + (uint64_t)i);
        cr_assert_eq(ksink_offsets_write(c, &in, &err), TB_OK, "%s", err.msg);
        tb_position_free(&in);
    }
    DIR *d = opendir(kt_dir);
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.') {
            files++;
            cr_expect_str_eq(de->d_name, "a.offsets");
        }
    closedir(d);
    cr_assert_eq(files, 1);
    rm_dir();
    cfg_free(c);
}

Test(offsets, file_bad_content)
{
    cfg *c = file_cfg("bad.offsets");
    char path[512];
    snprintf(path, sizeof path, "%s/bad.offsets", kt_dir);
    FILE *f = fopen(path, "w");
    fputs("mysql;pos=notanumber\n", f);
    fclose(f);
    tb_error err;
    tb_position out;
    tb_position_init(&out);
    cr_assert_neq(ksink_offsets_read(c, &out, &err), TB_OK);
    cr_assert(strstr(err.msg, path) != NULL, "error names the file: %s", err.msg);
    rm_dir();
    cfg_free(c);
}

Test(open, refuses_weakened_producer)
{
    const char *bad[][2] = {{"kafka.acks", "1"}, {"kafka.enable.idempotence", "false"},
                            {"kafka.partitioner", "consistent_random"}, {"kafka.transactional.id", "x"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cfg *c = kt_cfg("127.0.0.1:1", "unit", "p");
        kt_set(c, bad[i][0], bad[i][1]);
        ksink *ks = NULL;
        tb_error err;
        cr_assert_eq(ksink_open(c, &ks, &err), TB_ERR_CONFIG, "%s=%s accepted", bad[i][0], bad[i][1]);
        cr_assert_null(ks);
        cr_assert(strstr(err.msg, bad[i][0]) != NULL, "%s", err.msg);
        cfg_free(c);
    }
}

static long queue_kb(const char *max_msg, const char *kb, tb_code *rc, tb_error *err)
{
    cfg *c = kt_cfg("127.0.0.1:1", "unit", "p");
    if (max_msg)
        kt_set(c, "kafka.message.max.bytes", max_msg);
    if (kb)
        kt_set(c, "kafka.queue.buffering.max.kbytes", kb);
    rd_kafka_conf_t *conf = NULL;
    long v = -1;
    *rc = ksink_conf_new(c, KSINK_ROLE_PRODUCER, &conf, err);
    if (conf) {
        char buf[32];
        size_t len = sizeof buf;
        cr_assert_eq(rd_kafka_conf_get(conf, "queue.buffering.max.kbytes", buf, &len), RD_KAFKA_CONF_OK);
        v = strtol(buf, NULL, 10);
        rd_kafka_conf_destroy(conf);
    }
    cfg_free(c);
    return v;
}

/* The producer's queue bound: KSINK_QUEUE_KB, or room for two of the largest messages, or what
 * kafka.* says; a bound no message of the largest size fits in is refused, naming both keys. */
Test(open, producer_queue_bound)
{
    tb_code rc;
    tb_error err;
    cr_expect_eq(queue_kb(NULL, NULL, &rc, &err), KSINK_QUEUE_KB);
    cr_expect_eq(rc, TB_OK);
    cr_expect_eq(queue_kb("10000000", NULL, &rc, &err), 10000000 / 512 + 1); /* two 10 MB messages */
    cr_expect_eq(rc, TB_OK);
    cr_expect_eq(queue_kb(NULL, "65536", &rc, &err), 65536);
    cr_expect_eq(rc, TB_OK);
    cr_expect_eq(queue_kb(NULL, "100", &rc, &err), -1);
    cr_expect_eq(rc, TB_ERR_CONFIG);
    cr_expect(strstr(err.msg, "kafka.queue.buffering.max.kbytes=100") && strstr(err.msg, "kafka.message.max.bytes"),
              "%s", err.msg);
    cr_expect_eq(queue_kb("5000000", "4096", &rc, &err), -1);
    cr_expect_eq(rc, TB_ERR_CONFIG);
}

Test(open, eos_needs_kafka_offsets)
{
    cfg *c = kt_cfg("127.0.0.1:1", "unit", "p");
    kt_set(c, "exactly.once", "true");
    kt_set(c, "offsets.storage", "file");
    ksink *ks = NULL;
    tb_error err;
    cr_assert_eq(ksink_open(c, &ks, &err), TB_ERR_CONFIG);
    cr_assert_null(ks);
    cfg_free(c);
    ksink_close(NULL);
}

/* The WARNs for an existing topic's replication (ksink_topic_check_replication), each naming
 * its fix, and none for a safe setting; the min.insync.replicas a new topic gets. */
typedef struct repl_log {
    char last[1024];
    int warns;
} repl_log;

static void repl_sink(tb_log_level level, const char *line, void *opaque)
{
    repl_log *l = opaque;
    if (level == TB_LOG_WARN) {
        l->warns++;
        snprintf(l->last, sizeof l->last, "%s", line);
    }
}

Test(ksink_topics, replication_warnings)
{
    static const struct {
        int brokers, rf, misr;
        const char *want; /* NULL: no WARN */
    } cases[] = {
        {1, 1, 1, NULL},
        {3, 3, 2, NULL},
        {5, 3, 2, NULL},
        {3, 2, 1, NULL},
        {3, 1, 1, "replication factor 1 on a cluster of 3 brokers"},
        {3, 3, 1, "may be on one broker only"},
        {3, 3, 3, "equals its replication factor"},
        {3, 2, 2, "equals its replication factor"},
        {1, 1, 2, "is more than its replication factor 1"},
        {3, 3, 4, "is more than its replication factor 3"},
        {3, 3, 0, NULL}, /* not read: nothing said of it */
    };
    repl_log l;
    tb_log_set_sink(repl_sink, &l);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&l, 0, sizeof l);
        ksink_topic_check_replication("t", cases[i].brokers, cases[i].rf, cases[i].misr);
        if (!cases[i].want) {
            cr_expect_eq(l.warns, 0, "brokers %d rf %d min.insync %d: %s", cases[i].brokers, cases[i].rf,
                         cases[i].misr, l.last);
            continue;
        }
        cr_expect_eq(l.warns, 1, "brokers %d rf %d min.insync %d", cases[i].brokers, cases[i].rf, cases[i].misr);
        cr_expect(strstr(l.last, cases[i].want) != NULL, "case %zu: %s", i, l.last);
        cr_expect(strstr(l.last, "kafka-configs") || strstr(l.last, "kafka-reassign-partitions"),
                  "case %zu names no fix: %s", i, l.last);
    }
    tb_log_set_sink(NULL, NULL);
    cr_expect_eq(ksink_default_min_insync(1), 1);
    cr_expect_eq(ksink_default_min_insync(2), 1);
    cr_expect_eq(ksink_default_min_insync(3), 2);
    cr_expect_eq(ksink_default_min_insync(5), 2);
}
