/*
 * cfg: the configuration store, per-key validation, cross-key checks,
 * getters, secrets and the dump (see cfg.h). Loading from files and the
 * environment is in cfg_load.c, the generated help in cfg_help.c.
 *
 * The store is an array of entries sorted by key, so cfg_each_prefixed() and
 * cfg_dump() come out in key order and lookups are a binary search. Each
 * entry remembers where its value came from ("x.properties:7", "--set",
 * "environment TRIBUTARY_SOURCE_HOST") for error messages.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfg.h"
#include "tb_file.h"
#include "cfg_internal.h"
#include "tb_log.h"

typedef struct cfg_entry {
    char *key;    /* owned */
    char *value;  /* owned */
    char *origin; /* owned */
} cfg_entry;

struct cfg {
    cfg_entry *v; /* sorted by key */
    size_t n, cap;
    char *base_dir;       /* absolute folder of the last configuration file loaded; NULL = none */
    char **path_defaults; /* per property row: its relative CFG_PATH default under base_dir, or NULL */
};

#define CFG_MASK "********"

/* ------------------------------------------------------------ helpers */

const char *cfg_type_name(cfg_type t)
{
    switch (t) {
    case CFG_STRING: return "string";
    case CFG_INT: return "int";
    case CFG_BOOL: return "bool";
    case CFG_ENUM: return "enum";
    case CFG_REGEX: return "regex";
    case CFG_PATH: return "path";
    case CFG_MS: return "ms";
    }
    return "?";
}

static bool cfg_ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

bool cfg_key_is_secret(const char *key)
{
    static const char *const words[] = {"password", "secret", "key.pem", "sasl.oauthbearer", "ssl.key", "token"};
    const cfg_prop *p = cfg_prop_find(key);
    if (p && p->secret)
        return true;
    if (cfg_ends_with(key, ".file"))
        return false; /* where a secret is read from, not the secret */
    for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++)
        if (strstr(key, words[i]))
            return true;
    return false;
}

unsigned cfg_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255 || lb > 255)
        return 255;
    /* Three rolling rows: i-2, i-1, i. */
    unsigned rows[3][256];
    unsigned *r2 = rows[0], *r1 = rows[1], *r0 = rows[2];
    for (size_t j = 0; j <= lb; j++)
        r1[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        r0[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            unsigned cost = a[i - 1] == b[j - 1] ? 0 : 1;
            unsigned best = r1[j] + 1;
            if (r0[j - 1] + 1 < best)
                best = r0[j - 1] + 1;
            if (r1[j - 1] + cost < best)
                best = r1[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && r2[j - 2] + 1 < best)
                best = r2[j - 2] + 1;
            r0[j] = best;
        }
        unsigned *t = r2;
        r2 = r1;
        r1 = r0;
        r0 = t;
    }
    return r1[lb] > 255 ? 255 : r1[lb];
}

const char *cfg_suggest(const char *key, char *scratch, size_t scratch_len)
{
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    const char *best = NULL;
    unsigned best_d = UINT_MAX;
    for (size_t i = 0; i < n; i++) {
        const char *name = props[i].name;
        size_t len = strlen(name);
        unsigned d;
        if (len > 0 && name[len - 1] == '*') {
            /* Compare the prefix with the same-length start of the key:
             * "kafak.acks" -> "kafka." */
            char prefix[128];
            if (len - 1 >= sizeof(prefix) || strlen(key) < len - 1)
                continue;
            memcpy(prefix, key, len - 1);
            prefix[len - 1] = '\0';
            char want[128];
            memcpy(want, name, len - 1);
            want[len - 1] = '\0';
            d = cfg_edit_distance(prefix, want);
            size_t rest = strlen(key + len - 1);
            if (d < best_d && d > 0 && len - 1 + rest < scratch_len) { /* a whole suggestion, never a cut one */
                memcpy(scratch, want, len - 1);
                memcpy(scratch + len - 1, key + len - 1, rest + 1);
                best_d = d;
                best = scratch;
            }
            continue;
        }
        d = cfg_edit_distance(key, name);
        if (d < best_d) {
            best_d = d;
            best = name;
        }
    }
    size_t klen = strlen(key);
    unsigned limit = klen >= 12 ? 3 : (klen >= 5 ? 2 : 1);
    return best && best_d <= limit ? best : NULL;
}

