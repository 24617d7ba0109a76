/*
 * binlog_query: the one classifier of the statement text of QUERY events
 * (binlog.h, STATEMENTS): what kind of statement it is and which tables it
 * changes.
 *
 * LEXING. Whitespace; comments `/ * ... * /`, `-- ` to the end of the line
 * and `#` to the end of the line are skipped. Executable comments
 * (`/ *!50001 ... * /`, `/ *M!100001 ... * /`) are code: their opening (with
 * the version digits) and their closing are skipped, their content is read.
 * Words: letters, digits, `_`, `$` and every byte >= 0x80 (UTF-8 names).
 * Identifiers quoted with backquotes (a doubled backquote is one) or with
 * double quotes (ANSI_QUOTES) are names wherever a name is expected; single
 * quoted strings (backslash escapes and doubled quotes) are skipped.
 *
 * NAMES. `name` or `db.name`; without a database the Query event's default
 * database (the session's USE) applies. Names keep the case they are written
 * in, as the server keeps them (lower_case_table_names=0).
 *
 * TARGETS. INSERT/REPLACE: the table inserted into. UPDATE and DELETE: every
 * table of the table references (a superset of the changed ones for
 * multi-table forms, which is the safe side). LOAD DATA/XML: the INTO table.
 * TRUNCATE, DROP TABLE, OPTIMIZE/REPAIR/ANALYZE/CHECK TABLE: each named
 * table. RENAME TABLE and ALTER TABLE ... RENAME: (old, new) pairs.
 */
#include "binlog_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { QT_END, QT_WORD, QT_QID, QT_STR, QT_PUNCT };

typedef struct qtok {
    int kind;
    const char *s;   /* QT_WORD: the word; QT_QID: inside the quotes (escapes not undone) */
    size_t n;
    char quote;      /* QT_QID: '`' or '"' */
} qtok;

typedef struct qlex {
    const char *p, *end;
    int depth;       /* parentheses */
    qtok back;       /* one token pushed back */
    bool have_back;
} qlex;

static bool word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
           c >= 0x80;
}

static void skip_space(qlex *lx)
{
    const char *p = lx->p, *end = lx->p < lx->end ? lx->end : lx->p;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == ';') {
            p++;
        } else if (c == '#' || (c == '-' && end - p >= 2 && p[1] == '-' &&
                                (end - p == 2 || (unsigned char)p[2] <= ' '))) {
            while (p < end && *p != '\n')
                p++;
        } else if (c == '/' && end - p >= 2 && p[1] == '*') {
            if (end - p >= 3 && p[2] == '!') { /* executable: its content is code */
                p += 3;
                while (p < end && *p >= '0' && *p <= '9')
                    p++;
            } else if (end - p >= 4 && p[2] == 'M' && p[3] == '!') {
                p += 4;
                while (p < end && *p >= '0' && *p <= '9')
                    p++;
            } else {
                p += 2;
                while (p < end && !(end - p >= 2 && p[0] == '*' && p[1] == '/'))
                    p++;
                p = end - p >= 2 ? p + 2 : end;
            }
        } else if (c == '*' && end - p >= 2 && p[1] == '/') { /* the end of an executable comment */
            p += 2;
        } else {
            break;
        }
    }
    lx->p = p;
}

static qtok next(qlex *lx)
{
    if (lx->have_back) {
        lx->have_back = false;
        return lx->back;
    }
    skip_space(lx);
    qtok t = {QT_END, lx->p, 0, 0};
    if (lx->p >= lx->end)
        return t;
    const char *p = lx->p;
    unsigned char c = (unsigned char)*p;
    if (word_byte(c)) {
        while (p < lx->end && word_byte((unsigned char)*p))
            p++;
        t.kind = QT_WORD;
        t.n = (size_t)(p - lx->p);
    } else if (c == '`' || c == '"' || c == '\'') {
        p++;
        t.s = p;
        for (;;) {
            if (p >= lx->end)
                break;
            if (c == '\'' && *p == '\\' && p + 1 < lx->end) {
                p += 2;
                continue;
            }
            if ((unsigned char)*p == c) {
                if (p + 1 < lx->end && (unsigned char)p[1] == c) { /* doubled: one quote */
                    p += 2;
                    continue;
                }
                break;
            }
            p++;
        }
        t.n = (size_t)(p - t.s);
        t.kind = c == '\'' ? QT_STR : QT_QID;
        t.quote = (char)c;
        if (p < lx->end)
            p++;
    } else {
        t.kind = QT_PUNCT;
        t.n = 1;
        p++;
        if (c == '(')
            lx->depth++;
        else if (c == ')' && lx->depth > 0)
            lx->depth--;
    }
    lx->p = p;
    return t;
}

