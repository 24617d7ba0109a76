/*
 * The golden test of value.encoding=debezium (DESIGN 5a): the SQL of
 * tests/fixtures/debezium (golden.sql, then golden_dml.sql while streaming)
 * goes to the testenv MariaDB, `tributary run` (stdout sink) captures it with
 * value.encoding=debezium and the settings of a fixture variant, and every
 * message is compared with what Debezium 3.6.1 wrote for the same SQL, in
 * order, as JSON values (Jansson): the key, and the value's before, after,
 * op and source fields.
 *
 * Fields that cannot match, and are not compared:
 *  - source.version, source.name (Debezium's version and connector name),
 *    ts_ms/ts_us/ts_ns of the envelope and of source (times of the run),
 *    source.file, source.pos, source.gtid, source.server_id (coordinates in
 *    this server's binlog; gtid is checked to be present on every streamed
 *    event and null on snapshot reads, server_id to be 0 on snapshot reads).
 *
 * Two fixture sets: tests/fixtures/debezium (golden.sql: a table of every
 * type, a composite key) and tests/fixtures/debezium/extra (extra.sql:
 * FLOAT(M,D), POINT, UUID/INET6/INET4, NULLs in columns with defaults, which
 * JsonConverter's replace.null.with.default turns into the default, a
 * DATETIME(6) key, XA transactions).
 */
#include <jansson.h>
#include <math.h>
#include <sys/stat.h>

#include "tb_cast.h"
#include "../e2e/e2e_util.h"

#define FIX TB_FIXTURES_DIR "/debezium"

/* Run a file of SQL statements (multi-statement text). */
static void run_sql_file(const char *path)
{
    tb_buf sql;
    tb_buf_init(&sql, 0);
    cr_assert(e2e_slurp(path, &sql), "cannot read %s", path);
    MYSQL *m = mysql_init(NULL);
    const char *port = getenv("TRIBUTARY_TEST_MYSQL_PORT");
    cr_assert_not_null(mysql_real_connect(m, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_USER"),
                                          getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"), NULL,
                                          port ? (unsigned)atoi(port) : 0, NULL, CLIENT_MULTI_STATEMENTS),
                       "%s", mysql_error(m));
    cr_assert_eq(mysql_set_character_set(m, "utf8mb4"), 0);
    cr_assert_eq(mysql_real_query(m, sql.data, sql.len), 0, "%s: %s", path, mysql_error(m));
    int st;
    do {
        MYSQL_RES *r = mysql_store_result(m);
        if (r)
            mysql_free_result(r);
        cr_assert_eq(mysql_errno(m), 0, "%s: %s", path, mysql_error(m));
        st = mysql_next_result(m);
        cr_assert(st <= 0, "%s: %s", path, mysql_error(m));
    } while (st == 0);
    mysql_close(m);
    tb_buf_free(&sql);
}

/* fork/exec tributary with args: stdout (the messages) to out_path, stderr
 * (the log) to log_path, so log lines never split a message's line. */
static pid_t spawn_split(const char *const *args, const char *out_path, const char *log_path)
{
    char *argv[8];
    size_t n = 0;
    argv[n++] = TB_UNCONST(E2E_BIN); /* execv does not write its arguments */
    for (; args[n - 1] && n < 7; n++)
        argv[n] = TB_UNCONST(args[n - 1]);
    argv[n] = NULL;
    pid_t pid = tb_test_fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fo = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int fe = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fo < 0 || fe < 0)
            _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        execv(E2E_BIN, argv);
        _exit(127);
    }
    e2e_track(pid);
    return pid;
}

/* ------------------------------------------------------------ messages */

typedef struct msg {
    json_t *key;
    json_t *value; /* NULL: tombstone; else the payload */
    json_t *key_schema, *value_schema; /* Kafka Connect schemas, NULL when not wrapped */
} msg;

typedef struct msgs {
    msg *v;
    size_t n, cap;
} msgs;

