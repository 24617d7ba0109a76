/*
 * tributary cache publish: the topics rebuilt from the table cache (DESIGN 9,
 * the other direction of `tributary cache`; docs/cache.md).
 *
 * Reads the cache file read-only (cache_read.h), rebuilds each selected
 * table's descriptor from the cache's metadata, and sends every row as a
 * snapshot read event (op "r", connector "cache") through the Kafka sink,
 * exactly like a snapshot: the sink creates the compacted topics, writes the
 * schema record first, renders canonical keys and values. One source
 * transaction per table with no position (TB_POS_NONE); the sink is flushed
 * per table and never committed, so no offsets record is written.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "cache_read.h"
#include "evt.h"
#include "evt_json.h"
#include "ksink.h"
#include "tb_clock.h"
#include "tb_log.h"

#define PUB_FLUSH_MS 60000

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tributary cache publish --db PATH --brokers HOST:PORT [--prefix P] [--tables REGEX]\n"
            "                               [--config FILE] [--set key=value]...\n"
            "\n"
            "Rebuilds the topics from the table cache: every row of every cache table \"<db>.<table>\"\n"
            "matching --tables (POSIX extended regex, default: all) is sent as a snapshot read event\n"
            "(op \"r\", source connector \"cache\") to <prefix>.<db>.<table> (compacted), after the\n"
            "table's schema record on <prefix>.schema. value.format, oversize.policy, topic.* and\n"
            "kafka.* apply as for `run`. No offsets record is written. The cache file is opened\n"
            "read-only (a running `tributary cache` may keep writing it).\n"
            "\n"
            "  --db PATH       the cache file (or cache.path)\n"
            "  --brokers B     kafka.bootstrap.servers\n"
            "  --prefix P      topic.prefix (default: the prefix of each table's recorded topic)\n"
            "  --tables REGEX  tables to publish, matched against \"<db>.<table>\"\n"
            "\n"
            "Tables whose columns the cache inferred (no schema record was seen) are refused: their\n"
            "types are unknown. Exit 0 only when every message was acknowledged; one summary line\n"
            "per table on stderr.\n");
}

/* State of one table's rows while cache_iter walks them. */
typedef struct pub_ctx {
    ksink *ks;
    evt_table *t;
    const char *name;         /* "<db>.<table>" */
    evt_event *cur, *pend;    /* the row being built; the row waiting to be sent */
    bool have_pend;
    int64_t now_ms;
    uint64_t rows;
    tb_buf scratch;
    tb_code rc;
    tb_error *err;
} pub_ctx;

/* The row's key as canonical JSON (for messages), "?" when it cannot be rendered. */
static const char *event_key(pub_ctx *x, const evt_event *e)
{
    tb_buf_reset(&x->scratch);
    tb_error ignored;
    if (evt_json_key(e, EVT_AFTER, &x->scratch, &ignored) != TB_OK)
        return "?";
    return tb_buf_cstr(&x->scratch);
}

static tb_code send_pending(pub_ctx *x, evt_snapshot_flag flag, bool last_in_tx)
{
    evt_event_set_snapshot(x->pend, flag);
    evt_event_set_last_in_tx(x->pend, last_in_tx);
    tb_code rc = ksink_send(x->ks, x->pend, x->err);
    if (rc != TB_OK)
        return tb_error_prefix(x->err, rc, "table \"%s\", key %s: ", x->name, event_key(x, x->pend));
    x->have_pend = false;
    x->rows++;
    return TB_OK;
}

/* Fill x->cur from one row object of cache_iter (wire-format JSON): each
 * member goes in as its canonical JSON text (EVT_V_JSON is written verbatim,
 * so values and keys render byte for byte as the cache read them). */
