/*
 * stdout_sink: events as JSON lines on a FILE (see stdout_sink.h).
 *
 * Schema announcements are tracked in a tb_hmap keyed by "<db>\x1f<table>"
 * holding the last version printed; a table is announced
 * again when its descriptor's version differs from the one printed.
 */
#include "stdout_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_file.h"
#include "evt_json.h"
#include "tb_buf.h"
#include "tb_hmap.h"
#include "tb_kset.h"
#include "tb_log.h"

/* lines are written when a transaction ends, at commit, and whenever 2^20
 * bytes of them are waiting (a large transaction) */
#define SSINK_OUT_SHIFT 20

struct stdout_sink {
    FILE *fp;                 /* borrowed */
    evt_codec_opts opts;      /* strings point into owned copies below */
    char *prefix, *name;      /* owned */
    char *offsets_file;       /* owned; NULL unless offsets.storage=file */
    evt_rendered r;
    tb_buf line, key, value, topic, tkey;
    tb_buf out;               /* complete lines not written yet */
    tb_hmap announced;        /* "db\x1ftable" -> last announced schema version + 1 */
    bool readable;            /* the output is a regular file this process can read back */
    tb_buf rkey;              /* stdout_sink_key_digest: a rendered key */
};

static void ssink_cut_partial_line(stdout_sink *s);
static int ssink_read_fd(const stdout_sink *s, struct stat *sb);

tb_code stdout_sink_open(const cfg *c, FILE *fp, stdout_sink **out, tb_error *err)
{
    *out = NULL;
    stdout_sink *s = calloc(1, sizeof(*s));
    if (!s)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    s->fp = fp;
    tb_hmap_init(&s->announced);
    tb_buf_init(&s->out, 0);
    evt_rendered_init(&s->r);
    tb_buf_init(&s->line, 0);
    tb_buf_init(&s->key, 0);
    tb_buf_init(&s->value, 0);
    tb_buf_init(&s->topic, 0);
    tb_buf_init(&s->tkey, 0);
    tb_buf_init(&s->rkey, 0);
    const char *prefix = cfg_get_str(c, CFGK_TOPIC_PREFIX);
    const char *name = cfg_get_str(c, CFGK_NAME);
    const char *fmt = cfg_get_str(c, CFGK_VALUE_FORMAT);
    const char *storage = cfg_get_str(c, CFGK_OFFSETS_STORAGE);
    s->prefix = strdup(prefix ? prefix : "");
    s->name = strdup(name ? name : "");
    if (storage && strcmp(storage, "file") == 0) {
        const char *f = cfg_get_str(c, CFGK_OFFSETS_FILE);
        if (!f || !*f) {
            stdout_sink_close(s);
            return tb_error_set(err, TB_ERR_CONFIG, false, "stdout sink: offsets.storage=file needs offsets.file");
        }
        s->offsets_file = strdup(f);
        if (!s->offsets_file)
            goto nomem;
    }
    if (!s->prefix || !s->name)
        goto nomem;
    s->opts.topic_prefix = s->prefix;
    s->opts.name = s->name;
    s->opts.row_format = fmt && strcmp(fmt, "row") == 0;
    s->opts.schemas = cfg_get_bool(c, CFGK_VALUE_SCHEMAS);
    evt_codec_opts_encoding(&s->opts, c);
    if (fflush(fp) == 0)
        ssink_cut_partial_line(s);
    struct stat sb;
    int rfd = ssink_read_fd(s, &sb);
    s->readable = rfd >= 0;
    if (rfd >= 0)
        close(rfd);
    *out = s;
    return TB_OK;
nomem:
    stdout_sink_close(s);
    return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
}

/* Write the complete lines gathered in s->out with write(2), in one call
 * unless the kernel takes less (a pipe, a signal), and empty it. */
static tb_code ssink_flush(stdout_sink *s, tb_error *err)
{
    if (fflush(s->fp) != 0) /* anything written to the FILE by others goes first */
        return tb_error_set(err, TB_ERR_IO, false, "stdout sink: flush failed: %s", strerror(errno));
    if (s->out.len && tb_write_all(fileno(s->fp), s->out.data, s->out.len) != TB_OK)
        return tb_error_set(err, TB_ERR_IO, false, "stdout sink: write failed: %s", strerror(errno));
    tb_buf_reset(&s->out);
    if (s->out.cap > ((size_t)4 << SSINK_OUT_SHIFT))
        tb_buf_free(&s->out); /* do not keep a huge batch's buffer */
    return TB_OK;
}

