/*
 * The schema registry client (avro/sreg.h) over HTTPS with HTTP basic authentication: the
 * schema.registry.ssl.ca.location CA verifies the registry's certificate and the credentials go
 * with every call; a wrong password is refused naming the registry's answer, a certificate the CA
 * does not sign is no answer. The registry is tests/avro/registry_tls_stub.py (Python's HTTPS
 * server with the testenv's server certificate: Apicurio's basic authentication needs an OpenID
 * server, which the test environment does not run); the real registry serves the other Avro tests.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sreg.h"
#include "integration/tb_itest.h"

static pid_t stub_pid;

static void stub_stop(void)
{
    if (stub_pid > 0) {
        kill(stub_pid, SIGTERM);
        waitpid(stub_pid, NULL, 0);
        stub_pid = 0;
    }
}

/* Start the stub with the testenv's server certificate; its port. */
static int stub_start(void)
{
    const char *dir = tb_itest_env("TRIBUTARY_TEST_DIR");
    char cert[512], key[512];
    snprintf(cert, sizeof cert, "%s/tls/server.pem", dir);
    snprintf(key, sizeof key, "%s/tls/server.key", dir);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    stub_pid = fork();
    cr_assert_geq(stub_pid, 0);
    if (stub_pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execlp("python3", "python3", TB_SOURCE_DIR "/tests/avro/registry_tls_stub.py", cert, key, "reg-user",
               "reg-secret", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    cr_assert_not_null(f);
    int port = 0;
    cr_assert_eq(fscanf(f, "%d", &port), 1, "the registry stub did not say its port");
    fclose(f);
    return port;
}

static sreg *open_reg(int port, const char *password, const char *ca)
{
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d", port);
    sreg_opts o = {.url = url, .user = "reg-user", .password = password, .ca_file = ca, .timeout_ms = 10000};
    sreg *r = NULL;
    tb_error err;
    cr_assert_eq(sreg_open(&o, &r, &err), TB_OK, "%s", err.msg);
    return r;
}

Test(sreg_tls, ca_and_basic_auth, .fini = stub_stop, .timeout = 60)
{
    int port = stub_start();
    const char *ca = tb_itest_env("TRIBUTARY_TEST_KAFKA_SSL_CA"); /* the testenv's CA */
    static const char schema[] = "{\"type\":\"record\",\"name\":\"V\",\"fields\":[{\"name\":\"id\",\"type\":\"int\"}]}";
    tb_error err;
    uint32_t id = 0;
    /* the CA and the credentials: registered, read back by id */
    sreg *r = open_reg(port, "reg-secret", ca);
    cr_assert_eq(sreg_register(r, "t-value", schema, &id, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(id, 7);
    char *back = NULL;
    cr_assert_eq(sreg_schema_by_id(r, id, &back, &err), TB_OK, "%s", err.msg);
    cr_expect_str_eq(back, schema);
    free(back);
    char *level = NULL;
    cr_assert_eq(sreg_compatibility(r, "t-value", &level, &err), TB_OK, "%s", err.msg);
    cr_expect_str_eq(level, "BACKWARD");
    free(level);
    sreg_close(r);
    /* a wrong password: refused for good, naming the answer */
    r = open_reg(port, "not-it", ca);
    cr_expect_eq(sreg_register(r, "t-value", schema, &id, &err), TB_ERR_CONFIG);
    cr_expect(!err.retriable);
    cr_expect_not_null(strstr(err.msg, "401"), "%s", err.msg);
    sreg_close(r);
    /* the system's CAs do not sign the testenv's certificate: no answer */
    r = open_reg(port, "reg-secret", NULL);
    cr_expect_eq(sreg_register(r, "t-value", schema, &id, &err), TB_ERR_IO, "%s", err.msg);
    sreg_close(r);
}
