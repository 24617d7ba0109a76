/*
 * bench_cache_produce: write N envelope-format change events (DESIGN 4) for
 * the cache benchmark (bench/cache_bench.sh): a schema record on
 * <prefix>.schema, then N messages on <prefix>.bench.items cycling over K keys
 * (the first K are creates, the rest updates). Creates both topics.
 * With a fifth argument `debezium`: the same rows as Debezium's MariaDB
 * connector writes them through Kafka Connect's JsonConverter with schemas
 * (key and value {"schema":…,"payload":…}, DECIMAL as Connect Decimal bytes,
 * Debezium's envelope and source block) on <prefix>.bench.items, and no
 * schema record.
 *
 *   bench_cache_produce BROKERS PREFIX N K [debezium]
 */
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evt_json.h"

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_cache_produce: %s: %s\n", what, why);
    exit(1);
}

static void create(rd_kafka_t *rk, const char *topic, int parts)
{
    char errstr[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, parts, 1, errstr, sizeof(errstr));
    if (!nt)
        die(topic, errstr);
    rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        ev ? rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n) : NULL;
    if (!ev || n != 1 || (rd_kafka_topic_result_error(res[0]) &&
                          rd_kafka_topic_result_error(res[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS))
        die(topic, ev && n ? rd_kafka_topic_result_error_string(res[0]) : "CreateTopics failed");
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
}

static void send_msg(rd_kafka_t *rk, const char *topic, const tb_buf *k, const tb_buf *v)
{
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(k->data, k->len),
                                                  RD_KAFKA_V_VALUE(v->data, v->len),
                                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(rk, 5);
            continue;
        }
        if (e)
            die("produce", rd_kafka_err2str(e));
        return;
    }
}

static void col(evt_jw *w, const char *name, const char *type, const char *st, int pk)
{
    evt_jw_obj_begin(w);
    evt_jw_key(w, "name", (size_t)-1);
    evt_jw_str(w, name, strlen(name));
    evt_jw_key(w, "type", (size_t)-1);
    evt_jw_str(w, type, strlen(type));
    evt_jw_key(w, "source_type", (size_t)-1);
    evt_jw_str(w, st, strlen(st));
    evt_jw_key(w, "nullable", (size_t)-1);
    evt_jw_bool(w, !pk);
    evt_jw_key(w, "unsigned", (size_t)-1);
    evt_jw_bool(w, false);
    evt_jw_key(w, "pk", (size_t)-1);
    evt_jw_int(w, pk);
    evt_jw_obj_end(w);
}

/* Debezium 3.6's schemas for the bench table (as its MariaDB connector names them). */
#define DBZ_ROW                                                                                                        \
    "[{\"type\":\"int64\",\"optional\":false,\"field\":\"id\"},{\"type\":\"string\",\"optional\":true,"             \
    "\"field\":\"name\"},{\"type\":\"int32\",\"optional\":true,\"field\":\"qty\"},{\"type\":\"bytes\",\"optional\":" \
    "true,\"name\":\"org.apache.kafka.connect.data.Decimal\",\"version\":1,\"parameters\":{\"scale\":\"2\","          \
    "\"connect.decimal.precision\":\"10\"},\"field\":\"price\"},{\"type\":\"string\",\"optional\":true,\"name\":"     \
    "\"io.debezium.time.ZonedTimestamp\",\"version\":1,\"field\":\"updated\"}]"
static const char DBZ_KEY_SCHEMA[] = "{\"type\":\"struct\",\"fields\":[{\"type\":\"int64\",\"optional\":false,"
                                     "\"field\":\"id\"}],\"optional\":false,\"name\":\"dbz.bench.items.Key\"}";
