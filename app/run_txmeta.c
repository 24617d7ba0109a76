/*
 * run_txmeta: transaction.topic=true for `tributary run` (sink=kafka).
 *
 * Each source transaction that has at least one captured change gets two
 * records on <topic.prefix>.transaction, Debezium-style, key {"id":"<txid>"}:
 *   {"status":"BEGIN","id":"0-1-7","event_count":null,"data_collections":null,"ts_ms":N}
 *   {"status":"END","id":"0-1-7","event_count":3,
 *    "data_collections":[{"data_collection":"shop.orders","event_count":2},…],"ts_ms":N}
 * (ts_ms: the source commit time). BEGIN goes out before the transaction's
 * first change and END after its last, both tracked with the transaction by
 * the sink, so its position is committed only with them. Snapshot rows have
 * no transaction records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_run.h"
#include "evt_json.h"

void run_txmeta_free(run_ctx *r)
{
    for (size_t i = 0; i < r->txm_n; i++)
        free(r->txm[i].name);
    free(r->txm);
    r->txm = NULL;
    r->txm_n = r->txm_cap = 0;
    free(r->txm_id);
    r->txm_id = NULL;
}

/* Whether entry e counts the table db.table: db and table are compared apart ("a.b" + "c" is
 * not "a" + "b.c"), whatever their lengths. */
static bool txm_is(const char *name, size_t dblen, const char *db, const char *table)
{
    return strlen(db) == dblen && memcmp(name, db, dblen) == 0 && name[dblen] == '.' &&
           strcmp(name + dblen + 1, table) == 0;
}

static tb_code txm_send(run_ctx *r, bool end, tb_error *err)
{
    tb_buf k, v;
    tb_buf_init(&k, 0);
    tb_buf_init(&v, 0);
    evt_jw w;
    evt_jw_init(&w, &k);
    evt_jw_obj_begin(&w);
    evt_jw_key(&w, "id", 2);
    evt_jw_str(&w, r->txm_id, strlen(r->txm_id));
    evt_jw_obj_end(&w);
    tb_code rc = evt_jw_finish(&w);
    evt_jw_init(&w, &v);
    evt_jw_obj_begin(&w);
    evt_jw_key(&w, "status", 6);
    evt_jw_str(&w, end ? "END" : "BEGIN", end ? 3 : 5);
    evt_jw_key(&w, "id", 2);
    evt_jw_str(&w, r->txm_id, strlen(r->txm_id));
    evt_jw_key(&w, "event_count", 11);
    uint64_t total = 0;
    if (end) {
        for (size_t i = 0; i < r->txm_n; i++)
            total += r->txm[i].count;
        evt_jw_uint(&w, total);
    } else {
        evt_jw_null(&w);
    }
    evt_jw_key(&w, "data_collections", 16);
    if (end) {
        evt_jw_arr_begin(&w);
        for (size_t i = 0; i < r->txm_n; i++) {
            if (r->txm[i].count == 0)
                continue;
            evt_jw_obj_begin(&w);
            evt_jw_key(&w, "data_collection", 15);
            evt_jw_str(&w, r->txm[i].name, strlen(r->txm[i].name));
            evt_jw_key(&w, "event_count", 11);
            evt_jw_uint(&w, r->txm[i].count);
            evt_jw_obj_end(&w);
        }
        evt_jw_arr_end(&w);
    } else {
        evt_jw_null(&w);
    }
    evt_jw_key(&w, "ts_ms", 5);
    evt_jw_int(&w, r->txm_ts);
    evt_jw_obj_end(&w);
    if (rc == TB_OK)
        rc = evt_jw_finish(&w);
    if (rc != TB_OK)
        rc = tb_error_set(err, rc, false, "transaction record of %s: cannot encode", r->txm_id);
    else
        rc = sink_send_txmeta(r->sink, k.data, k.len, v.data, v.len, err);
    tb_buf_free(&k);
    tb_buf_free(&v);
    return rc;
}

tb_code run_txmeta_event(run_ctx *r, const evt_event *ev, tb_error *err)
{
    if (!r->txmeta || evt_event_snapshot(ev) != EVT_SNAPSHOT_FALSE)
        return TB_OK;
    const evt_table *t = evt_event_table(ev);
    if (!r->txm_open) {
        const char *id = evt_event_txid(ev);
        free(r->txm_id);
        if (!(r->txm_id = strdup(id ? id : "")))
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        r->txm_ts = evt_event_commit_ts_ms(ev);
        for (size_t i = 0; i < r->txm_n; i++)
            r->txm[i].count = 0;
        tb_code rc = txm_send(r, false, err);
        if (rc != TB_OK)
            return rc;
        r->txm_open = true;
    }
    const char *db = t ? evt_table_db(t) : "", *table = t ? evt_table_name(t) : "";
    for (size_t i = 0; i < r->txm_n; i++)
        if (txm_is(r->txm[i].name, r->txm[i].dblen, db, table)) {
            r->txm[i].count++;
            return TB_OK;
        }
    if (r->txm_n == r->txm_cap) {
        size_t cap = r->txm_cap ? r->txm_cap * 2 : 8;
        void *p = realloc(r->txm, cap * sizeof(r->txm[0]));
        if (!p)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        r->txm = p;
        r->txm_cap = cap;
    }
    size_t dblen = strlen(db), tlen = strlen(table);
    char *name = malloc(dblen + 1 + tlen + 1);
    if (!name)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    memcpy(name, db, dblen);
    name[dblen] = '.';
    memcpy(name + dblen + 1, table, tlen + 1);
    r->txm[r->txm_n].name = name;
    r->txm[r->txm_n].dblen = dblen;
    r->txm[r->txm_n++].count = 1;
    return TB_OK;
}

tb_code run_txmeta_end(run_ctx *r, tb_error *err)
{
    if (!r->txmeta || !r->txm_open)
        return TB_OK;
    r->txm_open = false;
    return txm_send(r, true, err);
}