/* ------------------------------------------------------------ store */

cfg *cfg_new(void)
{
    return calloc(1, sizeof(cfg));
}

void cfg_free(cfg *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].key);
        free(c->v[i].value);
        free(c->v[i].origin);
    }
    free(c->v);
    tb_ignore(cfg_set_base_dir(c, NULL)); /* NULL only frees */
    free(c);
}

/* Forget the base folder and the defaults resolved under it. */
static void cfg_base_clear(cfg *c)
{
    size_t n;
    cfg_props(&n);
    for (size_t i = 0; c->path_defaults && i < n; i++)
        free(c->path_defaults[i]);
    free(c->path_defaults);
    c->path_defaults = NULL;
    free(c->base_dir);
    c->base_dir = NULL;
}

tb_code cfg_set_base_dir(cfg *c, const char *dir)
{
    cfg_base_clear(c);
    if (!dir)
        return TB_OK;
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    c->base_dir = strdup(dir);
    c->path_defaults = calloc(n, sizeof(*c->path_defaults));
    if (!c->base_dir || !c->path_defaults) {
        cfg_base_clear(c);
        return TB_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (props[i].type != CFG_PATH || !props[i].def || !*props[i].def || props[i].def[0] == '/')
            continue;
        tb_buf b;
        tb_buf_init(&b, 0);
        if (cfg_path_join(dir, props[i].def, &b) != TB_OK || !(c->path_defaults[i] = tb_buf_detach(&b, NULL))) {
            tb_buf_free(&b);
            cfg_base_clear(c);
            return TB_ERR_NOMEM;
        }
        tb_buf_free(&b);
    }
    return TB_OK;
}

tb_code cfg_path_join(const char *dir, const char *path, tb_buf *out)
{
    if (!dir || !*dir || path[0] == '/')
        return tb_buf_puts(out, path);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    size_t dl = strlen(dir);
    tb_code rc = tb_buf_append(out, dir, dl);
    if (rc == TB_OK && dir[dl - 1] != '/')
        rc = tb_buf_putc(out, '/');
    if (rc == TB_OK)
        rc = tb_buf_puts(out, path);
    return rc;
}

tb_code cfg_connector_file(const cfg *c, const char *suffix, tb_buf *out)
{
    const char *off = cfg_get_str(c, CFGK_OFFSETS_FILE);
    const char *name = cfg_get_str(c, CFGK_NAME);
    const char *slash = off ? strrchr(off, '/') : NULL;
    tb_code rc = TB_OK;
    if (slash)
        rc = tb_buf_append(out, off, (size_t)(slash - off + 1));
    if (rc == TB_OK)
        rc = tb_buf_printf(out, "%s%s", name && *name ? name : "tributary", suffix);
    return rc;
}

/* Index of key, or the insertion point with *found = false. */
static size_t cfg_lookup(const cfg *c, const char *key, bool *found)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->v[mid].key, key);
        if (r == 0) {
            *found = true;
            return mid;
        }
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* The name a key is stored and documented under: a renamed key's new name. */
static const char *cfg_current_name(const char *key)
{
    const cfg_renamed *rn = key ? cfg_renamed_find(key) : NULL;
    return rn && rn->new_name ? rn->new_name : key;
}

static const cfg_entry *cfg_entry_get(const cfg *c, const char *key)
{
    key = cfg_current_name(key);
    bool found;
    size_t i = cfg_lookup(c, key, &found);
    return found ? &c->v[i] : NULL;
}

