/*
 * ksink_keys: the keys a table's topic holds (ksink_topic_keys, ksink.h).
 *
 * The topic is read from the beginning of every partition to the high
 * watermark each had when the read started, with read_uncommitted (the
 * sink's own messages of an open Kafka transaction count: they are committed
 * or, after an abort, sent again). A key is held when its latest record is
 * not a tombstone. Keys are collected in a tb_hmap of their bytes; memory
 * grows with the number of distinct keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksink_int.h"
#include "tb_hmap.h"
#include "tb_log.h"

/* Record the latest state of key p[0..n) (live: its latest record is not a tombstone). */
static tb_code kk_set_key(tb_hmap *k, const char *p, size_t n, bool live)
{
    void **v;
    if (tb_hmap_put(k, p, n, &v) != TB_OK)
        return TB_ERR_NOMEM;
    *v = live ? (void *)k : NULL; /* any non-NULL pointer marks a live key */
    return TB_OK;
}

tb_code ksink_topic_keys(ksink *ks, const evt_table *t, ksink_key_fn fn, void *opaque, tb_error *err)
{
    tb_code rc = TB_OK;
    rd_kafka_t *rk = NULL;
    rd_kafka_topic_partition_list_t *parts = NULL;
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_topic_t *rkt = NULL;
    tb_hmap keys;
    tb_hmap_init(&keys);
    bool assigned = false;
    int64_t *hi = NULL;
    int timeout_ms = ksink_request_timeout_ms(ks->c);
    tb_buf topic;
    tb_buf_init(&topic, 0);
    if ((rc = evt_json_topic(&ks->copts, t, &topic)) != TB_OK) {
        rc = tb_error_set(err, rc, false, "topic name of %s.%s", evt_table_db(t), evt_table_name(t));
        goto out;
    }
    /* everything sent so far is in the topic before it is read */
    if ((rc = ksink_flush(ks, timeout_ms, err)) != TB_OK)
        goto out;
    rd_kafka_conf_t *conf = NULL;
    if ((rc = ksink_conf_new(ks->c, KSINK_ROLE_CONSUMER, &conf, err)) != TB_OK)
        goto out;
    char errstr[256], gid[300];
    snprintf(gid, sizeof gid, "%s-keys-reader", cfg_get_str(ks->c, "name"));
    if (rd_kafka_conf_set(conf, "isolation.level", "read_uncommitted", errstr, sizeof errstr) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "group.id", gid, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "topic %s: reader configuration: %s", topic.data, errstr);
        goto out;
    }
    if ((rc = kafka_client_new(conf, RD_KAFKA_CONSUMER, "Kafka client", &rk, err)) != TB_OK)
        goto out;
    if (!(rkt = rd_kafka_topic_new(rk, topic.data, NULL))) {
        rc = kafka_error(err, rd_kafka_last_error(), "topic %s", topic.data);
        goto out;
    }
    rd_kafka_resp_err_t rerr = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    if (rerr == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
        (md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || md->topics[0].partition_cnt == 0))
        goto done; /* no topic: no keys */
    if (rerr == RD_KAFKA_RESP_ERR_NO_ERROR && (md->topic_cnt != 1 || md->topics[0].err))
        rerr = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
    if (rerr) {
        rc = kafka_error(err, rerr, "topic %s: metadata", topic.data);
        goto out;
    }
    int np = md->topics[0].partition_cnt, left = 0;
    parts = rd_kafka_topic_partition_list_new(np);
    hi = calloc((size_t)np, sizeof(*hi));
    if (!parts || !hi) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    for (int i = 0; i < np; i++) {
        int32_t p = md->topics[0].partitions[i].id;
        int64_t lo = 0;
        if ((rerr = rd_kafka_query_watermark_offsets(rk, topic.data, p, &lo, &hi[i], timeout_ms)) != 0) {
            rc = kafka_error(err, rerr, "topic %s [%d]: watermarks", topic.data, (int)p);
            goto out;
        }
        if (hi[i] > lo) {
            rd_kafka_topic_partition_list_add(parts, topic.data, p)->offset = lo; /* no logical-offset lookup */
            left++;
        }
    }
    if (left == 0)
        goto done;
    if ((rerr = rd_kafka_assign(rk, parts)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rc = kafka_error(err, rerr, "topic %s: assign", topic.data);
        goto out;
    }
    assigned = true;
    int64_t idle_deadline = tb_mono_ms() + timeout_ms;
    while (left > 0) {
        if (tb_mono_ms() > idle_deadline) {
            rc = tb_error_set(err, TB_ERR_KAFKA, true, "topic %s: not read to its end in %d ms without progress",
                              topic.data, timeout_ms);
            goto out;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rc = kafka_error(err, m->err, "topic %s: read", topic.data);
            rd_kafka_message_destroy(m);
            goto out;
        }
        int i = 0;
        while (i < np && md->topics[0].partitions[i].id != m->partition)
            i++;
        if (!m->err && m->key && i < np && m->offset < hi[i] &&
            kk_set_key(&keys, m->key, m->key_len, m->payload != NULL) != TB_OK) {
            rd_kafka_message_destroy(m);
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "topic %s: out of memory for its keys", topic.data);
            goto out;
        }
        if (i < np && hi[i] >= 0 && (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF || m->offset >= hi[i] - 1)) {
            hi[i] = -1; /* done with this partition */
            left--;
        }
        idle_deadline = tb_mono_ms() + timeout_ms;
        rd_kafka_message_destroy(m);
    }
done:
    {
        const char *key;
        size_t klen;
        void *live;
        for (size_t it = 0; rc == TB_OK && tb_hmap_next(&keys, &it, &key, &klen, &live);)
            if (live)
                rc = fn(opaque, key, klen, err);
    }
out:
    if (assigned)
        rd_kafka_assign(rk, NULL);
    if (parts)
        rd_kafka_topic_partition_list_destroy(parts);
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    if (rk) {
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
    }
    free(hi);
    tb_hmap_free(&keys, NULL);
    tb_buf_free(&topic);
    return rc;
}
