/*
 * binlog_live: the replication client, on Connector/C's mariadb_rpl_* API.
 *
 * mariadb_rpl_fetch() gives each event's raw bytes (header + body + checksum)
 * and those go to our own decoder (binlog_dec.c); Connector/C's own body
 * parsing is not used. The fetching runs on a thread of its own per
 * connection (binlog_fetch.c), which hands events over through a bounded
 * queue: binlog_live_next waits on that queue with its timeout, so an idle
 * source never blocks the caller and events that arrived together in one
 * read are handed out at once (only public Connector/C API is used).
 * Connection sequence:
 *   mysql_real_connect; flavor from the server version ("MariaDB");
 *   SET @master_binlog_checksum = @@global.binlog_checksum   (else error 1236)
 *   SET @master_heartbeat_period = <ns>                       (source.heartbeat.interval.ms)
 *   MariaDB: SET @mariadb_slave_capability = 4                 (GTID events as such)
 *   MariaDB GTID start: SET @slave_connect_state = '<gtid list>', file "" at 4, unless
 *     the stored file + position holds the next GTID (mariadb_offset_follows): from there
 *   else COM_BINLOG_DUMP from file + position (mariadb_rpl_open)
 * The start is, in order: the position given to binlog_open; source.start.gtid;
 * source.start.file + source.start.position; the server's current position
 * (SHOW MASTER STATUS). A MySQL source given a GTID set without a file
 * (Connector/C offers no COM_BINLOG_DUMP_GTID): SHOW BINARY LOGS, then each
 * file's Previous_gtids event (SHOW BINLOG EVENTS IN f LIMIT 4), newest
 * first; the stream starts at 4 in the newest file whose Previous_gtids lies
 * inside the set (bl_gtid_start_file), and the decoder skips the transactions
 * the set already holds (binlog_dec_skip_executed).
 *
 * Every connection first checks the server's binlog settings and the user's
 * grants (binlog_preflight.c); a problem stops the reader (TB_ERR_CONFIG).
 *
 * Server id: binlog_server_id(). Another replica connecting with the same
 * id makes the server end this one's dump (MariaDB error 4052; MySQL 1236
 * with "same server_uuid/server_id"): that stops the reader with an error
 * naming source.server.id, never a reconnect (two replicas with one id
 * would evict each other forever).
 *
 * Errors and reconnects: a lost connection (or a read timeout of three
 * heartbeat periods) closes the session; binlog_live_next then reconnects
 * with exponential backoff (100 ms doubling up to
 * source.reconnect.backoff.max.ms), resuming from the decoder's position
 * after the last complete transaction (by GTID on MariaDB when known).
 * Events of a transaction already handed out before the break are not handed
 * out again (they are counted and skipped on replay). Authentication errors
 * and a purged start position (1236) are not retried.
 */
#include "binlog_live.h"
#include "binlog_fetch.h"
#include "binlog_int.h"
#include "binlog_preflight.h"
#include "myconn.h"
#include "mymeta.h"
#include "tb_clock.h"
#include "tb_log.h"

#include <mysql.h>
#include <mariadb_rpl.h>
#include <mysqld_error.h>
#include <errmsg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct binlog_live {
    MYSQL *mysql;
    MYSQL *meta;           /* second connection for information_schema lookups */
    MARIADB_RPL *rpl;
    bl_fetch *fetch;       /* the thread reading rpl (binlog_fetch.h); owns mysql and rpl while it runs */
    myconn *mc;            /* host, user, password, TLS: every connection is opened by myconn */
    const char *host;      /* borrowed from mc, for messages */
    unsigned port;
    uint32_t server_id;
    int64_t heartbeat_ms, backoff_max_ms, connect_timeout_ms, repl_timeout_ms;
    int64_t retry_ms;      /* source.connect.retry.ms: the longest live_schema asks again */
    bool mariadb;
    tb_position start;     /* where the next connection starts */
    bool connected;
    int64_t backoff_ms;
    int64_t next_attempt_ms;
    uint64_t last_off;     /* byte offset after the last event */
    uint64_t delivered_in_tx;  /* events of the open transaction handed out */
    uint64_t skip;             /* events to drop after a reconnect */
    bool fed;              /* an event is in the decoder */
    bool position_gone;    /* the server answered 1236: the start position is not in its binlog */
    bl_preflight_opts preflight;
    bool preflight_warned; /* warnings of the checks are logged on the first connection only */
    int64_t down_since_ms; /* wall time (Unix ms) the connection was lost or first failed; 0 = up */
    bool encrypted;        /* the replication connection uses TLS */
    bool tls_logged;
    binlog_schema_fn history_fn; /* a table the catalog does not have (binlog_set_history_fn) */
    void *history_opaque;
};

