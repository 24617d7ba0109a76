/*
 * cfg_help: `tributary --help-config` and docs/configuration.md, both
 * generated from the property table (cfg_props.c), grouped by the row's
 * group in order of first appearance.
 */
#include <inttypes.h>
#include <string.h>

#include "cfg.h"
#include "cfg_internal.h"

#define CFG_GROUPS_MAX 32

/* Distinct groups in table order; returns how many. */
static size_t cfg_groups(const cfg_prop *props, size_t n, const char *out[CFG_GROUPS_MAX])
{
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        const char *g = props[i].group ? props[i].group : "other";
        bool seen = false;
        for (size_t j = 0; j < ng; j++)
            if (strcmp(out[j], g) == 0)
                seen = true;
        if (!seen && ng < CFG_GROUPS_MAX)
            out[ng++] = g;
    }
    return ng;
}

static bool cfg_in_group(const cfg_prop *p, const char *g)
{
    return strcmp(p->group ? p->group : "other", g) == 0;
}

/* Allowed values or range as text ("" when anything goes). sep joins enum values. */
static tb_code cfg_allowed(const cfg_prop *p, tb_buf *out, const char *quote, const char *sep)
{
    tb_code rc = TB_OK;
    switch (p->type) {
    case CFG_ENUM:
        for (size_t i = 0; p->values && p->values[i] && rc == TB_OK; i++)
            rc = tb_buf_printf(out, "%s%s%s%s", i ? sep : "", quote, p->values[i], quote);
        return rc;
    case CFG_BOOL:
        return tb_buf_printf(out, "%strue%s%s%sfalse%s", quote, quote, sep, quote, quote);
    case CFG_INT:
    case CFG_MS: {
        int64_t min = p->min, max = p->max;
        if (min == 0 && max == 0)
            max = INT64_MAX;
        if (max == INT64_MAX)
            return tb_buf_printf(out, ">= %" PRId64, min);
        return tb_buf_printf(out, "%" PRId64 " .. %" PRId64, min, max);
    }
    case CFG_REGEX:
        return tb_buf_puts(out, "POSIX extended regex");
    case CFG_STRING:
    case CFG_PATH:
        return TB_OK;
    }
    return TB_OK;
}

static const char *cfg_env_hint(const cfg_prop *p, char *buf, size_t len)
{
    size_t i = 0, k = 0;
    static const char pre[] = "TRIBUTARY_";
    for (; pre[k] && i + 1 < len; k++)
        buf[i++] = pre[k];
    for (const char *s = p->name; *s && i + 1 < len; s++) {
        char ch = *s == '.' ? '_' : *s;
        if (ch == '*') {
            const char *tail = "<REST>";
            for (; *tail && i + 1 < len; tail++)
                buf[i++] = *tail;
            continue;
        }
        buf[i++] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A') : ch;
    }
    buf[i] = '\0';
    return buf;
}

tb_code cfg_help_text(tb_buf *out)
{
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    const char *groups[CFG_GROUPS_MAX];
    size_t ng = cfg_groups(props, n, groups);
    tb_buf allowed;
    tb_buf_init(&allowed, 0);
    tb_code rc = tb_buf_puts(out, "Configuration keys. Set them in a properties file (--config FILE, key=value),\n"
                                  "as TRIBUTARY_<KEY> environment variables (dots as underscores, upper case),\n"
                                  "or with --set key=value; later sources override earlier ones.\n"
                                  "Unknown keys are errors. kafka.* keys pass through to librdkafka.\n"
                                  "Relative paths in a file are relative to that file's folder.\n");
    for (size_t g = 0; g < ng && rc == TB_OK; g++) {
        rc = tb_buf_printf(out, "\n[%s]\n", groups[g]);
        for (size_t i = 0; i < n && rc == TB_OK; i++) {
            const cfg_prop *p = &props[i];
            if (!cfg_in_group(p, groups[g]))
                continue;
            tb_buf_reset(&allowed);
            if (cfg_allowed(p, &allowed, "", "|") != TB_OK) {
                rc = TB_ERR_NOMEM;
                break;
            }
            rc = tb_buf_printf(out, "  %s (%s%s%s%s%s%s)\n      %s\n", p->name, cfg_type_name(p->type),
                               allowed.len ? ": " : "", tb_buf_cstr(&allowed), p->def ? ", default " : "",
                               p->def ? p->def : "", p->secret ? ", secret" : "", p->help ? p->help : "");
        }
    }
    size_t nr;
    const cfg_renamed *rn = cfg_renamed_keys(&nr);
    if (rc == TB_OK && nr)
        rc = tb_buf_puts(out, "\n[renamed and retired keys: the old name is still accepted, with a warning]\n");
    for (size_t i = 0; i < nr && rc == TB_OK; i++)
        rc = rn[i].new_name ? tb_buf_printf(out, "  %s -> %s\n", rn[i].old_name, rn[i].new_name)
                            : tb_buf_printf(out, "  %s: ignored; %s\n", rn[i].old_name, rn[i].note);
    tb_buf_free(&allowed);
    return rc;
}

