/*
 * stdout_sink: events as JSON lines on a FILE (see stdout_sink.h).
 *
 * Schema announcements are tracked in a small open-addressing hash keyed by
 * "<db>\x1f<table>" holding the last version printed; a table is announced
 * again when its descriptor's version differs from the one printed.
 */
#include "stdout_sink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_file.h"
#include "evt_json.h"
#include "tb_buf.h"
#include "tb_log.h"

typedef struct ssink_slot {
    char *key;        /* owned; NULL = empty */
    uint32_t version; /* last announced schema version */
} ssink_slot;

struct stdout_sink {
    FILE *fp;                 /* borrowed */
    evt_codec_opts opts;      /* strings point into owned copies below */
    char *prefix, *name;      /* owned */
    char *offsets_file;       /* owned; NULL unless offsets.storage=file */
    evt_rendered r;
    tb_buf line, key, value, topic, tkey;
    ssink_slot *slots;        /* open addressing, capacity a power of two */
    size_t nslots, used;
    uint64_t lines;
};

static uint64_t ssink_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* Slot for key: the one holding it, or the empty one where it would go. */
static ssink_slot *ssink_slot_for(stdout_sink *s, const char *key)
{
    size_t mask = s->nslots - 1;
    for (size_t i = (size_t)ssink_hash(key) & mask;; i = (i + 1) & mask)
        if (!s->slots[i].key || strcmp(s->slots[i].key, key) == 0)
            return &s->slots[i];
}

static tb_code ssink_grow(stdout_sink *s)
{
    size_t n = s->nslots ? s->nslots * 2 : 64;
    ssink_slot *old = s->slots;
    size_t oldn = s->nslots;
    s->slots = calloc(n, sizeof(*s->slots));
    if (!s->slots) {
        s->slots = old;
        return TB_ERR_NOMEM;
    }
    s->nslots = n;
    for (size_t i = 0; i < oldn; i++)
        if (old[i].key)
            *ssink_slot_for(s, old[i].key) = old[i];
    free(old);
    return TB_OK;
}

tb_code stdout_sink_open(const cfg *c, FILE *fp, stdout_sink **out, tb_error *err)
{
    *out = NULL;
    stdout_sink *s = calloc(1, sizeof(*s));
    if (!s)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    s->fp = fp;
    evt_rendered_init(&s->r);
    tb_buf_init(&s->line, 0);
    tb_buf_init(&s->key, 0);
    tb_buf_init(&s->value, 0);
    tb_buf_init(&s->topic, 0);
    tb_buf_init(&s->tkey, 0);
    const char *prefix = cfg_get_str(c, "topic.prefix");
    const char *name = cfg_get_str(c, "name");
    const char *fmt = cfg_get_str(c, "value.format");
    const char *storage = cfg_get_str(c, "offsets.storage");
    s->prefix = strdup(prefix ? prefix : "");
    s->name = strdup(name ? name : "");
    if (storage && strcmp(storage, "file") == 0) {
        const char *f = cfg_get_str(c, "offsets.file");
        if (!f || !*f) {
            stdout_sink_close(s);
            return tb_error_set(err, TB_ERR_CONFIG, false, "stdout sink: offsets.storage=file needs offsets.file");
        }
        s->offsets_file = strdup(f);
        if (!s->offsets_file)
            goto nomem;
    }
    if (!s->prefix || !s->name || ssink_grow(s) != TB_OK)
        goto nomem;
    s->opts.topic_prefix = s->prefix;
    s->opts.name = s->name;
    s->opts.row_format = fmt && strcmp(fmt, "row") == 0;
    s->opts.schemas = cfg_get_bool(c, "value.schemas");
    evt_codec_opts_encoding(&s->opts, c);
    *out = s;
    return TB_OK;
nomem:
    stdout_sink_close(s);
    return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
}

/* Write the line buffer plus a newline. */
static tb_code ssink_put_line(stdout_sink *s, tb_error *err)
{
    if (tb_buf_putc(&s->line, '\n') != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    if (fwrite(s->line.data, 1, s->line.len, s->fp) != s->line.len)
        return tb_error_set(err, TB_ERR_IO, false, "stdout sink: write failed: %s", strerror(errno));
    s->lines++;
    return TB_OK;
}

/* Print the schema record of t unless this version was printed already. */
static tb_code ssink_announce(stdout_sink *s, const evt_table *t, tb_error *err)
{
    tb_buf_reset(&s->tkey);
    if (tb_buf_printf(&s->tkey, "%s\x1f%s", evt_table_db(t), evt_table_name(t)) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    ssink_slot *slot = ssink_slot_for(s, s->tkey.data);
    uint32_t version = evt_table_version(t);
    if (slot->key && slot->version == version)
        return TB_OK;

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

    if (!slot->key) {
        if ((s->used + 1) * 4 > s->nslots * 3) { /* keep the load under 3/4 */
            if (ssink_grow(s) != TB_OK)
                return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
            slot = ssink_slot_for(s, s->tkey.data);
        }
        slot->key = strdup(s->tkey.data);
        if (!slot->key)
            return tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
        s->used++;
        evt_codec_warn_lossy(&s->opts, t); /* once per table and run */
    }
    slot->version = version;
    return TB_OK;
}

tb_code stdout_sink_send(stdout_sink *s, const evt_event *e, tb_error *err)
{
    const tb_error *bad = evt_event_error(e);
    if (bad)
        return tb_error_set(err, bad->code, false, "%s", bad->msg);
    const evt_table *t = evt_event_table(e);
    tb_code rc = ssink_announce(s, t, err);
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
    if (evt_event_last_in_tx(e) && fflush(s->fp) != 0)
        return tb_error_set(err, TB_ERR_IO, false, "stdout sink: flush failed: %s", strerror(errno));
    return TB_OK;
}

tb_code stdout_sink_commit(stdout_sink *s, const tb_position *pos, tb_error *err)
{
    if (fflush(s->fp) != 0 || ferror(s->fp))
        return tb_error_set(err, TB_ERR_IO, false, "stdout sink: flush failed: %s", strerror(errno));
    if (!s->offsets_file || !pos)
        return TB_OK;
    tb_buf text;
    tb_buf_init(&text, 0);
    tb_code rc = TB_OK;
    if (tb_position_format(pos, &text) != TB_OK || tb_buf_putc(&text, '\n') != TB_OK)
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "stdout sink: out of memory");
    if (rc == TB_OK)
        rc = cfg_file_write_atomic(s->offsets_file, text.data, text.len, err);
    if (rc != TB_OK)
        tb_error_prefix(err, rc, "offsets file: ");
    else
        TB_DEBUG("stdout", "committed %s", text.data);
    tb_buf_free(&text);
    return rc;
}

uint64_t stdout_sink_lines(const stdout_sink *s)
{
    return s->lines;
}

void stdout_sink_close(stdout_sink *s)
{
    if (!s)
        return;
    if (s->fp)
        fflush(s->fp);
    evt_rendered_free(&s->r);
    tb_buf_free(&s->line);
    tb_buf_free(&s->key);
    tb_buf_free(&s->value);
    tb_buf_free(&s->topic);
    tb_buf_free(&s->tkey);
    for (size_t i = 0; i < s->nslots; i++)
        free(s->slots[i].key);
    free(s->slots);
    free(s->prefix);
    free(s->name);
    free(s->offsets_file);
    free(s);
}