static void push_back(qlex *lx, qtok t)
{
    lx->back = t;
    lx->have_back = true;
}

static bool is_word(qtok t, const char *w)
{
    return t.kind == QT_WORD && strlen(w) == t.n && strncasecmp(t.s, w, t.n) == 0;
}

static bool is_punct(qtok t, char c)
{
    return t.kind == QT_PUNCT && t.s[0] == c;
}

/* Consume the next token when it is word w. */
static bool accept(qlex *lx, const char *w)
{
    qtok t = next(lx);
    if (is_word(t, w))
        return true;
    push_back(lx, t);
    return false;
}

/* The name a token stands for, quotes undone, as a new string. */
static char *tok_name(qtok t)
{
    char *s = malloc(t.n + 1);
    if (!s)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < t.n; i++) {
        s[o++] = t.s[i];
        if (t.kind == QT_QID && t.s[i] == t.quote && i + 1 < t.n && t.s[i + 1] == t.quote)
            i++;
    }
    s[o] = '\0';
    return s;
}

static bool name_tok(qtok t)
{
    return t.kind == QT_WORD || t.kind == QT_QID;
}

static tb_code add_table(binlog_stmt *st, char *db, char *table)
{
    if (!db || !table)
        goto nomem;
    if (st->ntables == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 4;
        binlog_stmt_table *nt = realloc(st->tables, cap * sizeof(*nt));
        if (!nt)
            goto nomem;
        st->tables = nt;
        st->cap = cap;
    }
    st->tables[st->ntables].db = db;
    st->tables[st->ntables].table = table;
    st->ntables++;
    return TB_OK;
nomem:
    free(db);
    free(table);
    return TB_ERR_NOMEM;
}

/* `name` or `db.name` starting with token first (a name token). */
static tb_code read_table(qlex *lx, qtok first, binlog_stmt *st, const char *defdb, size_t deflen)
{
    qtok dot = next(lx);
    if (is_punct(dot, '.')) {
        qtok second = next(lx);
        if (name_tok(second))
            return add_table(st, tok_name(first), tok_name(second));
        push_back(lx, second);
        return TB_OK;
    }
    push_back(lx, dot);
    return add_table(st, strndup(defdb, deflen), tok_name(first));
}

/* A comma-separated list of names (TRUNCATE, DROP TABLE, OPTIMIZE ...),
 * skipping WAIT n / NOWAIT / RESTRICT / CASCADE. */
static tb_code read_name_list(qlex *lx, binlog_stmt *st, const char *defdb, size_t deflen)
{
    for (;;) {
        qtok t = next(lx);
        if (!name_tok(t))
            return TB_OK;
        tb_code rc = read_table(lx, t, st, defdb, deflen);
        if (rc != TB_OK)
            return rc;
        t = next(lx);
        if (is_word(t, "WAIT"))
            t = next(lx), t = next(lx);
        else if (is_word(t, "NOWAIT"))
            t = next(lx);
        if (!is_punct(t, ','))
            return TB_OK;
    }
}

static bool word_in(qtok t, const char *const *words)
{
    for (size_t i = 0; words[i]; i++)
        if (is_word(t, words[i]))
            return true;
    return false;
}

/* Table references of UPDATE / DELETE up to a stop word at depth 0: every
 * name in a table position (the first, after a comma, a JOIN or an opening
 * parenthesis, and after FROM inside a subquery). Returns the stop word
 * (QT_END at the end). */
