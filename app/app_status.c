/* app_status: the status file of a running connector (see app_status.h). */
#include "app_status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tb_clock.h"
#include "tb_file.h"
#include "evt_json.h"

static void app_jw_opt_int(evt_jw *w, const char *key, int64_t v)
{
    evt_jw_key(w, key, (size_t)-1);
    if (v < 0)
        evt_jw_null(w);
    else
        evt_jw_int(w, v);
}

static void app_jw_opt_str(evt_jw *w, const char *key, const char *s)
{
    evt_jw_key(w, key, (size_t)-1);
    if (s)
        evt_jw_str(w, s, strlen(s));
    else
        evt_jw_null(w);
}

tb_code app_status_json(const app_status *st, tb_buf *out, tb_error *err)
{
    tb_code rc = TB_OK;
    tb_buf pos_json, pos_text;
    tb_buf_init(&pos_json, 0);
    tb_buf_init(&pos_text, 0);
    if (st->position && st->position->kind != TB_POS_NONE) {
        if ((rc = evt_position_to_json(st->position, &pos_json)) != TB_OK ||
            (rc = tb_position_format(st->position, &pos_text)) != TB_OK) {
            rc = tb_error_set(err, rc, false, "status: cannot format the position");
            goto out;
        }
    }
    evt_jw w;
    evt_jw_init(&w, out);
    evt_jw_obj_begin(&w);
    app_jw_opt_str(&w, "name", st->name);
    evt_jw_key(&w, "pid", (size_t)-1);
    evt_jw_int(&w, (int64_t)getpid());
    app_jw_opt_str(&w, "state", st->state);
    evt_jw_key(&w, "started_ms", (size_t)-1);
    evt_jw_int(&w, st->started_ms);
    evt_jw_key(&w, "updated_ms", (size_t)-1);
    evt_jw_int(&w, st->updated_ms ? st->updated_ms : tb_wall_ms());
    evt_jw_key(&w, "position", (size_t)-1);
    if (pos_json.len)
        evt_jw_json(&w, pos_json.data, pos_json.len);
    else
        evt_jw_null(&w);
    app_jw_opt_str(&w, "position_text", pos_text.len ? pos_text.data : NULL);
    app_jw_opt_int(&w, "lag_ms", st->lag_ms);
    app_jw_opt_int(&w, "events_behind", st->events_behind);
    evt_jw_key(&w, "events_total", (size_t)-1);
    evt_jw_uint(&w, st->events_total);
    evt_jw_key(&w, "events_per_sec", (size_t)-1);
    evt_jw_double(&w, isfinite(st->events_per_sec) && st->events_per_sec > 0 ? st->events_per_sec : 0.0);
    evt_jw_key(&w, "snapshot", (size_t)-1);
    evt_jw_obj_begin(&w);
    app_jw_opt_str(&w, "state", st->snapshot_state ? st->snapshot_state : "none");
    evt_jw_key(&w, "rows", (size_t)-1);
    evt_jw_uint(&w, st->snapshot_rows);
    evt_jw_obj_end(&w);
    if (st->health) {
        evt_jw_key(&w, "health", (size_t)-1);
        evt_jw_obj_begin(&w);
        evt_jw_key(&w, "healthy", (size_t)-1);
        evt_jw_bool(&w, st->health->healthy);
        evt_jw_key(&w, "active", (size_t)-1);
        evt_jw_bool(&w, st->health->active);
        app_jw_opt_str(&w, "reason", st->health->reason[0] ? st->health->reason : NULL);
        evt_jw_obj_end(&w);
    }
    if (st->sqlite_wal) {
        evt_jw_key(&w, "sqlite_wal", (size_t)-1);
        evt_jw_obj_begin(&w);
        evt_jw_key(&w, "bytes", (size_t)-1);
        evt_jw_uint(&w, st->wal_bytes);
        evt_jw_key(&w, "largest_bytes", (size_t)-1);
        evt_jw_uint(&w, st->wal_largest_bytes);
        evt_jw_key(&w, "lag_frames", (size_t)-1);
        evt_jw_uint(&w, st->wal_lag_frames);
        evt_jw_key(&w, "resets", (size_t)-1);
        evt_jw_uint(&w, st->wal_resets);
        evt_jw_obj_end(&w);
    }
    app_jw_opt_str(&w, "error", st->error);
    app_jw_opt_int(&w, "source_down_since_ms", st->source_down_since_ms > 0 ? st->source_down_since_ms : -1);
    app_jw_opt_int(&w, "kafka_waiting_since_ms", st->kafka_waiting_since_ms > 0 ? st->kafka_waiting_since_ms : -1);
    app_jw_opt_int(&w, "schema_registry_down_since_ms",
                   st->registry_down_since_ms > 0 ? st->registry_down_since_ms : -1);
    app_jw_opt_str(&w, "schema_registry_error", st->registry_down_since_ms > 0 ? st->registry_error : NULL);
    evt_jw_key(&w, "source_encrypted", (size_t)-1);
    if (st->source_encrypted)
        evt_jw_bool(&w, st->source_encrypted > 0);
    else
        evt_jw_null(&w);
    evt_jw_obj_end(&w);
    if ((rc = evt_jw_finish(&w)) != TB_OK)
        rc = tb_error_set(err, rc, false, "status: cannot encode the status record");
out:
    tb_buf_free(&pos_json);
    tb_buf_free(&pos_text);
    return rc;
}