static tb_code cfg_store(cfg *c, const char *key, const char *value, const char *origin)
{
    bool found;
    size_t i = cfg_lookup(c, key, &found);
    char *v = strdup(value);
    char *o = strdup(origin ? origin : "");
    if (!v || !o) {
        free(v);
        free(o);
        return TB_ERR_NOMEM;
    }
    if (found) {
        free(c->v[i].value);
        free(c->v[i].origin);
        c->v[i].value = v;
        c->v[i].origin = o;
        return TB_OK;
    }
    char *k = strdup(key);
    if (!k)
        goto nomem;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        cfg_entry *nv = realloc(c->v, cap * sizeof(*nv));
        if (!nv)
            goto nomem;
        c->v = nv;
        c->cap = cap;
    }
    memmove(&c->v[i + 1], &c->v[i], (c->n - i) * sizeof(*c->v));
    c->v[i] = (cfg_entry){k, v, o};
    c->n++;
    return TB_OK;
nomem:
    free(k);
    free(v);
    free(o);
    return TB_ERR_NOMEM;
}

/* ------------------------------------------------------------ validation */

static bool cfg_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == ' ' || s[0] == '\t' || s[0] == '+')
        return false;
    *out = (int64_t)v;
    return true;
}

static int cfg_parse_bool(const char *s)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* Check value against the row; *norm is set to the text to store (a static
 * string for booleans, else value). */
static tb_code cfg_check(const cfg_prop *p, const char *key, const char *value, const char *origin,
                         const char **norm, tb_error *err)
{
    *norm = value;
    switch (p->type) {
    case CFG_STRING:
    case CFG_PATH:
        if (strncmp(p->name, "key.columns.", 12) == 0) {
            const char *rest = key + 12;
            const char *dot = strchr(rest, '.');
            if (!dot || dot == rest || dot[1] == '\0')
                return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s: expected key.columns.<db>.<table>",
                                    origin, key);
            if (value[0] == '\0' || value[0] == ',' || cfg_ends_with(value, ",") || strstr(value, ",,"))
                return tb_error_set(err, TB_ERR_CONFIG, false,
                                    "%s: %s: expected a comma-separated list of columns", origin, key);
        }
        return TB_OK;
    case CFG_INT:
    case CFG_MS: {
        int64_t v;
        if (!cfg_parse_i64(value, &v))
            return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s: '%s' is not an integer%s", origin, key,
                                value, p->type == CFG_MS ? " (milliseconds)" : "");
        int64_t min = p->min, max = p->max;
        if (p->type == CFG_MS && min < 0)
            min = 0;
        if (min == 0 && max == 0)
            max = INT64_MAX;
        if (v < min || v > max) {
            if (max == INT64_MAX)
                return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s: %s is out of range (must be >= %lld)",
                                    origin, key, value, (long long)min);
            return tb_error_set(err, TB_ERR_CONFIG, false,
                                "%s: %s: %s is out of range (must be between %lld and %lld)", origin, key, value,
                                (long long)min, (long long)max);
        }
        return TB_OK;
    }
    case CFG_BOOL: {
        int b = cfg_parse_bool(value);
        if (b < 0)
            return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s: '%s' is not a boolean (use true or false)",
                                origin, key, value);
        *norm = b ? "true" : "false";
        return TB_OK;
    }
    case CFG_ENUM: {
        for (size_t i = 0; p->values && p->values[i]; i++)
            if (strcmp(value, p->values[i]) == 0)
                return TB_OK;
        char list[512] = "";
        size_t used = 0;
        for (size_t i = 0; p->values && p->values[i]; i++) {
            int w = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", p->values[i]);
            if (w < 0 || (size_t)w >= sizeof(list) - used)
                break;
            used += (size_t)w;
        }
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s: '%s' is not one of %s", origin, key, value,
                            list);
    }
    case CFG_REGEX: {
        regex_t re;
        int rc = regcomp(&re, value, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[256];
            regerror(rc, &re, why, sizeof(why));
            regfree(&re);
            return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s: bad regex '%s': %s", origin, key, value, why);
        }
        regfree(&re);
        return TB_OK;
    }
    }
    return TB_OK;
}

