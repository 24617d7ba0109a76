/*
 * tb_log: one leveled logger for the whole process, filtered at run time.
 *
 * Libraries never print; they log through here. Output goes to stderr (or a
 * sink set with tb_log_set_sink) as one line per message:
 *   2026-11-29T18:46:41.123Z WARN  binlog: message
 * Thread-safe: each line is formatted into a local buffer and written with one
 * write() call while holding a mutex. librdkafka's log callback is routed in
 * with tb_log_syslog(), which takes a syslog level (0..7), so core needs no
 * librdkafka header. Messages must never contain secrets.
 */
#ifndef TB_LOG_H
#define TB_LOG_H

#include <stdarg.h>
#include <stdbool.h>

typedef enum tb_log_level {
    TB_LOG_ERROR = 0,
    TB_LOG_WARN = 1,
    TB_LOG_INFO = 2,
    TB_LOG_DEBUG = 3,
    TB_LOG_TRACE = 4,
} tb_log_level;

/* Receives each formatted line (without trailing newline). */
typedef void (*tb_log_sink_fn)(tb_log_level level, const char *line, void *opaque);

void tb_log_set_level(tb_log_level level);
bool tb_log_enabled(tb_log_level level);

/* Parse "error|warn|info|debug|trace" (case-insensitive). Returns false if unknown. */
bool tb_log_parse_level(const char *text, tb_log_level *out);

/* Replace the stderr sink (NULL restores stderr). */
void tb_log_set_sink(tb_log_sink_fn fn, void *opaque);

void tb_log(tb_log_level level, const char *facility, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tb_vlog(tb_log_level level, const char *facility, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Route a syslog-levelled message (librdkafka's log_cb) into the logger. */
void tb_log_syslog(int syslog_level, const char *facility, const char *message);

#define TB_ERROR(fac, ...) tb_log(TB_LOG_ERROR, fac, __VA_ARGS__)
#define TB_WARN(fac, ...)  tb_log(TB_LOG_WARN, fac, __VA_ARGS__)
#define TB_INFO(fac, ...)  tb_log(TB_LOG_INFO, fac, __VA_ARGS__)
#define TB_DEBUG(fac, ...) do { if (tb_log_enabled(TB_LOG_DEBUG)) tb_log(TB_LOG_DEBUG, fac, __VA_ARGS__); } while (0)
#define TB_TRACE(fac, ...) do { if (tb_log_enabled(TB_LOG_TRACE)) tb_log(TB_LOG_TRACE, fac, __VA_ARGS__); } while (0)

#endif