/* A Markdown table cell: '|' escaped, newlines as spaces, '<' and '>'
 * outside `code spans` as entities (else they read as HTML tags). code:
 * whether s starts inside a code span. */
static tb_code cfg_md_cell(tb_buf *out, const char *s, bool code)
{
    for (; s && *s; s++) {
        tb_code rc;
        if (*s == '`')
            code = !code;
        if (*s == '|')
            rc = tb_buf_puts(out, "\\|");
        else if (*s == '\n')
            rc = tb_buf_putc(out, ' ');
        else if (!code && *s == '<')
            rc = tb_buf_puts(out, "&lt;");
        else if (!code && *s == '>')
            rc = tb_buf_puts(out, "&gt;");
        else
            rc = tb_buf_putc(out, *s);
        if (rc != TB_OK)
            return rc;
    }
    return TB_OK;
}

tb_code cfg_help_markdown(tb_buf *out)
{
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    const char *groups[CFG_GROUPS_MAX];
    size_t ng = cfg_groups(props, n, groups);
    tb_buf cell;
    tb_buf_init(&cell, 0);
    char env[256];
    tb_code rc = tb_buf_puts(
        out,
        "# Configuration reference\n"
        "\n"
        "<!-- Generated from config/cfg_props.c by `tributary --help-config --markdown`.\n"
        "     Do not edit: change the property table and regenerate this file. -->\n"
        "\n"
        "tributary reads a properties file (`--config FILE`: one `key=value` per line, `#` or `!`\n"
        "starts a comment line, whitespace around key and value is trimmed, a trailing `\\` continues\n"
        "the line), then `TRIBUTARY_<KEY>` environment variables (the key upper-cased, dots as\n"
        "underscores, e.g. `TRIBUTARY_SOURCE_HOST`), then `--set key=value` options; each later source\n"
        "overrides the earlier ones. Unknown keys are errors that name the file and line (an unknown\n"
        "`TRIBUTARY_*` variable is an error when it is close to a known key, else a warning). Keys ending\n"
        "in `*` are patterns: `kafka.*` keys pass through to librdkafka without the prefix\n"
        "(`TRIBUTARY_KAFKA_BOOTSTRAP_SERVERS` sets `kafka.bootstrap.servers`).\n"
        "\n"
        "Secrets (`source.password` and every key ending in `.password`) are never logged and are\n"
        "shown as `********` in a configuration dump; prefer `source.password.file` or the\n"
        "environment. A pass-through secret can come from a file too: `kafka.sasl.password.file=F`\n"
        "reads F when the configuration is loaded and sets `kafka.sasl.password`.\n"
        "\n"
        "Relative paths: a relative value of a `path` key in a properties file is taken relative to\n"
        "that file's folder, not to the working directory, and so are the relative defaults\n"
        "(`offsets.file`, `cache.path`, hence the status file) once a file is given; so `tributary\n"
        "status --config /etc/tributary/shop.properties` finds the status file from any directory.\n"
        "Paths from `TRIBUTARY_*` variables and `--set` are taken as given (relative to the working\n"
        "directory); `kafka.*` pass-through paths (`kafka.ssl.ca.location`) go to librdkafka as\n"
        "written. Upgrading from a version that took every path relative to the working directory:\n"
        "a connector started from its configuration's folder sees no change; one started elsewhere\n"
        "with relative paths must move its offsets file, status file and cache file next to the\n"
        "configuration (or make those keys absolute) before the first run, or it starts without its\n"
        "stored position.\n");
    for (size_t g = 0; g < ng && rc == TB_OK; g++) {
        rc = tb_buf_printf(out, "\n## %s\n\n| key | type | default | allowed values | description |\n"
                                "|---|---|---|---|---|\n",
                           groups[g]);
        for (size_t i = 0; i < n && rc == TB_OK; i++) {
            const cfg_prop *p = &props[i];
            if (!cfg_in_group(p, groups[g]))
                continue;
            tb_buf_reset(&cell);
            rc = tb_buf_printf(out, "| `%s` | %s | ", p->name, cfg_type_name(p->type));
            if (rc == TB_OK && p->def) {
                rc = tb_buf_putc(out, '`');
                if (rc == TB_OK)
                    rc = cfg_md_cell(out, p->def, true);
                if (rc == TB_OK)
                    rc = tb_buf_putc(out, '`');
            }
            if (rc == TB_OK)
                rc = tb_buf_puts(out, " | ");
            if (rc == TB_OK)
                rc = cfg_allowed(p, &cell, "`", ", ");
            if (rc == TB_OK)
                rc = cfg_md_cell(out, tb_buf_cstr(&cell), false);
            if (rc == TB_OK)
                rc = tb_buf_puts(out, " | ");
            if (rc == TB_OK)
                rc = cfg_md_cell(out, p->help, false);
            if (rc == TB_OK && p->secret)
                rc = tb_buf_puts(out, " Secret: never logged or dumped.");
            if (rc == TB_OK)
                rc = tb_buf_printf(out, " Env: `%s`. |\n", cfg_env_hint(p, env, sizeof(env)));
        }
    }
    size_t nr;
    const cfg_renamed *rn = cfg_renamed_keys(&nr);
    if (rc == TB_OK && nr)
        rc = tb_buf_puts(out, "\n## Renamed and retired keys\n\n"
                              "An old name is still accepted, in a file, the environment or `--set`, with a WARN\n"
                              "that names its replacement; a retired key is accepted and ignored, with a WARN.\n\n"
                              "| old key | now |\n|---|---|\n");
    for (size_t i = 0; i < nr && rc == TB_OK; i++)
        rc = rn[i].new_name ? tb_buf_printf(out, "| `%s` | `%s` |\n", rn[i].old_name, rn[i].new_name)
                            : tb_buf_printf(out, "| `%s` | ignored: %s |\n", rn[i].old_name, rn[i].note);
    tb_buf_free(&cell);
    return rc;
}

