/* Unit tests of snapshot/ and the mymeta pieces it reads with: labels, types, snapshot.mode, saved keys. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "evt_json.h"
#include "mymeta.h"
#include "snap.h"
#include "snap_inc_int.h"
#include "snap_inc_key.h"
#include "snap_schema.h"
#include "snap_sql.h"
#include "snap_values.h"

static cfg *mk(const char *const *kv)
{
    cfg *c = cfg_new();
    tb_error err;
    for (size_t i = 0; kv && kv[i]; i += 2)
        cr_assert_eq(cfg_set(c, kv[i], kv[i + 1], "test", &err), TB_OK, "%s", err.msg);
    return c;
}

Test(snapshot_unit, labels)
{
    char **l = NULL;
    size_t n = 0;
    cr_assert_eq(mymeta_parse_labels("enum('a','b''c','','x,y')", &l, &n), TB_OK);
    cr_assert_eq(n, 4);
    cr_assert_str_eq(l[0], "a");
    cr_assert_str_eq(l[1], "b'c");
    cr_assert_str_eq(l[2], "");
    cr_assert_str_eq(l[3], "x,y");
    mymeta_labels_free(l, n);
    cr_assert_eq(mymeta_parse_labels("set('p','q')", &l, &n), TB_OK);
    cr_assert_eq(n, 2);
    mymeta_labels_free(l, n);
    /* information_schema writes a label's backslash as two (MariaDB 10.11: the label a\b of
     * enum('a\\b') has COLUMN_TYPE enum('a\\b')); the binlog's TABLE_MAP carries a\b */
    cr_assert_eq(mymeta_parse_labels("enum('a\\\\b','c\\'d')", &l, &n), TB_OK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(l[0], "a\\b");
    cr_assert_str_eq(l[1], "c'd");
    mymeta_labels_free(l, n);
    cr_assert_neq(mymeta_parse_labels("enum('a", &l, &n), TB_OK);
    cr_assert_neq(mymeta_parse_labels("int(11)", &l, &n), TB_OK);
}

/* COLUMN_DEFAULT as MariaDB and MySQL write it. The integration test
 * e2e_statements checks MariaDB's forms against the server itself. */
static void dflt(const char *cd, const char *extra, bool mariadb, const char *want, bool want_expr)
{
    char *text = NULL;
    bool expr = true;
    cr_assert_eq(mymeta_parse_default(cd, extra, mariadb, &text, &expr), TB_OK);
    if (!want)
        cr_assert_null(text, "%s: %s", cd ? cd : "(null)", text);
    else
        cr_assert_str_eq(text, want, "%s", cd);
    cr_assert_eq(expr, want_expr, "%s", cd ? cd : "(null)");
    free(text);
}

Test(snapshot_unit, defaults)
{
    dflt(NULL, "", true, NULL, false);              /* no default */
    dflt("NULL", "", true, NULL, false);            /* DEFAULT NULL */
    dflt("'x'", "", true, "x", false);
    dflt("'it''s'", "", true, "it's", false);
    dflt("'a\\\\b'", "", true, "a\\b", false); /* a backslash is written as two */
    dflt("''", "", true, "", false);
    dflt("'NULL'", "", true, "NULL", false);        /* the string NULL */
    dflt("42", "", true, "42", false);
    dflt("-1.50", "", true, "-1.50", false);
    dflt("current_timestamp()", "", true, "current_timestamp()", true);
    dflt("uuid()", "", true, "uuid()", true);
    dflt("'a' + 1", "", true, "'a' + 1", true);
    dflt(NULL, "", false, NULL, false);
    dflt("x", "", false, "x", false);               /* MySQL: literals unquoted */
    dflt("CURRENT_TIMESTAMP", "DEFAULT_GENERATED", false, "CURRENT_TIMESTAMP", true);
    dflt("CURRENT_TIMESTAMP", "", false, "CURRENT_TIMESTAMP", true);
    dflt("(rand() * 10)", "DEFAULT_GENERATED", false, "(rand() * 10)", true);
}

Test(snapshot_unit, types)
{
    cr_assert_eq(mymeta_type("bigint"), EVT_T_BIGINT);
    cr_assert_eq(mymeta_type("LONGBLOB"), EVT_T_BLOB);
    cr_assert_eq(mymeta_type("point"), EVT_T_GEOMETRY);
    cr_assert_eq(mymeta_type("mediumtext"), EVT_T_TEXT);
    cr_assert_eq(mymeta_type("nonsense"), EVT_T_UNKNOWN);
}