/* A secret file that holds nothing (or only line ends): refused, not taken for "no password". */
static tb_code empty_secret(tb_error *err, const char *origin, const char *key, const char *path)
{
    return tb_error_set(err, TB_ERR_CONFIG, false,
                        "%s: %s: %s is empty: write the secret into it (a trailing newline is ignored), or remove %s "
                        "when no secret is needed",
                        origin, key, path, key);
}

/* A pass-through secret given as a file ("kafka.sasl.password.file"): the
 * file is read now and its content stored under the key without ".file", so
 * the pass-through sees only the secret (librdkafka knows no *.file keys). */
static tb_code cfg_set_secret_file(cfg *c, const char *key, const char *path, const char *origin, tb_error *err)
{
    tb_buf b;
    tb_buf_init(&b, 1 << 16);
    tb_error ferr;
    tb_code rc = tb_file_read(path, 1 << 16, &b, &ferr);
    if (rc != TB_OK) {
        tb_buf_free(&b);
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s: %s", origin, key, ferr.msg);
    }
    while (b.len > 0 && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
        b.data[--b.len] = '\0';
    if (b.len == 0) {
        tb_buf_free(&b);
        return empty_secret(err, origin, key, path);
    }
    char *skey = strndup(key, strlen(key) - 5);
    rc = skey ? cfg_store(c, skey, tb_buf_cstr(&b), origin) : TB_ERR_NOMEM;
    if (rc == TB_OK)
        TB_DEBUG("config", "%s=%s (%s, read from %s)", skey, CFG_MASK, origin, path);
    else
        tb_error_set(err, rc, false, "%s: %s: out of memory", origin, key);
    free(skey);
    tb_buf_free(&b);
    return rc;
}

tb_code cfg_set(cfg *c, const char *key, const char *value, const char *origin, tb_error *err)
{
    if (!origin)
        origin = "(unknown origin)";
    if (!key || !*key)
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: empty key", origin);
    if (!value)
        value = "";
    const cfg_renamed *rn = cfg_renamed_find(key);
    if (rn && !rn->new_name) {
        TB_WARN("config", "%s: '%s' is no longer a setting and is ignored: %s; remove it", origin, key, rn->note);
        return TB_OK;
    }
    if (rn) {
        TB_WARN("config", "%s: '%s' is now called '%s'; the old name still works, but use the new one", origin, key,
                rn->new_name);
        key = rn->new_name;
    }
    const cfg_prop *p = cfg_prop_find(key);
    if (!p) {
        char scratch[256];
        const char *hint = cfg_suggest(key, scratch, sizeof(scratch));
        if (hint)
            return tb_error_set(err, TB_ERR_CONFIG, false, "%s: unknown key '%s' (did you mean '%s'?)", origin,
                                key, hint);
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: unknown key '%s'", origin, key);
    }
    if (p->name[strlen(p->name) - 1] == '*' && cfg_ends_with(key, ".password.file"))
        return cfg_set_secret_file(c, key, value, origin, err);
    const char *norm;
    tb_code rc = cfg_check(p, key, value, origin, &norm, err);
    if (rc != TB_OK)
        return rc;
    if (cfg_store(c, key, norm, origin) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "%s: %s: out of memory", origin, key);
    TB_DEBUG("config", "%s=%s (%s)", key, cfg_key_is_secret(key) ? CFG_MASK : norm, origin);
    return TB_OK;
}

/* ------------------------------------------------------------ getters */

const char *cfg_get_str(const cfg *c, const char *key)
{
    const cfg_entry *e = c ? cfg_entry_get(c, key) : NULL;
    if (e)
        return e->value;
    const cfg_prop *p = cfg_prop_find(cfg_current_name(key));
    assert(p && "cfg_get_str: key not in the property table");
    if (p && c && c->path_defaults) {
        size_t n;
        const cfg_prop *props = cfg_props(&n);
        if (c->path_defaults[p - props])
            return c->path_defaults[p - props];
    }
    return p ? p->def : NULL;
}

int64_t cfg_get_int(const cfg *c, const char *key)
{
    const char *s = cfg_get_str(c, key);
    int64_t v = 0;
    if (s && !cfg_parse_i64(s, &v))
        v = 0;
    return v;
}

bool cfg_get_bool(const cfg *c, const char *key)
{
    const char *s = cfg_get_str(c, key);
    return s && cfg_parse_bool(s) == 1;
}

bool cfg_is_set(const cfg *c, const char *key)
{
    return c && cfg_entry_get(c, key) != NULL;
}

/* Origin of a set key, for messages; NULL when it is a default. */
static const char *cfg_origin(const cfg *c, const char *key)
{
    const cfg_entry *e = cfg_entry_get(c, key);
    return e ? e->origin : NULL;
}

tb_code cfg_get_secret(const cfg *c, const char *key, char **out, tb_error *err)
{
    *out = NULL;
    const cfg_entry *e = cfg_entry_get(c, key);
    if (e) {
        *out = strdup(e->value);
        return *out ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "%s: out of memory", key);
    }
    char fkey[256];
    int n = snprintf(fkey, sizeof(fkey), "%s.file", key);
    if (n < 0 || (size_t)n >= sizeof(fkey))
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: key too long", key);
    const cfg_entry *fe = cfg_entry_get(c, fkey);
    if (!fe)
        return TB_OK; /* no secret configured */
    tb_buf b;
    tb_buf_init(&b, 1 << 16);
    tb_error ferr;
    tb_code rc = tb_file_read(fe->value, 1 << 16, &b, &ferr);
    if (rc != TB_OK) {
        tb_buf_free(&b);
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s: %s", fe->origin, fkey, ferr.msg);
    }
    while (b.len > 0 && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
        b.data[--b.len] = '\0';
    if (b.len == 0) {
        tb_buf_free(&b);
        return empty_secret(err, fe->origin, fkey, fe->value);
    }
    *out = tb_buf_detach(&b, NULL);
    tb_buf_free(&b);
    return *out ? TB_OK : tb_error_set(err, TB_ERR_NOMEM, false, "%s: out of memory", fkey);
}

void cfg_each_prefixed(const cfg *c, const char *prefix, cfg_each_fn fn, void *opaque)
{
    size_t plen = strlen(prefix);
    bool found;
    for (size_t i = cfg_lookup(c, prefix, &found); i < c->n; i++) {
        if (strncmp(c->v[i].key, prefix, plen) != 0)
            break;
        fn(c->v[i].key + plen, c->v[i].value, opaque);
    }
}

/* ------------------------------------------------------------ validate */

bool cfg_file_mode(const cfg *c, unsigned *mode)
{
    const char *s = cfg_get_str(c, CFGK_FILE_MODE);
    char *end = NULL;
    errno = 0;
    long v = s && *s >= '0' && *s <= '7' ? strtol(s, &end, 8) : -1;
    /* the owner reads and writes; the group may read (0640: a reader group), nobody else
     * reads and nobody else writes (offsets, .pos, .pend and the status file steer the run) */
    if (errno || !end || *end || v < 0 || v > 0777 || (v & 0600) != 0600 || (v & 0137) != 0)
        return false;
    *mode = (unsigned)v;
    return true;
}

/* "<origin>: " for a set key, or "" for a default, into buf. */
static const char *cfg_where(const cfg *c, const char *key, char *buf, size_t len)
{
    const char *o = cfg_origin(c, key);
    if (o)
        snprintf(buf, len, "%s: ", o);
    else
        buf[0] = '\0';
    return buf;
}

tb_code cfg_validate(const cfg *c, tb_error *err)
{
    char w[512];
    const char *src = cfg_get_str(c, CFGK_SOURCE_TYPE);
    if (src && strcmp(src, "sqlite") == 0 && !cfg_is_set(c, CFGK_SOURCE_PATH))
        return tb_error_set(err, TB_ERR_CONFIG, false, "%ssource.type=sqlite needs source.path",
                            cfg_where(c, "source.type", w, sizeof(w)));

    if (src && strcmp(src, "sqlite") == 0 && strcmp(cfg_get_str(c, CFGK_TOPIC_MISSING_POLICY), "resnapshot") == 0)
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "%stopic.missing.policy=resnapshot needs source.type=mysql (an incremental snapshot "
                            "of one table); for SQLite, forget the stored position (tributary offsets set "
                            "--position none) to snapshot every table again",
                            cfg_where(c, "topic.missing.policy", w, sizeof(w)));

    bool has_kafka = cfg_is_set(c, "kafka.bootstrap.servers");
    static const char *const kafka_users[] = {"sink", "offsets.storage"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = cfg_get_str(c, kafka_users[i]);
        if (v && strcmp(v, "kafka") == 0 && !has_kafka) {
            const char *o = cfg_origin(c, kafka_users[i]);
            if (o)
                return tb_error_set(err, TB_ERR_CONFIG, false, "%s: %s=kafka needs kafka.bootstrap.servers", o,
                                    kafka_users[i]);
            return tb_error_set(err, TB_ERR_CONFIG, false,
                                "%s=kafka (the default) needs kafka.bootstrap.servers", kafka_users[i]);
        }
    }

    if (cfg_get_bool(c, CFGK_EXACTLY_ONCE)) {
        const char *sink = cfg_get_str(c, CFGK_SINK);
        const char *off = cfg_get_str(c, CFGK_OFFSETS_STORAGE);
        if (strcmp(sink, "kafka") != 0 || strcmp(off, "kafka") != 0)
            return tb_error_set(err, TB_ERR_CONFIG, false,
                                "%sexactly.once=true needs sink=kafka and offsets.storage=kafka",
                                cfg_where(c, "exactly.once", w, sizeof(w)));
    }

    if (cfg_is_set(c, CFGK_SOURCE_PASSWORD) && cfg_is_set(c, CFGK_SOURCE_PASSWORD_FILE))
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "%ssource.password.file: set either source.password or source.password.file, not both",
                            cfg_where(c, "source.password.file", w, sizeof(w)));

    const char *ssl = cfg_get_str(c, CFGK_SOURCE_SSL_MODE);
    if (ssl && strncmp(ssl, "verify_", 7) == 0 && !cfg_is_set(c, CFGK_SOURCE_SSL_CA) && !cfg_is_set(c, CFGK_SOURCE_SSL_CAPATH))
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "%ssource.ssl.mode=%s needs source.ssl.ca (a CA file) or source.ssl.capath to verify the "
                            "server certificate against",
                            cfg_where(c, "source.ssl.mode", w, sizeof(w)), ssl);

    unsigned mode;
    if (!cfg_file_mode(c, &mode))
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "%sfile.mode: '%s' is not 0600 or 0640: the owner reads and writes its files, the group "
                            "may read them, nobody else may read or write them (offsets, status and the shadow's "
                            ".pos/.pend steer the run; the cache holds the source's rows)",
                            cfg_where(c, "file.mode", w, sizeof(w)), cfg_get_str(c, CFGK_FILE_MODE));

    if (cfg_is_set(c, CFGK_SOURCE_START_POSITION) && !cfg_is_set(c, CFGK_SOURCE_START_FILE))
        return tb_error_set(err, TB_ERR_CONFIG, false, "%ssource.start.position needs source.start.file",
                            cfg_where(c, "source.start.position", w, sizeof(w)));

    static const char *const converters[] = {"key.converter", "value.converter"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = cfg_get_str(c, converters[i]);
        if (!v || strcmp(v, "avro") != 0)
            continue;
        if (!cfg_is_set(c, CFGK_SCHEMA_REGISTRY_URL))
            return tb_error_set(err, TB_ERR_CONFIG, false, "%s%s=avro needs schema.registry.url",
                                cfg_where(c, converters[i], w, sizeof(w)), converters[i]);
        if (cfg_get_bool(c, i ? CFGK_VALUE_SCHEMAS : CFGK_KEY_SCHEMAS))
            return tb_error_set(err, TB_ERR_CONFIG, false,
                                "%s%s=avro: %s=true wraps JSON with its schema; the Avro messages carry a schema "
                                "id instead: leave %s unset",
                                cfg_where(c, converters[i], w, sizeof(w)), converters[i],
                                i ? "value.schemas" : "key.schemas", i ? "value.schemas" : "key.schemas");
    }
    if (cfg_is_set(c, CFGK_SCHEMA_REGISTRY_BASIC_AUTH_PASSWORD) && cfg_is_set(c, CFGK_SCHEMA_REGISTRY_BASIC_AUTH_PASSWORD_FILE))
        return tb_error_set(err, TB_ERR_CONFIG, false,
                            "%sschema.registry.basic.auth.password.file: set either the password or its file, not both",
                            cfg_where(c, "schema.registry.basic.auth.password.file", w, sizeof(w)));

    const char *off = cfg_get_str(c, CFGK_OFFSETS_STORAGE);
    if (off && strcmp(off, "file") == 0) {
        const char *f = cfg_get_str(c, CFGK_OFFSETS_FILE);
        if (!f || !*f)
            return tb_error_set(err, TB_ERR_CONFIG, false, "%soffsets.storage=file needs offsets.file",
                                cfg_where(c, "offsets.storage", w, sizeof(w)));
    }
    return TB_OK;
}