static tb_code build_row(pub_ctx *x, const char *row, size_t len)
{
    evt_jv *v = NULL;
    evt_jw w;
    tb_code rc = evt_jv_parse(row, len, &v, x->err);
    if (rc != TB_OK)
        return tb_error_prefix(x->err, rc, "table \"%s\": unreadable row %.200s: ", x->name, row);
    evt_event_reset(x->cur, EVT_OP_READ, x->t);
    for (size_t i = 0; rc == TB_OK && i < evt_jv_size(v); i++) {
        size_t kl;
        const char *k = evt_jv_key_at(v, i, &kl);
        const evt_jv *m = evt_jv_at(v, i);
        long col = evt_table_find(x->t, k);
        if (col < 0) {
            rc = tb_error_set(x->err, TB_ERR_INVALID, false, "table \"%s\": row %.200s: unknown column \"%s\"",
                              x->name, row, k);
            break;
        }
        if (evt_jv_type_of(m) == EVT_JV_NULL) {
            evt_set_null(x->cur, EVT_AFTER, (size_t)col);
            continue;
        }
        tb_buf_reset(&x->scratch);
        evt_jw_init(&w, &x->scratch);
        if (evt_jv_write(m, &w) != TB_OK || evt_jw_finish(&w) != TB_OK)
            rc = tb_error_set(x->err, TB_ERR_INVALID, false, "table \"%s\": row %.200s: column \"%s\" unreadable",
                              x->name, row, k);
        else
            evt_set_json(x->cur, EVT_AFTER, (size_t)col, x->scratch.data, x->scratch.len);
    }
    evt_jv_free(v);
    if (rc != TB_OK)
        return rc;
    const tb_error *be = evt_event_error(x->cur);
    if (be)
        return tb_error_set(x->err, be->code, false, "table \"%s\", key %s: %s", x->name, event_key(x, x->cur),
                            be->msg);
    evt_event_set_connector(x->cur, EVT_CONN_CACHE);
    evt_event_set_commit_ts_ms(x->cur, x->now_ms);
    return TB_OK;
}

/* cache_iter callback: build the row, then send the one before it (the
 * look-ahead tells the last row of the publish apart). */
static int on_row(const char *row, size_t len, void *opaque)
{
    pub_ctx *x = opaque;
    if (app_stop_requested) {
        x->rc = tb_error_set(x->err, TB_ERR_STOPPED, false, "table \"%s\": interrupted after %llu rows",
                             x->name, (unsigned long long)x->rows);
        return 1;
    }
    if ((x->rc = build_row(x, row, len)) != TB_OK)
        return 1;
    if (x->have_pend && (x->rc = send_pending(x, EVT_SNAPSHOT_TRUE, false)) != TB_OK)
        return 1;
    evt_event *tmp = x->pend;
    x->pend = x->cur;
    x->cur = tmp;
    x->have_pend = true;
    ksink_poll(x->ks, 0);
    return 0;
}

static int has_a_row(const char *row, size_t len, void *opaque)
{
    (void)row;
    (void)len;
    *(bool *)opaque = true;
    return 1;
}

/* The descriptor of cache table i: columns in order with their recorded types,
 * the key in key order. *out: one reference, the caller unrefs it. */