static void disconnect(binlog_live *l)
{
    bl_fetch_stop(l->fetch);
    l->fetch = NULL;
    if (l->rpl) {
        mariadb_rpl_close(l->rpl);
        l->rpl = NULL;
    }
    if (l->mysql) {
        mysql_close(l->mysql);
        l->mysql = NULL;
    }
    if (l->connected || !l->down_since_ms)
        l->down_since_ms = tb_wall_ms();
    l->connected = false;
}

void binlog_live_free(binlog_live *l)
{
    if (!l)
        return;
    disconnect(l);
    if (l->meta)
        mysql_close(l->meta);
    myconn_free(l->mc);
    tb_position_free(&l->start);
    free(l);
}

static tb_code sql(binlog_live *l, const char *q, tb_error *err)
{
    if (mysql_query(l->mysql, q) != 0)
        return tb_error_set(err, TB_ERR_SOURCE, myconn_errno_retriable(mysql_errno(l->mysql)), "%s:%u: %s: %s", l->host,
                            l->port, q, mysql_error(l->mysql));
    MYSQL_RES *r = mysql_store_result(l->mysql);
    mysql_free_result(r);
    return TB_OK;
}

/* SHOW MASTER STATUS -> file + position. */
static tb_code current_position(binlog_live *l, tb_position *p, tb_error *err)
{
    const char *qs[] = {"SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"};
    for (int i = 0; i < 2; i++) {
        if (mysql_query(l->mysql, qs[i]) != 0)
            continue;
        MYSQL_RES *r = mysql_store_result(l->mysql);
        MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
        tb_code rc = TB_OK;
        if (!row || !row[0] || !row[1])
            rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s:%u: binary logging is off (SHOW MASTER STATUS is empty)",
                              l->host, l->port);
        else if (tb_position_set_file(p, row[0]) != TB_OK)
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        else
            p->pos = strtoull(row[1], NULL, 10);
        mysql_free_result(r);
        return rc;
    }
    return tb_error_set(err, TB_ERR_SOURCE, myconn_errno_retriable(mysql_errno(l->mysql)), "%s:%u: SHOW MASTER STATUS: %s",
                        l->host, l->port,
                        mysql_error(l->mysql));
}

/* MySQL, start = GTID set only: the binlog file to stream from (module comment). */
static tb_code mysql_gtid_start(binlog_live *l, tb_error *err)
{
    tb_code rc = TB_OK;
    char **files = NULL, **prev = NULL;
    size_t n = 0, cap = 0, pick = 0;
    if (mysql_query(l->mysql, "SHOW BINARY LOGS") != 0)
        return tb_error_set(err, TB_ERR_SOURCE, myconn_errno_retriable(mysql_errno(l->mysql)), "%s:%u: SHOW BINARY LOGS: %s",
                            l->host, l->port,
                            mysql_error(l->mysql));
    MYSQL_RES *r = mysql_store_result(l->mysql);
    for (MYSQL_ROW row; r && (row = mysql_fetch_row(r)) && rc == TB_OK;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nf = realloc(files, cap * sizeof(*nf)), **np = nf ? realloc(prev, cap * sizeof(*np)) : NULL;
            files = nf ? nf : files;
            prev = np ? np : prev;
            if (!nf || !np) {
                rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                break;
            }
        }
        prev[n] = NULL;
        if (!(files[n++] = strdup(row[0] ? row[0] : "")))
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    mysql_free_result(r);
    for (size_t i = 0; i < n && rc == TB_OK; i++) {
        char esc[1024], q[1200];
        if (strlen(files[i]) >= sizeof(esc) / 2) {
            rc = tb_error_set(err, TB_ERR_SOURCE, false, "%s:%u: binlog name too long: %s", l->host, l->port, files[i]);
            break;
        }
        mysql_real_escape_string(l->mysql, esc, files[i], (unsigned long)strlen(files[i]));
        snprintf(q, sizeof(q), "SHOW BINLOG EVENTS IN '%s' LIMIT 4", esc);
        if (mysql_query(l->mysql, q) != 0) {
            rc = tb_error_set(err, TB_ERR_SOURCE, myconn_errno_retriable(mysql_errno(l->mysql)), "%s:%u: %s: %s", l->host,
                              l->port, q, mysql_error(l->mysql));
            break;
        }
        MYSQL_RES *er = mysql_store_result(l->mysql); /* Log_name, Pos, Event_type, Server_id, End_log_pos, Info */
        for (MYSQL_ROW row; er && mysql_num_fields(er) >= 6 && (row = mysql_fetch_row(er));)
            if (row[2] && strcmp(row[2], "Previous_gtids") == 0) {
                if (!(prev[i] = strdup(row[5] ? row[5] : "")))
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                break;
            }
        mysql_free_result(er);
    }
    if (rc == TB_OK &&
        (rc = bl_gtid_start_file((const char *const *)files, (const char *const *)prev, n, l->start.gtid_set, &pick,
                                 err)) != TB_OK)
        l->position_gone = rc == TB_ERR_NOT_FOUND; /* purged, like error 1236: not retried */
    if (rc == TB_OK) {
        if (tb_position_set_file(&l->start, files[pick]) != TB_OK)
            rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        l->start.pos = 4;
        TB_INFO("binlog", "%s:%u: GTID set %s starts in %s (its Previous_gtids: %s); executed transactions are skipped",
                l->host, l->port, l->start.gtid_set, files[pick], prev[pick] && *prev[pick] ? prev[pick] : "empty");
    }
    for (size_t i = 0; i < n; i++) {
        free(files[i]);
        free(prev[i]);
    }
    free(files);
    free(prev);
    return rc;
}