static const char DBZ_VALUE_SCHEMA[] =
    "{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"fields\":" DBZ_ROW ",\"optional\":true,\"name\":"
    "\"dbz.bench.items.Value\",\"field\":\"before\"},{\"type\":\"struct\",\"fields\":" DBZ_ROW ",\"optional\":true,"
    "\"name\":\"dbz.bench.items.Value\",\"field\":\"after\"},{\"type\":\"struct\",\"fields\":[{\"type\":\"string\","
    "\"optional\":false,\"field\":\"version\"},{\"type\":\"string\",\"optional\":false,\"field\":\"connector\"},"
    "{\"type\":\"string\",\"optional\":false,\"field\":\"name\"},{\"type\":\"int64\",\"optional\":false,\"field\":"
    "\"ts_ms\"},{\"type\":\"string\",\"optional\":true,\"name\":\"io.debezium.data.Enum\",\"version\":1,"
    "\"parameters\":{\"allowed\":\"true,first,first_in_data_collection,last_in_data_collection,last,false,"
    "incremental\"},\"default\":\"false\",\"field\":\"snapshot\"},{\"type\":\"string\",\"optional\":false,\"field\":"
    "\"db\"},{\"type\":\"string\",\"optional\":true,\"field\":\"sequence\"},{\"type\":\"int64\",\"optional\":true,"
    "\"field\":\"ts_us\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_ns\"},{\"type\":\"string\",\"optional\":"
    "true,\"field\":\"table\"},{\"type\":\"int64\",\"optional\":false,\"field\":\"server_id\"},{\"type\":\"string\","
    "\"optional\":true,\"field\":\"gtid\"},{\"type\":\"string\",\"optional\":false,\"field\":\"file\"},{\"type\":"
    "\"int64\",\"optional\":false,\"field\":\"pos\"},{\"type\":\"int32\",\"optional\":false,\"field\":\"row\"},"
    "{\"type\":\"int64\",\"optional\":true,\"field\":\"thread\"},{\"type\":\"string\",\"optional\":true,\"field\":"
    "\"query\"}],\"optional\":false,\"name\":\"io.debezium.connector.mariadb.Source\",\"version\":1,\"field\":"
    "\"source\"},{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,\"field\":\"id\"},"
    "{\"type\":\"int64\",\"optional\":false,\"field\":\"total_order\"},{\"type\":\"int64\",\"optional\":false,"
    "\"field\":\"data_collection_order\"}],\"optional\":true,\"name\":\"event.block\",\"version\":1,\"field\":"
    "\"transaction\"},{\"type\":\"string\",\"optional\":false,\"field\":\"op\"},{\"type\":\"int64\",\"optional\":"
    "true,\"field\":\"ts_ms\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_us\"},{\"type\":\"int64\","
    "\"optional\":true,\"field\":\"ts_ns\"}],\"optional\":false,\"name\":\"dbz.bench.items.Envelope\",\"version\":2}";