static tb_code build_table(cache_db *db, size_t i, const cache_table_info *ti, evt_table **out, tb_error *err)
{
    tb_code rc = TB_OK;
    const char *dot = strchr(ti->name, '.');
    char *dbname = dot ? strndup(ti->name, (size_t)(dot - ti->name)) : NULL;
    size_t *pk = calloc(ti->npk + 1, sizeof(*pk));
    evt_table *t = dbname ? evt_table_new(dbname, dot + 1, ti->ncols) : NULL;
    *out = NULL;
    if (!dot) {
        rc = tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\": the name is not <db>.<table>", ti->name);
        goto out;
    }
    if (!t || !pk) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (size_t c = 0; rc == TB_OK && c < ti->ncols; c++) {
        cache_column_info ci;
        tb_ignore(cache_db_column(db, i, c, &ci)); /* c < ti->ncols: found */
        evt_type ty = evt_type_from_name(ci.type);
        if (ty == EVT_T_UNKNOWN) {
            rc = tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\", column \"%s\": unknown type \"%s\"",
                              ti->name, ci.name, ci.type);
            break;
        }
        rc = evt_table_set_column(t, c, ci.name, ty, ci.is_bool ? "bit(1)" : NULL, ci.pk == 0, ci.is_unsigned);
        if (rc == TB_OK && ci.is_bool)
            rc = evt_table_set_column_details(t, c, 1, 0, 0, NULL);
        if (rc == TB_OK && ci.pk > 0 && (size_t)ci.pk <= ti->npk)
            pk[ci.pk - 1] = c;
        if (rc != TB_OK)
            rc = tb_error_set(err, rc, false, "table \"%s\", column \"%s\": cannot describe it", ti->name, ci.name);
    }
    if (rc == TB_OK && (rc = evt_table_set_pk(t, pk, ti->npk)) != TB_OK)
        rc = tb_error_set(err, rc, false, "table \"%s\": cannot set the key", ti->name);
    if (rc == TB_OK) {
        evt_table_set_version(t, ti->version > 0 ? (uint32_t)ti->version : 1);
        evt_table_set_names_known(t, true);
        evt_table_seal(t);
        *out = t;
        t = NULL;
    }
out:
    evt_table_unref(t);
    free(pk);
    free(dbname);
    return rc;
}

/* The topic prefix of table ti into out: fixed (--prefix / topic.prefix) when
 * not NULL, else its recorded topic minus ".<db>.<table>". */
static tb_code table_prefix(const char *fixed, const cache_table_info *ti, tb_buf *out, tb_error *err)
{
    tb_buf_reset(out);
    if (fixed)
        return tb_buf_puts(out, fixed);
    size_t tl = ti->topic ? strlen(ti->topic) : 0, nl = strlen(ti->name);
    if (tl < nl + 2 || strcmp(ti->topic + tl - nl, ti->name) != 0 || ti->topic[tl - nl - 1] != '.')
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "table \"%s\": no prefix from its recorded topic \"%s\"; give --prefix", ti->name,
                            ti->topic ? ti->topic : "(none)");
    return tb_buf_append(out, ti->topic, tl - nl - 1);
}

/* Publish table i through a sink for its prefix (opened, or reopened when the
 * prefix changes: the sink reads topic.prefix at open, so c's topic.prefix is
 * set here). fixed: the prefix the user gave, NULL for each table's own. */