/* Add the line buffer plus a newline to the output (written whole, by ssink_flush). */
static tb_code ssink_put_line(stdout_sink *s, tb_error *err)
{
    if (tb_buf_putc(&s->line, '\n') != TB_OK || tb_buf_append(&s->out, s->line.data, s->line.len) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    return s->out.len >= ((size_t)1 << SSINK_OUT_SHIFT) ? ssink_flush(s, err) : TB_OK;
}

/* A descriptor that reads the output when it is a regular file (sb: its
 * state now); -1 otherwise. The output is usually write-only (`>>`): it is
 * read through a descriptor of its own. */
static int ssink_read_fd(const stdout_sink *s, struct stat *sb)
{
    int fd = fileno(s->fp);
    if (fd < 0 || fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode))
        return -1;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    return open(self, O_RDONLY | O_CLOEXEC);
}

/*
 * When the output is a regular file that does not end with a newline, the
 * connector that wrote it was killed in the middle of a write(2) (a fatal
 * signal can cut a write to a file short): its position was not stored after
 * that write, so the events of the partial line come again. The partial line
 * is cut off, so the file holds whole lines only and the first line of this
 * run starts on a line of its own.
 */
static void ssink_cut_partial_line(stdout_sink *s)
{
    int fd = fileno(s->fp);
    struct stat sb;
    char buf[4096];
    int rfd = ssink_read_fd(s, &sb);
    if (rfd < 0)
        return;
    if (sb.st_size == 0) {
        close(rfd);
        return;
    }
    off_t end = sb.st_size, at = end;
    if (pread(rfd, buf, 1, end - 1) != 1 || buf[0] == '\n') {
        close(rfd);
        return;
    }
    while (at > 0) { /* the last newline */
        off_t from = at > (off_t)sizeof buf ? at - (off_t)sizeof buf : 0;
        ssize_t n = pread(rfd, buf, (size_t)(at - from), from);
        if (n != at - from) {
            close(rfd);
            return;
        }
        char *nl = memrchr(buf, '\n', (size_t)n);
        if (nl) {
            at = from + (nl - buf) + 1;
            break;
        }
        at = from;
    }
    close(rfd);
    if (ftruncate(fd, at) == 0) {
        if (lseek(fd, 0, SEEK_END) >= 0)
            TB_WARN("stdout", "output ended in a partial line of %lld bytes (written when the connector was stopped in "
                    "the middle of a write): cut off; its events are written again", (long long)(end - at));
    } else {
        /* cannot cut it (e.g. no permission): at least start on a line of our own */
        TB_WARN("stdout", "output ends in a partial line of %lld bytes and cannot be truncated (%s): starting on a new "
                "line", (long long)(end - at), strerror(errno));
        if (write(fd, "\n", 1) != 1)
            TB_WARN("stdout", "cannot write to the output: %s", strerror(errno));
    }
}