int64_t binlog_replication_timeout_ms(const cfg *c)
{
    int64_t hb = cfg_get_int(c, CFGK_SOURCE_HEARTBEAT_INTERVAL_MS);
    return hb > 0 ? hb * 3 : 60000;
}

/* text, a MariaDB GTID list, in the one text form bl_gtids_format gives, appended to out. */
static bool gtid_text_canonical(const char *text, tb_buf *out)
{
    bl_gtids *g = bl_gtids_new();
    tb_error e;
    bool ok = g && bl_gtids_parse(g, text, true, &e) == TB_OK && bl_gtids_format(g, true, out) == TB_OK;
    bl_gtids_free(g);
    return ok;
}

/* The server's @@global.gtid_binlog_pos, canonical (gtid_text_canonical), appended to out. */
static bool mariadb_binlog_state(binlog_live *l, tb_buf *out)
{
    if (mysql_query(l->mysql, "SELECT @@global.gtid_binlog_pos") != 0)
        return false;
    MYSQL_RES *r = mysql_store_result(l->mysql);
    MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
    bool ok = row && gtid_text_canonical(row[0] ? row[0] : "", out);
    mysql_free_result(r);
    return ok;
}

/* No event at the stored offset yet: the offset still starts the dump when the binary log ends
 * there now with the stored GTID state, read before and after SHOW MASTER STATUS and the same
 * both times (no transaction came between): a position taken at the end of the log, as a
 * chunked snapshot's stream starts, or by a connector stopped while the server was idle. */
static bool mariadb_offset_at_end(binlog_live *l)
{
    const tb_position *s = &l->start;
    tb_buf want, g1, g2;
    tb_buf_init(&want, 0);
    tb_buf_init(&g1, 0);
    tb_buf_init(&g2, 0);
    tb_position cur;
    tb_position_init(&cur);
    tb_error e;
    bool ok = gtid_text_canonical(s->gtid_set, &want) && mariadb_binlog_state(l, &g1) &&
              current_position(l, &cur, &e) == TB_OK && mariadb_binlog_state(l, &g2) && cur.file &&
              strcmp(cur.file, s->file) == 0 && cur.pos == s->pos &&
              strcmp(tb_buf_cstr(&g1), tb_buf_cstr(&g2)) == 0 && strcmp(tb_buf_cstr(&g1), tb_buf_cstr(&want)) == 0;
    tb_position_free(&cur);
    tb_buf_free(&want);
    tb_buf_free(&g1);
    tb_buf_free(&g2);
    return ok;
}

/* MariaDB, a start by GTID: whether the stored file and offset may start the dump instead. The
 * server finds a GTID by reading its binlog file from the start up to it, every event (a cost
 * that grows with the offset, up to max_binlog_size); from a file and offset it seeks. Both
 * stream the same events when the event at that offset is the GTID event of the transaction
 * that follows the stored GTID state in its domain (sequence number one more): the offset is
 * then in the history the position was taken from; or when no event is there yet and the log
 * ends there with the stored state (mariadb_offset_at_end). Anything else (another event there,
 * the end of another file, another GTID, a position inside a transaction, no privilege to list
 * the events) keeps the start by GTID. */