/* The same rows as Debezium writes them with Connect schemas. */
static void produce_debezium(rd_kafka_t *rk, const char *topic, long n, long keys)
{
    tb_buf k, v, b64;
    tb_buf_init(&k, 0);
    tb_buf_init(&v, 0);
    tb_buf_init(&b64, 0);
    for (long i = 0; i < n; i++) {
        long id = i % keys;
        long unscaled = (id % 1000) * 100 + i % 100;
        unsigned char be[4] = {(unsigned char)(unscaled >> 24), (unsigned char)(unscaled >> 16),
                               (unsigned char)(unscaled >> 8), (unsigned char)unscaled};
        size_t off = 0; /* minimal two's complement */
        while (off < 3 && be[off] == 0 && !(be[off + 1] & 0x80))
            off++;
        tb_buf_reset(&b64);
        tb_buf_base64(&b64, be + off, 4 - off);
        long long ts = 1795900000000LL + i;
        tb_buf_reset(&k);
        tb_buf_reset(&v);
        tb_buf_printf(&k, "{\"schema\":%s,\"payload\":{\"id\":%ld}}", DBZ_KEY_SCHEMA, id);
        tb_buf_printf(&v,
                      "{\"schema\":%s,\"payload\":{\"before\":null,\"after\":{\"id\":%ld,\"name\":\"item number "
                      "%ld\",\"qty\":%ld,\"price\":\"%s\",\"updated\":\"2026-11-29T10:00:00Z\"},\"source\":{\"version\":"
                      "\"3.6.1.Final\",\"connector\":\"mariadb\",\"name\":\"dbz\",\"ts_ms\":%lld,\"snapshot\":\"false\","
                      "\"db\":\"bench\",\"sequence\":null,\"ts_us\":%lld000,\"ts_ns\":%lld000000,\"table\":\"items\","
                      "\"server_id\":1,\"gtid\":\"0-1-%ld\",\"file\":\"mariadb-bin.000001\",\"pos\":%ld,\"row\":0,"
                      "\"thread\":7,\"query\":null},\"transaction\":null,\"op\":\"%s\",\"ts_ms\":%lld,\"ts_us\":%lld000,"
                      "\"ts_ns\":%lld000000}}",
                      DBZ_VALUE_SCHEMA, id, id, i, tb_buf_cstr(&b64), ts, ts, ts, i + 1, 4 + i * 100,
                      id == i ? "c" : "u", ts, ts, ts);
        send_msg(rk, topic, &k, &v);
    }
    if (rd_kafka_flush(rk, 300000) != 0)
        die("flush", "timed out");
    tb_buf_free(&k);
    tb_buf_free(&v);
    tb_buf_free(&b64);
}