tb_code app_status_write(const char *path, const app_status *st, tb_error *err)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_code rc = app_status_json(st, &b, err);
    if (rc == TB_OK)
        rc = tb_buf_putc(&b, '\n') == TB_OK ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if (rc == TB_OK)
        rc = tb_file_write_atomic(path, b.data, b.len, err);
    tb_buf_free(&b);
    return rc;
}

tb_code app_status_path(const cfg *c, tb_buf *out)
{
    const char *explicit_path = cfg_get_str(c, CFGK_STATUS_FILE);
    if (explicit_path && *explicit_path)
        return tb_buf_puts(out, explicit_path);
    return cfg_connector_file(c, ".status.json", out);
}

/* Integer member as int64 (false when missing, null or not an integer). */
static bool app_jv_i64(const evt_jv *obj, const char *key, int64_t *out)
{
    const evt_jv *v = evt_jv_get(obj, key);
    if (!v || evt_jv_type_of(v) != EVT_JV_NUMBER)
        return false;
    size_t len;
    const char *t = evt_jv_text(v, &len);
    char tmp[64];
    if (len == 0 || len >= sizeof(tmp))
        return false;
    memcpy(tmp, t, len);
    tmp[len] = '\0';
    char *end;
    errno = 0;
    double d = strtod(tmp, &end);
    if (errno || *end)
        return false;
    *out = (int64_t)d;
    if (!strpbrk(tmp, ".eE"))
        *out = strtoll(tmp, NULL, 10);
    return true;
}

/* Number member as text ("-" when missing or null). */
static const char *app_jv_num_text(const evt_jv *obj, const char *key, char buf[64])
{
    const evt_jv *v = evt_jv_get(obj, key);
    size_t len;
    const char *t;
    if (!v || evt_jv_type_of(v) != EVT_JV_NUMBER || !(t = evt_jv_text(v, &len)) || len >= 64)
        return "-";
    memcpy(buf, t, len);
    buf[len] = '\0';
    return buf;
}

/* A rate member with one decimal ("1.9"), "-" when missing or null. */
static const char *app_jv_rate_text(const evt_jv *obj, const char *key, char buf[64])
{
    char raw[64];
    const char *t = app_jv_num_text(obj, key, raw);
    if (strcmp(t, "-") == 0)
        return "-";
    double v = strtod(t, NULL);
    if (!(fabs(v) < 1e15)) { /* as a rate, nonsense: shown whole, not cut */
        snprintf(buf, 64, "%.3g", v);
        return buf;
    }
    long long tenths = llround(fabs(v) * 10.0);
    snprintf(buf, 64, "%s%lld.%lld", v < 0 && tenths ? "-" : "", tenths / 10, tenths % 10);
    return buf;
}

/* String member (NULL when missing or not a string); copied into buf. */
static const char *app_jv_str(const evt_jv *obj, const char *key, char *buf, size_t cap)
{
    const evt_jv *v = evt_jv_get(obj, key);
    size_t len;
    const char *t;
    if (!v || evt_jv_type_of(v) != EVT_JV_STRING || !(t = evt_jv_text(v, &len)))
        return NULL;
    if (len >= cap)
        len = cap - 1;
    memcpy(buf, t, len);
    buf[len] = '\0';
    return buf;
}