static tb_code publish_table(cfg *c, const char *fixed, cache_db *db, size_t i, bool last_table, ksink **ks,
                             tb_buf *cur_prefix, int64_t now_ms, tb_error *err)
{
    cache_table_info ti;
    pub_ctx x = {.err = err, .now_ms = now_ms};
    tb_buf pfx, topic;
    tb_code rc;
    tb_buf_init(&pfx, 0);
    tb_buf_init(&topic, 0);
    tb_buf_init(&x.scratch, 0);
    tb_ignore(cache_db_table(db, i, &ti)); /* the caller's i < cache_db_ntables: found */
    x.name = ti.name;
    if ((rc = build_table(db, i, &ti, &x.t, err)) != TB_OK || (rc = table_prefix(fixed, &ti, &pfx, err)) != TB_OK)
        goto out;
    if (!*ks || strcmp(tb_buf_cstr(&pfx), tb_buf_cstr(cur_prefix)) != 0) {
        if (*ks && (rc = ksink_flush(*ks, PUB_FLUSH_MS, err)) != TB_OK)
            goto out;
        ksink_close(*ks);
        *ks = NULL;
        if ((rc = cfg_set(c, CFGK_TOPIC_PREFIX, tb_buf_cstr(&pfx), "cache publish", err)) != TB_OK ||
            (rc = ksink_open(c, ks, err)) != TB_OK)
            goto out;
        tb_buf_reset(cur_prefix);
        tb_buf_puts(cur_prefix, tb_buf_cstr(&pfx));
    }
    x.ks = *ks;
    x.cur = evt_event_new(EVT_OP_READ, x.t);
    x.pend = evt_event_new(EVT_OP_READ, x.t);
    if (!x.cur || !x.pend) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if ((rc = cache_iter(db, ti.name, on_row, &x, err)) != TB_OK || (rc = x.rc) != TB_OK)
        goto out;
    if (x.have_pend && (rc = send_pending(&x, last_table ? EVT_SNAPSHOT_LAST : EVT_SNAPSHOT_TRUE, true)) != TB_OK)
        goto out;
    tb_position none;
    tb_position_init(&none);
    if ((rc = ksink_end_tx(*ks, &none, err)) != TB_OK || (rc = ksink_flush(*ks, PUB_FLUSH_MS, err)) != TB_OK)
        goto out;
    evt_codec_opts o = {.topic_prefix = tb_buf_cstr(&pfx)};
    if ((rc = evt_json_topic(&o, x.t, &topic)) != TB_OK) {
        rc = tb_error_set(err, rc, false, "%s: out of memory naming its topic", ti.name);
        goto out;
    }
    fprintf(stderr, "tributary cache publish: %s: %llu rows -> %s\n", ti.name, (unsigned long long)x.rows,
            tb_buf_cstr(&topic));
out:
    evt_event_free(x.cur);
    evt_event_free(x.pend);
    evt_table_unref(x.t);
    tb_buf_free(&x.scratch);
    tb_buf_free(&pfx);
    tb_buf_free(&topic);
    return rc;
}

/* Which tables to publish: selected[i] for every table matching re; refuses
 * inferred and keyless tables, and tables without a prefix (fixed NULL and no
 * recorded topic), before anything is sent. *last: the last selected table
 * that has a row (SIZE_MAX when none). */
static tb_code select_tables(cache_db *db, const char *re_text, const char *fixed, bool *selected, size_t *nsel,
                             size_t *last, tb_error *err)
{
    tb_buf pfx;
    tb_buf_init(&pfx, 0);
    regex_t re;
    int rerr = regcomp(&re, re_text, REG_EXTENDED | REG_NOSUB);
    tb_code rc = TB_OK;
    *nsel = 0;
    *last = (size_t)-1;
    if (rerr != 0) {
        char msg[128];
        regerror(rerr, &re, msg, sizeof(msg));
        return tb_error_set(err, TB_ERR_CONFIG, false, "--tables '%s': %s", re_text, msg);
    }
    for (size_t i = 0; rc == TB_OK && i < cache_db_ntables(db); i++) {
        cache_table_info ti;
        tb_ignore(cache_db_table(db, i, &ti)); /* i < cache_db_ntables: found */
        if (!(selected[i] = regexec(&re, ti.name, 0, NULL, 0) == 0))
            continue;
        (*nsel)++;
        bool any = false;
        if (ti.inferred)
            rc = tb_error_set(err, TB_ERR_INVALID, false,
                              "table \"%s\": its columns were inferred (no schema record was seen), so their types "
                              "are unknown; exclude it with --tables",
                              ti.name);
        else if (ti.npk == 0)
            rc = tb_error_set(err, TB_ERR_INVALID, false, "table \"%s\": no key columns recorded", ti.name);
        else if ((rc = table_prefix(fixed, &ti, &pfx, err)) == TB_OK &&
                 (rc = cache_iter(db, ti.name, has_a_row, &any, err)) == TB_OK && any)
            *last = i;
    }
    regfree(&re);
    tb_buf_free(&pfx);
    if (rc == TB_OK && *nsel == 0)
        rc = tb_error_set(err, TB_ERR_NOT_FOUND, false, "%s: no table matches --tables '%s' (%zu tables)",
                          cache_db_path(db), re_text, cache_db_ntables(db));
    return rc;
}