static json_t *payload(json_t *j)
{
    json_t *p = json_is_object(j) ? json_object_get(j, "payload") : NULL;
    if (p && json_object_get(j, "schema")) {
        json_incref(p);
        json_decref(j);
        return p;
    }
    return j;
}

static json_t *schema_of(json_t *j)
{
    json_t *s = json_is_object(j) && json_object_get(j, "payload") ? json_object_get(j, "schema") : NULL;
    return s ? json_incref(s) : NULL;
}

static void msgs_push(msgs *m, json_t *key, json_t *value)
{
    json_t *ks = schema_of(key), *vs = schema_of(value);
    key = payload(key);
    value = value ? payload(value) : NULL;
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->v = realloc(m->v, m->cap * sizeof(msg));
        cr_assert_not_null(m->v);
    }
    m->v[m->n++] = (msg){key, value, ks, vs};
}

static void msgs_free(msgs *m)
{
    for (size_t i = 0; i < m->n; i++) {
        json_decref(m->v[i].key);
        json_decref(m->v[i].value);
        json_decref(m->v[i].key_schema);
        json_decref(m->v[i].value_schema);
    }
    free(m->v);
    *m = (msgs){0};
}

/* A fixture set: its folder under FIX, the database, its SQL and tables. */
typedef struct fixset {
    const char *dir;
    const char *db;
    const char *setup, *dml;
    const char *tables[8]; /* NULL-terminated */
    size_t snapshot_rows;  /* initial rows, all tables */
    const char *lossy[4];  /* "db.table column c: BIGINT UNSIGNED" WARNs under bigint long mode */
    /* Debezium's messages that tributary does not write, by design (NULL: none) */
    bool (*skip)(const char *table, json_t *value);
    /* a field whose values differ by design: true when ours and Debezium's are the known pair */
    bool (*accept)(const char *table, const char *field, json_t *ours, json_t *theirs);
} fixset;

/* The extra set's differences by design:
 *  - XA: MariaDB logs an XA transaction's rows at XA PREPARE; Debezium 3.6.1
 *    ignores the XA statements and writes them then, also when XA ROLLBACK
 *    follows. tributary writes them at XA COMMIT only, so the rolled-back
 *    transaction's two messages ('xa rollback', 'xa rolled') are Debezium's only.
 *  - UUID: Debezium's binlog path reads the 16 bytes one byte early
 *    ("123e4567-..." streamed as "00123e45-67e8-..."); its snapshot has the
 *    value right, and tributary writes the right one in both.
 *  - n_expr DEFAULT CURRENT_TIMESTAMP: the row that takes the default holds
 *    the time of its INSERT, which differs from run to run. */
static bool extra_skip(const char *table, json_t *value)
{
    if (strcmp(table, "xa") != 0 || !value)
        return false;
    const char *v = json_string_value(json_object_get(json_object_get(value, "after"), "v"));
    return v && (strcmp(v, "xa rollback") == 0 || strcmp(v, "xa rolled") == 0);
}

