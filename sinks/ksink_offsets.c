/*
 * ksink_offsets: the offsets store (DESIGN 6), usable without an open sink.
 *
 * offsets.storage=kafka
 *   topic  <name>.offsets, cleanup.policy=compact, 1 partition
 *   key    the connector name as a JSON string: name `shop` -> `"shop"`
 *          (written with evt_jw, so escaping is canonical)
 *   value  evt_position_to_json(position); a tombstone stores "none"
 *   read   consume partition 0 from the beginning to the end of the log
 *          (isolation.level=read_committed, so aborted exactly-once batches
 *          are never seen) and keep the last record with our key.
 *
 * offsets.storage=file
 *   offsets.file holds the text form (tb_position_format) and a newline. It
 *   is replaced atomically (tb_file_write_atomic: a temporary file beside it,
 *   fsync, rename over the file, fsync of the folder). A missing file means
 *   "nothing stored".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evt_json.h"
#include "ksink.h"
#include "ksink_int.h"
#include "tb_file.h"
#include "tb_log.h"

tb_code ksink_offsets_key(const char *name, tb_buf *out)
{
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_str(&w, name, strlen(name));
    return evt_jw_finish(&w);
}

tb_code ksink_offsets_value(const tb_position *pos, tb_buf *out, bool *is_null)
{
    *is_null = pos->kind == TB_POS_NONE;
    if (*is_null)
        return TB_OK;
    return evt_position_to_json(pos, out);
}

/* ------------------------------------------------------------ file */

tb_code ksink_offsets_file_write(const char *path, const tb_position *pos, tb_error *err)
{
    tb_buf text;
    tb_buf_init(&text, 0);
    tb_code rc;
    if (tb_position_format(pos, &text) != TB_OK || tb_buf_putc(&text, '\n') != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "offsets file %s: out of memory", path);
    else if ((rc = tb_file_write_atomic(path, text.data, text.len, err)) != TB_OK)
        tb_error_prefix(err, rc, "offsets file ");
    tb_buf_free(&text);
    return rc;
}

static tb_code ksink_offsets_file_read(const char *path, tb_position *out, tb_error *err)
{
    tb_buf text;
    tb_buf_init(&text, 0);
    tb_code rc = tb_file_read(path, 1 << 20, &text, err);
    if (rc == TB_ERR_NOT_FOUND) {
        rc = TB_OK; /* nothing stored */
        goto out;
    }
    if (rc != TB_OK) {
        tb_error_prefix(err, rc, "offsets file ");
        goto out;
    }
    while (text.len > 0 && (text.data[text.len - 1] == '\n' || text.data[text.len - 1] == '\r' ||
                            text.data[text.len - 1] == ' '))
        text.data[--text.len] = '\0';
    if ((rc = tb_position_parse(tb_buf_cstr(&text), out, err)) != TB_OK)
        tb_error_prefix(err, rc, "offsets file %s: ", path);
out:
    tb_buf_free(&text);
    return rc;
}

/* ------------------------------------------------------------ kafka */

static tb_code ksink_offsets_kafka_read(const cfg *c, tb_position *out, tb_error *err)
{
    tb_code rc = TB_OK;
    rd_kafka_conf_t *conf = NULL;
    rd_kafka_t *rk = NULL;
    rd_kafka_topic_partition_list_t *parts = NULL;
    tb_buf topic, key, value;
    bool have_value = false, assigned = false;
    int64_t lo = 0, hi = 0;
    int timeout_ms = ksink_request_timeout_ms(c);
    tb_buf_init(&topic, 0);
    tb_buf_init(&key, 0);
    tb_buf_init(&value, 0);

    if (ksink_offsets_topic(c, &topic) != TB_OK || ksink_offsets_key(cfg_get_str(c, CFGK_NAME), &key) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "offsets: out of memory");
        goto out;
    }
    if ((rc = ksink_conf_new(c, KSINK_ROLE_CONSUMER, &conf, err)) != TB_OK)
        goto out;
    char gid[300];
    snprintf(gid, sizeof(gid), "%s-offsets-reader", cfg_get_str(c, CFGK_NAME));
    char errstr[256];
    if (rd_kafka_conf_set(conf, "group.id", gid, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "offsets: group.id: %s", errstr);
        goto out;
    }
    rc = kafka_client_new(conf, RD_KAFKA_CONSUMER, "Kafka client", &rk, err);
    conf = NULL;
    if (rc != TB_OK)
        goto out;

    rd_kafka_resp_err_t rerr = rd_kafka_query_watermark_offsets(rk, topic.data, 0, &lo, &hi, timeout_ms);
    if (rerr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || rerr == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
        rerr == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION) {
        TB_DEBUG("ksink", "offsets topic %s does not exist: nothing stored", topic.data);
        goto done;
    }
    if (rerr) {
        rc = kafka_error(err, rerr, "offsets topic %s: watermarks", topic.data);
        goto out;
    }
    if (hi <= lo)
        goto done;

    parts = rd_kafka_topic_partition_list_new(1);
    /* At the low watermark just read, not RD_KAFKA_OFFSET_BEGINNING: a logical offset makes
     * librdkafka look it up again before the first fetch, which cost up to 500 ms per start. */
    rd_kafka_topic_partition_list_add(parts, topic.data, 0)->offset = lo;
    if ((rerr = rd_kafka_assign(rk, parts)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rc = kafka_error(err, rerr, "offsets topic %s: assign", topic.data);
        goto out;
    }
    assigned = true;
    int64_t deadline = tb_mono_ms() + timeout_ms;
    for (;;) {
        if (tb_mono_ms() > deadline) {
            rc = tb_error_set(err, TB_ERR_KAFKA, true, "offsets topic %s: not read to its end (offset %lld) in %d ms",
                              topic.data, (long long)hi, timeout_ms);
            goto out;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        bool end = false;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            end = true;
        } else if (m->err) {
            rc = kafka_error(err, m->err, "offsets topic %s: read", topic.data);
            rd_kafka_message_destroy(m);
            goto out;
        } else {
            if (m->key_len == key.len && memcmp(m->key, key.data, key.len) == 0) {
                tb_buf_reset(&value);
                have_value = m->payload != NULL;
                if (have_value && tb_buf_append(&value, m->payload, m->len) != TB_OK) {
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "offsets: out of memory");
                    rd_kafka_message_destroy(m);
                    goto out;
                }
            }
            end = m->offset >= hi - 1;
        }
        rd_kafka_message_destroy(m);
        if (end)
            break;
    }
