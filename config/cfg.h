/*
 * cfg: tributary's configuration (DESIGN.md 10).
 *
 * One property table (cfg_props.c) gives every key its type, default, range
 * or allowed values, help text and secret flag. Validation, `tributary
 * --help-config` and docs/configuration.md are all generated from it.
 *
 * Sources, later ones override earlier ones:
 *   1. defaults from the table
 *   2. a properties file (`key=value`, `#`/`!` comments, blank lines)
 *   3. TRIBUTARY_<KEY> environment variables (dots as underscores, upper case)
 *   4. --set key=value on the command line
 * `kafka.*` keys pass through to librdkafka unchanged (minus the prefix).
 * Keys that end in a pattern (`key.columns.<db>.<table>`) are declared with a
 * trailing '*' in the table. Unknown keys are errors naming file:line.
 * Secrets (cfg_key_is_secret: `secret` rows and keys named like secrets) never appear in logs or
 * in cfg_dump(); `<key>.file` variants read the secret from a file
 * (cfg_get_secret; for pattern keys such as kafka.sasl.password.file the file
 * is read when the key is set and stored as kafka.sasl.password).
 *
 * Ownership: cfg_new() returns an object the caller frees with cfg_free()
 * (NULL-safe). Every const char * returned by a getter is borrowed and valid
 * until the cfg is freed or the key is set again.
 */
#ifndef CFG_H
#define CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tb_buf.h"
#include "tb_error.h"
#include "cfg_keys.h" /* CFGK_<KEY>: every key of the property table, generated (config/CMakeLists.txt) */

typedef enum cfg_type {
    CFG_STRING,
    CFG_INT,       /* int64 within [min, max] */
    CFG_BOOL,      /* true/false (also 1/0, yes/no, on/off) */
    CFG_ENUM,      /* one of `values` */
    CFG_REGEX,     /* POSIX extended regex, checked with regcomp */
    CFG_PATH,      /* a file path */
    CFG_MS,        /* duration in milliseconds, int64 >= 0 */
} cfg_type;

typedef struct cfg_prop {
    const char *name;           /* "source.host"; a trailing '*' matches any suffix */
    cfg_type type;
    const char *def;            /* default as text, NULL = no default */
    int64_t min, max;           /* CFG_INT / CFG_MS range */
    const char *const *values;  /* CFG_ENUM allowed values, NULL-terminated */
    const char *help;           /* one or two sentences */
    bool secret;
    const char *group;          /* section in the docs: "general", "source", "kafka", ... */
} cfg_prop;

/* The property table, in documentation order. */
const cfg_prop *cfg_props(size_t *n);
/* Row for a key (pattern rows match by prefix), or NULL. */
const cfg_prop *cfg_prop_find(const char *key);

/* A key that was renamed or retired. Setting old_name (file, environment, --set) logs one WARN
 * and sets new_name, or, with new_name NULL, sets nothing (note says why it has no effect).
 * Getters given old_name read new_name, so code and configurations keep working while they
 * move to the new name. */
typedef struct cfg_renamed {
    const char *old_name;
    const char *new_name; /* NULL: retired */
    const char *note;     /* for a retired key: why it has no effect */
} cfg_renamed;

/* The renamed and retired keys, in documentation order. */
const cfg_renamed *cfg_renamed_keys(size_t *n);
/* The entry of old_name, or NULL. */
const cfg_renamed *cfg_renamed_find(const char *old_name);

typedef struct cfg cfg;

cfg *cfg_new(void);
void cfg_free(cfg *c);

/* Load a properties file. RELATIVE PATHS: a relative value of a `path` key
 * in the file is taken relative to the file's folder (made absolute), not
 * to the working directory; so are the relative defaults of `path` keys
 * (offsets.file, cache.path) once a file is loaded (the last file's folder
 * counts). Values from the environment and --set stay as given (relative
 * to the working directory). */
TB_MUST_USE tb_code cfg_load_file(cfg *c, const char *path, tb_error *err);
/* The folder relative `path` defaults resolve against (cfg_load_file sets
 * it to the file's absolute folder); NULL = the working directory. Returns
 * TB_ERR_NOMEM on allocation failure. dir is copied. */