int main(int argc, char **argv)
{
    if (argc != 5 && !(argc == 6 && strcmp(argv[5], "debezium") == 0))
        die("usage", "bench_cache_produce BROKERS PREFIX N K [debezium]");
    long n = atol(argv[3]), keys = atol(argv[4]);
    bool dbz = argc == 6;
    char errstr[512], stopic[256], topic[256];
    snprintf(stopic, sizeof(stopic), "%s.schema", argv[2]);
    snprintf(topic, sizeof(topic), "%s.bench.items", argv[2]);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers", argv[1], "enable.idempotence", "true", "linger.ms", "50",
                        "batch.size", "1000000", "compression.type", "lz4", "partitioner", "murmur2_random",
                        "queue.buffering.max.messages", "1000000", NULL};
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
            die(kv[i], errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk)
        die("producer", errstr);
    create(rk, topic, 3);
    if (dbz) {
        produce_debezium(rk, topic, n, keys);
        rd_kafka_destroy(rk);
        return 0;
    }
    create(rk, stopic, 1);

    tb_buf k, v;
    tb_buf_init(&k, 0);
    tb_buf_init(&v, 0);
    evt_jw w;
    evt_jw_init(&w, &k);
    evt_jw_obj_begin(&w);
    evt_jw_key(&w, "db", 2);
    evt_jw_str(&w, "bench", 5);
    evt_jw_key(&w, "table", 5);
    evt_jw_str(&w, "items", 5);
    evt_jw_obj_end(&w);
    evt_jw_finish(&w);
    evt_jw_init(&w, &v);
    evt_jw_obj_begin(&w);
    evt_jw_key(&w, "db", 2);
    evt_jw_str(&w, "bench", 5);
    evt_jw_key(&w, "table", 5);
    evt_jw_str(&w, "items", 5);
    evt_jw_key(&w, "version", (size_t)-1);
    evt_jw_int(&w, 1);
    evt_jw_key(&w, "columns", (size_t)-1);
    evt_jw_arr_begin(&w);
    col(&w, "id", "bigint", "bigint(20)", 1);
    col(&w, "name", "varchar", "varchar(64)", 0);
    col(&w, "qty", "int", "int(11)", 0);
    col(&w, "price", "decimal", "decimal(10,2)", 0);
    col(&w, "updated", "timestamp", "timestamp", 0);
    evt_jw_arr_end(&w);
    evt_jw_key(&w, "primary_key", (size_t)-1);
    evt_jw_arr_begin(&w);
    evt_jw_str(&w, "id", 2);
    evt_jw_arr_end(&w);
    evt_jw_obj_end(&w);
    if (evt_jw_finish(&w) != TB_OK)
        die("schema", "JSON");
    send_msg(rk, stopic, &k, &v);

    char name[64], price[32];
    for (long i = 0; i < n; i++) {
        long id = i % keys;
        tb_buf_reset(&k);
        tb_buf_reset(&v);
        evt_jw_init(&w, &k);
        evt_jw_obj_begin(&w);
        evt_jw_key(&w, "id", 2);
        evt_jw_int(&w, id);
        evt_jw_obj_end(&w);
        evt_jw_finish(&w);
        evt_jw_init(&w, &v);
        evt_jw_obj_begin(&w);
        evt_jw_key(&w, "before", 6);
        evt_jw_null(&w);
        evt_jw_key(&w, "after", 5);
        evt_jw_obj_begin(&w);
        evt_jw_key(&w, "id", 2);
        evt_jw_int(&w, id);
        int nl = snprintf(name, sizeof(name), "item number %ld", id);
        evt_jw_key(&w, "name", 4);
        evt_jw_str(&w, name, (size_t)nl);
        evt_jw_key(&w, "qty", 3);
        evt_jw_int(&w, i);
        int pl = snprintf(price, sizeof(price), "%ld.%02ld", id % 1000, i % 100);
        evt_jw_key(&w, "price", 5);
        evt_jw_str(&w, price, (size_t)pl);
        evt_jw_key(&w, "updated", 7);
        evt_jw_str(&w, "2026-11-29T10:00:00Z", 20);
        evt_jw_obj_end(&w);
        evt_jw_key(&w, "source", 6);
        evt_jw_obj_begin(&w);
        evt_jw_key(&w, "version", 7);
        evt_jw_str(&w, "0.1.0", 5);
        evt_jw_key(&w, "connector", 9);
        evt_jw_str(&w, "mariadb", 7);
        evt_jw_key(&w, "name", 4);
        evt_jw_str(&w, "bench", 5);
        evt_jw_key(&w, "ts_ms", 5);
        evt_jw_int(&w, 1795900000000 + i);
        evt_jw_key(&w, "snapshot", 8);
        evt_jw_str(&w, "false", 5);
        evt_jw_key(&w, "db", 2);
        evt_jw_str(&w, "bench", 5);
        evt_jw_key(&w, "table", 5);
        evt_jw_str(&w, "items", 5);
        evt_jw_key(&w, "server_id", 9);
        evt_jw_int(&w, 1);
        evt_jw_key(&w, "file", 4);
        evt_jw_str(&w, "mariadb-bin.000001", 18);
        evt_jw_key(&w, "pos", 3);
        evt_jw_int(&w, 4 + i * 100);
        evt_jw_key(&w, "row", 3);
        evt_jw_int(&w, 0);
        evt_jw_key(&w, "gtid", 4);
        evt_jw_null(&w);
        evt_jw_obj_end(&w);
        evt_jw_key(&w, "op", 2);
        evt_jw_str(&w, id == i ? "c" : "u", 1);
        evt_jw_key(&w, "ts_ms", 5);
        evt_jw_int(&w, 1795900000000 + i);
        evt_jw_key(&w, "transaction", 11);
        evt_jw_null(&w);
        evt_jw_obj_end(&w);
        if (evt_jw_finish(&w) != TB_OK)
            die("row", "JSON");
        send_msg(rk, topic, &k, &v);
    }
    if (rd_kafka_flush(rk, 120000) != 0)
        die("flush", "timed out");
    tb_buf_free(&k);
    tb_buf_free(&v);
    rd_kafka_destroy(rk);
    return 0;
}