static void app_fmt_utc(int64_t ms, char out[80])
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(out, 80, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

tb_code app_status_format(const char *path, const char *json, size_t len, int64_t now_ms, tb_buf *out,
                          tb_error *err)
{
    tb_code rc = TB_OK;
    evt_jv *root = NULL;
    tb_error perr;
    if (evt_jv_parse(json, len, &root, &perr) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "%s: not a status file: %s", path, perr.msg);
        goto out;
    }
    int64_t updated = 0, pid = 0, started = 0, rows = 0;
    if (evt_jv_type_of(root) != EVT_JV_OBJECT || !app_jv_i64(root, "updated_ms", &updated)) {
        rc = tb_error_set(err, TB_ERR_CORRUPT, false, "%s: not a status file: no updated_ms", path);
        goto out;
    }
    app_jv_i64(root, "pid", &pid);
    app_jv_i64(root, "started_ms", &started);
    char name[256], state[64], pos[1024], snap[64], error[512], n1[64], n2[64], n3[64], n4[64];
    const char *s_name = app_jv_str(root, "name", name, sizeof(name));
    const char *s_state = app_jv_str(root, "state", state, sizeof(state));
    const char *s_pos = app_jv_str(root, "position_text", pos, sizeof(pos));
    const char *s_err = app_jv_str(root, "error", error, sizeof(error));
    const evt_jv *snapshot = evt_jv_get(root, "snapshot");
    const char *s_snap = snapshot ? app_jv_str(snapshot, "state", snap, sizeof(snap)) : NULL;
    if (snapshot)
        app_jv_i64(snapshot, "rows", &rows);

    const char *lag = app_jv_num_text(root, "lag_ms", n1);
    bool alive = pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
    char when[80], since[80];
    app_fmt_utc(updated, when);
    app_fmt_utc(started, since);
    double ago = (double)(now_ms - updated) / 1000.0;
    rc = tb_buf_printf(out,
                       "connector:      %s\n"
                       "state:          %s%s\n"
                       "pid:            %lld%s\n"
                       "started:        %s\n"
                       "updated:        %s (%.1f s ago)\n"
                       "position:       %s\n"
                       "lag:            %s%s\n"
                       "events behind:  %s\n"
                       "events total:   %s\n"
                       "throughput:     %s events/s\n"
                       "snapshot:       %s (%lld rows)\n",
                       s_name ? s_name : "-", s_state ? s_state : "-",
                       (!alive && s_state && strcmp(s_state, "stopped") != 0) ? " (stale: process not running)" : "",
                       (long long)pid, alive ? "" : " (not running)", started ? since : "-", when, ago,
                       s_pos ? s_pos : "none (nothing committed yet)", strcmp(lag, "-") == 0 ? "unknown" : lag, strcmp(lag, "-") == 0 ? "" : " ms",
                       app_jv_num_text(root, "events_behind", n2), app_jv_num_text(root, "events_total", n3),
                       app_jv_rate_text(root, "events_per_sec", n4), s_snap ? s_snap : "none", (long long)rows);
    const evt_jv *enc = evt_jv_get(root, "source_encrypted");
    if (rc == TB_OK && enc && evt_jv_type_of(enc) == EVT_JV_BOOL)
        rc = tb_buf_printf(out, "source link:    %s\n",
                           evt_jv_bool(enc) ? "encrypted (TLS)" : "not encrypted (source.ssl.mode)");
    int64_t kwait = 0;
    if (rc == TB_OK && app_jv_i64(root, "kafka_waiting_since_ms", &kwait) && kwait > 0) {
        char kw[80];
        app_fmt_utc(kwait, kw);
        rc = tb_buf_printf(out, "kafka:          waiting: nothing acknowledged since %s\n", kw);
    }
    int64_t rdown = 0;
    if (rc == TB_OK && app_jv_i64(root, "schema_registry_down_since_ms", &rdown) && rdown > 0) {
        char rw[80], rerr[600];
        app_fmt_utc(rdown, rw);
        const char *re = app_jv_str(root, "schema_registry_error", rerr, sizeof rerr);
        rc = tb_buf_printf(out, "schema registry: unreachable since %s, nothing sent meanwhile: %s\n", rw,
                           re ? re : "-");
    }
    const evt_jv *wal = evt_jv_get(root, "sqlite_wal");
    if (rc == TB_OK && wal && evt_jv_type_of(wal) == EVT_JV_OBJECT) {
        char w1[64], w2[64], w3[64], w4[64];
        rc = tb_buf_printf(out, "sqlite wal:     %s bytes (largest %s), %s frames not read yet, %s resets\n",
                           app_jv_num_text(wal, "bytes", w1), app_jv_num_text(wal, "largest_bytes", w2),
                           app_jv_num_text(wal, "lag_frames", w3), app_jv_num_text(wal, "resets", w4));
    }
    if (rc == TB_OK && s_err)
        rc = tb_buf_printf(out, "last error:     %s\n", s_err);
    if (rc != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
out:
    evt_jv_free(root);
    return rc;
}

/* ------------------------------------------------------------ health */

/* The file's "health" says unhealthy: *why = its reason (kept until the next call). */
static bool unhealthy_reason(const evt_jv *root, const char **why)
{
    static _Thread_local char reason[600];
    const evt_jv *h = evt_jv_get(root, "health");
    if (!h || evt_jv_type_of(h) != EVT_JV_OBJECT)
        return false;
    const evt_jv *ok = evt_jv_get(h, "healthy");
    if (!ok || evt_jv_type_of(ok) != EVT_JV_BOOL || evt_jv_bool(ok))
        return false;
    const char *r = app_jv_str(h, "reason", reason, sizeof reason);
    *why = r ? r : "unhealthy";
    return true;
}

int app_status_health(const char *json, size_t len, int64_t now_ms, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    evt_jv *root = NULL;
    tb_error perr;
    int code = 3;
    *why = "not a status file";
    int64_t updated = 0, pid = 0, waiting = 0;
    if (evt_jv_parse(json, len, &root, &perr) != TB_OK || evt_jv_type_of(root) != EVT_JV_OBJECT ||
        !app_jv_i64(root, "updated_ms", &updated)) {
        code = 1;
        goto out;
    }
    app_jv_i64(root, "pid", &pid);
    char state[64];
    const char *s = app_jv_str(root, "state", state, sizeof(state));
    bool alive = pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
    if (s && strcmp(s, "failed") == 0) {
        code = 1;
        *why = "failed";
    } else if (!alive) {
        *why = "not running";
    } else if (!s || strcmp(s, "stopped") == 0 || strcmp(s, "stopping") == 0) {
        *why = "stopping";
    } else if (now_ms - updated > APP_STATUS_STALE_MS) {
        *why = "stale: the status file is not being updated";
    } else if (strcmp(s, "reconnecting") == 0) {
        code = 1;
        *why = "source down";
    } else if (app_jv_i64(root, "kafka_waiting_since_ms", &waiting) && waiting > 0) {
        code = 1;
        *why = "kafka not acknowledging writes";
    } else if (unhealthy_reason(root, why)) { /* the run's own judgement, as /health gives it */
        code = 1;
    } else if (strcmp(s, "starting") == 0 || strcmp(s, "snapshot") == 0 || strcmp(s, "streaming") == 0 ||
               strcmp(s, "standby") == 0) {
        code = 0;
        *why = strcmp(s, "standby") == 0 ? "standby" : "healthy";
    } else {
        code = 1;
        *why = "unknown state";
    }
out:
    evt_jv_free(root);
    return code;
}

/* ------------------------------------------------------------ last words */

/* Two buffers: the loop fills the one not published, then publishes it, so
 * a handler always reads a complete record. The handler writes a temporary
 * name fixed when armed and renames it, with async-signal-safe calls only
 * (tb_file_replace allocates, so it is not used here). */
static struct {
    char *data;
    size_t len, cap;
} app_lw_buf[2];
static char *app_lw_path, *app_lw_tmp;
static _Atomic int app_lw_cur = -1;

void app_status_arm_last_words(const char *path, const char *json, size_t len)
{
    if (!app_lw_path) {
        size_t pl = strlen(path);
        app_lw_path = strdup(path);
        app_lw_tmp = malloc(pl + 8);
        if (!app_lw_path || !app_lw_tmp) {
            free(app_lw_path);
            free(app_lw_tmp);
            app_lw_path = app_lw_tmp = NULL;
            return;
        }
        memcpy(app_lw_tmp, path, pl);
        memcpy(app_lw_tmp + pl, ".lw.tmp", 8);
    }
    int next = atomic_load(&app_lw_cur) == 0 ? 1 : 0;
    if (app_lw_buf[next].cap < len + 1) {
        char *d = realloc(app_lw_buf[next].data, len + 1);
        if (!d)
            return;
        app_lw_buf[next].data = d;
        app_lw_buf[next].cap = len + 1;
    }
    memcpy(app_lw_buf[next].data, json, len);
    app_lw_buf[next].data[len] = '\n';
    app_lw_buf[next].len = len + 1;
    atomic_store(&app_lw_cur, next);
}

void app_status_last_words(void)
{
    int cur = atomic_load(&app_lw_cur);
    if (cur < 0 || !app_lw_path)
        return;
    int fd = open(app_lw_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    bool whole = tb_write_all(fd, app_lw_buf[cur].data, app_lw_buf[cur].len) == TB_OK;
    fsync(fd);
    close(fd);
    if (whole)
        rename(app_lw_tmp, app_lw_path);
    else
        unlink(app_lw_tmp);
}