static tb_code read_refs(qlex *lx, binlog_stmt *st, const char *defdb, size_t deflen, qtok *stop)
{
    static const char *const stops[] = {"SET", "WHERE", "ORDER", "LIMIT", "RETURNING", "USING", "FROM", NULL};
    static const char *const joins[] = {"JOIN", "STRAIGHT_JOIN", NULL};
    static const char *const not_tables[] = {"SELECT", "LATERAL", "WITH", "VALUES", NULL};
    int base = lx->depth;
    bool expect = true;
    for (;;) {
        qtok t = next(lx);
        if (t.kind == QT_END || (lx->depth == base && word_in(t, stops))) {
            *stop = t;
            return TB_OK;
        }
        if (expect && name_tok(t) && !word_in(t, not_tables) && !word_in(t, joins)) {
            tb_code rc = read_table(lx, t, st, defdb, deflen);
            if (rc != TB_OK)
                return rc;
            expect = false;
            continue;
        }
        expect = is_punct(t, ',') || is_punct(t, '(') || word_in(t, joins) ||
                 (lx->depth > base && is_word(t, "FROM"));
    }
}

static tb_code classify_delete(qlex *lx, binlog_stmt *st, const char *defdb, size_t deflen)
{
    while (accept(lx, "LOW_PRIORITY") || accept(lx, "QUICK") || accept(lx, "IGNORE"))
        ;
    accept(lx, "FROM");
    for (;;) {
        qtok stop;
        tb_code rc = read_refs(lx, st, defdb, deflen, &stop);
        if (rc != TB_OK || !(is_word(stop, "FROM") || is_word(stop, "USING")))
            return rc;
    }
}

static tb_code classify_alter(qlex *lx, binlog_stmt *st, const char *defdb, size_t deflen)
{
    while (accept(lx, "ONLINE") || accept(lx, "IGNORE"))
        ;
    if (!accept(lx, "TABLE")) {
        st->kind = BINLOG_STMT_OTHER; /* ALTER DATABASE, USER, VIEW, SEQUENCE ... */
        return TB_OK;
    }
    if (accept(lx, "IF"))
        accept(lx, "EXISTS");
    qtok t = next(lx);
    if (!name_tok(t))
        return TB_OK;
    tb_code rc = read_table(lx, t, st, defdb, deflen);
    if (rc != TB_OK)
        return rc;
    /* specifications, comma separated: find RENAME [TO|AS] name at depth 0,
     * and those that can change the values of existing rows */
    static const char *const not_columns[] = {"INDEX", "KEY", "UNIQUE", "PRIMARY", "CONSTRAINT", "FOREIGN",
                                              "FULLTEXT", "SPATIAL", "PARTITION", "CHECK", "PERIOD", "SYSTEM",
                                              "VECTOR", "IF", NULL};
    bool other = false, renamed = false, spec_start = true;
    for (;;) {
        t = next(lx);
        if (t.kind == QT_END)
            break;
        bool at_start = spec_start && lx->depth == 0;
        spec_start = lx->depth == 0 && is_punct(t, ',');
        if (at_start && (is_word(t, "TRUNCATE") || is_word(t, "EXCHANGE") || is_word(t, "CONVERT"))) {
            /* partitions whose rows go, or come from another table: TRUNCATE PARTITION, EXCHANGE
             * PARTITION p WITH TABLE t2 (t2's rows change too), CONVERT PARTITION p TO TABLE t2
             * (t2 made with them), CONVERT TABLE t2 TO PARTITION (t2's rows come in, t2 goes);
             * CONVERT TO CHARACTER SET gives rows new values */
            qtok u = next(lx);
            bool exchange = is_word(t, "EXCHANGE") && is_word(u, "PARTITION");
            bool convert_table = is_word(t, "CONVERT") && is_word(u, "TABLE");
            st->fills_rows |= is_word(u, "PARTITION") || is_word(u, "TO") || convert_table;
            if (exchange || (is_word(t, "CONVERT") && is_word(u, "PARTITION"))) {
                /* the partition's name, then WITH TABLE / TO TABLE and the other table */
                qtok w = next(lx);
                while (w.kind != QT_END && !(lx->depth == 0 && is_word(w, "TABLE")) && !is_punct(w, ','))
                    w = next(lx);
                if (is_word(w, "TABLE"))
                    u = w, convert_table = true;
                else
                    push_back(lx, w);
            }
            if (convert_table) {
                qtok name = next(lx);
                if (name_tok(name) && (rc = read_table(lx, name, st, defdb, deflen)) != TB_OK)
                    return rc;
                if (!name_tok(name))
                    push_back(lx, name);
            } else if (!is_word(u, "PARTITION") && !is_word(u, "TO"))
                push_back(lx, u);
            other = true;
            continue;
        } else if (at_start && (is_word(t, "MODIFY") || is_word(t, "CHANGE") || is_word(t, "IMPORT"))) {
            st->fills_rows = true; /* IMPORT [PARTITION p] TABLESPACE: the rows of a file */
        } else if (at_start && (is_word(t, "ADD") || is_word(t, "DROP"))) {
            qtok u = next(lx);
            if (is_word(t, "ADD") && is_word(u, "CONSTRAINT")) { /* ADD CONSTRAINT [name] PRIMARY KEY */
                qtok sym = next(lx);
                if (!is_word(sym, "PRIMARY") && name_tok(sym)) {
                    qtok w = next(lx);
                    if (is_word(w, "PRIMARY"))
                        sym = w;
                    else
                        push_back(lx, w);
                }
                st->changes_key |= is_word(sym, "PRIMARY");
                other = true;
                continue;
            }
            if (is_word(u, "PRIMARY"))
                st->changes_key = true;
            else if (is_word(t, "DROP") && is_word(u, "PARTITION")) /* its rows go with it */
                st->fills_rows = true;
            else if (is_word(u, "COLUMN") || (name_tok(u) && !word_in(u, not_columns)) || is_punct(u, '('))
                st->fills_rows = true;
            else if (is_word(u, "IF")) /* ADD COLUMN IF NOT EXISTS is written with COLUMN; DROP IF EXISTS c */
                st->fills_rows = is_word(t, "DROP");
            push_back(lx, u);
        }
        if (lx->depth == 0 && is_word(t, "RENAME")) {
            qtok u = next(lx);
            if (is_word(u, "TO") || is_word(u, "AS"))
                u = next(lx);
            if (!(is_word(u, "COLUMN") || is_word(u, "INDEX") || is_word(u, "KEY")) && name_tok(u) && !renamed) {
                if ((rc = read_table(lx, u, st, defdb, deflen)) != TB_OK)
                    return rc;
                renamed = true;
                continue;
            }
            other = true;
            continue;
        }
        if (!is_punct(t, ','))
            other = true;
    }
    if (renamed) {
        st->kind = BINLOG_STMT_RENAME;
        st->alters = other;
    }
    return TB_OK;
}

