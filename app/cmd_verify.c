/*
 * tributary verify: does each captured table's topic, and its cache table,
 * equal the source? (DESIGN 10a). Changes nothing (without --repair).
 *
 * PASSES
 *  A pass opens one consistent read of the source (verify_source.c, position
 *  P), waits until the connector's committed position (its offsets record)
 *  is at or past P, so the topic holds every change up to P, then per table
 *  reads the other side into a digest map (verify_map.c) and streams the
 *  source rows against it: a source row whose key the map lacks is missing,
 *  one whose digest differs is different, a live key no source row visited
 *  is extra. The first pass compares everything and remembers the keys that
 *  differ; the others compare only those keys (re-check), so a key changed
 *  after P (in flight: its change reached the topic before the read) is
 *  judged again at a later position. Re-check passes run until one finds
 *  no key differing, or the source position did not move since the pass
 *  before (nothing was in flight: the differences are real), at most
 *  VERIFY_RECHECKS of them; the report is the last pass's.
 *
 * WHAT IS COMPARED
 *  Source rows are rendered by the connector's own encoder (evt_render with
 *  the sink's codec options: value.encoding, key.schemas), so a key is
 *  compared as the bytes the connector would write, and a row as its after
 *  image in the wire format. value.encoding=debezium writes FLOAT and
 *  TIMESTAMP differently in snapshot reads and in the stream (DESIGN 5a):
 *  a row equal to either form is equal. The cache holds tributary's values
 *  whatever the topic's encoding: it is compared with the tributary
 *  encoding, without schemas.
 */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "app_metrics.h"
#include "ksink.h"
#include "tb_clock.h"
#include "tb_hmap.h"
#include "tb_log.h"
#include "verify.h"

#define VERIFY_RECHECKS 3
#define VERIFY_POLL_MS 200

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tributary verify --config FILE [--tables REGEX] [--against topics|cache|both] [--json]\n"
            "                        [--show N] [--wait-ms MS] [--cache PATH] [--repair] [--metrics-linger-ms MS]\n"
            "                        [--set key=value]...\n"
            "\n"
            "Compares every captured table of the source (one consistent read) with its topic read as a\n"
            "table (the last record per key; tombstones delete) and/or with its table in the cache, row\n"
            "by row, in the bytes of the wire format. Changes nothing, beside a running connector; keys\n"
            "that differ are checked again once the connector has passed the source read's position,\n"
            "so changes in flight are not differences.\n"
            "\n"
            "  --tables REGEX   only the tables whose \"<db>.<table>\" matches (POSIX extended regex)\n"
            "  --against WHAT   topics (default), cache, or both\n"
            "  --json           one JSON document on stdout instead of the text report\n"
            "  --show N         keys of each kind shown per table, with both values (default 10)\n"
            "  --wait-ms MS     how long to wait for the connector's committed position (default 60000)\n"
            "  --cache PATH     the cache file (default: cache.path)\n"
            "  --repair         write the upserts and tombstones that make each topic equal the source,\n"
            "                   through the Kafka sink, then compare again (the report is that comparison's)\n"
            "  --metrics-linger-ms MS  with metrics.listen: after the report, keep serving /metrics until one\n"
            "                   scrape has read the final values, at most MS (default 0: stop at once)\n"
            "\n"
            "With metrics.listen=HOST:PORT, /metrics and /health are served while verify runs:\n"
            "tributary_verify_state{state}, tributary_verify_passes_total{against},\n"
            "tributary_verify_connector_behind, tributary_verify_rows_total{table,against},\n"
            "tributary_verify_differences{table,against,kind} (missing, extra, different: the latest pass),\n"
            "tributary_verify_in_flight_keys{table,against} (docs/metrics.md).\n"
            "\n"
            "Exit status: 0 equal, 1 differences, 2 usage or configuration error, 3 the source or Kafka\n"
            "could not be read (or another failure stopped the comparison).\n");
}

/* ------------------------------------------------------------ results */

typedef enum vkind { VK_MISSING = 0, VK_EXTRA, VK_DIFFERENT } vkind;
static const char *const kind_names[] = {"missing", "extra", "different"};

typedef struct vsample {
    char *key, *src, *dst; /* owned, NUL-terminated; NULL: none */
} vsample;

typedef struct vtab {
    char *db, *table, *topic; /* owned */
    uint64_t rows;            /* source rows compared (first pass) */
    uint64_t count[3];        /* by vkind */
    uint64_t inflight;        /* keys changed after the source read: not compared */
    int mslot;                /* the table's metrics slot, -1 none */
    vkeys diff;               /* keys that differed in the last pass */
    vsample *samples[3];
    size_t nsamples[3];
    bool absent;              /* cache: no such table */
} vtab;

typedef struct vrun {
    cfg *c;
    const char *against;      /* "topics" or "cache" */
    bool cache;               /* this run compares with the cache */
    const char *cache_path;
    const char *only_re;
    size_t show;
    int64_t wait_ms;
    evt_codec_opts o;         /* how the connector writes (keys, values) */
    evt_codec_opts orow;      /* the same, rendering the row image alone */
    bool dbz;
    vtab *tabs;
    size_t ntabs;
    bool lagging;             /* the committed position did not reach the read's in time */
    int passes;
    bool tty;
    const tb_position *at;    /* the source read's position of the current pass */
    ksink *repair;            /* --repair: the sink a repair pass writes through */
    uint64_t upserts, tombstones; /* what the repair pass wrote */
    app_metrics *metrics;     /* NULL without metrics.listen */
    app_metrics_verify *mv;   /* the command's verify gauges, shared by its runs */
    size_t mem_max;           /* verify.memory.max.bytes: the digest map's bound */
} vrun;

