/*
 * cfg_load: properties files and TRIBUTARY_* environment variables.
 *
 * FILE FORMAT (a subset of Java .properties, as Kafka and librdkafka use):
 *   - one `key=value` per line; whitespace around key and value is trimmed
 *     (a ':' is accepted in place of '=' when no '=' comes first)
 *   - a line whose first non-blank character is '#' or '!' is a comment;
 *     blank lines are skipped; CRLF line ends are accepted
 *   - a line ending in an odd number of backslashes continues on the next
 *     line (the backslash is dropped, the next line's leading blanks too)
 *   - no other escapes: a backslash is kept as is, so regexes such as
 *     `tables.include=shop\.orders` mean what they say
 *   - a key given twice: the later line wins; a UTF-8 byte order mark is skipped
 * Errors name "<file>:<line>" (the line where the entry starts).
 *
 * ENVIRONMENT: TRIBUTARY_<KEY>, the key upper-cased with dots as
 * underscores. The name is matched back against the table (so
 * TRIBUTARY_EXACTLY_ONCE is `exactly.once`); for pattern rows the rest after
 * the prefix turns underscores into dots (TRIBUTARY_KAFKA_BOOTSTRAP_SERVERS ->
 * kafka.bootstrap.servers). TRIBUTARY_TEST_*, TRIBUTARY_TESTENV_* and
 * TRIBUTARY_CACHE belong to the test harness and scripts and are ignored. An
 * unmatched TRIBUTARY_* variable close to a known key is an error (a typo
 * must not silently fall back to a default); any other unmatched one is
 * logged as a warning and ignored (the environment is shared with other
 * tools).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cfg_internal.h"
#include "tb_log.h"

#define CFG_ENV_PREFIX "TRIBUTARY_"
#define CFG_LINE_MAX (1 << 20)

static char *cfg_trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\f')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\f' || s[n - 1] == '\r' ||
                     s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* Strip the line end; return true if the line ends in a continuation
 * backslash (which is removed). */
static bool cfg_chop(char *line)
{
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    size_t bs = 0;
    while (bs < n && line[n - 1 - bs] == '\\')
        bs++;
    if (bs % 2 == 1) {
        line[n - 1] = '\0';
        return true;
    }
    return false;
}

/* Parse one logical entry (already joined). dir: the file's absolute
 * folder, against which a relative value of a `path` key is resolved. */
static tb_code cfg_load_entry(cfg *c, char *text, const char *dir, const char *origin, tb_error *err)
{
    char *s = cfg_trim(text);
    if (*s == '\0' || *s == '#' || *s == '!')
        return TB_OK;
    char *eq = strchr(s, '=');
    char *colon = strchr(s, ':');
    if (!eq || (colon && colon < eq))
        eq = colon;
    if (!eq)
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: expected key=value, got '%.60s'", origin, s);
    *eq = '\0';
    char *key = cfg_trim(s);
    char *value = cfg_trim(eq + 1);
    if (*key == '\0')
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: empty key before '='", origin);
    const cfg_prop *p = cfg_prop_find(key);
    if (p && p->type == CFG_PATH && *value && value[0] != '/' && dir) {
        tb_buf b;
        tb_buf_init(&b, 0);
        tb_code rc = cfg_path_join(dir, value, &b);
        rc = rc == TB_OK ? cfg_set(c, key, tb_buf_cstr(&b), origin, err)
                         : tb_error_set(err, TB_ERR_NOMEM, false, "%s: out of memory", origin);
        tb_buf_free(&b);
        return rc;
    }
    return cfg_set(c, key, value, origin, err);
}

tb_code cfg_load_file(cfg *c, const char *path, tb_error *err)
{
    tb_code rc = TB_OK;
    char *line = NULL;
    size_t cap = 0;
    tb_buf entry;
    tb_buf_init(&entry, CFG_LINE_MAX);
    char *dir = NULL;
    FILE *f = fopen(path, "r");
    if (!f)
        return tb_error_set(err, TB_ERR_CONFIG, false, "%s: cannot open configuration: %s", path, strerror(errno));
    /* The file's absolute folder: relative paths in it (and the relative
     * defaults of path keys) are taken from there, not from the working
     * directory. */
    char *abs = realpath(path, NULL);
    if (abs) {
        char *slash = strrchr(abs, '/');
        if (slash)
            slash[slash == abs ? 1 : 0] = '\0';
        dir = abs;
    }
    if (!dir || cfg_set_base_dir(c, dir) != TB_OK) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "%s: cannot resolve the configuration's folder: %s", path,
                          dir ? "out of memory" : strerror(errno));
        goto out;
    }

    long lineno = 0, start = 0;
    bool cont = false;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if ((size_t)got != strlen(line)) {
            rc = tb_error_set(err, TB_ERR_CONFIG, false, "%s:%ld: NUL byte in line", path, lineno);
            goto out;
        }
        char *piece = line;
        if (lineno == 1 && strncmp(piece, "\xEF\xBB\xBF", 3) == 0)
            piece += 3; /* UTF-8 byte order mark */
        if (cont) {
            while (*piece == ' ' || *piece == '\t' || *piece == '\f')
                piece++;
        } else {
            start = lineno;
            tb_buf_reset(&entry);
            /* A comment line never continues. */
            char *t = piece;
            while (*t == ' ' || *t == '\t' || *t == '\f')
                t++;
            if (*t == '#' || *t == '!')
                continue;
        }
        cont = cfg_chop(piece);
        if (tb_buf_puts(&entry, piece) != TB_OK) {
            rc = tb_error_set(err, TB_ERR_CONFIG, false, "%s:%ld: entry too long", path, start);
            goto out;
        }
        if (cont)
            continue;
        char origin[4096 + 32];
        snprintf(origin, sizeof(origin), "%s:%ld", path, start);
        if (entry.len == 0)
            continue;
        rc = cfg_load_entry(c, entry.data, dir, origin, err);
        if (rc != TB_OK)
            goto out;
    }
    if (ferror(f)) {
        rc = tb_error_set(err, TB_ERR_CONFIG, false, "%s: cannot read: %s", path, strerror(errno));
        goto out;
    }
    if (cont && entry.len > 0) { /* continuation at end of file: take what we have */
        char origin[4096 + 32];
        snprintf(origin, sizeof(origin), "%s:%ld", path, start);
        rc = cfg_load_entry(c, entry.data, dir, origin, err);
    }