done:
    if (have_value) {
        if ((rc = evt_position_from_json(value.data, value.len, out, err)) != TB_OK)
            tb_error_prefix(err, rc, "offsets topic %s, key %s: ", topic.data, key.data);
    } else {
        tb_position_free(out);
    }
out:
    if (assigned)
        rd_kafka_assign(rk, NULL);
    if (parts)
        rd_kafka_topic_partition_list_destroy(parts);
    if (rk) {
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
    }
    if (conf)
        rd_kafka_conf_destroy(conf);
    tb_buf_free(&topic);
    tb_buf_free(&key);
    tb_buf_free(&value);
    return rc;
}

typedef struct ksink_one_dr {
    int done;
    rd_kafka_resp_err_t err;
    bool unconfirmed; /* reported delivered without an offset (kafka_dr_unconfirmed) */
} ksink_one_dr;

static void ksink_one_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    ksink_one_dr *d = m->_private;
    (void)opaque;
    if (d) {
        d->done = 1;
        d->err = m->err;
        d->unconfirmed = kafka_dr_unconfirmed(m);
    }
}

static tb_code ksink_offsets_kafka_write(const cfg *c, const tb_position *pos, tb_error *err)
{
    tb_code rc = TB_OK;
    rd_kafka_conf_t *conf = NULL;
    rd_kafka_t *rk = NULL;
    tb_buf topic, key, value;
    bool is_null = false;
    ksink_one_dr dr = {0, 0, false};
    int timeout_ms = ksink_request_timeout_ms(c);
    tb_buf_init(&topic, 0);
    tb_buf_init(&key, 0);
    tb_buf_init(&value, 0);
    if (ksink_offsets_topic(c, &topic) != TB_OK || ksink_offsets_key(cfg_get_str(c, CFGK_NAME), &key) != TB_OK ||
        ksink_offsets_value(pos, &value, &is_null) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "offsets: out of memory");
        goto out;
    }
    if ((rc = ksink_conf_new(c, KSINK_ROLE_PRODUCER, &conf, err)) != TB_OK)
        goto out;
    rd_kafka_conf_set_dr_msg_cb(conf, ksink_one_dr_cb);
    rc = kafka_client_new(conf, RD_KAFKA_PRODUCER, "Kafka client", &rk, err);
    conf = NULL;
    if (rc != TB_OK)
        goto out;
    if ((rc = ksink_topic_ensure(rk, c, topic.data, 1, true, err)) != TB_OK)
        goto out;
    rd_kafka_resp_err_t rerr = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic.data), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY(key.data, key.len),
        RD_KAFKA_V_VALUE(is_null ? NULL : value.data, is_null ? 0 : value.len), RD_KAFKA_V_OPAQUE(&dr),
        RD_KAFKA_V_END);
    if (rerr) {
        rc = kafka_error(err, rerr, "offsets topic %s: produce", topic.data);
        goto out;
    }
    rd_kafka_flush(rk, timeout_ms);
    if (!dr.done)
        rc = tb_error_set(err, TB_ERR_KAFKA, true, "offsets topic %s: not acknowledged within %d ms", topic.data,
                          timeout_ms);
    else if (dr.err)
        rc = kafka_error(err, dr.err, "offsets topic %s: delivery", topic.data);
    else if (dr.unconfirmed)
        rc = tb_error_set(err, TB_ERR_KAFKA, true,
                          "offsets topic %s: the broker did not confirm the record (no offset): it may not be "
                          "written; run the command again",
                          topic.data);
out:
    if (rk) {
        if (!dr.done) {
            rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
            rd_kafka_flush(rk, 1000);
        }
        rd_kafka_destroy(rk);
    }
    if (conf)
        rd_kafka_conf_destroy(conf);
    tb_buf_free(&topic);
    tb_buf_free(&key);
    tb_buf_free(&value);
    return rc;
}

/* ------------------------------------------------------------ API */

static bool ksink_offsets_in_file(const cfg *c)
{
    const char *s = cfg_get_str(c, CFGK_OFFSETS_STORAGE);
    return s && strcmp(s, "file") == 0;
}

tb_code ksink_offsets_read(const cfg *c, tb_position *out, tb_error *err)
{
    tb_position_free(out);
    if (ksink_offsets_in_file(c))
        return ksink_offsets_file_read(cfg_get_str(c, CFGK_OFFSETS_FILE), out, err);
    return ksink_offsets_kafka_read(c, out, err);
}

tb_code ksink_offsets_write(const cfg *c, const tb_position *pos, tb_error *err)
{
    if (ksink_offsets_in_file(c))
        return ksink_offsets_file_write(cfg_get_str(c, CFGK_OFFSETS_FILE), pos, err);
    return ksink_offsets_kafka_write(c, pos, err);
}