Test(snapshot_unit, decide)
{
    const char *modes[] = {"initial", "initial_only", "never", "when_needed"};
    /* expected[mode][have_offset][still_on_server] */
    const bool expected[4][2][2] = {
        {{true, true}, {false, false}},
        {{true, true}, {false, false}},
        {{false, false}, {false, false}},
        {{true, true}, {true, false}},
    };
    for (int m = 0; m < 4; m++) {
        const char *kv[] = {"snapshot.mode", modes[m], NULL};
        cfg *c = mk(kv);
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 2; s++)
                cr_assert_eq(snap_decide(c, h, s), expected[m][h][s], "mode %s have %d still %d", modes[m], h, s);
        cr_assert_eq(snap_then_stream(c), m != 1);
        cfg_free(c);
    }
}

Test(snapshot_unit, key_json_roundtrip)
{
    evt_table *t = evt_table_new("d", "t", 4);
    evt_table_set_column(t, 0, "a", EVT_T_BIGINT, "bigint unsigned", false, true);
    evt_table_set_column(t, 1, "b", EVT_T_VARCHAR, "varchar(10)", false, false);
    evt_table_set_column(t, 2, "c", EVT_T_DATETIME, "datetime(3)", false, false);
    evt_table_set_column(t, 3, "e", EVT_T_VARBINARY, "varbinary(4)", false, false);
    size_t pk[4] = {0, 1, 2, 3};
    evt_table_set_pk(t, pk, 4);
    evt_table_seal(t);
    evt_event *ev = evt_event_new(EVT_OP_READ, t);
    evt_set_uint(ev, EVT_AFTER, 0, UINT64_MAX);
    evt_set_string(ev, EVT_AFTER, 1, "h\xc3\xa9\"", 4);
    evt_temporal tm = {.year = 2024, .month = 2, .day = 29, .hour = 23, .minute = 59, .second = 58, .usec = 123000, .fsp = 3};
    evt_set_temporal(ev, EVT_AFTER, 2, EVT_V_DATETIME, &tm);
    evt_set_bytes(ev, EVT_AFTER, 3, "\x00\xff", 2);
    snap_key k = {0}, k2 = {0};
    tb_error err;
    cr_assert_eq(snap_key_from_event(&k, ev, &err), TB_OK, "%s", err.msg);
    tb_buf b;
    tb_buf_init(&b, 0);
    evt_jw w;
    evt_jw_init(&w, &b);
    snap_key_to_json(&k, &w);
    cr_assert_eq(evt_jw_finish(&w), TB_OK);
    evt_jv *v = NULL;
    cr_assert_eq(evt_jv_parse(b.data, b.len, &v, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(snap_key_from_json(&k2, v, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(k2.n, 4);
    cr_assert_eq((unsigned long long)k2.p[0].i, (unsigned long long)UINT64_MAX);
    cr_assert_eq(k2.p[0].t, 'u');
    cr_assert_eq(k2.p[1].len, 4);
    cr_assert_eq(memcmp(k2.p[1].s, "h\xc3\xa9\"", 4), 0);
    cr_assert_eq(k2.p[2].tm.day, 29);
    cr_assert_eq(k2.p[2].tm.second_part, 123000);
    cr_assert_eq(k2.p[3].len, 2);
    cr_assert_eq(memcmp(k2.p[3].s, "\x00\xff", 2), 0);
    evt_jv_free(v);
    tb_buf_free(&b);
    snap_key_free(&k);
    snap_key_free(&k2);
    evt_event_free(ev);
    evt_table_unref(t);
}

/* The snapshot's connections use the one list of retriable MySQL errors (mysqlconn/): a
 * connection that cannot be opened (client error 2002, no server on the socket) may open when
 * tried again; the snapshot's own list knew 2003 but not 2002. */
Test(snapshot_unit, connection_errors_are_retriable)
{
    MYSQL *my = mysql_init(NULL);
    cr_assert_not_null(my);
    cr_assert_null(mysql_real_connect(my, "localhost", "u", "p", NULL, 0, "/nonexistent/tributary-test.sock", 0));
    cr_assert_eq(mysql_errno(my), 2002, "%u %s", mysql_errno(my), mysql_error(my));
    tb_error err;
    cr_assert_eq(snap_sql_fail(my, &err, "connect"), TB_ERR_SOURCE);
    cr_expect(err.retriable, "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "mysql error 2002"), "%s", err.msg);
    mysql_close(my);
}

/* mymeta_period: a system-versioned table's period from its catalog rows. */
Test(snapshot_unit, system_versioning_period)
{
    mymeta_period p = {0};
    mymeta_period_table(&p, "t", "T", "SYSTEM VERSIONED"); /* the other case variant's row */
    cr_assert(!p.versioned);
    mymeta_period_table(&p, "t", "t", "BASE TABLE");
    cr_assert(!p.versioned);
    mymeta_period_table(&p, "t", "t", "SYSTEM VERSIONED");
    cr_assert(p.versioned);
    mymeta_period_column(&p, "id", NULL);
    cr_assert(mymeta_period_implicit(&p), "no ROW END column: the implicit period");
    cr_assert_str_eq(p.start, "row_start");
    cr_assert_str_eq(p.end, "row_end");
    cr_assert(!mymeta_period_keeps_key(&p, "row_end"));
    cr_assert(mymeta_period_keeps_key(&p, "id"));

    mymeta_period q = {0};
    mymeta_period_table(&q, "e", "e", "SYSTEM VERSIONED");
    mymeta_period_column(&q, "s", "ROW START");
    mymeta_period_column(&q, "until", "ROW END");
    mymeta_period_column(&q, "g", "a + 1"); /* a generated column */
    cr_assert(!mymeta_period_implicit(&q));
    cr_assert_str_eq(q.start, "s");
    cr_assert_str_eq(q.end, "until");
    cr_assert(!mymeta_period_keeps_key(&q, "until"));
    cr_assert(mymeta_period_keeps_key(&q, "g"));

    mymeta_period plain = {0}; /* not versioned: every key column stays, even one named row_end */
    mymeta_period_column(&plain, "row_end", NULL);
    cr_assert(!mymeta_period_implicit(&plain));
    cr_assert(mymeta_period_keeps_key(&plain, "row_end"));
}

/* ------------------------------------------------------------ incremental-snapshot state file */

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snap_incremental.h"
#include "tb_file.h"

static bool exists(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    tb_error err;
    cr_assert_eq(tb_file_write_atomic(p, text, strlen(text), &err), TB_OK, "%s", err.msg);
}

/* A connector with offsets.file=<dir>/offsets, the given name and storage. */
static cfg *conn(const char *dir, const char *name, const char *storage)
{
    char off[400];
    snprintf(off, sizeof off, "%s/offsets", dir);
    const char *kv[] = {"name", name, "offsets.storage", storage, "offsets.file", off, NULL};
    return mk(kv);
}

/* Opens the default state of c; the initial snapshot of `table` is queued
 * when table is set. Returns whether a snapshot is pending after opening. */
static bool open_state(cfg *c, const char *table)
{
    snap_inc *si = NULL;
    tb_error err;
    cr_assert_eq(snap_inc_open(c, NULL, NULL, &si, &err), TB_OK, "%s", err.msg);
    bool pending = snap_inc_active(si);
    if (table) {
        char *t[] = {strdup(table)};
        cr_assert_eq(snap_inc_begin_initial(si, t, NULL, 1, &err), TB_OK, "%s", err.msg);
        free(t[0]);
    }
    snap_inc_close(si);
    return pending;
}

static void rm_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static tb_code open_fails(cfg *c, tb_error *err)
{
    snap_inc *si = NULL;
    tb_code rc = snap_inc_open(c, NULL, NULL, &si, err);
    cr_assert_null(si);
    return rc;
}

/* Offsets in Kafka: connectors sharing a folder and an offsets.file keep
 * their snapshot progress apart (<folder>/<name>.incsnap); offsets in a file:
 * <offsets.file>.incsnap, the offsets file being the connector's own. */
Test(snapshot_unit, state_file_is_the_connectors_own)
{
    char dir[] = "/tmp/tb_incstate_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cfg *a = conn(dir, "shop", "kafka"), *b = conn(dir, "billing", "kafka");
    cr_assert_not(open_state(a, "db.orders"));
    cr_assert(exists(dir, "shop.incsnap"));
    cr_assert_not(exists(dir, "offsets.incsnap"));
    cr_assert_not(open_state(b, NULL), "billing resumed the snapshot of shop");
    cr_assert(open_state(a, NULL), "shop lost its snapshot");

    cfg *f = conn(dir, "shop", "file");
    cr_assert_not(open_state(f, "db.orders"));
    cr_assert(exists(dir, "offsets.incsnap"));
    cr_assert(open_state(f, NULL));

    /* a file naming another connector is refused, not resumed */
    cfg *g = conn(dir, "billing", "file");
    tb_error err;
    cr_assert_eq(open_fails(g, &err), TB_ERR_CONFIG);
    cr_assert_not_null(strstr(err.msg, "offsets.incsnap"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "connector 'shop', not of 'billing'"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "its own offsets.file"), "%s", err.msg);
    cfg_free(a);
    cfg_free(b);
    cfg_free(f);
    cfg_free(g);
    rm_dir(dir);
}

/* Offsets in Kafka, a state at <offsets.file>.incsnap where earlier versions
 * kept it for every connector of the folder: moved when it names the
 * connector, left to the one it names, ignored when it has nothing left to
 * read, refused with the way out when it has tables left and no name. */
Test(snapshot_unit, state_file_of_earlier_versions)
{
    char dir[] = "/tmp/tb_incstate_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cfg *a = conn(dir, "shop", "kafka"), *b = conn(dir, "billing", "kafka");
    const char *queued = "{\"connector\":\"shop\",\"last_signal_id\":0,\"queue\":[\"db.orders\"],\"chunks\":3,"
                         "\"rows\":300,\"key\":null,\"initial\":true,\"fresh\":[]}";
    put(dir, "offsets.incsnap", queued);
    cr_assert_not(open_state(b, NULL), "billing took the state of shop");
    cr_assert(exists(dir, "offsets.incsnap"));
    cr_assert(open_state(a, NULL), "shop did not resume its snapshot");
    cr_assert_not(exists(dir, "offsets.incsnap"));
    cr_assert(exists(dir, "shop.incsnap"));

    /* no name, nothing left to read: ignored and left */
    cfg *c = conn(dir, "crm", "kafka");
    put(dir, "offsets.incsnap", "{\"last_signal_id\":4,\"queue\":[],\"chunks\":0,\"rows\":0,\"key\":null}");
    cr_assert_not(open_state(c, NULL));
    cr_assert(exists(dir, "offsets.incsnap"));

    /* no name, tables left: refused, naming both files */
    put(dir, "offsets.incsnap", "{\"last_signal_id\":4,\"queue\":[\"db.x\"],\"chunks\":1,\"rows\":9,\"key\":null}");
    tb_error err;
    cr_assert_eq(open_fails(c, &err), TB_ERR_CONFIG);
    char want[600];
    snprintf(want, sizeof want, "rename the file to %s/crm.incsnap", dir);
    cr_assert_not_null(strstr(err.msg, want), "%s", err.msg);
    snprintf(want, sizeof want, "%s/offsets.incsnap: ", dir);
    cr_assert_not_null(strstr(err.msg, want), "%s", err.msg);
    /* the way out works */
    char from[600], to[600];
    snprintf(from, sizeof from, "%s/offsets.incsnap", dir);
    snprintf(to, sizeof to, "%s/crm.incsnap", dir);
    cr_assert_eq(rename(from, to), 0);
    cr_assert(open_state(c, NULL), "crm did not resume the renamed state");
    cfg_free(a);
    cfg_free(b);
    cfg_free(c);
    rm_dir(dir);
}

/* The queue of the state file opened as of `resume` (NULL: none), as "a,b,...". */
static void queue_at(cfg *c, const char *resume, char *out, size_t cap)
{
    tb_position p;
    tb_position_init(&p);
    tb_error err;
    if (resume)
        cr_assert_eq(tb_position_parse(resume, &p, &err), TB_OK, "%s", err.msg);
    snap_inc *si = NULL;
    cr_assert_eq(snap_inc_open(c, NULL, resume ? &p : NULL, &si, &err), TB_OK, "%s", err.msg);
    out[0] = '\0';
    for (size_t i = 0; i < si->nqueue; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "", si->queue[i]);
    snap_inc_close(si);
    tb_position_free(&p);
}

static void save_at(snap_inc *si, const char *pos)
{
    tb_position p;
    tb_position_init(&p);
    tb_error err;
    cr_assert_eq(tb_position_parse(pos, &p, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(snap_inc_push_save(si, &p, &err), TB_OK, "%s", err.msg);
    tb_position_free(&p);
}

/* A table queued at a position (a signal, a RENAME) reaches the state file
 * before the commit that passes that position (snap_inc_before_commit): a
 * kill -9 after the commit and before the state file's write resumes it,
 * and a commit that never happened (the run resumes from before it) does
 * not. Progress alone is written only after its commit. */
Test(snapshot_unit, state_file_pending_until_committed)
{
    char dir[] = "/tmp/tb_incstate_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cfg *c = conn(dir, "shop", "file");
    const char *p1 = "mariadb;server_id=1;file=bin.000002;pos=500;row=0;gtid=0-1-7",
               *before = "mariadb;server_id=1;file=bin.000002;pos=400;row=0;gtid=0-1-6",
               *after = "mariadb;server_id=1;file=bin.000002;pos=900;row=0;gtid=0-1-9",
               *next_file = "mariadb;server_id=1;file=bin.000003;pos=4;row=0;gtid=0-1-9",
               *gtid_only = "mariadb;server_id=1;pos=0;row=0;gtid=0-1-9";
    snap_inc *si = NULL;
    tb_error err;
    cr_assert_eq(snap_inc_open(c, NULL, NULL, &si, &err), TB_OK, "%s", err.msg);
    char *t[] = {"db.a"};
    cr_assert_eq(snap_inc_begin_initial(si, t, NULL, 1, &err), TB_OK, "%s", err.msg);

    /* progress only: nothing written before its commit */
    si->chunks = 1;
    save_at(si, before);
    cr_assert_eq(snap_inc_before_commit(si, &err), TB_OK, "%s", err.msg);
    char q[200];
    queue_at(c, after, q, sizeof q);
    cr_assert_str_eq(q, "db.a");

    /* a queued table: pending at its position, in force from there on */
    cr_assert_eq(snap_inc_queue_push(si, "db.b"), TB_OK);
    save_at(si, p1);
    cr_assert_eq(snap_inc_before_commit(si, &err), TB_OK, "%s", err.msg);
    queue_at(c, after, q, sizeof q); /* the kill -9 after the commit at `after` */
    cr_assert_str_eq(q, "db.a,db.b", "the queued snapshot was lost");
    queue_at(c, next_file, q, sizeof q);
    cr_assert_str_eq(q, "db.a,db.b");
    queue_at(c, p1, q, sizeof q);
    cr_assert_str_eq(q, "db.a,db.b");
    queue_at(c, before, q, sizeof q); /* the commit never happened */
    cr_assert_str_eq(q, "db.a");
    queue_at(c, NULL, q, sizeof q);
    cr_assert_str_eq(q, "db.a");
    queue_at(c, gtid_only, q, sizeof q); /* cannot be ordered: the committed state */
    cr_assert_str_eq(q, "db.a");

    /* a commit between the two saves: the later one stays pending in the file */
    tb_position p;
    tb_position_init(&p);
    cr_assert_eq(tb_position_parse(before, &p, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(snap_inc_committed(si, &p, &err), TB_OK, "%s", err.msg);
    queue_at(c, before, q, sizeof q);
    cr_assert_str_eq(q, "db.a");
    queue_at(c, after, q, sizeof q);
    cr_assert_str_eq(q, "db.a,db.b", "the commit of the first save dropped the pending second");
    /* its commit: the committed state itself */
    cr_assert_eq(tb_position_parse(after, &p, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(snap_inc_committed(si, &p, &err), TB_OK, "%s", err.msg);
    queue_at(c, NULL, q, sizeof q);
    cr_assert_str_eq(q, "db.a,db.b");
    char path[600];
    snprintf(path, sizeof path, "%s/offsets.incsnap", dir);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(tb_file_read(path, 1 << 20, &b, &err), TB_OK, "%s", err.msg);
    cr_assert_null(strstr(tb_buf_cstr(&b), "pending"), "%s", tb_buf_cstr(&b));
    tb_buf_free(&b);
    tb_position_free(&p);
    snap_inc_close(si);

    /* a pending entry that cannot be read is an error naming the file */
    char bad[700];
    snprintf(bad, sizeof bad,
             "{\"connector\":\"shop\",\"last_signal_id\":0,\"queue\":[],\"chunks\":0,\"rows\":0,\"key\":null,"
             "\"pending\":[{\"pos\":\"nonsense\",\"state\":{}}]}");
    put(dir, "offsets.incsnap", bad);
    tb_position r;
    tb_position_init(&r);
    cr_assert_eq(tb_position_parse(after, &r, &err), TB_OK, "%s", err.msg);
    si = NULL;
    cr_assert_neq(snap_inc_open(c, NULL, &r, &si, &err), TB_OK);
    cr_assert_null(si);
    cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
    tb_position_free(&r);
    cfg_free(c);
    rm_dir(dir);
}
