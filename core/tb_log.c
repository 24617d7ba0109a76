#include "tb_log.h"
#include "tb_file.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static _Atomic int g_level = TB_LOG_INFO;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static tb_log_sink_fn g_sink;
static void *g_sink_opaque;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void tb_log_set_level(tb_log_level level) { atomic_store(&g_level, (int)level); }
bool tb_log_enabled(tb_log_level level) { return (int)level <= atomic_load(&g_level); }

bool tb_log_parse_level(const char *text, tb_log_level *out)
{
    if (!text)
        return false;
    for (int i = 0; i <= TB_LOG_TRACE; i++) {
        if (strcasecmp(text, level_names[i]) == 0) {
            *out = (tb_log_level)i;
            return true;
        }
    }
    return false;
}

void tb_log_set_sink(tb_log_sink_fn fn, void *opaque)
{
    pthread_mutex_lock(&g_lock);
    g_sink = fn;
    g_sink_opaque = opaque;
    pthread_mutex_unlock(&g_lock);
}

void tb_vlog(tb_log_level level, const char *facility, const char *fmt, va_list ap)
{
    if (!tb_log_enabled(level))
        return;
    char line[4096];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    static const char *const upper[] = {"ERROR", "WARN ", "INFO ", "DEBUG", "TRACE"};
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000L, upper[level], facility ? facility : "-");
    if (n < 0)
        return;
    if ((size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    pthread_mutex_lock(&g_lock);
    if (g_sink) {
        g_sink(level, line, g_sink_opaque);
    } else {
        size_t len = strlen(line);
        line[len < sizeof(line) - 1 ? len : sizeof(line) - 2] = '\n';
        len = len < sizeof(line) - 1 ? len + 1 : sizeof(line) - 1;
        tb_ignore(tb_write_all(STDERR_FILENO, line, len)); /* stderr gone: nowhere left to say it */
    }
    pthread_mutex_unlock(&g_lock);
}

void tb_log(tb_log_level level, const char *facility, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tb_vlog(level, facility, fmt, ap);
    va_end(ap);
}

void tb_log_syslog(int syslog_level, const char *facility, const char *message)
{
    tb_log_level level;
    if (syslog_level <= 3)
        level = TB_LOG_ERROR;
    else if (syslog_level == 4)
        level = TB_LOG_WARN;
    else if (syslog_level <= 6)
        level = TB_LOG_INFO;
    else
        level = TB_LOG_DEBUG;
    tb_log(level, facility, "%s", message);
}
