/*
 * The user-facing docker-compose.yml and its sample tributary configuration stay valid.
 *
 *   compose/config_is_valid: Debian's docker-compose (v1, no engine needed) accepts the file
 *     (`docker-compose -f docker-compose.yml config -q`); fails when docker-compose is missing.
 *   compose/mysql_is_configured_for_tributary: the resolved configuration starts MySQL with the
 *     binlog settings tributary needs and mounts the sample configuration into tributary.
 *   compose/sample_properties_validate: docker/tributary.properties loads and validates with
 *     tributary's own configuration code (the password comes from the environment).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "tb_buf.h"
#include "tb_error.h"

#define COMPOSE_FILE TB_SOURCE_DIR "/docker-compose.yml"
#define SAMPLE_PROPS TB_SOURCE_DIR "/docker/tributary.properties"

/* Run shell command cmd; its stdout (and stderr) go into out (caller frees with tb_buf_free).
 * Returns the exit status, or -1 if it could not run. */
static int compose_run(const char *cmd, tb_buf *out)
{
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        cr_assert_eq(tb_buf_append(out, chunk, n), TB_OK);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void compose_require_tool(void)
{
    if (system("command -v docker-compose >/dev/null 2>&1") != 0)
        cr_assert_fail("docker-compose is not installed: run scripts/deps");
}

Test(compose, config_is_valid)
{
    compose_require_tool();
    tb_buf out;
    tb_buf_init(&out, 0);
    int rc = compose_run("docker-compose -f '" COMPOSE_FILE "' config -q 2>&1", &out);
    cr_assert_eq(rc, 0, "docker-compose config -q %s failed (%d): %s", COMPOSE_FILE, rc,
                 out.data ? out.data : "");
    tb_buf_free(&out);
}

Test(compose, mysql_is_configured_for_tributary)
{
    compose_require_tool();
    tb_buf out;
    tb_buf_init(&out, 0);
    int rc = compose_run("docker-compose -f '" COMPOSE_FILE "' config 2>&1", &out);
    cr_assert_eq(rc, 0, "docker-compose config failed: %s", out.data ? out.data : "");
    const char *want[] = {
        "--binlog-format=ROW",     "--binlog-row-image=FULL", "--binlog-row-metadata=FULL",
        "--gtid-mode=ON",          "--enforce-gtid-consistency=ON", "--server-id=1",
        "apache/kafka:",           "/etc/tributary/tributary.properties",
        "tributary.properties:ro", "KAFKA_PROCESS_ROLES: broker,controller",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(out.data, want[i]) != NULL, "%s: resolved config lacks '%s'", COMPOSE_FILE,
                  want[i]);
    tb_buf_free(&out);
}

Test(compose, sample_properties_validate)
{
    tb_error err;
    tb_error_clear(&err);
    cfg *c = cfg_new();
    cr_assert_not_null(c);
    cr_assert_eq(cfg_load_file(c, SAMPLE_PROPS, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.password", "from-the-environment", "test", &err), TB_OK, "%s",
                 err.msg);
    cr_assert_eq(cfg_validate(c, &err), TB_OK, "%s: %s", SAMPLE_PROPS, err.msg);
    cr_assert_str_eq(cfg_get_str(c, "source.type"), "mysql");
    cr_assert_str_eq(cfg_get_str(c, "source.host"), "mysql");
    cfg_free(c);
}

Test(compose, tributary_has_a_health_check_and_bounded_restarts)
{
    compose_require_tool();
    tb_buf out;
    tb_buf_init(&out, 0);
    int rc = compose_run("docker-compose -f '" COMPOSE_FILE "' config 2>&1", &out);
    cr_assert_eq(rc, 0, "%s", out.data ? out.data : "");
    const char *t = strstr(tb_buf_cstr(&out), "\n  tributary:");
    cr_assert_not_null(t, "%s", tb_buf_cstr(&out));
    cr_assert_not_null(strstr(t, "http://127.0.0.1:9464/health"), "no /health check:\n%s", t);
    cr_assert_not_null(strstr(t, "restart: on-failure:5"), "restarts must be bounded (exit 2 repeats):\n%s", t);
    cr_assert_not_null(strstr(t, "127.0.0.1:9464:9464"), "the port is published on the loopback only:\n%s", t);
    tb_buf_free(&out);
    /* the image's own health check asks /health too */
    tb_buf df;
    tb_buf_init(&df, 0);
    rc = compose_run("cat '" TB_SOURCE_DIR "/Dockerfile'", &df);
    cr_assert_eq(rc, 0);
    cr_assert_not_null(strstr(tb_buf_cstr(&df), "HEALTHCHECK"), "no HEALTHCHECK in the Dockerfile");
    cr_assert_not_null(strstr(tb_buf_cstr(&df), "http://127.0.0.1:9464/health"));
    tb_buf_free(&df);
}
