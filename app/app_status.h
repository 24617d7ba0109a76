/*
 * app_status: the status file that `tributary run` keeps up to date and
 * `tributary status` prints.
 *
 * FORMAT: one JSON object (written with evt_jw, replaced atomically: temp
 * file, fsync, rename, fsync of the directory), e.g.
 *   {"name":"shop","pid":4711,"state":"streaming",
 *    "started_ms":1764441600000,"updated_ms":1764441612345,
 *    "position":{…evt_position_to_json…},"position_text":"mariadb;server_id=1;…",
 *    "lag_ms":120,"events_behind":0,"events_total":12345,"events_per_sec":1234.5,
 *    "snapshot":{"state":"done","rows":1000},"error":null}
 * A SQLite WAL source adds "sqlite_wal":{"bytes":N,"largest_bytes":N,
 * "lag_frames":N,"resets":N} (the WAL file size now and the largest seen,
 * frames committed but not read yet, WAL generations seen: docs/sqlite-wal.md 2.13).
 * "position" and "position_text" are null before the first commit; lag_ms
 * and events_behind are null when unknown (-1 in app_status).
 * "kafka_waiting_since_ms" (Unix ms, or null) is set while messages have waited 10 s or
 * more for Kafka's acknowledgement (since the last one): the connector waits, loses nothing.
 * "schema_registry_down_since_ms" (Unix ms, or null) and "schema_registry_error" ("<url>:
 * <error>", or null) are set while a send waits for the schema registry (Avro), which does not
 * answer: nothing is produced meanwhile, the position stays before the waiting message.
 * "source_down_since_ms" (Unix ms, or null) is set while the source
 * connection is down (state "reconnecting"). "source_encrypted" is true
 * while the MySQL/MariaDB replication connection uses TLS (source.ssl.mode),
 * false while it is plaintext, null when no such connection is up.
 *
 * WHEN: about once a second while the loop turns, at once on every change
 * of state, at exit ("stopped" or "failed"), and, when a second
 * SIGINT/SIGTERM ends the process before its final flush, from the signal
 * handler: the last record armed with app_status_arm_last_words() (state
 * "failed", error naming the signal), written with async-signal-safe calls.
 *
 * "health":{"healthy":bool,"active":bool,"reason":text|null} is the run's own
 * judgement (app_health_run, the one GET /health gives).
 *
 * HEALTH (app_status_health, the exit code of `tributary status`):
 *   0 active and healthy: starting, snapshot, streaming, standby
 *   1 unhealthy or failed: reconnecting, failed, or "health" says unhealthy
 *     (Kafka unreachable); the reason is the file's
 *   3 not running or stale: stopping/stopped, a process that is gone, or a
 *     file not rewritten for APP_STATUS_STALE_MS (the run loop is stuck)
 *
 * LOCATION: the key status.file, else "<dir of offsets.file>/<name>.status.json".
 */
#ifndef APP_STATUS_H
#define APP_STATUS_H

#include <stdint.h>
#include "app_health.h"
#include "cfg.h"
#include "tb_buf.h"
#include "tb_clock.h"
#include "tb_error.h"
#include "tb_position.h"

typedef struct app_status {
    const char *name;            /* connector name (cfg "name") */
    const char *state;           /* "starting" | "snapshot" | "streaming" | "reconnecting" | "standby" |
                                    "stopping" | "stopped" | "failed" */
    const tb_position *position; /* last committed position; NULL = none yet */
    int64_t lag_ms;              /* now - commit time of the last committed event; -1 = unknown */
    int64_t events_behind;       /* events read but not yet acknowledged; -1 = unknown */
    uint64_t events_total;       /* events acknowledged since start */
    double events_per_sec;       /* recent throughput (finite, >= 0) */
    const char *snapshot_state;  /* "none" | "running" | "done" | "failed"; NULL = "none" */
    uint64_t snapshot_rows;      /* rows read by the snapshot so far */
    const char *error;           /* last error message, NULL = none (never a secret) */
    int64_t source_down_since_ms; /* Unix ms the source connection went down; 0 = up */
    int64_t kafka_waiting_since_ms; /* Unix ms of Kafka's last acknowledgement while messages have been waiting
                                       for one for RUN_KAFKA_WAIT_MS or more (brokers down, fewer in-sync replicas
                                       than min.insync.replicas); 0 = not waiting */
    int64_t registry_down_since_ms; /* Avro: Unix ms since which a send waits for the schema registry, which
                                       does not answer (DESIGN 4b); 0 = not waiting */
    const char *registry_error;  /* then "<url>: <error>" of the latest attempt; NULL otherwise */
    int source_encrypted;        /* replication connection: 1 TLS, -1 plaintext, 0 unknown (none up, SQLite) */
    int64_t started_ms;          /* process start, Unix ms */
    bool sqlite_wal;             /* a SQLite WAL source: the four below are set */
    uint64_t wal_bytes, wal_largest_bytes, wal_lag_frames, wal_resets;
    int64_t updated_ms;          /* 0 = now */
    const app_health *health;    /* the run's health (app_health_run), as /health says it; NULL = not written */
} app_status;

/* Render st as the JSON object above (appended to out). */
TB_MUST_USE tb_code app_status_json(const app_status *st, tb_buf *out, tb_error *err);

/* Write st to path atomically. All pointers in st are borrowed for the call. */
TB_MUST_USE tb_code app_status_write(const char *path, const app_status *st, tb_error *err);

/* The status file path for c (status.file, or the default), appended to out. */
TB_MUST_USE tb_code app_status_path(const cfg *c, tb_buf *out);

/* Human-readable text of a status file's JSON (appended to out). now_ms is
 * the current time (for "updated N s ago"). TB_ERR_CORRUPT names path when
 * the JSON does not parse or is not a status object. */
TB_MUST_USE tb_code app_status_format(const char *path, const char *json, size_t len, int64_t now_ms, tb_buf *out,
                          tb_error *err);

#define APP_STATUS_STALE_MS 60000

/* The health verdict of a status file's JSON at now_ms (see HEALTH): 0, 1
 * or 3; *why (may be NULL) gets a static phrase saying why ("source down",
 * "not running", ...). A file that does not parse: 1. */
int app_status_health(const char *json, size_t len, int64_t now_ms, const char **why);

/* Second-signal path: keep a copy of json (a rendered status record) for
 * app_status_last_words(). Called from the loop, never from a handler. */
void app_status_arm_last_words(const char *path, const char *json, size_t len);
/* Write the armed record to its path (temp file, fsync, rename): only
 * async-signal-safe calls, for a signal handler. No-op when nothing is armed. */
void app_status_last_words(void);

#endif
