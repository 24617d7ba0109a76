/*
 * The table cache reads Debezium's Avro topics (integration: the testenv Kafka broker and schema
 * registry, scripts/testenv up --registry; fails, never skips, without them).
 *
 * Debezium 3.6.1's MariaDB messages with their Kafka Connect schemas (tests/fixtures/debezium,
 * the variants written by JsonConverter with schemas.enable=true: defaults-schemas,
 * string-precise-schemas, connect-time-schemas; tables types and pairs) are produced twice:
 *   - in Avro, by tests/avro/dbz_avro_produce.py: every key and value schema converted to Avro
 *     as Confluent's AvroData does (written independently of avro/av_conv.c), the payloads
 *     encoded by confluent-kafka's AvroSerializer, the schemas registered in the registry
 *     (<topic>-key, <topic>-value), tombstones null values; topics <P>_<v>a.golden.<table>;
 *   - as they are (the dump's JSON bytes), topics <P>_<v>j.golden.<table>.
 * `tributary cache --until-caught-up` replays each prefix (the same properties but for the
 * topics and the file: schema.registry.url, cache.*), and the two cache tables must be equal:
 * the same columns and declared types, the same rows, every cell of the same SQLite storage
 * class and value; and not empty. What is not proven: the bytes of Confluent's own AvroConverter
 * (not available here), only Debezium's messages encoded by an AvroData-style converter.
 */
#include <errno.h>
#include <sys/stat.h>

#include "../cache/it_util.h"
#include "../e2e/e2e_util.h"

#define FIX TB_FIXTURES_DIR "/debezium"

static const char *registry(void) { return tb_itest_env("TRIBUTARY_TEST_REGISTRY_URL"); }

/* The same dump in Avro (dbz_avro_produce.py); asked again while the registry times out. */
static size_t produce_avro(const char *path, const char *topic)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 120 '%s' '%s/tests/avro/dbz_avro_produce.py' '%s' '%s' '%s' '%s'",
             tb_itest_env("TRIBUTARY_TEST_PYAVRO"), TB_SOURCE_DIR, it_brokers(), registry(), path, topic);
    long long deadline = tb_itest_now_ms() + 300000;
    for (;;) {
        fflush(NULL);
        FILE *p = popen(cmd, "r");
        cr_assert_not_null(p, "popen %s", cmd);
        char line[64] = "";
        if (!fgets(line, sizeof line, p))
            line[0] = 0;
        int st = pclose(p);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 124 && tb_itest_now_ms() < deadline) {
            fprintf(stderr, "avro_dbz_cache: the registry did not answer (%s); trying again\n", topic);
            continue; /* the script's own 30 s registry timeout paced this */
        }
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dbz_avro_produce.py failed on %s (status %d)", path, st);
        return (size_t)strtoul(line, NULL, 10);
    }
}

/* `tributary cache --config <dir>/<prefix>.properties --until-caught-up` of ^<prefix>\. into db. */
static void replay(const char *dir, const char *prefix, const char *db)
{
    char cfg[400], log[400];
    snprintf(cfg, sizeof cfg, "%s/%s.properties", dir, prefix);
    snprintf(log, sizeof log, "%s/cache-%s.log", dir, prefix);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f, "%s: %s", cfg, strerror(errno));
    fprintf(f, "kafka.bootstrap.servers=%s\ncache.topics=^%s[.]\ncache.path=%s\nschema.registry.url=%s\n",
            it_brokers(), prefix, db, registry());
    fclose(f);
    const char *args[] = {"cache", "--config", cfg, "--until-caught-up", NULL};
    pid_t pid = e2e_spawn(args, log);
    int rc = e2e_wait(pid, 120000);
    cr_assert_eq(rc, 0, "tributary cache exited %d; see %s", rc, log);
    e2e_assert_clean_log(log);
}

