/* cfg_filter: the captured tables, from tables.include / tables.exclude (see cfg_filter.h). */
#include "cfg_filter.h"

#include <string.h>
#include <strings.h>

#include "tb_buf.h"

tb_code cfg_filter_init(cfg_filter *f, const cfg *c, tb_error *err)
{
    memset(f, 0, sizeof(*f));
    const char *inc = cfg_get_str(c, CFGK_TABLES_INCLUDE);
    const char *exc = cfg_get_str(c, CFGK_TABLES_EXCLUDE);
    if (inc && *inc) {
        if (regcomp(&f->inc, inc, REG_EXTENDED | REG_NOSUB) != 0)
            return tb_error_set(err, TB_ERR_CONFIG, false, "tables.include: bad regex '%s'", inc);
        f->has_inc = true;
    }
    if (exc && *exc) {
        if (regcomp(&f->exc, exc, REG_EXTENDED | REG_NOSUB) != 0) {
            cfg_filter_free(f);
            return tb_error_set(err, TB_ERR_CONFIG, false, "tables.exclude: bad regex '%s'", exc);
        }
        f->has_exc = true;
    }
    return TB_OK;
}

void cfg_filter_free(cfg_filter *f)
{
    if (!f)
        return;
    if (f->has_inc)
        regfree(&f->inc);
    if (f->has_exc)
        regfree(&f->exc);
    f->has_inc = f->has_exc = false;
}

static bool system_schema(const char *db)
{
    static const char *const sys[] = {"mysql", "information_schema", "performance_schema", "sys"};
    for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
        if (strcasecmp(db, sys[i]) == 0)
            return true;
    return false;
}

bool cfg_filter_match(const cfg_filter *f, const char *db, const char *table)
{
    if (system_schema(db) || strcmp(table, CFG_SIGNAL_TABLE) == 0)
        return false;
    tb_buf b;
    tb_buf_init(&b, 0);
    bool ok = tb_buf_printf(&b, "%s.%s", db, table) == TB_OK;
    if (ok && f->has_inc && regexec(&f->inc, tb_buf_cstr(&b), 0, NULL, 0) != 0)
        ok = false;
    if (ok && f->has_exc && regexec(&f->exc, tb_buf_cstr(&b), 0, NULL, 0) == 0)
        ok = false;
    tb_buf_free(&b);
    return ok;
}