static bool extra_accept(const char *table, const char *field, json_t *ours, json_t *theirs)
{
    if (strcmp(table, "vals") == 0 && strcmp(field, "u") == 0 && json_is_string(ours) && json_is_string(theirs)) {
        char hex[40] = "00", shifted[40];
        size_t n = 2;
        for (const char *p = json_string_value(ours); *p && n < 34; p++)
            if (*p != '-')
                hex[n++] = *p;
        if (n != 34)
            return false;
        /* Debezium's: a 0 byte, then the first 15 bytes, as 8-4-4-4-12 */
        snprintf(shifted, sizeof shifted, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
        return strcmp(shifted, json_string_value(theirs)) == 0;
    }
    if (strcmp(table, "dflt") == 0 && strcmp(field, "n_expr") == 0)
        return json_is_integer(ours) && json_is_integer(theirs) && json_integer_value(ours) > 1600000000000LL &&
               json_integer_value(theirs) > 1600000000000LL;
    return false;
}

static const fixset GOLDEN = {".", "golden", "golden.sql", "golden_dml.sql", {"pairs", "types", NULL}, 6,
                              {"golden.types column c_bigint_u: BIGINT UNSIGNED",
                               "golden.pairs column p_num: BIGINT UNSIGNED", NULL},
                              NULL, NULL};
static const fixset EXTRA = {"extra", "extra", "extra.sql", "extra_dml.sql", {"vals", "dflt", "dtk", "xa", NULL}, 8,
                             {"extra.dflt column n_bigint_u: BIGINT UNSIGNED", NULL},
                             extra_skip, extra_accept};

/* The fixture's dump: "key<TAB>value" per line, value NULL for a tombstone. */
static void load_fixture(const fixset *fs, const char *variant, const char *table, msgs *out)
{
    char path[512];
    snprintf(path, sizeof path, FIX "/%s/%s/%s.tsv", fs->dir, variant, table);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert(e2e_slurp(path, &b), "cannot read %s", path);
    char *s = b.data;
    while (s && *s) {
        char *nl = strchr(s, '\n');
        if (nl)
            *nl = '\0';
        char *tab = strchr(s, '\t');
        cr_assert_not_null(tab, "%s: no TAB", path);
        *tab = '\0';
        json_error_t je;
        json_t *k = json_loads(s, JSON_DECODE_ANY, &je);
        cr_assert_not_null(k, "%s: key %s: %s", path, s, je.text);
        json_t *v = NULL;
        if (strcmp(tab + 1, "NULL") != 0) {
            v = json_loads(tab + 1, 0, &je);
            cr_assert_not_null(v, "%s: value: %s", path, je.text);
        }
        json_t *pv = v && json_object_get(v, "payload") ? json_object_get(v, "payload") : v;
        if (fs->skip && fs->skip(table, pv)) {
            json_decref(k);
            json_decref(v);
        } else
            msgs_push(out, k, v);
        s = nl ? nl + 1 : NULL;
    }
    tb_buf_free(&b);
}

/* Our messages of topic from the stdout sink's lines in log. */
static size_t load_ours(const char *path, const char *topic, msgs *out)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    e2e_slurp(path, &b);
    char *s = b.data;
    size_t n = 0;
    while (s && *s) {
        char *nl = strchr(s, '\n');
        if (!nl)
            break; /* a line still being written */
        *nl = '\0';
        if (strncmp(s, "{\"topic\":", 9) == 0) {
            json_error_t je;
            json_t *line = json_loads(s, 0, &je);
            cr_assert_not_null(line, "%s: %s: %.300s", path, je.text, s);
            if (strcmp(json_string_value(json_object_get(line, "topic")), topic) == 0) {
                n++;
                if (out) {
                    json_t *v = json_object_get(line, "value");
                    msgs_push(out, json_incref(json_object_get(line, "key")), json_is_null(v) ? NULL : json_incref(v));
                }
            }
            json_decref(line);
        }
        s = nl + 1;
    }
    tb_buf_free(&b);
    return n;
}

/* JSON values equal; numbers by value (Java writes 1.0E10 where we write 10000000000). */
static bool same(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) if (!same(v, json_object_get(b, k))) return false;
        return true;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    return json_equal(a, b);
}

static char *dump(json_t *j) { return j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : strdup("(none)"); }

/* Compare one row image field by field; returns the number of differences. */
static int cmp_row(const fixset *fs, const char *table, const char *where, const char *img, json_t *ours,
                   json_t *theirs)
{
    if (json_is_null(ours) && json_is_null(theirs))
        return 0;
    if (!json_is_object(ours) || !json_is_object(theirs)) {
        char *a = dump(ours), *b = dump(theirs);
        cr_log_error("%s %s: ours %s, Debezium's %s", where, img, a, b);
        free(a);
        free(b);
        return 1;
    }
    int bad = 0;
    const char *k;
    json_t *tv;
    json_object_foreach(theirs, k, tv)
    {
        json_t *ov = json_object_get(ours, k);
        if (ov && same(ov, tv))
            continue;
        if (ov && fs->accept && fs->accept(table, k, ov, tv))
            continue; /* a difference by design (see fixset) */
        char *a = dump(ov), *b = dump(tv);
        cr_log_error("%s %s.%s: ours %s, Debezium's %s", where, img, k, a, b);
        free(a);
        free(b);
        bad++;
    }
    json_object_foreach(ours, k, tv) if (!json_object_get(theirs, k))
    {
        cr_log_error("%s %s.%s: only in ours", where, img, k);
        bad++;
    }
    return bad;
}

