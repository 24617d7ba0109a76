/*
 * mymeta_describe against the testenv MariaDB: the one reader of a table's description, which
 * the snapshot and the binlog decoder both use. Each case declares a table and checks the
 * descriptor column by column against what the declaration says (the schema record's rules,
 * DESIGN 4): the source type without integer display widths, YEAR as "year", lengths in
 * characters, TEXT/BLOB byte limits, defaults, ENUM labels with quotes and backslashes,
 * FLOAT(M,D) and UUID kept as declared, a system-versioned table's period.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "evt.h"
#include "mymeta.h"

static const char *env(const char *k)
{
    const char *v = getenv(k);
    cr_assert(v && *v, "%s is not set: start the servers with scripts/testenv up", k);
    return v;
}

static MYSQL *db_connect(void)
{
    MYSQL *my = mysql_init(NULL);
    cr_assert_not_null(my);
    if (!mysql_real_connect(my, env("TRIBUTARY_TEST_MYSQL_HOST"), env("TRIBUTARY_TEST_MYSQL_USER"),
                            env("TRIBUTARY_TEST_MYSQL_PASSWORD"), NULL, (unsigned)atoi(env("TRIBUTARY_TEST_MYSQL_PORT")),
                            NULL, 0))
        cr_assert_fail("connect: %s", mysql_error(my));
    cr_assert_eq(mysql_set_character_set(my, "utf8mb4"), 0);
    return my;
}

static void sql(MYSQL *my, const char *q)
{
    cr_assert_eq(mysql_query(my, q), 0, "%s: %s", q, mysql_error(my));
}

static const evt_column *col(const evt_table *t, const char *name)
{
    long i = evt_table_find(t, name);
    cr_assert_geq(i, 0, "no column %s", name);
    return evt_table_column(t, (size_t)i);
}

static evt_table *describe(MYSQL *my, const char *db, const char *table)
{
    evt_table *t = NULL;
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(mymeta_describe(my, db, table, &t, &err), TB_OK, "%s", err.msg);
    cr_assert_not_null(t);
    return t;
}

#define EXPECT_COL(c, ty, stype, len, prec, sc, cs)                                                                \
    do {                                                                                                           \
        cr_expect_eq((c)->type, (ty), "%s: type %s", (c)->name, evt_type_name((c)->type));                         \
        cr_expect_str_eq((c)->source_type, (stype), "%s", (c)->name);                                              \
        cr_expect_eq((c)->length, (uint32_t)(len), "%s: length %u", (c)->name, (c)->length);                       \
        cr_expect_eq((c)->precision, (uint32_t)(prec), "%s: precision %u", (c)->name, (c)->precision);             \
        cr_expect_eq((c)->scale, (uint32_t)(sc), "%s: scale %u", (c)->name, (c)->scale);                           \
        if (cs)                                                                                                    \
            cr_expect_str_eq((c)->charset ? (c)->charset : "(null)", (const char *)(cs), "%s", (c)->name);         \
        else                                                                                                       \
            cr_expect_null((c)->charset, "%s: charset %s", (c)->name, (c)->charset);                               \
    } while (0)

Test(mymeta, types_source_types_and_details, .timeout = 60)
{
    MYSQL *my = db_connect();
    sql(my, "DROP DATABASE IF EXISTS tb_mymeta");
    sql(my, "CREATE DATABASE tb_mymeta");
    sql(my, "CREATE TABLE tb_mymeta.t (a INT(11) UNSIGNED NOT NULL, b BIGINT, y YEAR, f FLOAT(7,3), "
            "d DECIMAL(10,2) DEFAULT 1.5, u UUID, v VARCHAR(20) CHARACTER SET utf8mb4 DEFAULT 'it''s', "
            "bl MEDIUMBLOB, tx TEXT CHARACTER SET latin1, bt BIT(5), ts DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3), "
            "vb VARBINARY(8), g POINT, e ENUM('x','y''s','a\\\\b') NOT NULL DEFAULT 'y''s', "
            "PRIMARY KEY (b, a))");
    evt_table *t = describe(my, "tb_mymeta", "t");
    cr_assert_eq(evt_table_ncols(t), 14);
    cr_expect(evt_table_names_known(t));
    cr_expect_eq(evt_table_row_end(t), -1);
    cr_assert_eq(evt_table_npk(t), 2);
    cr_expect_eq(evt_table_pk_col(t, 0), 1);
    cr_expect_eq(evt_table_pk_col(t, 1), 0);

    const evt_column *c = col(t, "a");
    EXPECT_COL(c, EVT_T_INT, "int unsigned", 0, 0, 0, NULL);
    cr_expect(c->is_unsigned);
    cr_expect_not(c->nullable);
    EXPECT_COL(col(t, "b"), EVT_T_BIGINT, "bigint", 0, 0, 0, NULL);
    cr_expect_not(col(t, "b")->is_unsigned);
    EXPECT_COL(col(t, "y"), EVT_T_YEAR, "year", 0, 0, 0, NULL);
    EXPECT_COL(col(t, "f"), EVT_T_FLOAT, "float(7,3)", 0, 0, 0, NULL);
    EXPECT_COL(col(t, "d"), EVT_T_DECIMAL, "decimal(10,2)", 0, 10, 2, NULL);
    cr_expect_str_eq(col(t, "d")->default_text, "1.50");
    cr_expect_not(col(t, "d")->default_expr);
    EXPECT_COL(col(t, "u"), EVT_T_CHAR, "uuid", 0, 0, 0, NULL);
    EXPECT_COL(col(t, "v"), EVT_T_VARCHAR, "varchar(20)", 20, 0, 0, "utf8mb4");
    cr_expect_str_eq(col(t, "v")->default_text, "it's");
    cr_expect(col(t, "v")->nullable);
    EXPECT_COL(col(t, "bl"), EVT_T_BLOB, "mediumblob", 16777215u, 0, 0, "binary");
    EXPECT_COL(col(t, "tx"), EVT_T_TEXT, "text", 65535u, 0, 0, "latin1");
    EXPECT_COL(col(t, "bt"), EVT_T_BIT, "bit(5)", 5, 0, 0, NULL);
    EXPECT_COL(col(t, "ts"), EVT_T_DATETIME, "datetime(3)", 0, 0, 3, NULL);
    cr_expect_str_eq(col(t, "ts")->default_text, "current_timestamp(3)");
    cr_expect(col(t, "ts")->default_expr);
    EXPECT_COL(col(t, "vb"), EVT_T_VARBINARY, "varbinary(8)", 8, 0, 0, "binary");
    EXPECT_COL(col(t, "g"), EVT_T_GEOMETRY, "point", 0, 0, 0, "binary");
    c = col(t, "e");
    cr_expect_eq(c->type, EVT_T_ENUM);
    cr_assert_eq(c->nlabels, 3);
    cr_expect_str_eq(c->labels[0], "x");
    cr_expect_str_eq(c->labels[1], "y's");
    cr_expect_str_eq(c->labels[2], "a\\b");
    cr_expect_str_eq(c->default_text, "y's");
    cr_expect_null(col(t, "b")->default_text);
    evt_table_unref(t);
    mysql_close(my);
}

/* WITH SYSTEM VERSIONING alone: the invisible row_start and row_end, which COLUMNS does not
 * list, are added last (TIMESTAMP(6) NOT NULL), row_end is the period's end and not in the key. */