/* ------------------------------------------------------------ dump */

static tb_code cfg_dump_line(tb_buf *out, const char *key, const char *value)
{
    if (tb_buf_printf(out, "%s=%s\n", key, cfg_key_is_secret(key) ? CFG_MASK : value) != TB_OK)
        return TB_ERR_NOMEM;
    return TB_OK;
}

tb_code cfg_dump(const cfg *c, tb_buf *out)
{
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    for (size_t i = 0; i < n; i++) {
        const char *name = props[i].name;
        size_t len = strlen(name);
        if (len > 0 && name[len - 1] == '*') {
            bool found;
            for (size_t j = cfg_lookup(c, "", &found); j < c->n; j++) {
                const char *k = c->v[j].key;
                if (strncmp(k, name, len - 1) == 0 && cfg_prop_find(k) == &props[i] &&
                    cfg_dump_line(out, k, c->v[j].value) != TB_OK)
                    return TB_ERR_NOMEM;
            }
            continue;
        }
        const char *v = cfg_get_str(c, name);
        if (v && cfg_dump_line(out, name, v) != TB_OK)
            return TB_ERR_NOMEM;
    }
    return TB_OK;
}

/* ============================================================ key.columns */

void cfg_list_free(char **list, size_t n)
{
    if (!list)
        return;
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

tb_code cfg_key_columns(const cfg *c, const char *db, const char *table, char ***cols, size_t *n)
{
    *cols = NULL;
    *n = 0;
    tb_buf key;
    tb_buf_init(&key, 0);
    tb_code rc = tb_buf_printf(&key, "key.columns.%s.%s", db, table);
    const char *list = rc == TB_OK && cfg_is_set(c, tb_buf_cstr(&key)) ? cfg_get_str(c, tb_buf_cstr(&key)) : NULL;
    char **v = NULL;
    size_t cnt = 0;
    for (const char *p = list; rc == TB_OK && p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len > 0 && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len > 0) {
            char **nv = realloc(v, (cnt + 1) * sizeof(*nv));
            char *s = nv ? strndup(p, len) : NULL;
            if (nv)
                v = nv;
            if (!s)
                rc = TB_ERR_NOMEM;
            else
                v[cnt++] = s;
        }
        p = e ? e + 1 : NULL;
    }
    tb_buf_free(&key);
    if (rc != TB_OK) {
        cfg_list_free(v, cnt);
        return rc;
    }
    *cols = v;
    *n = cnt;
    return TB_OK;
}
