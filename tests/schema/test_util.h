/* Shared helpers for the schema tests (header-only, static). */
#ifndef TEST_SCHEMA_UTIL_H
#define TEST_SCHEMA_UTIL_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "evt.h"
#include "evt_json.h"

/* Value of one column rendered as its JSON text (malloc'd). */
static inline char *tu_value_json(evt_type type, const evt_value *v)
{
    evt_table *t = evt_table_new("db", "t", 1);
    cr_assert_not_null(t);
    cr_assert_eq(evt_table_set_column(t, 0, "v", type, NULL, true, false), TB_OK);
    evt_table_seal(t);
    evt_event *e = evt_event_new(EVT_OP_CREATE, t);
    evt_table_unref(t);
    evt_set_value(e, EVT_AFTER, 0, v);
    cr_assert_null(evt_event_error(e), "builder: %s", evt_event_error(e)->msg);
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_error err;
    tb_code rc = evt_json_row(e, EVT_AFTER, &b, &err);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    evt_event_free(e);
    char *row = tb_buf_detach(&b, NULL);
    /* {"v":X} -> X */
    size_t n = strlen(row);
    cr_assert(n > 6 && strncmp(row, "{\"v\":", 5) == 0 && row[n - 1] == '}', "row %s", row);
    memmove(row, row + 5, n - 6);
    row[n - 6] = '\0';
    return row;
}

#endif