/* Text for roff: backslashes as \e, a line's leading '.' or '\'' made literal
 * (\&), '-' as \- (so options and keys copy and paste as typed), `code`
 * spans in bold. */
static tb_code cfg_roff(tb_buf *out, const char *s)
{
    bool bold = false, bol = true;
    tb_code rc = TB_OK;
    for (; s && *s && rc == TB_OK; s++) {
        if (bol && (*s == '.' || *s == '\''))
            rc = tb_buf_puts(out, "\\&");
        bol = false;
        if (rc != TB_OK)
            break;
        if (*s == '`') {
            rc = tb_buf_puts(out, bold ? "\\fR" : "\\fB");
            bold = !bold;
        } else if (*s == '\\')
            rc = tb_buf_puts(out, "\\e");
        else if (*s == '-')
            rc = tb_buf_puts(out, "\\-");
        else if (*s == '\n') {
            rc = tb_buf_putc(out, ' ');
        } else
            rc = tb_buf_putc(out, *s);
    }
    if (rc == TB_OK && bold)
        rc = tb_buf_puts(out, "\\fR");
    return rc;
}

tb_code cfg_help_man(tb_buf *out)
{
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    const char *groups[CFG_GROUPS_MAX];
    size_t ng = cfg_groups(props, n, groups);
    tb_buf allowed;
    tb_buf_init(&allowed, 0);
    char env[256];
    tb_code rc = TB_OK;
    for (size_t g = 0; g < ng && rc == TB_OK; g++) {
        rc = tb_buf_printf(out, ".SS %s\n", groups[g]);
        for (size_t i = 0; i < n && rc == TB_OK; i++) {
            const cfg_prop *p = &props[i];
            if (!cfg_in_group(p, groups[g]))
                continue;
            tb_buf_reset(&allowed);
            if ((rc = cfg_allowed(p, &allowed, "", ", ")) != TB_OK)
                break;
            rc = tb_buf_puts(out, ".TP\n.B ");
            if (rc == TB_OK)
                rc = cfg_roff(out, p->name);
            if (rc == TB_OK)
                rc = tb_buf_printf(out, "\n(%s", cfg_type_name(p->type));
            if (rc == TB_OK && allowed.len) {
                rc = tb_buf_puts(out, ": ");
                if (rc == TB_OK)
                    rc = cfg_roff(out, tb_buf_cstr(&allowed));
            }
            if (rc == TB_OK && p->def) {
                rc = tb_buf_puts(out, "; default ");
                if (rc == TB_OK)
                    rc = cfg_roff(out, p->def);
            }
            if (rc == TB_OK && p->secret)
                rc = tb_buf_puts(out, "; secret");
            if (rc == TB_OK)
                rc = tb_buf_puts(out, ")\n");
            if (rc == TB_OK)
                rc = cfg_roff(out, p->help ? p->help : "");
            if (rc == TB_OK)
                rc = tb_buf_puts(out, " Environment: ");
            if (rc == TB_OK)
                rc = cfg_roff(out, cfg_env_hint(p, env, sizeof env));
            if (rc == TB_OK)
                rc = tb_buf_puts(out, ".\n");
        }
    }
    size_t nr;
    const cfg_renamed *rn = cfg_renamed_keys(&nr);
    if (rc == TB_OK && nr)
        rc = tb_buf_puts(out, ".SS renamed and retired keys\n"
                              "The old name is still accepted, with a warning.\n");
    for (size_t i = 0; i < nr && rc == TB_OK; i++) {
        rc = tb_buf_puts(out, ".TP\n.B ");
        if (rc == TB_OK)
            rc = cfg_roff(out, rn[i].old_name);
        if (rc == TB_OK)
            rc = tb_buf_puts(out, "\n");
        if (rc == TB_OK && rn[i].new_name) {
            rc = tb_buf_puts(out, "now ");
            if (rc == TB_OK)
                rc = cfg_roff(out, rn[i].new_name);
        } else if (rc == TB_OK) {
            rc = tb_buf_puts(out, "ignored; ");
            if (rc == TB_OK)
                rc = cfg_roff(out, rn[i].note);
        }
        if (rc == TB_OK)
            rc = tb_buf_puts(out, "\n");
    }
    tb_buf_free(&allowed);
    return rc;
}