static int cmp_messages(const fixset *fs, const char *variant, const char *table, msgs *ours, msgs *theirs)
{
    int bad = 0;
    cr_expect_eq(ours->n, theirs->n, "%s %s: %zu messages, Debezium wrote %zu", variant, table, ours->n, theirs->n);
    if (ours->n != theirs->n)
        bad++;
    for (size_t i = 0; i < ours->n && i < theirs->n; i++) {
        char where[128];
        snprintf(where, sizeof where, "%s %s #%zu", variant, table, i);
        msg *o = &ours->v[i], *t = &theirs->v[i];
        if (!same(o->key, t->key)) {
            char *a = dump(o->key), *b = dump(t->key);
            cr_log_error("%s key: ours %s, Debezium's %s", where, a, b);
            free(a);
            free(b);
            bad++;
        }
        if (t->key_schema && !same(o->key_schema, t->key_schema)) {
            char *a = dump(o->key_schema), *b = dump(t->key_schema);
            cr_log_error("%s key schema: ours %s, Debezium's %s", where, a, b);
            free(a);
            free(b);
            bad++;
        }
        bool vs_ok = !t->value_schema || !o->value || same(o->value_schema, t->value_schema);
        if (!vs_ok) {
            char *a = dump(o->value_schema), *b = dump(t->value_schema);
            cr_log_error("%s value schema: ours %s, Debezium's %s", where, a, b);
            free(a);
            free(b);
            bad++;
        }
        if (!o->value || !t->value) {
            if (o->value || t->value) {
                cr_log_error("%s: tombstone in one only", where);
                bad++;
            }
            continue;
        }
        bad += cmp_row(fs, table, where, "before", json_object_get(o->value, "before"), json_object_get(t->value, "before"));
        bad += cmp_row(fs, table, where, "after", json_object_get(o->value, "after"), json_object_get(t->value, "after"));
        static const char *const top[] = {"op", "transaction"};
        for (size_t k = 0; k < 2; k++)
            if (!same(json_object_get(o->value, top[k]), json_object_get(t->value, top[k]))) {
                cr_log_error("%s: %s differs", where, top[k]);
                bad++;
            }
        static const char *const env_times[] = {"ts_ms", "ts_us", "ts_ns"};
        for (size_t k = 0; k < 3; k++)
            if (!json_is_integer(json_object_get(o->value, env_times[k]))) {
                cr_log_error("%s: no envelope %s", where, env_times[k]);
                bad++;
            }
        json_t *os = json_object_get(o->value, "source"), *ts = json_object_get(t->value, "source");
        const char *k;
        json_t *tv;
        json_object_foreach(ts, k, tv)
        {
            json_t *ov = json_object_get(os, k);
            if (!ov) {
                cr_log_error("%s: source.%s missing", where, k);
                bad++;
                continue;
            }
            if (!strcmp(k, "version") || !strcmp(k, "name") || !strncmp(k, "ts_", 3) || !strcmp(k, "file") ||
                !strcmp(k, "pos"))
                continue;
            bool snap = strcmp(json_string_value(json_object_get(ts, "snapshot")), "false") != 0;
            if (!strcmp(k, "gtid") || !strcmp(k, "server_id")) {
                bool ok = snap ? (!strcmp(k, "gtid") ? json_is_null(ov) : json_integer_value(ov) == 0)
                               : (!strcmp(k, "gtid") ? json_is_string(ov) : json_integer_value(ov) > 0);
                if (!ok) {
                    char *a = dump(ov);
                    cr_log_error("%s: source.%s %s", where, k, a);
                    free(a);
                    bad++;
                }
                continue;
            }
            if (!same(ov, tv)) {
                char *a = dump(ov), *b = dump(tv);
                cr_log_error("%s source.%s: ours %s, Debezium's %s", where, k, a, b);
                free(a);
                free(b);
                bad++;
            }
        }
    }
    return bad;
}