TB_MUST_USE tb_code cfg_set_base_dir(cfg *c, const char *dir);
/* dir + "/" + path into out (path as is when absolute or dir is NULL/empty;
 * a leading "./" is dropped). */
TB_MUST_USE tb_code cfg_path_join(const char *dir, const char *path, tb_buf *out);
/* A file of this connector beside its offsets file: "<folder of
 * offsets.file>/<name><suffix>" ("<name><suffix>" when offsets.file has no
 * folder). The default of the status file, the SQLite shadow copy and, with
 * offsets.storage=kafka, the incremental-snapshot state: named after the
 * connector, so that connectors sharing a folder keep apart. */
TB_MUST_USE tb_code cfg_connector_file(const cfg *c, const char *suffix, tb_buf *out);
/* envp: NULL-terminated "NAME=value" strings (environ). Only TRIBUTARY_* are read;
 * TRIBUTARY_TEST_* are ignored (they belong to the test harness). */
TB_MUST_USE tb_code cfg_load_env(cfg *c, char *const *envp, tb_error *err);
/* origin is used in error messages ("--set", "file.properties:12"). */
TB_MUST_USE tb_code cfg_set(cfg *c, const char *key, const char *value, const char *origin, tb_error *err);
/* Cross-key checks (required keys for the chosen source/sink, ranges). */
TB_MUST_USE tb_code cfg_validate(const cfg *c, tb_error *err);

/* Getters return the set value or the table default. Code names a key of the
 * table by its constant (CFGK_SNAPSHOT_MODE, cfg_keys.h), so a key not in the
 * table is a compile error; a key built at run time (kafka.*, key.columns.*)
 * that is not in the table is a programming error (asserts in debug builds). */
const char *cfg_get_str(const cfg *c, const char *key);   /* NULL if unset and no default */
int64_t cfg_get_int(const cfg *c, const char *key);
bool cfg_get_bool(const cfg *c, const char *key);
bool cfg_is_set(const cfg *c, const char *key);
/* The secret for `key` (e.g. "source.password"): the value of key, or the
 * content of the file named by "<key>.file" (trailing newline stripped). */
TB_MUST_USE tb_code cfg_get_secret(const cfg *c, const char *key, char **out, tb_error *err); /* caller frees *out */

/* key.columns.<db>.<table> split at commas, blanks around each name dropped:
 * *cols (caller frees with cfg_list_free) and *n; *cols NULL and *n 0 when the
 * key is not set. TB_ERR_NOMEM only. */
TB_MUST_USE tb_code cfg_key_columns(const cfg *c, const char *db, const char *table, char ***cols, size_t *n);
void cfg_list_free(char **list, size_t n);

/* Call fn for every set key starting with prefix (e.g. "kafka."), with the
 * prefix removed, in key order. */
typedef void (*cfg_each_fn)(const char *key_rest, const char *value, void *opaque);
void cfg_each_prefixed(const cfg *c, const char *prefix, cfg_each_fn fn, void *opaque);

/* True for keys whose value must never be printed or left in the process's
 * arguments: secret rows, and any key whose name holds "password", "secret",
 * "key.pem", "sasl.oauthbearer", "ssl.key" or "token" (kafka.sasl.password,
 * kafka.ssl.key.pem, kafka.sasl.oauthbearer.config, ...), except the `*.file`
 * keys that name the file a secret is read from. */
bool cfg_key_is_secret(const char *key);

/* file.mode as a number (0600..0777, keeping 0600); false when it is not one (cfg_validate
 * refuses such a configuration). */
bool cfg_file_mode(const cfg *c, unsigned *mode);

/* The effective configuration as key=value lines, secrets as "********". */
TB_MUST_USE tb_code cfg_dump(const cfg *c, tb_buf *out);
/* --help-config text, and the Markdown reference (docs/configuration.md). */
TB_MUST_USE tb_code cfg_help_text(tb_buf *out);
TB_MUST_USE tb_code cfg_help_markdown(tb_buf *out);
/* The configuration keys as roff for the man page (docs/tributary.1): one .SS per group, one
 * .TP per key with its type, allowed values, default and description, then the renamed keys. */
TB_MUST_USE tb_code cfg_help_man(tb_buf *out);

#endif