static bool mariadb_offset_follows(binlog_live *l)
{
    const tb_position *s = &l->start;
    if (!s->file || !s->file[0] || strlen(s->file) > 255 || s->pos < 4 || s->row != 0 || !s->gtid_set)
        return false;
    char esc[512], q[640];
    mysql_real_escape_string(l->mysql, esc, s->file, (unsigned long)strlen(s->file));
    snprintf(q, sizeof q, "SHOW BINLOG EVENTS IN '%s' FROM %llu LIMIT 1", esc, (unsigned long long)s->pos);
    if (mysql_query(l->mysql, q) != 0)
        return false;
    MYSQL_RES *r = mysql_store_result(l->mysql);
    MYSQL_ROW row = r && mysql_num_fields(r) >= 6 ? mysql_fetch_row(r) : NULL;
    if (r && !row && mysql_num_fields(r) >= 6) { /* nothing at the offset (yet) */
        mysql_free_result(r);
        return mariadb_offset_at_end(l);
    }
    bool ok = false;
    /* Log_name, Pos, Event_type, Server_id, End_log_pos, Info ("BEGIN GTID D-S-N" or "GTID D-S-N") */
    if (row && row[1] && row[2] && row[5] && strtoull(row[1], NULL, 10) == s->pos && strcmp(row[2], "Gtid") == 0) {
        const char *g = strstr(row[5], "GTID ");
        bl_gtids *at = bl_gtids_new(), *state = bl_gtids_new();
        tb_error perr;
        /* the event's GTID ("D-S-N", up to the end of the word) and the stored state, by the one parser */
        char one[64];
        size_t len = g ? strcspn(g + 5, " ;") : 0;
        uint64_t n = 0, prev = 0;
        if (g && at && state && len > 0 && len < sizeof one) {
            memcpy(one, g + 5, len);
            one[len] = '\0';
            if (bl_gtids_parse(at, one, true, &perr) == TB_OK && bl_gtids_parse(state, s->gtid_set, true, &perr) == TB_OK) {
                /* the one domain the event names: its sequence number one past the state's */
                uint32_t d;
                char *end;
                unsigned long dl = strtoul(one, &end, 10);
                d = (uint32_t)dl;
                ok = end != one && *end == '-' && bl_gtids_mariadb_seq(at, d, &n) &&
                     bl_gtids_mariadb_seq(state, d, &prev) && n == prev + 1;
            }
        }
        bl_gtids_free(at);
        bl_gtids_free(state);
    }
    mysql_free_result(r);
    return ok;
}