/* ------------------------------------------------------------ one variant */

/* Run the set's setup SQL, then tributary with the given settings, the DML
 * SQL while it streams; compare its messages with each listed fixture variant. */
static void golden_case(const fixset *fs, const char *prefix, const char *settings, const char *const *variants)
{
    char dir[256], cfgp[320], log[320], outp[320], path[512];
    char uniq[96];
    tb_itest_unique(uniq, sizeof uniq, "e2edbz");
    snprintf(dir, sizeof dir, "/tmp/%s", uniq);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(cfgp, sizeof cfgp, "%s/run.properties", dir);
    snprintf(log, sizeof log, "%s/run.log", dir);
    snprintf(outp, sizeof outp, "%s/messages.jsonl", dir);
    mysql_close(e2e_mysql()); /* waits for the server */
    snprintf(path, sizeof path, FIX "/%s/%s", fs->dir, fs->setup);
    run_sql_file(path);
    size_t nt = 0;
    char include[256] = "";
    for (; fs->tables[nt]; nt++) {
        size_t l = strlen(include);
        snprintf(include + l, sizeof include - l, "%s%s", nt ? "|" : "", fs->tables[nt]);
    }
    FILE *f = fopen(cfgp, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "name=%s\nsource.type=mysql\nsource.host=%s\nsource.port=%s\nsource.user=%s\nsource.password=%s\n"
            "source.server.id=%u\ntables.include=%s[.](%s)\ntopic.prefix=%s\nsink=stdout\n"
            "offsets.storage=file\noffsets.file=%s/offsets\nstatus.file=%s/status.json\nsnapshot.mode=initial\n"
            "heartbeat.interval.ms=200\nvalue.encoding=debezium\n%s",
            prefix, getenv("TRIBUTARY_TEST_MYSQL_HOST"), getenv("TRIBUTARY_TEST_MYSQL_PORT"),
            getenv("TRIBUTARY_TEST_MYSQL_USER"), getenv("TRIBUTARY_TEST_MYSQL_PASSWORD"),
            9000 + (unsigned)getpid() % 1000, fs->db, include, prefix, dir, dir, settings);
    fclose(f);
    const char *args[] = {"run", "--config", cfgp, NULL};
    pid_t pid = spawn_split(args, outp, log);
    char topic[8][128];
    for (size_t k = 0; k < nt; k++)
        snprintf(topic[k], sizeof topic[k], "%s.%s.%s", prefix, fs->db, fs->tables[k]);
    /* the snapshot's rows, then the changes while streaming */
    long long deadline = tb_itest_now_ms() + 60000;
    for (;;) {
        size_t got = 0;
        for (size_t k = 0; k < nt; k++)
            got += load_ours(outp, topic[k], NULL);
        if (got >= fs->snapshot_rows)
            break;
        cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", log);
        cr_assert(tb_itest_now_ms() < deadline, "no snapshot in 60 s; see %s", log);
        usleep(50000);
    }
    snprintf(path, sizeof path, FIX "/%s/%s", fs->dir, fs->dml);
    run_sql_file(path);
    msgs want[8] = {{0}}, got[8] = {{0}};
    for (size_t k = 0; k < nt; k++)
        load_fixture(fs, variants[0], fs->tables[k], &want[k]);
    for (size_t k = 0; k < nt; k++)
        while (load_ours(outp, topic[k], NULL) < want[k].n) {
            cr_assert_eq(e2e_wait(pid, 0), -2, "tributary run stopped early; see %s", log);
            cr_assert(tb_itest_now_ms() < deadline, "not all changes of %s in 60 s; see %s", topic[k], log);
            usleep(50000);
        }
    kill(pid, SIGTERM);
    cr_assert_eq(e2e_wait(pid, 30000), 0, "tributary run did not stop cleanly; see %s", log);
    e2e_assert_clean_log(log);
    /* BIGINT UNSIGNED under bigint.unsigned.handling.mode=long: one WARN per column */
    tb_buf lb;
    tb_buf_init(&lb, 0);
    cr_assert(e2e_slurp(log, &lb));
    bool precise = strstr(settings, "bigint.unsigned.handling.mode=precise") != NULL;
    for (size_t k = 0; fs->lossy[k]; k++) {
        const char *hit = strstr(tb_buf_cstr(&lb), fs->lossy[k]);
        if (precise)
            cr_assert_null(hit, "WARN with precise: %s", fs->lossy[k]);
        else
            cr_assert(hit && !strstr(hit + 1, fs->lossy[k]), "want one WARN \"%s\" in %s", fs->lossy[k], log);
    }
    tb_buf_free(&lb);
    for (size_t k = 0; k < nt; k++)
        load_ours(outp, topic[k], &got[k]);
    int bad = 0;
    for (size_t v = 0; variants[v]; v++)
        for (size_t k = 0; k < nt; k++) {
            if (v > 0) {
                msgs_free(&want[k]);
                load_fixture(fs, variants[v], fs->tables[k], &want[k]);
            }
            bad += cmp_messages(fs, variants[v], fs->tables[k], &got[k], &want[k]);
        }
    for (size_t k = 0; k < nt; k++) {
        msgs_free(&want[k]);
        msgs_free(&got[k]);
    }
    cr_assert_eq(bad, 0, "%d differences from Debezium's messages (listed above); log %s", bad, log);
    e2e_rmtree(dir);
}