/* verify's state and passes, as /metrics shows them. */
static void set_state(vrun *r, const char *state)
{
    r->mv->state = state;
    app_metrics_set_verify(r->metrics, r->mv);
}

static void samples_free(vtab *t)
{
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < t->nsamples[k]; i++) {
            free(t->samples[k][i].key);
            free(t->samples[k][i].src);
            free(t->samples[k][i].dst);
        }
        free(t->samples[k]);
        t->samples[k] = NULL;
        t->nsamples[k] = 0;
    }
}

static void run_free(vrun *r)
{
    for (size_t i = 0; i < r->ntabs; i++) {
        free(r->tabs[i].db);
        free(r->tabs[i].table);
        free(r->tabs[i].topic);
        vkeys_free(&r->tabs[i].diff);
        samples_free(&r->tabs[i]);
    }
    free(r->tabs);
    r->tabs = NULL;
    r->ntabs = 0;
}

static char *dup_bytes(const char *p, size_t n)
{
    if (!p)
        return NULL;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

static tb_code add_sample(vtab *t, size_t show, vkind k, const char *key, size_t klen, const char *src, size_t slen,
                          const char *dst, size_t dlen)
{
    if (t->nsamples[k] >= show)
        return TB_OK;
    if (!t->samples[k] && !(t->samples[k] = calloc(show, sizeof(vsample))))
        return TB_ERR_NOMEM;
    vsample *s = &t->samples[k][t->nsamples[k]++];
    s->key = dup_bytes(key, klen);
    s->src = dup_bytes(src, slen);
    s->dst = dup_bytes(dst, dlen);
    return TB_OK;
}

/* ------------------------------------------------------------ one table of one pass */

/* The other side's latest bytes of the keys being checked again (for the report). */
typedef struct stored {
    size_t len;
    bool live;
    char bytes[];
} stored;

typedef struct vpass {
    vrun *r;
    vtab *t;
    const vkeys *only;  /* keys of this pass (NULL: all) */
    vkeys next;         /* keys that differ in this pass */
    vmap map;
    vspill *spill;      /* the table is compared in hash partitions on disk (verify.h, MEMORY) */
    tb_hmap store;      /* key bytes -> stored (re-check passes) */
    uint64_t rows;
    uint64_t reported;  /* rows already added to tributary_verify_rows_total */
    uint64_t count[3];
    uint64_t inflight;
    evt_rendered rend;
    int64_t last_progress;
} vpass;

/* The map is full: the table goes on in hash partitions on disk, the map's keys first. */
static tb_code start_spill(vpass *p, tb_error *err)
{
    tb_code rc = vspill_open(0, &p->spill, err);
    for (size_t i = 0; rc == TB_OK && i < p->map.cap; i++)
        if (p->map.slots[i].khash)
            rc = vspill_target(p->spill, p->map.slots[i].khash, p->map.slots[i].vdig, err);
    TB_INFO("verify", "%s.%s (%s): more keys than verify.memory.max.bytes=%zu holds in memory (%zu): compared in "
            "hash partitions on disk", p->t->db, p->t->table, p->r->against, p->map.max_bytes, p->map.n);
    vmap_free(&p->map);
    return rc;
}

static tb_code on_target(void *opaque, const vtarget_rec *rec, tb_error *err)
{
    vpass *p = opaque;
    const char *key = rec->key, *row = rec->row;
    size_t klen = rec->klen, rlen = rec->rlen;
    uint64_t h = vmap_hash(key, klen);
    if (p->only && !vkeys_has(p->only, h))
        return TB_OK;
    /* the delete event before a tombstone said where the delete is */
    uint64_t word = rec->tombstone ? VMAP_TOMB
                                   : (row ? vmap_digest(row, rlen) | VMAP_LIVE : 0) | (rec->late ? VMAP_LATE : 0);
    if (p->spill)
        return vspill_target(p->spill, h, word, err);
    if (!p->map.cap && rec->total && vmap_reserve(&p->map, rec->total) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for the keys of the other side");
    vmap_slot *s = vmap_put(&p->map, h);
    if (!s && p->map.full) {
        tb_code rc = start_spill(p, err);
        return rc == TB_OK ? vspill_target(p->spill, h, word, err) : rc;
    }
    if (!s)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory for the keys of the other side");
    vmap_apply(s, word);
    if (p->only) {
        void **v;
        if (tb_hmap_put(&p->store, key, klen, &v) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        free(*v);
        *v = NULL;
        stored *st = malloc(sizeof(*st) + (row ? rlen : 0) + 1);
        if (!st)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        *v = st; /* the map's slot owns it */
        st->live = row != NULL;
        st->len = row ? rlen : 0;
        if (row)
            memcpy(st->bytes, row, rlen);
        st->bytes[st->len] = '\0';
    }
    return TB_OK;
}

static const stored *stored_of(vpass *p, const char *key, size_t klen)
{
    void **v = p->only ? tb_hmap_find(&p->store, key, klen) : NULL;
    return v && *v && ((stored *)*v)->live ? *v : NULL;
}

static tb_code difference(vpass *p, vkind k, uint64_t h, const char *key, size_t klen, const char *src, size_t slen,
                          tb_error *err)
{
    p->count[k]++;
    if (vkeys_add(&p->next, h) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (!p->only)
        return TB_OK; /* the report comes from a re-check pass */
    const stored *st = stored_of(p, key, klen);
    if (add_sample(p->t, p->r->show, k, key, klen, src, slen, st ? st->bytes : NULL, st ? st->len : 0) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return TB_OK;
}

/* --repair: the source row goes to the topic as the snapshot would send it. */
static tb_code repair_row(vpass *p, const evt_event *e, tb_error *err)
{
    if (!p->r->repair || !p->only)
        return TB_OK;
    tb_code rc = ksink_send(p->r->repair, e, err);
    if (rc == TB_OK)
        p->r->upserts++;
    ksink_poll(p->r->repair, 0);
    return rc;
}

/* What a source row's verdict means: in flight, or a difference (with the
 * row's key and image when e is given, else by hash alone: a first pass
 * in hash partitions keeps no bytes). */
static tb_code judged(vpass *p, vverdict v, uint64_t h, const evt_msg *m, const evt_event *e, tb_error *err)
{
    tb_code rc;
    switch (v) {
    case VV_EQUAL:
        return TB_OK;
    case VV_LATE:
        p->inflight++;
        return vkeys_add(&p->next, h) == TB_OK ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    default:
        rc = difference(p, v == VV_MISSING ? VK_MISSING : VK_DIFFERENT, h, m ? m->key : NULL, m ? m->key_len : 0,
                        m ? m->value : NULL, m ? m->value_len : 0, err);
        return rc == TB_OK && e ? repair_row(p, e, err) : rc;
    }
}

/* Debezium's snapshot and stream forms differ for FLOAT and TIMESTAMP (DESIGN 5a): the row
 * rendered in its other form (left in p->rend; render the first form again to use it). */
static tb_code render_other_form(vpass *p, evt_event *e, tb_error *err)
{
    evt_snapshot_flag f = evt_event_snapshot(e);
    evt_event_set_snapshot(e, f == EVT_SNAPSHOT_FALSE ? EVT_SNAPSHOT_TRUE : EVT_SNAPSHOT_FALSE);
    tb_code rc = evt_render(&p->r->orow, e, &p->rend, err);
    evt_event_set_snapshot(e, f);
    return rc;
}

/* One source row: its key and row image as the connector writes them, looked up. */
static tb_code on_source_row(vpass *p, evt_event *e, tb_error *err)
{
    const evt_codec_opts *o = &p->r->orow;
    bool two_forms = p->r->dbz && !p->r->cache;
    tb_code rc = evt_render(o, e, &p->rend, err);
    if (rc != TB_OK)
        return rc;
    const evt_msg *m = &p->rend.msgs[0];
    uint64_t h = vmap_hash(m->key, m->key_len);
    if (p->only && !vkeys_has(p->only, h))
        return TB_OK;
    p->rows++;
    uint64_t d1 = vmap_digest(m->value, m->value_len);
    if (p->spill) { /* compared later, in its partition */
        if (two_forms && (rc = render_other_form(p, e, err)) != TB_OK)
            return rc;
        return vspill_source(p->spill, h, d1, two_forms ? vmap_digest(m->value, m->value_len) : 0, err);
    }
    vmap_slot *s;
    vverdict v = vmap_judge(&p->map, h, d1, &s);
    if (v == VV_DIFFERENT && two_forms) {
        if ((rc = render_other_form(p, e, err)) != TB_OK)
            return rc;
        if (vmap_digest(m->value, m->value_len) == vmap_dig(s))
            return TB_OK;
        if ((rc = evt_render(o, e, &p->rend, err)) != TB_OK)
            return rc;
    }
    return judged(p, v, h, m, e, err);
}

/* A source row of a table compared in hash partitions, against its partition's map. */
static tb_code on_spilled_row(void *opaque, vmap *map, uint64_t h, uint64_t d1, uint64_t d2, tb_error *err)
{
    vpass *p = opaque;
    vmap_slot *s;
    vverdict v = vmap_judge(map, h, d1, &s);
    if (v == VV_DIFFERENT && d2 && d2 == vmap_dig(s))
        v = VV_EQUAL;
    return judged(p, v, h, NULL, NULL, err);
}

/* The keys of map that the other side holds and no source row visited. */
static tb_code extras_in(vpass *p, const vmap *map, tb_error *err)
{
    for (size_t i = 0; i < map->cap; i++) {
        const vmap_slot *s = &map->slots[i];
        if (!s->khash || (s->vdig & VMAP_SEEN))
            continue;
        if (s->vdig & VMAP_LATE)
            p->inflight++;
        else if (s->vdig & VMAP_LIVE)
            p->count[VK_EXTRA]++;
        else
            continue;
        if (vkeys_add(&p->next, s->khash) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    return TB_OK;
}

/* The end of a hash partition: its extras. */
static tb_code on_spilled_end(void *opaque, vmap *map, tb_error *err) { return extras_in(opaque, map, err); }

/* The keys the other side holds and no source row visited (a table in hash
 * partitions: partition by partition, from its files). */
static tb_code extras(vpass *p, tb_error *err)
{
    tb_code rc = p->spill ? vspill_join(p->spill, &p->map, on_spilled_row, on_spilled_end, p, err)
                          : extras_in(p, &p->map, err);
    if (rc != TB_OK || !p->only)
        return rc;
    const char *key;
    size_t klen;
    void *v;
    for (size_t it = 0; tb_hmap_next(&p->store, &it, &key, &klen, &v);) {
        const stored *st = v;
        const vmap_slot *s = vmap_find(&p->map, vmap_hash(key, klen));
        if (!st || !st->live || !s || (s->vdig & (VMAP_LIVE | VMAP_SEEN | VMAP_LATE)) != VMAP_LIVE)
            continue;
        if (add_sample(p->t, p->r->show, VK_EXTRA, key, klen, NULL, 0, st->bytes, st->len) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        if (p->r->repair) { /* --repair: the key the source lacks gets its tombstone */
            if ((rc = ksink_send_tombstone(p->r->repair, p->t->topic, key, klen, err)) != TB_OK)
                return rc;
            p->r->tombstones++;
        }
    }
    return TB_OK;
}

/* Read the other side of table t into p->map. */
static tb_code load_target(vpass *p, tb_error *err)
{
    vrun *r = p->r;
    vtab *t = p->t;
    if (r->cache) {
        bool present;
        tb_code rc = vtarget_cache(r->cache_path, t->db, t->table, &present, on_target, p, err);
        t->absent = !present;
        return rc;
    }
    return vtarget_topic(r->c, &r->o, t->topic, r->at, on_target, p, err);
}

/* ------------------------------------------------------------ a pass over every table */

static tb_code committed(const cfg *c, tb_position *out, tb_error *err)
{
    tb_position_free(out);
    return ksink_offsets_read(c, out, err);
}

/* Wait until the connector's committed position is at or past P. */
static tb_code wait_connector(vrun *r, const tb_position *p, const tb_position *start, tb_error *err)
{
    tb_position cp;
    tb_position_init(&cp);
    int64_t deadline = tb_mono_ms() + r->wait_ms;
    tb_code rc;
    set_state(r, "waiting");
    for (;;) {
        if ((rc = committed(r->c, &cp, err)) != TB_OK)
            break;
        if (verify_pos_passed(p, &cp, start))
            break;
        if (tb_mono_ms() >= deadline || app_stop_requested) {
            tb_buf a, b;
            tb_buf_init(&a, 0);
            tb_buf_init(&b, 0);
            tb_position_format(p, &a);
            tb_position_format(&cp, &b);
            TB_WARN("verify",
                    "the connector's committed position (%s) has not reached the source read's (%s) in %" PRId64
                    " ms: changes after it may show as differences (is the connector running?)",
                    cp.kind == TB_POS_NONE ? "none" : tb_buf_cstr(&b), tb_buf_cstr(&a), r->wait_ms);
            tb_buf_free(&a);
            tb_buf_free(&b);
            r->lagging = true;
            r->mv->behind = true;
            break;
        }
        struct timespec ts = {0, VERIFY_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    tb_position_free(&cp);
    set_state(r, r->repair ? "repairing" : "comparing");
    return rc;
}

static tb_code tabs_from_source(vrun *r, vsrc *s, tb_error *err)
{
    size_t n = vsrc_ntables(s);
    if (!(r->tabs = calloc(n ? n : 1, sizeof(*r->tabs))))
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *db, *table;
        vsrc_table(s, i, &db, &table);
        vtab *t = &r->tabs[r->ntabs++];
        tb_buf topic;
        tb_buf_init(&topic, 0);
        t->db = strdup(db);
        t->table = strdup(table);
        if (evt_topic_name(r->o.topic_prefix, db, table, &topic) != TB_OK || !t->db || !t->table) {
            tb_buf_free(&topic);
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        }
        t->topic = topic.data; /* owned now */
        t->mslot = app_metrics_table(r->metrics, db, table);
    }
    return TB_OK;
}

static long find_tab(const vrun *r, const evt_table *et)
{
    for (size_t i = 0; i < r->ntabs; i++)
        if (strcmp(r->tabs[i].db, evt_table_db(et)) == 0 && strcmp(r->tabs[i].table, evt_table_name(et)) == 0)
            return (long)i;
    return -1;
}

static void pass_free(vpass *p)
{
    vmap_free(&p->map);
    vspill_close(p->spill);
    p->spill = NULL;
    tb_hmap_free(&p->store, free);
    vkeys_free(&p->next);
    evt_rendered_free(&p->rend);
}

/* Start comparing table i: the other side into the map. */
static tb_code table_begin(vrun *r, vpass *p, size_t i, bool recheck, tb_error *err)
{
    memset(p, 0, sizeof(*p));
    p->r = r;
    p->t = &r->tabs[i];
    evt_rendered_init(&p->rend);
    vmap_init(&p->map);
    /* a re-check pass holds only the keys that differed, with their bytes: not bounded (verify.h) */
    p->map.max_bytes = recheck ? 0 : r->mem_max;
    tb_hmap_init(&p->store);
    if (recheck) {
        vkeys_sort(&p->t->diff);
        p->only = &p->t->diff;
        samples_free(p->t);
    }
    tb_code rc = load_target(p, err);
    return rc == TB_OK ? TB_OK : tb_error_prefix(err, rc, "%s.%s: ", p->t->db, p->t->table);
}

/* The table is done: extras, then its counts and the keys to check again. */
static tb_code table_end(vrun *r, vpass *p, bool recheck, tb_error *err)
{
    tb_code rc = extras(p, err);
    vtab *t = p->t;
    app_metrics_verify_rows(r->metrics, t->mslot, r->cache, p->rows - p->reported);
    if (rc == TB_OK) {
        if (!recheck)
            t->rows = p->rows;
        if (!recheck || !t->diff.overflow) {
            memcpy(t->count, p->count, sizeof(t->count));
            t->inflight = p->inflight;
        }
        bool overflow = t->diff.overflow || p->next.overflow;
        vkeys_free(&t->diff);
        t->diff = p->next;
        t->diff.overflow = overflow;
        memset(&p->next, 0, sizeof(p->next));
        app_metrics_verify_result(r->metrics, t->mslot, r->cache, t->count[VK_MISSING], t->count[VK_EXTRA],
                                  t->count[VK_DIFFERENT], t->inflight);
    }
    if (r->tty)
        fprintf(stderr, "\r\033[K");
    pass_free(p);
    return rc;
}

static void progress(vrun *r, vpass *p)
{
    if ((!r->tty && !r->metrics) || tb_mono_ms() - p->last_progress < 1000)
        return;
    p->last_progress = tb_mono_ms();
    app_metrics_verify_rows(r->metrics, p->t->mslot, r->cache, p->rows - p->reported);
    p->reported = p->rows;
    if (r->tty)
        fprintf(stderr, "\r\033[Kverify: %s.%s (%s): %" PRIu64 " rows", p->t->db, p->t->table, r->against, p->rows);
}

/* One pass: a consistent read, the connector past it, every table compared.
 * *pos: the read's position (copied). */
static tb_code one_pass(vrun *r, bool recheck, tb_position *pos, tb_error *err)
{
    vsrc *s = NULL;
    vpass p;
    bool open = false;
    long cur = -1;
    bool *done = NULL;
    tb_position start;
    tb_position_init(&start);
    memset(&p, 0, sizeof(p));
    tb_code rc = committed(r->c, &start, err);
    if (rc == TB_OK)
        rc = vsrc_open(r->c, r->only_re, &s, err);
    if (rc == TB_OK && !r->tabs)
        rc = tabs_from_source(r, s, err);
    if (rc == TB_OK)
        rc = tb_position_copy(pos, vsrc_position(s));
    if (rc == TB_OK)
        rc = wait_connector(r, vsrc_position(s), &start, err);
    r->at = s ? vsrc_position(s) : NULL;
    if (rc == TB_OK && !(done = calloc(r->ntabs + 1, sizeof(*done))))
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    r->passes++;
    r->mv->passes[r->cache]++;
    app_metrics_set_verify(r->metrics, r->mv);
    while (rc == TB_OK) {
        if (app_stop_requested) {
            rc = tb_error_set(err, TB_ERR_STOPPED, false, "stopped by a signal");
            break;
        }
        evt_event *e;
        if ((rc = vsrc_next(s, &e, err)) != TB_OK || !e)
            break;
        long i = find_tab(r, evt_event_table(e));
        if (i < 0)
            continue;
        if (i != cur) {
            if (open && (rc = table_end(r, &p, recheck, err)) != TB_OK)
                break;
            open = false;
            if (done[i]) {
                rc = tb_error_set(err, TB_ERR_STATE, false, "%s.%s: the source gave its rows in two runs",
                                  r->tabs[i].db, r->tabs[i].table);
                break;
            }
            done[i] = true;
            cur = i;
            if (recheck && r->tabs[cur].diff.n == 0)
                continue; /* rows of a table with nothing to check again: none compared */
            if ((rc = table_begin(r, &p, (size_t)cur, recheck, err)) != TB_OK)
                break;
            open = true;
        }
        if (open && (rc = on_source_row(&p, e, err)) != TB_OK) {
            tb_error_prefix(err, rc, "%s.%s: ", p.t->db, p.t->table);
            break;
        }
        if (open)
            progress(r, &p);
    }
    if (rc == TB_OK && open)
        rc = table_end(r, &p, recheck, err);
    open = false;
    /* tables with no source rows: everything the other side holds is extra */
    for (size_t i = 0; rc == TB_OK && i < r->ntabs; i++) {
        if (done[i] || (recheck && r->tabs[i].diff.n == 0))
            continue;
        if ((rc = table_begin(r, &p, i, recheck, err)) == TB_OK)
            rc = table_end(r, &p, recheck, err);
    }
    if (open)
        pass_free(&p);
    free(done);
    r->at = NULL;
    vsrc_close(s);
    tb_position_free(&start);
    return rc;
}

static uint64_t differing(const vrun *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->ntabs; i++)
        n += r->tabs[i].diff.n;
    return n;
}

/* The passes of one comparison (see PASSES). */
static tb_code compare(vrun *r, tb_error *err)
{
    tb_position prev, now;
    tb_position_init(&prev);
    tb_position_init(&now);
    tb_code rc = one_pass(r, false, &prev, err);
    bool overflow = false;
    for (size_t i = 0; i < r->ntabs; i++)
        overflow |= r->tabs[i].diff.overflow;
    for (int k = 0; rc == TB_OK && differing(r) > 0 && k < VERIFY_RECHECKS; k++) {
        rc = one_pass(r, true, &now, err);
        bool moved = !tb_position_equal(&prev, &now);
        if (rc == TB_OK && (rc = tb_position_copy(&prev, &now)) != TB_OK)
            rc = tb_error_set(err, rc, false, "out of memory copying the source position");
        if (rc != TB_OK || !moved || overflow)
            break; /* nothing changed at the source since the pass before: the differences are real */
    }
    tb_position_free(&prev);
    tb_position_free(&now);
    return rc;
}

/* ------------------------------------------------------------ report */

static uint64_t total_diff(const vtab *t) { return t->count[0] + t->count[1] + t->count[2]; }

static uint64_t run_differences(const vrun *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->ntabs; i++)
        n += total_diff(&r->tabs[i]);
    return n;
}

static void report_text(const vrun *r, FILE *out)
{
    uint64_t rows = 0, diffs = 0;
    for (size_t i = 0; i < r->ntabs; i++) {
        const vtab *t = &r->tabs[i];
        rows += t->rows;
        diffs += total_diff(t);
        fprintf(out, "%s.%s (%s %s%s): %" PRIu64 " rows compared, %" PRIu64 " missing, %" PRIu64 " extra, %" PRIu64
                     " different",
                t->db, t->table, r->cache ? "cache table" : "topic", r->cache ? "" : t->topic,
                r->cache ? (t->absent ? "absent" : "present") : "", t->rows, t->count[VK_MISSING],
                t->count[VK_EXTRA], t->count[VK_DIFFERENT]);
        if (t->inflight)
            fprintf(out, ", %" PRIu64 " changed during the read (not compared)", t->inflight);
        fprintf(out, "%s\n", t->diff.overflow ? " (too many to check again)" : "");
        for (int k = 0; k < 3; k++)
            for (size_t j = 0; j < t->nsamples[k]; j++) {
                const vsample *s = &t->samples[k][j];
                fprintf(out, "  %-9s %s", kind_names[k], s->key ? s->key : "?");
                if (k != VK_EXTRA)
                    fprintf(out, "  source: %s", s->src ? s->src : "(none)");
                if (k != VK_MISSING)
                    fprintf(out, "  %s: %s", r->cache ? "cache" : "topic", s->dst ? s->dst : "(none)");
                fputc('\n', out);
            }
    }
    fprintf(out, "verify against %s: %zu table(s), %" PRIu64 " rows compared, %" PRIu64 " difference(s)%s\n",
            r->against, r->ntabs, rows, diffs,
            r->lagging ? " (the connector had not reached the source read's position)" : "");
}

static void jw_text(evt_jw *w, const char *json)
{
    if (!json) {
        evt_jw_null(w);
        return;
    }
    evt_jw_json(w, json, strlen(json));
}

static void report_json(const vrun *r, evt_jw *w)
{
    uint64_t rows = 0, diffs = 0;
    evt_jw_obj_begin(w);
    evt_jw_key(w, "against", (size_t)-1);
    evt_jw_str(w, r->against, strlen(r->against));
    evt_jw_key(w, "tables", (size_t)-1);
    evt_jw_arr_begin(w);
    for (size_t i = 0; i < r->ntabs; i++) {
        const vtab *t = &r->tabs[i];
        rows += t->rows;
        diffs += total_diff(t);
        evt_jw_obj_begin(w);
        evt_jw_key(w, "db", (size_t)-1);
        evt_jw_str(w, t->db, strlen(t->db));
        evt_jw_key(w, "table", (size_t)-1);
        evt_jw_str(w, t->table, strlen(t->table));
        if (!r->cache) {
            evt_jw_key(w, "topic", (size_t)-1);
            evt_jw_str(w, t->topic, strlen(t->topic));
        } else {
            evt_jw_key(w, "cache_table", (size_t)-1);
            evt_jw_bool(w, !t->absent);
        }
        evt_jw_key(w, "rows", (size_t)-1);
        evt_jw_uint(w, t->rows);
        for (int k = 0; k < 3; k++) {
            evt_jw_key(w, kind_names[k], (size_t)-1);
            evt_jw_uint(w, t->count[k]);
        }
        evt_jw_key(w, "in_flight", (size_t)-1);
        evt_jw_uint(w, t->inflight);
        evt_jw_key(w, "samples", (size_t)-1);
        evt_jw_obj_begin(w);
        for (int k = 0; k < 3; k++) {
            evt_jw_key(w, kind_names[k], (size_t)-1);
            evt_jw_arr_begin(w);
            for (size_t j = 0; j < t->nsamples[k]; j++) {
                const vsample *s = &t->samples[k][j];
                evt_jw_obj_begin(w);
                evt_jw_key(w, "key", (size_t)-1);
                jw_text(w, s->key);
                evt_jw_key(w, "source", (size_t)-1);
                jw_text(w, s->src);
                evt_jw_key(w, r->cache ? "cache" : "topic", (size_t)-1);
                jw_text(w, s->dst);
                evt_jw_obj_end(w);
            }
            evt_jw_arr_end(w);
        }
        evt_jw_obj_end(w);
        evt_jw_obj_end(w);
    }
    evt_jw_arr_end(w);
    evt_jw_key(w, "rows", (size_t)-1);
    evt_jw_uint(w, rows);
    evt_jw_key(w, "differences", (size_t)-1);
    evt_jw_uint(w, diffs);
    evt_jw_key(w, "connector_behind", (size_t)-1);
    evt_jw_bool(w, r->lagging);
    evt_jw_key(w, "passes", (size_t)-1);
    evt_jw_int(w, r->passes);
    if (r->upserts || r->tombstones) {
        evt_jw_key(w, "repaired_upserts", (size_t)-1);
        evt_jw_uint(w, r->upserts);
        evt_jw_key(w, "repaired_tombstones", (size_t)-1);
        evt_jw_uint(w, r->tombstones);
    }
    evt_jw_obj_end(w);
}


/* ------------------------------------------------------------ repair */

/* --repair (see DESIGN 10a): after the comparison, one more pass over the
 * keys that differ writes, through a Kafka sink of the connector's
 * configuration (exactly_once off: its transactional id would fence the
 * running connector), the source row of every missing or different key (a
 * snapshot read, op r, at this pass's source position) and a tombstone for
 * every extra key (the topic's own key bytes). Keys in flight are left
 * alone. Nothing is committed: no offsets record is written. */
static tb_code repair(vrun *r, tb_error *err)
{
    tb_code rc = TB_OK;
    ksink *ks = NULL;
    tb_position pos, none;
    tb_position_init(&pos);
    tb_position_init(&none);
    if (run_differences(r) == 0)
        return TB_OK;
    if (cfg_get_bool(r->c, CFGK_EXACTLY_ONCE) && (rc = cfg_set(r->c, CFGK_EXACTLY_ONCE, "false", "verify --repair", err)) != TB_OK)
        return rc;
    if ((rc = ksink_open(r->c, &ks, err)) != TB_OK)
        return rc;
    r->repair = ks;
    rc = one_pass(r, true, &pos, err);
    r->repair = NULL;
    if (rc == TB_OK)
        rc = ksink_end_tx(ks, &none, err);
    if (rc == TB_OK)
        rc = ksink_flush(ks, 60000, err);
    fprintf(stderr, "tributary verify: repair: %" PRIu64 " upsert(s) and %" PRIu64 " tombstone(s) %s\n", r->upserts,
            r->tombstones, rc == TB_OK ? "written" : "not all written");
    ksink_close(ks);
    tb_position_free(&pos);
    return rc;
}

/* ------------------------------------------------------------ command */

static int exit_for(const tb_error *err)
{
    return err->code == TB_ERR_CONFIG ? 2 : 3;
}

/* --metrics-linger-ms: the endpoint stays up until a scrape after the end
 * has read the final values (a body sent whole), linger_ms passed, or a
 * signal came. */
static void linger(app_metrics *m, int64_t linger_ms)
{
    if (!m || linger_ms <= 0)
        return;
    uint64_t seen = app_metrics_scrapes(m);
    int64_t deadline = tb_mono_ms() + linger_ms;
    while (app_metrics_scrapes(m) == seen && tb_mono_ms() < deadline && !app_stop_requested) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int cmd_verify(int argc, char **argv)
{
    if (app_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    tb_error err;
    tb_error_clear(&err);
    cfg *c = NULL;
    const char *tables = NULL, *against = "topics", *show = NULL, *wait = NULL, *cache_path = NULL,
               *linger_opt = NULL;
    bool json = false, fix = false;
    int ret = 0;
    tb_buf out;
    tb_buf_init(&out, 0);
    vrun runs[2];
    memset(runs, 0, sizeof(runs));
    int nruns = 0;
    app_metrics *metrics = NULL;
    app_metrics_verify mv = {.state = "starting"};
    tb_code rc = app_load_config(&argc, argv, &c, &err);
    if (rc == TB_OK) {
        const app_optspec spec[] = {{"--tables", &tables, NULL},  {"--against", &against, NULL},
                                    {"--json", NULL, &json},       {"--show", &show, NULL},
                                    {"--wait-ms", &wait, NULL},    {"--cache", &cache_path, NULL},
                                    {"--repair", NULL, &fix},      {"--metrics-linger-ms", &linger_opt, NULL}};
        rc = app_parse_opts(argc, argv, 1, spec, sizeof(spec) / sizeof(spec[0]), &err);
    }
    bool topics = strcmp(against, "topics") == 0 || strcmp(against, "both") == 0;
    bool cache = strcmp(against, "cache") == 0 || strcmp(against, "both") == 0;
    char *end = NULL;
    long long nshow = show ? strtoll(show, &end, 10) : 10, nwait = 60000, nlinger = 0;
    if (rc == TB_OK && show && (*end || nshow < 0 || nshow > 100000))
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "--show '%s': a number of keys, 0 to 100000", show);
    if (rc == TB_OK && wait && ((nwait = strtoll(wait, &end, 10)) < 0 || *end))
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "--wait-ms '%s': milliseconds, 0 or more", wait);
    if (rc == TB_OK && linger_opt && ((nlinger = strtoll(linger_opt, &end, 10)) < 0 || *end))
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "--metrics-linger-ms '%s': milliseconds, 0 or more", linger_opt);
    if (rc == TB_OK && !topics && !cache)
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "--against '%s': topics, cache or both", against);
    if (rc == TB_OK && cache && !cache_path && !(cache_path = cfg_get_str(c, CFGK_CACHE_PATH)))
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "--against %s needs the cache file: --cache PATH or cache.path",
                          against);
    if (rc == TB_OK && fix && !topics)
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "--repair repairs topics: use --against topics or both");
    if (rc == TB_OK && cache && access(cache_path, R_OK) != 0)
        rc = tb_error_set(&err, TB_ERR_CONFIG, false, "cache file %s: not readable", cache_path);
    if (rc == TB_OK)
        rc = app_metrics_start(c, APP_METRICS_VERIFY, &metrics, &err);
    if (rc != TB_OK) {
        app_fail("verify", &err);
        ret = rc == TB_ERR_CONFIG ? 2 : 3;
        goto out;
    }
    app_install_signals();
    app_kafka_client_check(c);
#ifdef M_MMAP_THRESHOLD
    /* glibc raises its mmap threshold to the size of each large block freed, up to 32 MiB, and
     * then keeps those blocks (librdkafka's fetch buffers, 1-2 MiB) in its heaps instead of
     * giving them back: a fixed threshold keeps large blocks mapped and returned when freed */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    evt_codec_opts o = {.topic_prefix = cfg_get_str(c, CFGK_TOPIC_PREFIX), .name = cfg_get_str(c, CFGK_NAME)};
    o.row_format = strcmp(cfg_get_str(c, CFGK_VALUE_FORMAT), "row") == 0;
    o.schemas = cfg_get_bool(c, CFGK_VALUE_SCHEMAS);
    evt_codec_opts_encoding(&o, c);
    for (int k = 0; k < 2; k++) {
        if ((k == 0 && !topics) || (k == 1 && !cache))
            continue;
        vrun *r = &runs[nruns++];
        r->c = c;
        r->against = k == 0 ? "topics" : "cache";
        r->cache = k == 1;
        r->cache_path = cache_path;
        r->only_re = tables;
        r->show = (size_t)nshow;
        r->wait_ms = nwait;
        r->o = o;
        r->orow = o;
        r->orow.row_format = true;
        r->orow.schemas = false;
        r->dbz = o.encoding == EVT_ENC_DEBEZIUM;
        if (r->cache) { /* the cache holds tributary's values, without schemas */
            memset(&r->orow, 0, sizeof(r->orow));
            r->orow.topic_prefix = o.topic_prefix;
            r->orow.name = o.name;
            r->orow.row_format = true;
        }
        r->tty = !json && isatty(2);
        r->metrics = metrics;
        r->mv = &mv;
        r->mem_max = (size_t)cfg_get_int(c, CFGK_VERIFY_MEMORY_MAX_BYTES);
        if ((rc = compare(r, &err)) == TB_OK && fix && !r->cache && run_differences(r) > 0 &&
            (rc = repair(r, &err)) == TB_OK) {
            uint64_t up = r->upserts, tomb = r->tombstones;
            run_free(r); /* compare again, from the start */
            r->passes = 0;
            r->lagging = false;
            if ((rc = compare(r, &err)) == TB_OK) {
                r->upserts = up;
                r->tombstones = tomb;
            }
        }
        if (rc != TB_OK) {
            ret = exit_for(&err);
            app_fail("verify", &err);
            mv.state = "failed";
            goto out;
        }
    }
    mv.state = "done";
    uint64_t diffs = 0;
    if (json) {
        evt_jw w;
        evt_jw_init(&w, &out);
        evt_jw_obj_begin(&w);
        evt_jw_key(&w, "results", (size_t)-1);
        evt_jw_arr_begin(&w);
        for (int k = 0; k < nruns; k++)
            report_json(&runs[k], &w);
        evt_jw_arr_end(&w);
        for (int k = 0; k < nruns; k++)
            diffs += run_differences(&runs[k]);
        evt_jw_key(&w, "equal", (size_t)-1);
        evt_jw_bool(&w, diffs == 0);
        evt_jw_obj_end(&w);
        if (evt_jw_finish(&w) == TB_OK) {
            fwrite(out.data, 1, out.len, stdout);
            fputc('\n', stdout);
        }
    } else {
        for (int k = 0; k < nruns; k++) {
            report_text(&runs[k], stdout);
            diffs += run_differences(&runs[k]);
        }
    }
    fflush(stdout);
    ret = diffs ? 1 : 0;
out:
    app_metrics_set_verify(metrics, &mv);
    linger(metrics, nlinger);
    app_metrics_stop(metrics);
    for (int k = 0; k < nruns; k++)
        run_free(&runs[k]);
    tb_buf_free(&out);
    cfg_free(c);
    return ret;
}