int cmd_cache_publish(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    tb_error err;
    tb_code rc = TB_OK;
    cfg *c = NULL;
    cache_db *db = NULL;
    ksink *ks = NULL;
    bool *selected = NULL;
    const char *db_path = NULL, *tables = ".*";
    char *fixed = NULL; /* --prefix / topic.prefix as given (publish_table sets topic.prefix per table) */
    tb_buf sets[2], cur_prefix;
    int nargc = 0;
    char **nargv = calloc((size_t)argc + 5, sizeof(*nargv));
    for (int k = 0; k < 2; k++)
        tb_buf_init(&sets[k], 0);
    tb_buf_init(&cur_prefix, 0);
    if (!nargv) {
        rc = tb_error_set(&err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    nargv[nargc++] = argv[0];
    for (int i = 1; i < argc; i++) {
        static const char *const opts[] = {"--db", "--tables", "--brokers", "--prefix"};
        size_t o;
        for (o = 0; o < 4 && strcmp(argv[i], opts[o]) != 0; o++)
            ;
        if (o == 4) {
            nargv[nargc++] = argv[i];
            continue;
        }
        if (i + 1 >= argc) {
            rc = tb_error_set(&err, TB_ERR_CONFIG, false, "%s needs a value", argv[i]);
            goto out;
        }
        const char *v = argv[++i];
        if (o == 0)
            db_path = v;
        else if (o == 1)
            tables = v;
        else {
            tb_buf *b = &sets[o - 2];
            tb_buf_reset(b);
            if (tb_buf_printf(b, "%s=%s", o == 2 ? "kafka.bootstrap.servers" : "topic.prefix", v) != TB_OK) {
                rc = tb_error_set(&err, TB_ERR_NOMEM, false, "out of memory");
                goto out;
            }
            nargv[nargc++] = "--set";
            nargv[nargc++] = b->data;
        }
    }
    nargv[nargc] = NULL;
    if ((rc = app_load_config(&nargc, nargv, &c, &err)) != TB_OK)
        goto out;
    if (nargc > 1) {
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "unexpected argument '%s' (see --help)", nargv[1]);
        goto out;
    }
    if (!db_path && cfg_is_set(c, CFGK_CACHE_PATH))
        db_path = cfg_get_str(c, CFGK_CACHE_PATH);
    if (!db_path) {
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "needs --db PATH (the cache file)");
        goto out;
    }
    if (cfg_get_bool(c, CFGK_EXACTLY_ONCE) &&
        (rc = cfg_set(c, CFGK_EXACTLY_ONCE, "false", "cache publish", &err)) != TB_OK) /* no offsets record to join */
        goto out;
    if ((rc = cache_db_open(db_path, &db, &err)) != TB_OK) {
        tb_error_prefix(&err, rc, "%s: not a readable cache file: ", db_path);
        goto out;
    }
    size_t nsel, last;
    if (!(selected = calloc(cache_db_ntables(db) + 1, sizeof(*selected)))) {
        rc = tb_error_set(&err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if (cfg_is_set(c, CFGK_TOPIC_PREFIX) && !(fixed = strdup(cfg_get_str(c, CFGK_TOPIC_PREFIX)))) {
        rc = tb_error_set(&err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    if ((rc = select_tables(db, tables, fixed, selected, &nsel, &last, &err)) != TB_OK)
        goto out;
    app_install_signals();
    int64_t now = tb_wall_ms();
    for (size_t i = 0; rc == TB_OK && i < cache_db_ntables(db); i++)
        if (selected[i])
            rc = publish_table(c, fixed, db, i, i == last, &ks, &cur_prefix, now, &err);
out:;
    int ret = rc == TB_OK ? 0 : app_fail("cache publish", &err);
    ksink_close(ks);
    cache_db_close(db);
    cfg_free(c);
    free(selected);
    free(fixed);
    free(nargv);
    for (int k = 0; k < 2; k++)
        tb_buf_free(&sets[k]);
    tb_buf_free(&cur_prefix);
    return ret;
}
