/*
 * The table cache reads Avro topics (avro/av_msg.h): tributary runs against the testenv MariaDB,
 * Kafka and schema registry (scripts/testenv up --registry) with key.converter=avro and
 * value.converter=avro, in both value encodings; `tributary cache --until-caught-up` replays the
 * topics, fetching each writer schema from the registry by its id, and the cache table holds what
 * the source holds (queried directly), after a snapshot, inserts, updates, a key change, deletes
 * and an ADD COLUMN (a new schema version). Fails (never skips) without the registry.
 * Under the registry's BACKWARD compatibility an ADD COLUMN ... NOT NULL DEFAULT is accepted: the
 * Avro schemas carry the column defaults, in both encodings.
 */
#include "../e2e/e2e_tables.h"
#include "avro_registry.h"

#define COLS "id, v, n, d, dt, bu, e, x, k"

/* The source's columns as the cache holds them: a DATETIME in ISO form, with a T. */
#define SOURCE_COLS "id, v, n, d, REPLACE(CAST(dt AS CHAR), ' ', 'T'), bu, e, x, k"

static void avro_cache(const char *tag, const char *encoding)
{
    char extra[1024];
    snprintf(extra, sizeof extra,
             "key.converter=avro\nvalue.converter=avro\nschema.registry.url=%s\n%s", registry(), encoding);
    st_run r;
    st_setup(&r, tag, extra);
    MYSQL *m = e2e_mysql();
    e2e_sql(m, "CREATE DATABASE %s", r.db);
    e2e_sql(m,
            "CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(20), n INT, d DECIMAL(10,2), dt DATETIME(3), "
            "bu BIGINT UNSIGNED, e ENUM('red','green'))",
            r.db);
    for (int i = 1; i <= 40; i++)
        e2e_sql(m,
                "INSERT INTO %s.t VALUES (%d, 'snap%d', %d, %d.25, '2024-01-02 03:04:05.%03d', "
                "18446744073709551%03d, '%s')",
                r.db, i, i, i, -i, i, i, i % 2 ? "red" : "green");
    e2e_sql(m, "INSERT INTO %s.t (id) VALUES (41)", r.db); /* NULLs */
    st_start(&r);
    wait_caught_up(m, r.status, r.pid, r.log);
    e2e_sql(m, "INSERT INTO %s.t VALUES (100, 'ins', 7, 0.01, '1999-12-31 23:59:59.999', 0, 'green')", r.db);
    e2e_sql(m, "UPDATE %s.t SET v = 'upd', d = -99999999.99, n = NULL WHERE id <= 5", r.db);
    e2e_sql(m, "UPDATE %s.t SET id = 200 WHERE id = 6", r.db); /* a key change */
    e2e_sql(m, "DELETE FROM %s.t WHERE id IN (7, 8, 41)", r.db);
    char subject[256];
    snprintf(subject, sizeof subject, "%s.%s.t-value", r.db, r.db);
    set_compatibility(subject, "BACKWARD");
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN x VARCHAR(10) NULL", r.db); /* a new schema version */
    e2e_sql(m, "ALTER TABLE %s.t ADD COLUMN k INT NOT NULL DEFAULT 5", r.db); /* BACKWARD: needs the default */
    e2e_sql(m, "INSERT INTO %s.t VALUES (300, 'after', 3, 3.00, NULL, 3, 'red', 'x', 6)", r.db);
    e2e_sql(m, "UPDATE %s.t SET x = 'y' WHERE id = 9", r.db);
    wait_caught_up(m, r.status, r.pid, r.log);
    json_t *vers = subject_versions(subject);
    /* the run went on (a refused version stops it): the NOT NULL column with its default was accepted */
    cr_expect_geq(json_array_size(vers), 2, "%s: %zu versions", subject, json_array_size(vers));
    json_decref(vers);
    st_stop(&r);
    st_cache_build(&r);
    tb_buf src, cache;
    tb_buf_init(&src, 0);
    tb_buf_init(&cache, 0);
    char ctable[256];
    snprintf(ctable, sizeof ctable, "%s.t", r.db);
    st_source_rows(m, r.db, "t", SOURCE_COLS, &src);
    st_cache_rows(r.cache, ctable, COLS, &cache);
    cr_expect_str_eq(tb_buf_cstr(&cache), tb_buf_cstr(&src),
                     "the cache of the Avro topic differs from the source (folder %s):\ncache:\n%.4000s\nsource:\n%.4000s",
                     r.dir, tb_buf_cstr(&cache), tb_buf_cstr(&src));
    tb_buf_free(&src);
    tb_buf_free(&cache);
    e2e_sql(m, "DROP DATABASE %s", r.db);
    mysql_close(m);
    e2e_rmtree(r.dir);
}

Test(avro_cache, tributary_encoding, .timeout = 300, .fini = e2e_kill_children)
{
    avro_cache("avcache", "");
}

Test(avro_cache, debezium_encoding, .timeout = 300, .fini = e2e_kill_children)
{
    avro_cache("avcachedbz", "value.encoding=debezium\n");
}