static const char *const V_DEFAULTS[] = {"defaults-schemas", "defaults", NULL};
static const char *const V_STRING_PRECISE[] = {"string-precise-schemas", NULL};
static const char *const V_CONNECT[] = {"connect-time-schemas", NULL};
static const char *const V_HEX[] = {"binary-hex", NULL};
#define S_STRING_PRECISE                                                                                     \
    "debezium.decimal.handling.mode=string\ndebezium.bigint.unsigned.handling.mode=precise\nvalue.schemas=true\n" \
    "key.schemas=true\n"
#define S_CONNECT "debezium.time.precision.mode=connect\nvalue.schemas=true\nkey.schemas=true\n"

Test(e2e_debezium, defaults, .timeout = 180, .fini = e2e_kill_children)
{
    golden_case(&GOLDEN, "defaults_schemas", "value.schemas=true\nkey.schemas=true\n", V_DEFAULTS);
}

Test(e2e_debezium, string_precise, .timeout = 180, .fini = e2e_kill_children)
{
    golden_case(&GOLDEN, "string_precise_schemas", S_STRING_PRECISE, V_STRING_PRECISE);
}

Test(e2e_debezium, connect_time, .timeout = 180, .fini = e2e_kill_children)
{
    golden_case(&GOLDEN, "connect_time_schemas", S_CONNECT, V_CONNECT);
}

Test(e2e_debezium, binary_hex, .timeout = 180, .fini = e2e_kill_children)
{
    golden_case(&GOLDEN, "binary_hex", "debezium.binary.handling.mode=hex\n", V_HEX);
}

Test(e2e_debezium, extra_defaults, .timeout = 180, .fini = e2e_kill_children)
{
    golden_case(&EXTRA, "defaults_schemas", "value.schemas=true\nkey.schemas=true\n", V_DEFAULTS);
}

Test(e2e_debezium, extra_string_precise, .timeout = 180, .fini = e2e_kill_children)
{
    golden_case(&EXTRA, "string_precise_schemas", S_STRING_PRECISE, V_STRING_PRECISE);
}

Test(e2e_debezium, extra_connect_time, .timeout = 180, .fini = e2e_kill_children)
{
    golden_case(&EXTRA, "connect_time_schemas", S_CONNECT, V_CONNECT);
}

Test(e2e_debezium, extra_binary_hex, .timeout = 180, .fini = e2e_kill_children)
{
    golden_case(&EXTRA, "binary_hex", "debezium.binary.handling.mode=hex\n", V_HEX);
}