/* Same storage class and value (REAL: the same bits; TEXT, BLOB: the same bytes). */
static bool cell_eq(sqlite3_stmt *a, sqlite3_stmt *b, int i)
{
    int t = sqlite3_column_type(a, i);
    if (t != sqlite3_column_type(b, i))
        return false;
    switch (t) {
    case SQLITE_NULL: return true;
    case SQLITE_INTEGER: return sqlite3_column_int64(a, i) == sqlite3_column_int64(b, i);
    case SQLITE_FLOAT: {
        double x = sqlite3_column_double(a, i), y = sqlite3_column_double(b, i);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    default: {
        const void *pa = t == SQLITE_BLOB ? sqlite3_column_blob(a, i) : (const void *)sqlite3_column_text(a, i);
        const void *pb = t == SQLITE_BLOB ? sqlite3_column_blob(b, i) : (const void *)sqlite3_column_text(b, i);
        int n = sqlite3_column_bytes(a, i);
        return n == sqlite3_column_bytes(b, i) && (n == 0 || memcmp(pa, pb, (size_t)n) == 0);
    }
    }
}

static sqlite3_stmt *select_all(const char *path, sqlite3 **h, const char *table, const char *order)
{
    char sql[256];
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open_v2(path, h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "open %s", path);
    snprintf(sql, sizeof sql, "SELECT * FROM \"golden.%s\" ORDER BY %s", table, order);
    cr_assert_eq(sqlite3_prepare_v2(*h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", path, sqlite3_errmsg(*h));
    return st;
}

/* Table golden.<table> of the Avro cache and of the JSON cache: the same columns (names and
 * declared types, in order), rows and cells. Returns the number of cells that differ; the
 * number of rows compared in *rows. */
static int compare_table(const char *avro_db, const char *json_db, const char *variant, const char *table,
                         const char *order, int *rows)
{
    sqlite3 *ha = NULL, *hj = NULL;
    sqlite3_stmt *sa = select_all(avro_db, &ha, table, order), *sj = select_all(json_db, &hj, table, order);
    int nc = sqlite3_column_count(sj), bad = 0;
    cr_assert_eq(sqlite3_column_count(sa), nc, "%s %s: %d columns from Avro, %d from JSON", variant, table,
                 sqlite3_column_count(sa), nc);
    for (int i = 0; i < nc; i++) {
        const char *da = sqlite3_column_decltype(sa, i), *dj = sqlite3_column_decltype(sj, i);
        cr_assert_str_eq(sqlite3_column_name(sa, i), sqlite3_column_name(sj, i), "%s %s: column %d", variant, table,
                         i);
        cr_assert_str_eq(da ? da : "", dj ? dj : "", "%s %s: the declared type of column %s", variant, table,
                         sqlite3_column_name(sj, i));
    }
    *rows = 0;
    for (;;) {
        int ra = sqlite3_step(sa), rj = sqlite3_step(sj);
        cr_assert_eq(ra == SQLITE_ROW, rj == SQLITE_ROW, "%s %s: after %d equal rows, one cache has more", variant,
                     table, *rows);
        if (ra != SQLITE_ROW)
            break;
        (*rows)++;
        for (int i = 0; i < nc; i++) {
            if (cell_eq(sa, sj, i))
                continue;
            char ta[512], tj[512];
            it_cell_text(sa, i, ta, sizeof ta);
            it_cell_text(sj, i, tj, sizeof tj);
            fprintf(stderr, "%s %s row %d column %s: Avro %s, JSON %s\n", variant, table, *rows,
                    sqlite3_column_name(sj, i), ta, tj);
            bad++;
        }
    }
    sqlite3_finalize(sa);
    sqlite3_finalize(sj);
    sqlite3_close(ha);
    sqlite3_close(hj);
    return bad;
}

Test(avro_dbz_cache, debezium_avro_equals_debezium_json, .timeout = 600, .fini = e2e_kill_children)
{
    static const char *const variants[] = {"defaults-schemas", "string-precise-schemas", "connect-time-schemas"};
    static const struct {
        const char *name, *order;
        size_t messages;
        int rows; /* rows the table holds at the end */
    } tables[] = {{"types", "id", 22, 7}, {"pairs", "p_name, CAST(p_num AS TEXT)", 18, 5}};
    char prefix[64], dir[128];
    it_prefix(prefix, sizeof prefix, "dbzav");
    snprintf(dir, sizeof dir, "/tmp/e2e-%s", prefix);
    cr_assert_eq(mkdir(dir, 0700), 0, "mkdir %s: %s", dir, strerror(errno));
    rd_kafka_t *rk = it_producer();
    int bad = 0;
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        char pa[96], pj[96], dba[300], dbj[300];
        snprintf(pa, sizeof pa, "%s_%zua", prefix, v);
        snprintf(pj, sizeof pj, "%s_%zuj", prefix, v);
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
            char ta[160], tj[160], path[300];
            snprintf(path, sizeof path, FIX "/%s/%s.tsv", variants[v], tables[t].name);
            snprintf(ta, sizeof ta, "%s.golden.%s", pa, tables[t].name);
            snprintf(tj, sizeof tj, "%s.golden.%s", pj, tables[t].name);
            it_create_topic(rk, ta, 1, 0);
            it_create_topic(rk, tj, 1, 0);
            cr_assert_eq(produce_avro(path, ta), tables[t].messages, "%s in Avro", path);
            cr_assert_eq(it_produce_dump(rk, path, tj), tables[t].messages, "%s", path);
        }
        snprintf(dba, sizeof dba, "%s/%s-avro.db", dir, variants[v]);
        snprintf(dbj, sizeof dbj, "%s/%s-json.db", dir, variants[v]);
        replay(dir, pa, dba);
        replay(dir, pj, dbj);
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
            int rows = 0, b = compare_table(dba, dbj, variants[v], tables[t].name, tables[t].order, &rows);
            fprintf(stderr, "avro_dbz_cache %s %s: %d rows, %d cells differ\n", variants[v], tables[t].name, rows, b);
            cr_expect_eq(rows, tables[t].rows, "%s %s: %d rows in both caches, want %d", variants[v], tables[t].name,
                         rows, tables[t].rows);
            bad += b;
        }
    }
    rd_kafka_destroy(rk);
    cr_assert_eq(bad, 0, "%d cells of the Avro caches differ from the JSON caches (see above; files in %s)", bad, dir);
    e2e_rmtree(dir);
}