Test(mymeta, implicit_period, .timeout = 60)
{
    MYSQL *my = db_connect();
    sql(my, "DROP DATABASE IF EXISTS tb_mymeta_iv");
    sql(my, "CREATE DATABASE tb_mymeta_iv");
    sql(my, "CREATE TABLE tb_mymeta_iv.t (id INT PRIMARY KEY, s VARCHAR(5)) WITH SYSTEM VERSIONING");
    evt_table *t = describe(my, "tb_mymeta_iv", "t");
    cr_assert_eq(evt_table_ncols(t), 4);
    cr_expect_str_eq(evt_table_column(t, 2)->name, "row_start");
    cr_expect_str_eq(evt_table_column(t, 3)->name, "row_end");
    for (size_t i = 2; i < 4; i++) {
        const evt_column *c = evt_table_column(t, i);
        EXPECT_COL(c, EVT_T_TIMESTAMP, "timestamp(6)", 0, 0, 6, NULL);
        cr_expect_not(c->nullable);
        cr_expect_null(c->default_text);
    }
    cr_expect_eq(evt_table_row_end(t), 3);
    cr_assert_eq(evt_table_npk(t), 1);
    cr_expect_eq(evt_table_pk_col(t, 0), 0);
    evt_table_unref(t);
    mysql_close(my);
}

/* An explicit period: its columns are the declared ones, its end leaves the key. */
Test(mymeta, explicit_period, .timeout = 60)
{
    MYSQL *my = db_connect();
    sql(my, "DROP DATABASE IF EXISTS tb_mymeta_ev");
    sql(my, "CREATE DATABASE tb_mymeta_ev");
    sql(my, "CREATE TABLE tb_mymeta_ev.t (id INT, s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, "
            "e TIMESTAMP(6) GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME(s, e), PRIMARY KEY (id)) "
            "WITH SYSTEM VERSIONING");
    evt_table *t = describe(my, "tb_mymeta_ev", "t");
    cr_assert_eq(evt_table_ncols(t), 3);
    cr_expect_eq(evt_table_row_end(t), 2);
    cr_assert_eq(evt_table_npk(t), 1);
    cr_expect_eq(evt_table_pk_col(t, 0), 0);
    evt_table_unref(t);
    mysql_close(my);
}

/* A table without a primary key has an empty key (the caller decides); one that does not exist
 * is TB_ERR_NOT_FOUND, not retriable. */
Test(mymeta, keyless_and_missing, .timeout = 60)
{
    MYSQL *my = db_connect();
    sql(my, "DROP DATABASE IF EXISTS tb_mymeta_k");
    sql(my, "CREATE DATABASE tb_mymeta_k");
    sql(my, "CREATE TABLE tb_mymeta_k.nokey (a INT, b INT)");
    evt_table *t = describe(my, "tb_mymeta_k", "nokey");
    cr_expect_eq(evt_table_ncols(t), 2);
    cr_expect_eq(evt_table_npk(t), 0);
    evt_table_unref(t);
    t = NULL;
    tb_error err;
    tb_error_clear(&err);
    cr_expect_eq(mymeta_describe(my, "tb_mymeta_k", "absent", &t, &err), TB_ERR_NOT_FOUND);
    cr_expect_null(t);
    cr_expect_not(err.retriable);
    mysql_close(my);
}