static tb_code classify_rename(qlex *lx, binlog_stmt *st, const char *defdb, size_t deflen)
{
    if (!accept(lx, "TABLE") && !accept(lx, "TABLES")) {
        st->kind = BINLOG_STMT_OTHER; /* RENAME USER */
        return TB_OK;
    }
    if (accept(lx, "IF"))
        accept(lx, "EXISTS");
    for (;;) {
        size_t pair = st->ntables; /* the pair's old name goes here, its new name after it */
        qtok t = next(lx);
        if (!name_tok(t))
            return TB_OK;
        tb_code rc = read_table(lx, t, st, defdb, deflen);
        if (rc == TB_OK && st->ntables == pair + 1) {
            t = next(lx);
            if (is_word(t, "WAIT"))
                t = next(lx), t = next(lx);
            else if (is_word(t, "NOWAIT"))
                t = next(lx);
            qtok u = is_word(t, "TO") ? next(lx) : t;
            if (name_tok(u))
                rc = read_table(lx, u, st, defdb, deflen);
        }
        if (rc != TB_OK || st->ntables != pair + 2) { /* a name missing ("db." alone, no new name): no pair */
            while (st->ntables > pair) {
                st->ntables--;
                free(st->tables[st->ntables].db);
                free(st->tables[st->ntables].table);
            }
            return rc;
        }
        if (!is_punct(next(lx), ','))
            return TB_OK;
    }
}

static void stmt_clear(binlog_stmt *st)
{
    for (size_t i = 0; i < st->ntables; i++) {
        free(st->tables[i].db);
        free(st->tables[i].table);
    }
    binlog_stmt_table *keep = st->tables;
    size_t cap = st->cap;
    memset(st, 0, sizeof(*st));
    st->tables = keep;
    st->cap = cap;
}

