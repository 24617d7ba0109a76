/*
 * test_stdout_kill9: `tributary run` with sink=stdout appending to a file, on a
 * SQLite source whose transactions each print about 1.2 MB of JSON lines, is
 * killed with SIGKILL while it writes, four times, and restarted each time on
 * the same file (O_APPEND, as `>>` opens it); a last run catches up and stops
 * on SIGTERM. Every line of the file must parse (Jansson, the independent
 * oracle), the file must end with a newline, and every row of the database
 * must be in it (at least once). Before the sink wrote whole lines only, the
 * file had a partial line wherever a kill landed inside a transaction (stdio
 * wrote it in 4 KiB pieces) and the restarted run appended to it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRIBUTARY_BIN TB_BINARY_DIR "/app/tributary"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/tb-ssk9-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!getenv("TB_KEEP"))
        cr_assert_eq(system(cmd), 0);
}

TestSuite(ssink_kill9, .init = setup, .fini = teardown);

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static off_t file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? sb.st_size : -1;
}

static pid_t start_run(const char *db, const char *out)
{
    char src[300], off[300], st[300];
    snprintf(src, sizeof src, "source.path=%s", db);
    snprintf(off, sizeof off, "offsets.file=%s/offsets", dir);
    snprintf(st, sizeof st, "%s/run.log", dir);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int ofd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0600), efd = open(st, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (ofd < 0 || efd < 0)
            _exit(127);
        dup2(ofd, 1);
        dup2(efd, 2);
        execl(TRIBUTARY_BIN, TRIBUTARY_BIN, "run", "--set", "source.type=sqlite", "--set", src, "--set", "sink=stdout",
              "--set", "offsets.storage=file", "--set", off, "--set", "name=k9", "--set", "topic.prefix=k9",
              "--set", "source.sqlite.poll.ms=5", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* n rows of ~400 bytes each in one transaction, ids from *next */
static void write_tx(sqlite3 *db, int n, long *next)
{
    cr_assert_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, printf('%.*c', 400, 'x') || ?)", -1, &st, NULL),
                 SQLITE_OK);
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int64(st, 1, *next);
        sqlite3_bind_int64(st, 2, *next);
        cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
        (*next)++;
    }
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
}

static char *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f, "%s", p);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    cr_assert_not_null(b);
    /* A run starting on the file truncates a partial last line (the kill's),
     * so the file may be shorter by the time it is read: take what is there. */
    size_t got = fread(b, 1, (size_t)n, f);
    bool err = ferror(f);
    fclose(f);
    if (err)
        free(b);
    cr_assert(!err, "reading %s failed", p);
    b[got] = 0;
    *len = got;
    return b;
}

/* Wait for the output to contain needle (deadline 60 s). */
static void wait_for(const char *out, const char *needle)
{
    int64_t end = now_ms() + 60000;
    for (;;) {
        size_t n;
        char *b = file_size(out) >= 0 ? slurp(out, &n) : NULL;
        bool found = b && strstr(b, needle) != NULL;
        free(b);
        if (found)
            return;
        cr_assert(now_ms() < end, "the output never showed %s", needle);
        usleep(20000); /* polling interval of the condition above */
    }
}

Test(ssink_kill9, every_line_parses_after_kills, .timeout = 300)
{
    char dbp[200], out[200], offp[200];
    snprintf(dbp, sizeof dbp, "%s/src.db", dir);
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    snprintf(offp, sizeof offp, "%s/offsets", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(dbp, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"
                                  "INSERT INTO t VALUES(0, 'first')", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    long next = 1;
    srand((unsigned)time(NULL));
    int kills = 0;
    for (int round = 0; round < 4; round++) {
        off_t before = file_size(out);
        pid_t pid = start_run(dbp, out);
        if (round == 0)
            wait_for(out, "first"); /* attached (snapshot of row 0 printed) */
        for (int t = 0; t < 3; t++)
            write_tx(db, 3000, &next);
        /* kill it somewhere inside the ~3.6 MB this round prints */
        off_t at = (before < 0 ? 0 : before) + 100000 + (off_t)(rand() % 2500000);
        int64_t end = now_ms() + 60000;
        while (file_size(out) < at && now_ms() < end)
            usleep(1000); /* polling interval of the condition above */
        cr_assert_eq(kill(pid, SIGKILL), 0);
        int ws;
        cr_assert_eq(waitpid(pid, &ws, 0), pid);
        kills += WIFSIGNALED(ws);
    }
    cr_assert_eq(kills, 4);
    /* the last run catches up: the end marker row, then SIGTERM */
    pid_t pid = start_run(dbp, out);
    cr_assert_eq(sqlite3_exec(db, "INSERT INTO t VALUES(-1, 'END-MARKER')", NULL, NULL, NULL), SQLITE_OK);
    wait_for(out, "END-MARKER");
    cr_assert_eq(kill(pid, SIGTERM), 0);
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the last run exits 0 on SIGTERM");

    size_t n;
    char *text = slurp(out, &n);
    cr_assert(n > 0 && text[n - 1] == '\n', "the output ends with a newline");
    long nrows = next + 1; /* ids -1 .. next-1 */
    char *seen = calloc((size_t)nrows, 1);
    cr_assert_not_null(seen);
    size_t lines = 0, bad = 0;
    for (char *l = text, *nl; l < text + n; l = nl + 1) {
        nl = memchr(l, '\n', (size_t)(text + n - l));
        cr_assert_not_null(nl);
        json_error_t je;
        json_t *v = json_loadb(l, (size_t)(nl - l), 0, &je);
        lines++;
        if (!v) {
            if (bad++ < 3)
                fprintf(stderr, "line %zu does not parse (%s): %.80s\n", lines, je.text, l);
            continue;
        }
        json_t *key = json_object_get(v, "key"), *val = json_object_get(v, "value");
        const char *topic = json_string_value(json_object_get(v, "topic"));
        json_t *id = json_is_object(key) ? json_object_get(key, "id") : NULL;
        if (topic && strcmp(topic, "k9.src.t") == 0 && json_is_integer(id) && val && !json_is_null(val)) {
            json_int_t k = json_integer_value(id);
            if (k >= -1 && k < next)
                seen[k + 1] = 1;
        }
        json_decref(v);
    }
    cr_assert_eq(bad, 0, "%zu of %zu lines do not parse", bad, lines);
    long missing = 0;
    for (long k = 0; k < nrows - 1; k++)
        missing += !seen[k];
    cr_assert_eq(missing, 0, "%ld of %ld rows are not in the output", missing, nrows - 1);
    fprintf(stderr, "ssink_kill9: %zu lines, %ld rows, 4 kills\n", lines, nrows - 1);
    free(seen);
    free(text);
    sqlite3_close(db);
}