out:
    free(line);
    free(dir);
    tb_buf_free(&entry);
    fclose(f);
    return rc;
}

/* "SOURCE_HOST" for "source.host" into buf. */
static void cfg_env_form(const char *name, char *buf, size_t len)
{
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++)
        buf[i] = name[i] == '.' ? '_' : (char)toupper((unsigned char)name[i]);
    buf[i] = '\0';
}

/* Map the part after TRIBUTARY_ back to a key, into key (size len). */
static bool cfg_env_to_key(const char *rest, char *key, size_t len)
{
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    char form[256];
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(props[i].name);
        if (nl > 0 && props[i].name[nl - 1] == '*')
            continue;
        cfg_env_form(props[i].name, form, sizeof(form));
        if (strcmp(form, rest) == 0) {
            snprintf(key, len, "%s", props[i].name);
            return true;
        }
    }
    size_t nr;
    const cfg_renamed *rn = cfg_renamed_keys(&nr);
    for (size_t i = 0; i < nr; i++) { /* cfg_set warns and maps it */
        cfg_env_form(rn[i].old_name, form, sizeof(form));
        if (strcmp(form, rest) == 0) {
            snprintf(key, len, "%s", rn[i].old_name);
            return true;
        }
    }
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(props[i].name);
        if (nl == 0 || props[i].name[nl - 1] != '*' || nl - 1 >= sizeof(form))
            continue;
        char prefix[256];
        memcpy(prefix, props[i].name, nl - 1);
        prefix[nl - 1] = '\0';
        cfg_env_form(prefix, form, sizeof(form));
        size_t fl = strlen(form);
        if (strncmp(rest, form, fl) != 0 || rest[fl] == '\0')
            continue;
        size_t k = 0;
        for (size_t j = 0; j < nl - 1 && k + 1 < len; j++)
            key[k++] = prefix[j];
        for (const char *p = rest + fl; *p && k + 1 < len; p++)
            key[k++] = *p == '_' ? '.' : (char)tolower((unsigned char)*p);
        key[k] = '\0';
        return true;
    }
    return false;
}

tb_code cfg_load_env(cfg *c, char *const *envp, tb_error *err)
{
    const size_t plen = strlen(CFG_ENV_PREFIX);
    for (size_t i = 0; envp && envp[i]; i++) {
        const char *e = envp[i];
        if (strncmp(e, CFG_ENV_PREFIX, plen) != 0 || strncmp(e, CFG_ENV_PREFIX "TEST_", plen + 5) == 0 ||
            strncmp(e, CFG_ENV_PREFIX "TESTENV_", plen + 8) == 0 || strncmp(e, CFG_ENV_PREFIX "CACHE=", plen + 6) == 0)
            continue;
        const char *eq = strchr(e, '=');
        if (!eq)
            continue;
        char name[256], rest[256], key[256];
        size_t nlen = (size_t)(eq - e);
        if (nlen >= sizeof(name))
            return tb_error_set(err, TB_ERR_CONFIG, false, "environment: variable name too long: %.40s...", e);
        memcpy(name, e, nlen);
        name[nlen] = '\0';
        snprintf(rest, sizeof(rest), "%s", name + plen);
        char origin[300];
        snprintf(origin, sizeof(origin), "environment %s", name);
        if (!cfg_env_to_key(rest, key, sizeof(key))) {
            /* Lower-case dotted form for the message and the suggestion. */
            size_t k = 0;
            for (const char *p = rest; *p && k + 1 < sizeof(key); p++)
                key[k++] = *p == '_' ? '.' : (char)tolower((unsigned char)*p);
            key[k] = '\0';
            char scratch[256];
            const char *hint = cfg_suggest(key, scratch, sizeof(scratch));
            if (hint) {
                char hint_env[256];
                cfg_env_form(hint, hint_env, sizeof(hint_env));
                return tb_error_set(err, TB_ERR_CONFIG, false, "%s: unknown key '%s' (did you mean %s%s?)",
                                    origin, key, CFG_ENV_PREFIX, hint_env);
            }
            TB_WARN("config", "%s: no such key '%s'; ignored", origin, key);
            continue;
        }
        tb_code rc = cfg_set(c, key, eq + 1, origin, err);
        if (rc != TB_OK)
            return rc;
    }
    return TB_OK;
}