void binlog_stmt_free(binlog_stmt *st)
{
    if (!st)
        return;
    stmt_clear(st);
    free(st->tables);
    memset(st, 0, sizeof(*st));
}

/* Whether q[0..n) has one of the words that name a foreign key or a constraint (foreign_keys). */
static bool mentions_fk(const char *q, size_t n)
{
    static const char *const words[] = {"FOREIGN", "REFERENCES", "CONSTRAINT", NULL};
    qlex lx = {q, q + n, 0, {0}, false};
    for (qtok t = next(&lx); t.kind != QT_END; t = next(&lx))
        if (word_in(t, words))
            return true;
    return false;
}

static tb_code classify(binlog_stmt *st, const char *q, size_t n, const char *defdb, size_t deflen);

tb_code binlog_stmt_classify(binlog_stmt *st, const char *q, size_t n, const char *defdb, size_t deflen)
{
    tb_code rc = classify(st, q, n, defdb, deflen);
    if (rc == TB_OK && (st->kind == BINLOG_STMT_CREATE || st->kind == BINLOG_STMT_ALTER ||
                        (st->kind == BINLOG_STMT_RENAME && st->alters)))
        st->foreign_keys = mentions_fk(q, n);
    return rc;
}

static tb_code classify(binlog_stmt *st, const char *q, size_t n, const char *defdb, size_t deflen)
{
    stmt_clear(st);
    st->verb = "";
    if (!defdb)
        defdb = "", deflen = 0;
    qlex lx = {q, q + n, 0, {0}, false};
    qtok t = next(&lx);
    if (is_word(t, "WITH")) { /* WITH cte AS (...) [, ...] UPDATE|DELETE|INSERT|REPLACE */
        static const char *const dml[] = {"INSERT", "REPLACE", "UPDATE", "DELETE", "SELECT", NULL};
        do
            t = next(&lx);
        while (t.kind != QT_END && !(lx.depth == 0 && word_in(t, dml)));
    }
    if (is_word(t, "BEGIN")) {
        st->kind = BINLOG_STMT_BEGIN, st->verb = "BEGIN";
    } else if (is_word(t, "COMMIT")) {
        st->kind = BINLOG_STMT_COMMIT, st->verb = "COMMIT";
    } else if (is_word(t, "ROLLBACK")) {
        accept(&lx, "WORK");
        bool to = accept(&lx, "TO");
        st->kind = to ? BINLOG_STMT_TX_OTHER : BINLOG_STMT_COMMIT, st->verb = to ? "ROLLBACK TO" : "ROLLBACK";
    } else if (is_word(t, "SAVEPOINT") || is_word(t, "RELEASE")) {
        st->kind = BINLOG_STMT_TX_OTHER, st->verb = "SAVEPOINT";
    } else if (is_word(t, "XA")) {
        qtok u = next(&lx);
        if (is_word(u, "START") || is_word(u, "BEGIN"))
            st->kind = BINLOG_STMT_BEGIN, st->verb = "XA START";
        else if (is_word(u, "END"))
            st->kind = BINLOG_STMT_TX_OTHER, st->verb = "XA END";
        else if (is_word(u, "PREPARE"))
            st->kind = BINLOG_STMT_COMMIT, st->verb = "XA PREPARE";
        else if (is_word(u, "COMMIT"))
            st->kind = BINLOG_STMT_XA_COMMIT, st->verb = "XA COMMIT";
        else if (is_word(u, "ROLLBACK"))
            st->kind = BINLOG_STMT_XA_ROLLBACK, st->verb = "XA ROLLBACK";
        else
            st->kind = BINLOG_STMT_OTHER, st->verb = "XA";
    } else if (is_word(t, "INSERT") || is_word(t, "REPLACE")) {
        st->kind = BINLOG_STMT_DML, st->verb = is_word(t, "INSERT") ? "INSERT" : "REPLACE";
        while (accept(&lx, "LOW_PRIORITY") || accept(&lx, "DELAYED") || accept(&lx, "HIGH_PRIORITY") ||
               accept(&lx, "IGNORE"))
            ;
        accept(&lx, "INTO");
        qtok u = next(&lx);
        if (name_tok(u))
            return read_table(&lx, u, st, defdb, deflen);
    } else if (is_word(t, "UPDATE")) {
        st->kind = BINLOG_STMT_DML, st->verb = "UPDATE";
        while (accept(&lx, "LOW_PRIORITY") || accept(&lx, "IGNORE"))
            ;
        qtok stop;
        return read_refs(&lx, st, defdb, deflen, &stop);
    } else if (is_word(t, "DELETE")) {
        st->kind = BINLOG_STMT_DML, st->verb = "DELETE";
        return classify_delete(&lx, st, defdb, deflen);
    } else if (is_word(t, "LOAD")) {
        st->kind = BINLOG_STMT_DML, st->verb = "LOAD DATA";
        for (;;) { /* ... INFILE 'file' [REPLACE | IGNORE] INTO TABLE name */
            qtok u = next(&lx);
            if (u.kind == QT_END)
                return TB_OK;
            if (is_word(u, "INTO")) {
                accept(&lx, "TABLE");
                u = next(&lx);
                return name_tok(u) ? read_table(&lx, u, st, defdb, deflen) : TB_OK;
            }
        }
    } else if (is_word(t, "TRUNCATE")) {
        st->kind = BINLOG_STMT_TRUNCATE, st->verb = "TRUNCATE TABLE";
        accept(&lx, "TABLE");
        return read_name_list(&lx, st, defdb, deflen);
    } else if (is_word(t, "DROP")) {
        st->temporary = accept(&lx, "TEMPORARY");
        if (accept(&lx, "TABLE") || accept(&lx, "TABLES")) {
            st->kind = BINLOG_STMT_DROP, st->verb = "DROP TABLE";
            if (accept(&lx, "IF"))
                accept(&lx, "EXISTS");
            return read_name_list(&lx, st, defdb, deflen);
        }
        if (accept(&lx, "DATABASE") || accept(&lx, "SCHEMA")) {
            st->kind = BINLOG_STMT_DROP_DATABASE, st->verb = "DROP DATABASE";
            if (accept(&lx, "IF"))
                accept(&lx, "EXISTS");
            qtok u = next(&lx);
            if (name_tok(u))
                return add_table(st, tok_name(u), strdup(""));
            return TB_OK;
        }
        st->kind = BINLOG_STMT_OTHER, st->verb = "DROP";
    } else if (is_word(t, "RENAME")) {
        st->kind = BINLOG_STMT_RENAME, st->verb = "RENAME TABLE";
        return classify_rename(&lx, st, defdb, deflen);
    } else if (is_word(t, "ALTER")) {
        st->kind = BINLOG_STMT_ALTER, st->verb = "ALTER TABLE";
        return classify_alter(&lx, st, defdb, deflen);
    } else if (is_word(t, "CREATE")) {
        st->verb = "CREATE";
        if (accept(&lx, "OR"))
            st->or_replace = accept(&lx, "REPLACE");
        st->temporary = accept(&lx, "TEMPORARY");
        if (accept(&lx, "TABLE")) {
            st->kind = BINLOG_STMT_CREATE, st->verb = "CREATE TABLE";
            if (accept(&lx, "IF")) {
                accept(&lx, "NOT");
                accept(&lx, "EXISTS");
            }
            qtok u = next(&lx);
            if (name_tok(u))
                return read_table(&lx, u, st, defdb, deflen);
        }
    } else if (is_word(t, "OPTIMIZE") || is_word(t, "REPAIR") || is_word(t, "ANALYZE") || is_word(t, "CHECK")) {
        st->kind = BINLOG_STMT_MAINT;
        st->verb = is_word(t, "OPTIMIZE") ? "OPTIMIZE TABLE" : is_word(t, "REPAIR") ? "REPAIR TABLE"
                   : is_word(t, "ANALYZE") ? "ANALYZE TABLE" : "CHECK TABLE";
        while (accept(&lx, "NO_WRITE_TO_BINLOG") || accept(&lx, "LOCAL"))
            ;
        if (!accept(&lx, "TABLE") && !accept(&lx, "TABLES")) {
            st->kind = BINLOG_STMT_OTHER;
            return TB_OK;
        }
        return read_name_list(&lx, st, defdb, deflen);
    }
    return TB_OK;
}