static tb_code connect_once(binlog_live *l, binlog_dec *dec, tb_error *err)
{
    tb_code rc = TB_OK;
    char q[4096];
    /* the TLS line at INFO on the first connection, at DEBUG on reconnects */
    /* the connection myconn_warm opened at start (the same read timeout) serves the first time */
    myconn_opts o = {.purpose = "replication", .read_timeout_ms = l->repl_timeout_ms, .quiet = l->tls_logged,
                     .reuse = true};
    if ((rc = myconn_connect(l->mc, &o, &l->mysql, err)) != TB_OK)
        return rc;
    l->tls_logged = true;
    l->encrypted = myconn_encrypted(l->mysql);
    const char *ver = mysql_get_server_info(l->mysql);
    l->mariadb = myconn_is_mariadb(l->mysql);
    /* settings and grants, on every connection: a server changed to
     * binlog_format=STATEMENT while we were away would lose changes silently */
    char label[300];
    snprintf(label, sizeof(label), "%s:%u", l->host, l->port);
    rc = bl_preflight_conn(l->mysql, &l->preflight, label, l->preflight_warned, err);
    l->preflight_warned = true;
    if (rc != TB_OK)
        return rc;
    if ((rc = sql(l, "SET @master_binlog_checksum = @@global.binlog_checksum", err)) != TB_OK)
        return rc;
    if (l->mariadb && (rc = sql(l, "SET @mariadb_slave_capability = 4", err)) != TB_OK)
        return rc;
    if (l->heartbeat_ms > 0) {
        snprintf(q, sizeof(q), "SET @master_heartbeat_period = %lld", (long long)l->heartbeat_ms * 1000000LL);
        if ((rc = sql(l, q, err)) != TB_OK)
            return rc;
    }
    const char *file = "";
    unsigned long pos = 4;
    char *kept_file = NULL; /* GTID start: the stored position's file, for the decoder */
    bool by_gtid = l->mariadb && l->start.gtid_set && l->start.gtid_set[0];
    bool by_offset = by_gtid && mariadb_offset_follows(l); /* the same events, without the lookup */
    if (by_offset)
        by_gtid = false;
    if (by_gtid) {
        char esc[2048];
        if (strlen(l->start.gtid_set) >= sizeof(esc) / 2)
            return tb_error_set(err, TB_ERR_CONFIG, false, "GTID set too long");
        mysql_real_escape_string(l->mysql, esc, l->start.gtid_set, (unsigned long)strlen(l->start.gtid_set));
        snprintf(q, sizeof(q), "SET @slave_connect_state = '%s'", esc);
        if ((rc = sql(l, q, err)) != TB_OK)
            return rc;
        /* the decoder keeps the stored file and offset as its position until the first real
         * event (the dump's artificial ROTATE says offset 4) */
        if (l->start.file && l->start.file[0] && !(kept_file = strdup(l->start.file)))
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        rc = tb_position_set_file(&l->start, NULL);
    } else {
        if (!l->mariadb && (!l->start.file || !l->start.file[0]) && l->start.gtid_set && l->start.gtid_set[0]) {
            if ((rc = mysql_gtid_start(l, err)) != TB_OK)
                return rc;
            binlog_dec_skip_executed(dec, true);
        }
        if (!l->start.file || !l->start.file[0]) {
            if ((rc = current_position(l, &l->start, err)) != TB_OK)
                return rc;
            /* the executed GTID set at that point, so that positions carry a full set */
            if (mysql_query(l->mysql, l->mariadb ? "SELECT @@global.gtid_binlog_pos" : "SELECT @@global.gtid_executed") == 0) {
                MYSQL_RES *r = mysql_store_result(l->mysql);
                MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
                if (row && row[0] && row[0][0] && tb_position_set_gtid(&l->start, row[0]) != TB_OK)
                    rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
                mysql_free_result(r);
                if (rc != TB_OK)
                    return rc;
            }
        }
        file = l->start.file;
        pos = (unsigned long)(l->start.pos < 4 ? 4 : l->start.pos);
    }
    l->rpl = mariadb_rpl_init(l->mysql);
    if (!l->rpl) {
        free(kept_file);
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    unsigned int sid = l->server_id;
    unsigned int flags = 0;
    mariadb_rpl_optionsv(l->rpl, MARIADB_RPL_SERVER_ID, sid);
    mariadb_rpl_optionsv(l->rpl, MARIADB_RPL_FILENAME, file, strlen(file));
    mariadb_rpl_optionsv(l->rpl, MARIADB_RPL_START, pos);
    mariadb_rpl_optionsv(l->rpl, MARIADB_RPL_FLAGS, flags);
    if (mariadb_rpl_open(l->rpl) != 0) {
        free(kept_file);
        return tb_error_set(err, TB_ERR_SOURCE, myconn_errno_retriable(mysql_errno(l->mysql)),
                            "%s:%u: binlog dump from %s:%lu failed: %s", l->host, l->port,
                            by_gtid ? l->start.gtid_set : file, pos, mysql_error(l->mysql));
    }
    /* the decoder starts from this position (GTID state, file) */
    tb_position p;
    tb_position_init(&p);
    tb_code prc = tb_position_copy(&p, &l->start);
    p.kind = TB_POS_MYSQL;
    p.mariadb = l->mariadb;
    if (prc == TB_OK && kept_file)
        prc = tb_position_set_file(&p, kept_file);
    if (prc == TB_OK)
        prc = binlog_dec_set_position(dec, &p);
    if (prc != TB_OK)
        rc = tb_error_set(err, prc, false, "%s:%u: out of memory setting the start position", l->host, l->port);
    free(kept_file);
    tb_position_free(&p);
    if (rc != TB_OK || (rc = bl_fetch_start(l->mysql, l->rpl, &l->fetch, err)) != TB_OK)
        return rc;
    l->last_off = pos;
    l->connected = true;
    l->down_since_ms = 0;
    l->skip = l->delivered_in_tx;
    if (by_offset)
        TB_INFO("binlog", "%s:%u: streaming from GTID %s, at %s:%lu (server %s, replica server_id %u)", l->host,
                l->port, l->start.gtid_set, file, pos, ver ? ver : "?", l->server_id);
    else
        TB_INFO("binlog", "%s:%u: streaming from %s%s%s (server %s, replica server_id %u)", l->host, l->port,
                by_gtid ? "GTID " : "", by_gtid ? l->start.gtid_set : file, by_gtid ? "" : "", ver ? ver : "?",
                l->server_id);
    return TB_OK;
}

/* The second connection (information_schema lookups, SHOW BINARY LOGS),
 * opened when the stream starts (or at its first use), or the connection the
 * start's catalog questions kept (myconn_keep: no second TLS handshake before
 * the first event is sent). */
static tb_code meta_connect(binlog_live *l, tb_error *err)
{
    if (l->meta)
        return TB_OK;
    myconn_opts o = myconn_catalog_opts(l->mc, "metadata");
    o.any_timeout = false; /* a connection with the catalog read timeout: a lookup never hangs */
    return myconn_connect(l->mc, &o, &l->meta, err);
}

/* binlog_schema_fn: the catalog's descriptor of a table (mymeta_describe, the
 * snapshot's reader too: its column names when the TABLE_MAP has none, its
 * defaults, its period, the declared types of UUID/INET and FLOAT(M,D)
 * columns); a table that does not exist is *out NULL. A lookup that fails on
 * a connection error (the source restarting) connects again and tries again,
 * 200 ms doubling up to 2 s apart, for up to LIVE_SCHEMA_RETRY_MS or
 * source.connect.retry.ms if less: a descriptor made without the catalog
 * would type such columns as the binlog does (BINARY) and say no defaults.
 * The decoder waits meanwhile, as the stream does for the source. */
#define LIVE_SCHEMA_RETRY_MS 60000

/* A table the catalog does not have (dropped or renamed since the event, read again after a
 * restart): the history describes it, if it can; a history that cannot is said, not an error. */
static tb_code live_history(binlog_live *l, const char *db, const char *table, evt_table **out)
{
    *out = NULL;
    if (!l->history_fn)
        return TB_OK;
    tb_error herr;
    tb_error_clear(&herr);
    if (l->history_fn(l->history_opaque, db, table, out, &herr) != TB_OK) {
        TB_WARN("binlog", "%s.%s: not in the catalog, and its schema history does not describe it (%s)", db,
                table, herr.msg);
        evt_table_unref(*out);
        *out = NULL;
    } else if (*out) {
        TB_INFO("binlog", "%s.%s: not in the catalog any more: described by its latest schema record (declared "
                          "types, defaults)", db, table);
    }
    return TB_OK;
}

void binlog_live_set_history_fn(binlog_live *l, binlog_schema_fn fn, void *opaque)
{
    l->history_fn = fn;
    l->history_opaque = opaque;
}
static tb_code live_schema(void *opaque, const char *db, const char *table, evt_table **out, tb_error *err)
{
    binlog_live *l = opaque;
    int64_t limit = l->retry_ms < LIVE_SCHEMA_RETRY_MS ? l->retry_ms : LIVE_SCHEMA_RETRY_MS;
    int64_t until = tb_mono_ms() + limit, wait = 200;
    for (unsigned attempt = 1;; attempt++) {
        *out = NULL;
        tb_code rc = meta_connect(l, err);
        if (rc == TB_OK && (rc = mymeta_describe(l->meta, db, table, out, err)) == TB_ERR_NOT_FOUND) {
            tb_error_clear(err);
            return live_history(l, db, table, out); /* *out NULL: no such table, and no history of it */
        }
        if (rc != TB_OK && l->meta) {
            mysql_close(l->meta); /* connect again next time */
            l->meta = NULL;
        }
        if (rc == TB_OK || !err->retriable || tb_mono_ms() + wait > until)
            return rc;
        TB_WARN("binlog", "%s.%s: the catalog did not answer (%s): asking again in %lld ms (attempt %u)", db, table,
                err->msg, (long long)wait, attempt);
        struct timespec ts = {(time_t)(wait / 1000), (long)(wait % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        wait = wait * 2 > 2000 ? 2000 : wait * 2;
    }
}

tb_code binlog_live_open(const cfg *c, const tb_position *start, binlog_live **out, binlog_dec **dec,
                         tb_error *err)
{
    *out = NULL;
    *dec = NULL;
    tb_code rc = TB_OK;
    binlog_live *l = calloc(1, sizeof(*l));
    if (!l)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_position_init(&l->start);
    if ((rc = myconn_new(c, &l->mc, err)) != TB_OK)
        goto out;
    l->host = myconn_host(l->mc);
    l->port = myconn_port(l->mc);
    bool derived = false;
    l->server_id = binlog_server_id(c, &derived);
    if (derived)
        TB_INFO("binlog", "source.server.id is not set: announcing replica server id %u, derived from name \"%s\"",
                l->server_id, cfg_get_str(c, CFGK_NAME));
    l->heartbeat_ms = cfg_get_int(c, CFGK_SOURCE_HEARTBEAT_INTERVAL_MS);
    l->repl_timeout_ms = binlog_replication_timeout_ms(c);
    l->backoff_max_ms = cfg_get_int(c, CFGK_SOURCE_RECONNECT_BACKOFF_MAX_MS);
    l->retry_ms = cfg_get_int(c, CFGK_SOURCE_CONNECT_RETRY_MS);
    l->connect_timeout_ms = cfg_get_int(c, CFGK_SOURCE_CONNECT_TIMEOUT_MS);
    bl_preflight_opts_from_cfg(c, &l->preflight);
    if (start && start->kind == TB_POS_MYSQL) {
        rc = tb_position_copy(&l->start, start);
    } else {
        l->start.kind = TB_POS_MYSQL;
        if (cfg_is_set(c, CFGK_SOURCE_START_GTID))
            rc = tb_position_set_gtid(&l->start, cfg_get_str(c, CFGK_SOURCE_START_GTID));
        else if (cfg_is_set(c, CFGK_SOURCE_START_FILE)) {
            rc = tb_position_set_file(&l->start, cfg_get_str(c, CFGK_SOURCE_START_FILE));
            l->start.pos = (uint64_t)cfg_get_int(c, CFGK_SOURCE_START_POSITION);
        }
    }
    if (rc != TB_OK) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    char label[300];
    snprintf(label, sizeof(label), "%s:%u", l->host, l->port);
    binlog_dec_opts o;
    binlog_dec_opts_init(&o);
    o.label = label;
    o.file = l->start.file;
    o.schema_fn = live_schema;
    o.schema_opaque = l;
    o.keys = c;
    *dec = binlog_dec_new(&o);
    if (!*dec) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    rc = connect_once(l, *dec, err);
    if (rc != TB_OK) {
        binlog_dec_free(*dec);
        *dec = NULL;
        goto out;
    }
    /* The lookups' connection now, beside the replication connection: the stream holds its own
     * before a snapshot's windows take theirs, so a server that limits the user's connections
     * refuses a window read ahead (which is read again without) rather than a lookup the stream
     * waits for. A failure is forgotten: the first lookup connects and reports it. */
    tb_error merr;
    if (meta_connect(l, &merr) != TB_OK)
        TB_DEBUG("binlog", "%s: the metadata connection: %s (opened at its first lookup)", label, merr.msg);
    *out = l;
    l = NULL;
out:
    binlog_live_free(l);
    return rc;
}

static tb_code lost(binlog_live *l, binlog_dec *dec, const char *why, tb_error *err)
{
    TB_WARN("binlog", "%s:%u: replication connection lost (%s); reconnecting", l->host, l->port, why);
    disconnect(l);
    binlog_dec_drop_tx(dec);
    /* resume after the last complete transaction */
    const tb_position *p = binlog_dec_position(dec);
    if (p->kind == TB_POS_MYSQL && ((p->file && p->file[0]) || (p->gtid_set && p->gtid_set[0]))) {
        if (tb_position_copy(&l->start, p) != TB_OK)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    }
    if (l->backoff_ms < 100)
        l->backoff_ms = 100;
    l->next_attempt_ms = tb_mono_ms() + l->backoff_ms;
    l->backoff_ms = l->backoff_ms * 2 > l->backoff_max_ms ? l->backoff_max_ms : l->backoff_ms * 2;
    return TB_OK;
}

tb_code binlog_live_next(binlog_live *l, binlog_dec *dec, int timeout_ms, evt_event **ev, tb_error *err)
{
    int64_t deadline = 0;
    bool timed = false; /* the deadline is read from the clock once an event is not at hand */
    *ev = NULL;
    for (;;) {
        if (l->fed) {
            tb_code rc = binlog_dec_next(dec, ev, err);
            if (rc != TB_OK)
                return rc;
            if (*ev) {
                if (l->skip > 0) { /* re-sent after a reconnect: handed out before */
                    l->skip--;
                    if (evt_event_last_in_tx(*ev))
                        l->skip = 0, l->delivered_in_tx = 0;
                    *ev = NULL;
                    continue;
                }
                if (evt_event_last_in_tx(*ev))
                    l->delivered_in_tx = 0;
                else
                    l->delivered_in_tx++;
                return TB_OK;
            }
            l->fed = false;
        }
        if (!timed) {
            deadline = tb_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
            timed = true;
        }
        if (!l->connected) {
            int64_t now = tb_mono_ms();
            if (now < l->next_attempt_ms) {
                int64_t wait = l->next_attempt_ms - now;
                if (now + wait > deadline)
                    wait = deadline - now;
                if (wait > 0) {
                    struct timespec ts = {wait / 1000, (wait % 1000) * 1000000};
                    nanosleep(&ts, NULL);
                }
                if (tb_mono_ms() >= deadline)
                    return TB_OK;
                continue;
            }
            tb_error cerr;
            tb_error_clear(&cerr);
            tb_code rc = connect_once(l, dec, &cerr);
            if (rc != TB_OK) {
                disconnect(l);
                if (!cerr.retriable) {
                    if (err)
                        *err = cerr;
                    return rc;
                }
                TB_WARN("binlog", "%s (retrying in %lld ms)", cerr.msg, (long long)l->backoff_ms);
                l->next_attempt_ms = tb_mono_ms() + l->backoff_ms;
                l->backoff_ms = l->backoff_ms * 2 > l->backoff_max_ms ? l->backoff_max_ms : l->backoff_ms * 2;
                if (tb_mono_ms() >= deadline)
                    return TB_OK;
                continue;
            }
        }
        int left = (int)(deadline - tb_mono_ms());
        MARIADB_RPL_EVENT *rev = NULL;
        unsigned e = 0;
        const char *emsg = NULL;
        bl_fetch_rc frc = bl_fetch_next(l->fetch, left, &rev, &e, &emsg);
        if (frc == BL_FETCH_TIMEOUT)
            return TB_OK;
        if (frc == BL_FETCH_END) {
            char why[600];
            snprintf(why, sizeof(why), "%u %s", e, emsg);
            if (e == ER_SLAVE_SAME_ID ||
                (e == ER_MASTER_FATAL_ERROR_READING_BINLOG && strstr(why, "same server_uuid/server_id"))) {
                disconnect(l);
                return tb_error_set(err, TB_ERR_SOURCE, false,
                                    "%s:%u: another replica connected with the same server id %u, and the server "
                                    "ended this one's binlog stream (%s). Each connector needs its own "
                                    "source.server.id: set a unique source.server.id, or leave it unset and give each "
                                    "connector its own name (the default id is derived from it)",
                                    l->host, l->port, l->server_id, why);
            }
            if (e == ER_MASTER_FATAL_ERROR_READING_BINLOG) {
                l->position_gone = true;
                disconnect(l);
                return tb_error_set(err, TB_ERR_SOURCE, false,
                                    "%s:%u: the server cannot send the binlog from the requested position: %s",
                                    l->host, l->port, why);
            }
            tb_code rc = lost(l, dec, why, err);
            if (rc != TB_OK)
                return rc;
            continue;
        }
        const uint8_t *raw = rev->raw_data + rev->raw_data_ofs;
        size_t len = rev->raw_data_size - rev->raw_data_ofs;
        if (len < BL_HEADER_LEN || bl_u32(raw + 9) != len) {
            /* some builds count from the OK byte: find the header by its size field */
            raw = rev->raw_data;
            len = rev->raw_data_size;
            if (len > BL_HEADER_LEN && bl_u32(raw + 1 + 9) == len - 1) {
                raw++;
                len--;
            }
        }
        if (len < BL_HEADER_LEN || bl_u32(raw + 9) != len)
            return tb_error_set(err, TB_ERR_CORRUPT, false, "%s:%u: event of %zu bytes with a bad header", l->host,
                                l->port, len);
        int type = raw[4];
        uint32_t next = bl_u32(raw + 13);
        uint64_t off = next >= len ? next - len : l->last_off;
        if (type == BL_HEARTBEAT || type == BL_HEARTBEAT_V2)
            return TB_OK; /* heartbeat: nothing to deliver */
        tb_code rc = binlog_dec_feed(dec, raw, len, off, err);
        if (rc != TB_OK)
            return rc;
        if (next >= len)
            l->last_off = next;
        l->fed = true;
        l->backoff_ms = 100; /* the stream works again */
    }
}

uint32_t binlog_server_id(const cfg *c, bool *derived)
{
    bool d = !cfg_is_set(c, CFGK_SOURCE_SERVER_ID);
    if (derived)
        *derived = d;
    if (!d)
        return (uint32_t)cfg_get_int(c, CFGK_SOURCE_SERVER_ID);
    const char *name = cfg_get_str(c, CFGK_NAME);
    uint32_t h = 2166136261u; /* FNV-1a, 32 bits */
    for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return (1u << 30) + (h & ((1u << 30) - 1));
}

void binlog_live_check(binlog_live *l, binlog_dec *dec)
{
    if (!l || !l->connected || !l->fetch)
        return;
    /* the peer closed its side, even with events still queued (they are read again after the
     * reconnect, from the last complete transaction) */
    if (bl_fetch_peer_closed(l->fetch)) {
        tb_error e;
        tb_error_clear(&e);
        lost(l, dec, "the server closed the connection", &e);
        l->fed = false; /* lost() dropped what the decoder held */
    }
}

bool binlog_live_connected(const binlog_live *l, int64_t *down_since_ms)
{
    if (down_since_ms)
        *down_since_ms = l && !l->connected ? l->down_since_ms : 0;
    return l && l->connected;
}

tb_code binlog_live_behind(binlog_live *l, const binlog_dec *dec, int64_t *bytes, tb_error *err)
{
    *bytes = -1;
    const tb_position *p = binlog_dec_position(dec);
    if (!l->connected || !p || !p->file || !p->file[0])
        return TB_OK;
    tb_code rc = meta_connect(l, err);
    if (rc != TB_OK)
        return rc;
    if (mysql_query(l->meta, "SHOW BINARY LOGS") != 0) {
        rc = tb_error_set(err, TB_ERR_SOURCE, true, "%s:%u: SHOW BINARY LOGS: %s", l->host, l->port,
                          mysql_error(l->meta));
        mysql_close(l->meta);
        l->meta = NULL;
        return rc;
    }
    MYSQL_RES *res = mysql_store_result(l->meta);
    if (!res)
        return TB_OK;
    int64_t sum = 0;
    bool seen = false;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res))) {
        if (!row[0] || !row[1])
            continue;
        int c = strcmp(row[0], p->file);
        int64_t size = strtoll(row[1], NULL, 10);
        if (c == 0) {
            seen = true;
            sum += size > (int64_t)p->pos ? size - (int64_t)p->pos : 0;
        } else if (c > 0) {
            sum += size;
        }
    }
    mysql_free_result(res);
    if (seen)
        *bytes = sum;
    return TB_OK;
}

bool binlog_live_encrypted(const binlog_live *l)
{
    return l && l->connected && l->encrypted;
}

bool binlog_live_position_gone(const binlog_live *l)
{
    return l && l->position_gone;
}
