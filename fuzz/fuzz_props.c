/*
 * libFuzzer target for the properties-file parser (cfg_load_file: comments, continuations,
 * escapes, byte order mark, per-key validation, `*.password.file` secrets). Built only with
 * -DTB_FUZZ=ON (clang). Each input is written to a file of its own under $TMPDIR and loaded.
 *
 * Checks, for every input: cfg_load_file never crashes or leaks; a refusal is TB_ERR_CONFIG
 * with a one-line message naming the file; an accepted configuration validates or is refused
 * in one line, and its dump (cfg_dump) succeeds and never shows the value of a secret key.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb_cast.h"
#include "cfg.h"

static char path[256];

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* a `*.password.file=/dev/stdin` line must not wait for a terminal */
    check(freopen("/dev/null", "r", stdin) != NULL);
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/fuzz_props.%ld.properties", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    return 0;
}

/* The dump line of a secret key holds the mask, never its value. */
static void check_masked(const char *dump, const char *key, const char *value)
{
    if (!cfg_key_is_secret(key) || strcmp(value, "********") == 0)
        return;
    /* a whole line "key=value": another key's value may hold the same text */
    size_t n = strlen(key) + strlen(value) + 4;
    char *line = malloc(n);
    check(line != NULL);
    snprintf(line, n, "\n%s=%s\n", key, value);
    check(strstr(dump, line) == NULL && strncmp(dump, line + 1, n - 2) != 0);
    free(line);
}

static void each_kafka(const char *key, const char *value, void *opaque)
{
    char full[1024];
    snprintf(full, sizeof full, "kafka.%s", key);
    check_masked(opaque, full, value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    cfg *c = cfg_new();
    check(c != NULL);
    tb_error err;
    tb_error_clear(&err);
    tb_code rc = cfg_load_file(c, path, &err);
    if (rc != TB_OK) {
        check(rc == TB_ERR_CONFIG || rc == TB_ERR_NOMEM);
        check(strchr(err.msg, '\n') == NULL);
        check(strncmp(err.msg, path, strlen(path)) == 0);
    } else {
        tb_error_clear(&err);
        if (cfg_validate(c, &err) != TB_OK)
            check(strchr(err.msg, '\n') == NULL);
        tb_buf d;
        tb_buf_init(&d, 0);
        check(cfg_dump(c, &d) == TB_OK);
        cfg_each_prefixed(c, "kafka.", each_kafka, TB_UNCONST(tb_buf_cstr(&d))); /* read only */
        if (cfg_is_set(c, "source.password"))
            check_masked(tb_buf_cstr(&d), "source.password", cfg_get_str(c, "source.password"));
        tb_buf_free(&d);
    }
    cfg_free(c);
    unlink(path);
    return 0;
}