/* Print the schema record of t unless this version was printed already (force: even then). */
static tb_code ssink_announce(stdout_sink *s, const evt_table *t, bool force, tb_error *err)
{
    tb_buf_reset(&s->tkey);
    if (tb_buf_printf(&s->tkey, "%s\x1f%s", evt_table_db(t), evt_table_name(t)) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    void **slot = tb_hmap_find(&s->announced, s->tkey.data, s->tkey.len);
    uint32_t version = evt_table_version(t);
    if (slot && (uintptr_t)*slot == (uintptr_t)version + 1 && !force)
        return TB_OK;
    bool first = !slot;

    tb_buf_reset(&s->topic);
    tb_buf_reset(&s->key);
    tb_buf_reset(&s->value);
    tb_buf_reset(&s->line);
    if (evt_json_schema_topic(&s->opts, &s->topic) != TB_OK || evt_json_schema_key(t, &s->key) != TB_OK ||
        evt_json_schema_value(t, &s->value) != TB_OK ||
        evt_json_line(s->topic.data, s->key.data, s->key.len, s->value.data, s->value.len, &s->line) != TB_OK)
        return tb_error_set(err, TB_ERR_INVALID, false, "stdout sink: cannot encode the schema record of %s.%s",
                            evt_table_db(t), evt_table_name(t));
    tb_code rc = ssink_put_line(s, err);
    if (rc != TB_OK)
        return rc;

    if (tb_hmap_put(&s->announced, s->tkey.data, s->tkey.len, &slot) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    *slot = (void *)((uintptr_t)version + 1);
    if (first)
        evt_codec_warn_lossy(&s->opts, t); /* once per table and run */
    return TB_OK;
}

tb_code stdout_sink_announce(stdout_sink *s, const evt_table *t, tb_error *err)
{
    return ssink_announce(s, t, true, err); /* a dropped table's version 0: its next table is printed again */
}

tb_code stdout_sink_send(stdout_sink *s, const evt_event *e, tb_error *err)
{
    const tb_error *bad = evt_event_error(e);
    if (bad)
        return tb_error_set(err, bad->code, false, "%s", bad->msg);
    const evt_table *t = evt_event_table(e);
    tb_code rc = ssink_announce(s, t, false, err);
    if (rc != TB_OK)
        return rc;
    if ((rc = evt_render(&s->opts, e, &s->r, err)) != TB_OK)
        return rc;
    for (size_t i = 0; i < s->r.n; i++) {
        const evt_msg *m = &s->r.msgs[i];
        tb_buf_reset(&s->line);
        if (evt_json_line(s->r.topic, m->key, m->key_len, m->value, m->value_len, &s->line) != TB_OK)
            return tb_error_set(err, TB_ERR_INVALID, false, "stdout sink: cannot encode a line of %s.%s",
                                evt_table_db(t), evt_table_name(t));
        if ((rc = ssink_put_line(s, err)) != TB_OK)
            return rc;
    }
    if (evt_event_last_in_tx(e))
        return ssink_flush(s, err);
    return TB_OK;
}

tb_code stdout_sink_commit(stdout_sink *s, const tb_position *pos, tb_error *err)
{
    tb_code frc = ssink_flush(s, err);
    if (frc != TB_OK)
        return frc;
    if (ferror(s->fp))
        return tb_error_set(err, TB_ERR_IO, false, "stdout sink: the output stream failed");
    if (!s->offsets_file || !pos)
        return TB_OK;
    tb_buf text;
    tb_buf_init(&text, 0);
    tb_code rc = TB_OK;
    if (tb_position_format(pos, &text) != TB_OK || tb_buf_putc(&text, '\n') != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    if (rc == TB_OK)
        rc = tb_file_write_atomic(s->offsets_file, text.data, text.len, err);
    if (rc != TB_OK)
        tb_error_prefix(err, rc, "offsets file: ");
    else
        TB_DEBUG("stdout", "committed %s", text.data);
    tb_buf_free(&text);
    return rc;
}

/* ------------------------------------------------------------ reading the output back */

bool stdout_sink_keys_readable(const stdout_sink *s)
{
    return s->readable;
}

/* The length of the JSON value at p (at most n bytes; a value this sink
 * wrote: strings with escapes, objects and arrays nested), 0 if it does not
 * end within n. */
static size_t ssink_json_len(const char *p, size_t n)
{
    size_t i = 0, depth = 0;
    bool str = false;
    for (; i < n; i++) {
        char c = p[i];
        if (str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                str = false;
            else
                continue;
            if (!str && depth == 0)
                return i + 1;
            continue;
        }
        if (c == '"')
            str = true;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (depth == 0)
                return i; /* a scalar ended by its container */
            if (--depth == 0)
                return i + 1;
        } else if (c == ',' && depth == 0)
            return i;
    }
    return 0;
}

/* One walk over the output's lines of one topic, to the end it had when the first walk began. */
typedef struct ssink_walk {
    stdout_sink *s;
    tb_buf prefix; /* {"topic":<the topic>,"key": */
    off_t end;
    sink_keys_rec_fn keys; /* ssink_walk_lines: given each keyed line */
    void *keys_opaque;
} ssink_walk;

/* fn(opaque, key, klen, value, vlen, err) for each line of w's topic that has a key, in the order
 * written; value NULL for a tombstone. */
typedef tb_code (*ssink_line_fn)(void *opaque, const char *key, size_t klen, const char *value, size_t vlen,
                                 tb_error *err);

static tb_code ssink_scan(const ssink_walk *w, ssink_line_fn fn, void *opaque, tb_error *err)
{
    struct stat sb;
    int rfd = ssink_read_fd(w->s, &sb);
    FILE *f = rfd >= 0 ? fdopen(rfd, "r") : NULL;
    if (!f) {
        if (rfd >= 0)
            close(rfd);
        return tb_error_set(err, TB_ERR_IO, false, "stdout sink: cannot read the output back: %s", strerror(errno));
    }
    static const char kValue[] = ",\"value\":";
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    off_t at = 0;
    ssize_t n;
    tb_code rc = TB_OK;
    while (rc == TB_OK && at < w->end && (n = getline(&line, &cap, f)) > 0) {
        at += n;
        lineno++;
        size_t pl = w->prefix.len;
        if ((size_t)n <= pl || memcmp(line, w->prefix.data, pl) != 0)
            continue; /* another topic's line (or not one of ours) */
        const char *key = line + pl;
        size_t rest = (size_t)n - pl, klen = ssink_json_len(key, rest);
        const char *val = key + klen;
        size_t vrest = rest - klen;
        if (klen == 0 || vrest < sizeof kValue || memcmp(val, kValue, sizeof kValue - 1) != 0) {
            rc = tb_error_set(err, TB_ERR_INVALID, false,
                              "stdout sink: line %zu of the output is not a line this sink writes (%.80s): the "
                              "output read back as the topic's records must hold whole lines "
                              "{\"topic\":…,\"key\":…,\"value\":…}; write the output to a file of its own",
                              lineno, line);
            break;
        }
        val += sizeof kValue - 1;
        vrest -= sizeof kValue - 1;
        if (klen == 4 && memcmp(key, "null", 4) == 0)
            continue; /* no key: nothing a table holds by it */
        bool live = strncmp(val, "null}", 5) != 0;
        rc = fn(opaque, key, klen, live ? val : NULL, live ? ssink_json_len(val, vrest) : 0, err);
    }
    if (rc == TB_OK && ferror(f))
        rc = tb_error_set(err, TB_ERR_IO, false, "stdout sink: reading the output back: %s", strerror(errno));
    free(line);
    fclose(f);
    return rc;
}

static tb_code ssink_keys_line(void *opaque, const char *key, size_t klen, const char *value, size_t vlen,
                               tb_error *err)
{
    (void)vlen;
    const ssink_walk *w = opaque;
    return w->keys(w->keys_opaque, key, klen, value != NULL, err);
}

static tb_code ssink_walk_lines(void *src, sink_keys_rec_fn fn, void *opaque, tb_error *err)
{
    ssink_walk *w = src;
    w->keys = fn;
    w->keys_opaque = opaque;
    return ssink_scan(w, ssink_keys_line, w, err);
}

/* w for the lines of topic as they are in the output now (flushed first). */
static tb_code ssink_walk_init(stdout_sink *s, const char *topic, ssink_walk *w, tb_error *err)
{
    *w = (ssink_walk){.s = s};
    tb_buf_init(&w->prefix, 0);
    if (!s->readable)
        return tb_error_set(err, TB_ERR_INVALID, false, "stdout sink: the output is not a file it can read back");
    tb_code rc = ssink_flush(s, err); /* every line so far is in the file before it is read */
    if (rc != TB_OK)
        return rc;
    struct stat sb;
    int rfd = ssink_read_fd(s, &sb);
    if (rfd < 0)
        return tb_error_set(err, TB_ERR_IO, false, "stdout sink: cannot read the output back: %s", strerror(errno));
    close(rfd);
    w->end = sb.st_size;
    /* the lines of the topic start as evt_json_line writes them: {"topic":"…","key": */
    static const char kTail[] = "null,\"value\":null}";
    if (evt_json_line(topic, NULL, 0, NULL, 0, &w->prefix) != TB_OK || w->prefix.len < sizeof kTail - 1)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    w->prefix.len -= sizeof kTail - 1;
    return TB_OK;
}

tb_code stdout_sink_topic_keys(stdout_sink *s, const evt_table *t, const struct tb_kset *keep, sink_keys_give_fn fn,
                               void *opaque, tb_error *err)
{
    ssink_walk w = {.s = s};
    tb_buf_init(&w.prefix, 0); /* freed below even when the topic name fails */
    tb_buf topic;
    tb_buf_init(&topic, 0);
    tb_code rc = evt_json_topic(&s->opts, t, &topic) == TB_OK
                     ? ssink_walk_init(s, tb_buf_cstr(&topic), &w, err)
                     : tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    if (rc == TB_OK)
        rc = sink_keys_held(ssink_walk_lines, &w, keep, fn, opaque, err);
    tb_buf_free(&w.prefix);
    tb_buf_free(&topic);
    return rc;
}

/* The latest schema record of one table that describes it (one that says "dropped" keeps the one
 * before it; a tombstone forgets it), as ksink_schema_last keeps them. */
typedef struct ssink_last {
    const char *key;
    size_t klen;
    tb_buf value;
    bool oom;
} ssink_last;

static tb_code ssink_last_line(void *opaque, const char *key, size_t klen, const char *value, size_t vlen,
                               tb_error *err)
{
    (void)err;
    ssink_last *l = opaque;
    static const char drop_tag[] = "\"dropped\":true";
    if (klen != l->klen || memcmp(key, l->key, klen) != 0)
        return TB_OK;
    if (!value)
        tb_buf_reset(&l->value);
    else if (!memmem(value, vlen, drop_tag, sizeof drop_tag - 1)) {
        tb_buf_reset(&l->value);
        l->oom |= tb_buf_append(&l->value, value, vlen) != TB_OK;
    }
    return TB_OK;
}

tb_code stdout_sink_schema_last(stdout_sink *s, const char *db, const char *table, evt_table **out, tb_error *err)
{
    *out = NULL;
    if (!s->readable)
        return TB_OK; /* a pipe: no history */
    ssink_walk w = {.s = s};
    tb_buf_init(&w.prefix, 0);
    ssink_last l = {0};
    tb_buf_init(&l.value, 0);
    tb_buf topic, key;
    tb_buf_init(&topic, 0);
    tb_buf_init(&key, 0);
    evt_table *k = evt_table_new(db, table, 0);
    tb_code rc = k && evt_json_schema_topic(&s->opts, &topic) == TB_OK && evt_json_schema_key(k, &key) == TB_OK
                     ? TB_OK
                     : tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    evt_table_unref(k);
    if (rc == TB_OK)
        rc = ssink_walk_init(s, tb_buf_cstr(&topic), &w, err);
    l.key = key.data;
    l.klen = key.len;
    if (rc == TB_OK)
        rc = ssink_scan(&w, ssink_last_line, &l, err);
    if (rc == TB_OK && l.oom)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    if (rc == TB_OK && l.value.len)
        rc = evt_json_schema_parse(db, table, l.value.data, l.value.len, out, err);
    tb_buf_free(&l.value);
    tb_buf_free(&w.prefix);
    tb_buf_free(&topic);
    tb_buf_free(&key);
    return rc;
}

tb_code stdout_sink_key_digest(stdout_sink *s, const evt_event *e, uint64_t *digest, tb_error *err)
{
    tb_buf_reset(&s->rkey);
    tb_code rc = evt_render_key(&s->opts, e, EVT_AFTER, &s->rkey, err);
    if (rc == TB_OK)
        *digest = tb_kset_digest(s->rkey.data ? s->rkey.data : "", s->rkey.len);
    return rc;
}

void stdout_sink_close(stdout_sink *s)
{
    if (!s)
        return;
    tb_error err;
    if (s->fp && ssink_flush(s, &err) != TB_OK)
        TB_WARN("stdout", "%s", err.msg);
    tb_buf_free(&s->out);
    evt_rendered_free(&s->r);
    tb_buf_free(&s->line);
    tb_buf_free(&s->key);
    tb_buf_free(&s->value);
    tb_buf_free(&s->topic);
    tb_buf_free(&s->tkey);
    tb_buf_free(&s->rkey);
    tb_hmap_free(&s->announced, NULL);
    free(s->prefix);
    free(s->name);
    free(s->offsets_file);
    free(s);
}
