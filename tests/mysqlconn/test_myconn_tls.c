/*
 * myconn's TLS connections against the testenv MariaDB (which offers TLS, its CA in
 * TRIBUTARY_TEST_MYSQL_SSL_CA): a connection that verifies nothing (no CA) does not load the
 * system CA store Connector/C would load and not use (myconn.c, "the system CA store"); one
 * with a CA verifies against it and loads no store either; any other caller of
 * SSL_CTX_set_default_verify_paths gets OpenSSL's, which loads the system store.
 */
#include <criterion/criterion.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "myconn.h"

static const char *env(const char *k)
{
    const char *v = getenv(k);
    cr_assert(v && *v, "%s is not set: start the servers with scripts/testenv up", k);
    return v;
}

/* A connection to the testenv MariaDB with source.ssl.mode=mode (and the testenv's CA when ca). */
static MYSQL *open_source(const char *mode, bool ca)
{
    cfg *c = cfg_new();
    tb_error err;
    const char *kv[] = {"source.host",     env("TRIBUTARY_TEST_MYSQL_HOST"),
                        "source.port",     env("TRIBUTARY_TEST_MYSQL_PORT"),
                        "source.user",     env("TRIBUTARY_TEST_MYSQL_USER"),
                        "source.password", env("TRIBUTARY_TEST_MYSQL_PASSWORD"),
                        "source.ssl.mode", mode,
                        ca ? "source.ssl.ca" : NULL, ca ? env("TRIBUTARY_TEST_MYSQL_SSL_CA") : NULL,
                        NULL};
    for (size_t i = 0; kv[i]; i += 2)
        cr_assert_eq(cfg_set(c, kv[i], kv[i + 1], "test", &err), TB_OK, "%s", err.msg);
    myconn *mc = NULL;
    cr_assert_eq(myconn_new(c, &mc, &err), TB_OK, "%s", err.msg);
    MYSQL *my = NULL;
    cr_assert_eq(myconn_connect(mc, NULL, &my, &err), TB_OK, "%s", err.msg);
    myconn_free(mc);
    cfg_free(c);
    return my;
}

Test(myconn_tls, no_ca_loads_no_store, .timeout = 60)
{
    unsigned long before = myconn_ca_store_skipped();
    MYSQL *a = open_source("preferred", false), *b = open_source("required", false);
    cr_expect(myconn_encrypted(a) && myconn_encrypted(b), "the testenv MariaDB offers TLS");
    cr_expect_eq(myconn_ca_store_skipped() - before, 2,
                 "two connections without a CA: %lu loads of the system store not made (the executable's "
                 "SSL_CTX_set_default_verify_paths was not the one Connector/C called)",
                 myconn_ca_store_skipped() - before);
    mysql_close(a);
    mysql_close(b);
}

Test(myconn_tls, a_ca_verifies_and_loads_no_store, .timeout = 60)
{
    unsigned long before = myconn_ca_store_skipped();
    MYSQL *a = open_source("verify_ca", true);
    cr_expect(myconn_encrypted(a));
    cr_expect_eq(myconn_ca_store_skipped(), before, "a CA was given: the store is neither loaded nor skipped");
    mysql_close(a);
    MYSQL *d = open_source("disabled", false);
    cr_expect_not(myconn_encrypted(d));
    cr_expect_eq(myconn_ca_store_skipped(), before);
    mysql_close(d);
}

/* Everywhere but inside myconn_connect the function is OpenSSL's: the system store is loaded. */
Test(myconn_tls, other_callers_load_the_system_store, .timeout = 60)
{
    unsigned long before = myconn_ca_store_skipped();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    cr_assert_not_null(ctx);
    cr_assert_eq(SSL_CTX_set_default_verify_paths(ctx), 1);
    int n = sk_X509_OBJECT_num(X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx)));
    cr_expect_gt(n, 0, "no certificate of the system store (%s) was loaded", X509_get_default_cert_file());
    cr_expect_eq(myconn_ca_store_skipped(), before);
    SSL_CTX_free(ctx);
}
