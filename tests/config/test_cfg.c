/* Unit tests of the configuration: parsing, errors, precedence, secrets, help. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "cfg_filter.h"
#include "tb_file.h"
#include "cfg_internal.h"

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/tb-cfg-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cfg, .init = make_tmpdir, .fini = rm_tmpdir);

/* Write text to <tmpdir>/name; returns the path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Load text as a file; returns the code and fills err. */
static tb_code load_text(cfg *c, const char *text, tb_error *err)
{
    const char *path = write_file("t.properties", text);
    return cfg_load_file(c, path, err);
}

/* The expected message with the temp file's path in front. */
static void expect_file_error(const char *text, const char *want_suffix)
{
    cfg *c = cfg_new();
    tb_error err;
    tb_error_clear(&err);
    cr_assert_eq(load_text(c, text, &err), TB_ERR_CONFIG, "text: %s", text);
    cr_assert_eq(err.code, TB_ERR_CONFIG);
    char want[2048];
    snprintf(want, sizeof(want), "%s/t.properties%s", tmpdir, want_suffix);
    cr_assert_str_eq(err.msg, want);
    cr_assert_null(strchr(err.msg, '\n'), "one line");
    cfg_free(c);
}

Test(cfg, parses_comments_whitespace_and_continuation)
{
    cfg *c = cfg_new();
    tb_error err;
    const char *text = "# a comment\n"
                       "! another comment\n"
                       "\n"
                       "   source.host   =   db1.example  \n"
                       "source.port=3307\r\n"
                       "\t# indented comment with = sign\n"
                       "tables.include = shop\\.orders|shop\\.\\\n"
                       "     items\n"
                       "topic.prefix : cdc\n"
                       "value.schemas=yes\n"
                       "name=first\n"
                       "name=second\n";
    cr_assert_eq(load_text(c, text, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(cfg_get_str(c, "source.host"), "db1.example");
    cr_assert_eq(cfg_get_int(c, "source.port"), 3307);
    cr_assert_str_eq(cfg_get_str(c, "tables.include"), "shop\\.orders|shop\\.items");
    cr_assert_str_eq(cfg_get_str(c, "topic.prefix"), "cdc");
    cr_assert(cfg_get_bool(c, "value.schemas"));
    cr_assert_str_eq(cfg_get_str(c, "value.schemas"), "true", "booleans are normalised");
    cr_assert_str_eq(cfg_get_str(c, "name"), "second", "later line wins");
    cr_assert(cfg_is_set(c, "source.host"));
    cr_assert_not(cfg_is_set(c, "source.user"));
    cr_assert_str_eq(cfg_get_str(c, "source.user"), "root", "default from the table");
    cr_assert_null(cfg_get_str(c, "source.path"));
    cfg_free(c);
}

Test(cfg, continuation_error_names_first_line)
{
    expect_file_error("name=x\nsource.port=\\\n  abc\n", ":2: source.port: 'abc' is not an integer");
}

Test(cfg, byte_order_mark_is_skipped)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(load_text(c, "\xEF\xBB\xBFname=bom\n", &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(cfg_get_str(c, "name"), "bom");
    cfg_free(c);
}

Test(cfg, even_backslashes_do_not_continue)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(load_text(c, "tables.include=a\\\\\nname=n\n", &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(cfg_get_str(c, "tables.include"), "a\\\\");
    cr_assert_str_eq(cfg_get_str(c, "name"), "n");
    cfg_free(c);
}

Test(cfg, unknown_key_names_file_line_and_suggests)
{
    expect_file_error("name=a\n\n# c\nsource.host=h\nsoruce.host=x\n",
                      ":5: unknown key 'soruce.host' (did you mean 'source.host'?)");
}

Test(cfg, unknown_key_without_close_match)
{
    expect_file_error("completely.different=1\n", ":1: unknown key 'completely.different'");
}

Test(cfg, unknown_pattern_prefix_suggests)
{
    expect_file_error("kafak.acks=all\n", ":1: unknown key 'kafak.acks' (did you mean 'kafka.acks'?)");
}

Test(cfg, missing_equals)
{
    expect_file_error("name=a\njust some words\n", ":2: expected key=value, got 'just some words'");
}

Test(cfg, bad_int)
{
    expect_file_error("source.port=12a\n", ":1: source.port: '12a' is not an integer");
}

Test(cfg, int_out_of_range)
{
    expect_file_error("source.port=70000\n", ":1: source.port: 70000 is out of range (must be between 1 and 65535)");
}

Test(cfg, ms_negative_out_of_range)
{
    expect_file_error("offsets.commit.interval.ms=-5\n",
                      ":1: offsets.commit.interval.ms: -5 is out of range (must be >= 0)");
}

Test(cfg, bad_enum)
{
    expect_file_error("source.type=postgres\n", ":1: source.type: 'postgres' is not one of mysql, sqlite");
}

Test(cfg, bad_bool)
{
    expect_file_error("exactly.once=maybe\n", ":1: exactly.once: 'maybe' is not a boolean (use true or false)");
}

Test(cfg, bad_regex)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(load_text(c, "tables.include=shop\\.(orders\n", &err), TB_ERR_CONFIG);
    char want[600];
    snprintf(want, sizeof(want), "%s/t.properties:1: tables.include: bad regex 'shop\\.(orders': ", tmpdir);
    cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "got: %s", err.msg);
    cr_assert_gt(strlen(err.msg), strlen(want), "regerror text follows");
    cfg_free(c);
}

Test(cfg, bad_key_columns)
{
    expect_file_error("key.columns.orders=id\n", ":1: key.columns.orders: expected key.columns.<db>.<table>");
    expect_file_error("key.columns.shop.orders=id,,x\n",
                      ":1: key.columns.shop.orders: expected a comma-separated list of columns");
}

Test(cfg, missing_file)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(cfg_load_file(c, "/nonexistent/x.properties", &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "/nonexistent/x.properties: cannot open configuration: No such file or directory");
    cfg_free(c);
}

Test(cfg, missing_required_sqlite_path)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(load_text(c, "sink=stdout\noffsets.storage=file\nsource.type=sqlite\n", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_ERR_CONFIG);
    char want[600];
    snprintf(want, sizeof(want), "%s/t.properties:3: source.type=sqlite needs source.path", tmpdir);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(cfg_set(c, "source.path", "/tmp/x.db", "--set", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_OK, "%s", err.msg);
    cfg_free(c);
}

/* topic.missing.policy=resnapshot is an incremental snapshot of one table: MySQL/MariaDB only */
Test(cfg, topic_missing_policy_resnapshot_needs_mysql)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(load_text(c, "sink=stdout\noffsets.storage=file\nsource.type=sqlite\nsource.path=/tmp/x.db\n"
                              "topic.missing.policy=resnapshot\n", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_ERR_CONFIG);
    cr_assert(strstr(err.msg, "t.properties:5: topic.missing.policy=resnapshot needs source.type=mysql") != NULL, "%s",
              err.msg);
    cr_assert(strstr(err.msg, "tributary offsets set --position none") != NULL, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "topic.missing.policy", "fail", "--set", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.type", "mysql", "--set", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "topic.missing.policy", "resnapshot", "--set", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "topic.missing.policy", "later", "--set", &err), TB_ERR_CONFIG);
    cfg_free(c);
}

Test(cfg, missing_required_kafka_bootstrap)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(cfg_validate(c, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "sink=kafka (the default) needs kafka.bootstrap.servers");
    cr_assert_eq(cfg_set(c, "sink", "stdout", "--set", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "offsets.storage=kafka (the default) needs kafka.bootstrap.servers");
    cr_assert_eq(cfg_set(c, "offsets.storage", "file", "--set", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "sink", "kafka", "x.properties:4", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "x.properties:4: sink=kafka needs kafka.bootstrap.servers");
    cr_assert_eq(cfg_set(c, "kafka.bootstrap.servers", "127.0.0.1:9092", "--set", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_OK, "%s", err.msg);
    cfg_free(c);
}

Test(cfg, exactly_once_needs_kafka)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(cfg_set(c, "sink", "stdout", "--set", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "offsets.storage", "file", "--set", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "exactly_once", "on", "f:9", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "f:9: exactly.once=true needs sink=kafka and offsets.storage=kafka");
    cfg_free(c);
}

/* A renamed key keeps working under its old name, from a file, the environment and --set, and
 * getters given either name read the same value; a retired key is accepted and ignored. */
Test(cfg, renamed_and_retired_keys)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(load_text(c, "exactly_once=true\nsnapshot.fetch.size=500\nsource.sqlite.shadow=off\n", &err), TB_OK,
                 "%s", err.msg);
    cr_expect(cfg_get_bool(c, "exactly.once"));
    cr_expect(cfg_get_bool(c, "exactly_once"));
    cr_expect(cfg_is_set(c, "exactly.once"));
    cr_expect(!cfg_get_bool(c, "source.sqlite.shadow"), "on|off is still read as a boolean");
    char *envp[] = {"TRIBUTARY_SOURCE_HEARTBEAT_MS=750", NULL};
    cr_assert_eq(cfg_load_env(c, envp, &err), TB_OK, "%s", err.msg);
    cr_expect_eq(cfg_get_int(c, "source.heartbeat.interval.ms"), 750);
    cr_assert_eq(cfg_set(c, "source.heartbeat.ms", "900", "--set", &err), TB_OK, "%s", err.msg);
    cr_expect_eq(cfg_get_int(c, "source.heartbeat.interval.ms"), 900);
    cr_expect_eq(cfg_get_int(c, "source.heartbeat.ms"), 900);
    /* the old name's value is still checked as the new key's */
    cr_expect_eq(cfg_set(c, "exactly_once", "perhaps", "--set", &err), TB_ERR_CONFIG);
    cr_expect_str_eq(err.msg, "--set: exactly.once: 'perhaps' is not a boolean (use true or false)");
    cr_expect_null(cfg_prop_find("snapshot.fetch.size"), "a retired key is out of the property table");
    size_t n;
    const cfg_renamed *rn = cfg_renamed_keys(&n);
    for (size_t i = 0; i < n; i++) {
        cr_expect_null(cfg_prop_find(rn[i].old_name), "%s is both a key and a renamed one", rn[i].old_name);
        cr_expect(!rn[i].new_name || cfg_prop_find(rn[i].new_name), "%s renamed to no key", rn[i].old_name);
    }
    cfg_free(c);
}

Test(cfg, env_and_set_precedence)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(load_text(c, "source.host=from-file\nsource.port=1111\nname=file-name\n", &err), TB_OK);
    char *envp[] = {
        "PATH=/bin",
        "TRIBUTARY_SOURCE_HOST=from-env",
        "TRIBUTARY_SOURCE_PORT=2222",
        "TRIBUTARY_TEST_KAFKA=ignored:1",
        "TRIBUTARY_TEST_WHATEVER=1",
        "TRIBUTARY_EXACTLY_ONCE=true",
        NULL,
    };
    cr_assert_eq(cfg_load_env(c, envp, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.port", "3333", "--set", &err), TB_OK);
    cr_assert_str_eq(cfg_get_str(c, "source.host"), "from-env");
    cr_assert_eq(cfg_get_int(c, "source.port"), 3333);
    cr_assert_str_eq(cfg_get_str(c, "name"), "file-name");
    cr_assert(cfg_get_bool(c, "exactly.once"));
    cfg_free(c);
}

Test(cfg, env_errors_name_the_variable)
{
    cfg *c = cfg_new();
    tb_error err;
    char *bad_value[] = {"TRIBUTARY_SOURCE_PORT=http", NULL};
    cr_assert_eq(cfg_load_env(c, bad_value, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "environment TRIBUTARY_SOURCE_PORT: source.port: 'http' is not an integer");
    char *unknown[] = {"TRIBUTARY_SOURCE_HOTS=x", NULL};
    cr_assert_eq(cfg_load_env(c, unknown, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "environment TRIBUTARY_SOURCE_HOTS: unknown key 'source.hots' "
                              "(did you mean TRIBUTARY_SOURCE_HOST?)");
    char *far[] = {"TRIBUTARY_SOMETHING_ELSE=1", "TRIBUTARY_CACHE=/x", "TRIBUTARY_TESTENV_TIMEOUT=5", NULL};
    cr_assert_eq(cfg_load_env(c, far, &err), TB_OK, "unrelated variables are ignored: %s", err.msg);
    cfg_free(c);
}

static void collect(const char *rest, const char *value, void *opaque)
{
    tb_buf *b = opaque;
    tb_buf_printf(b, "%s=%s;", rest, value);
}

Test(cfg, pattern_keys_from_file_env_and_set)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(load_text(c, "kafka.acks=all\nkey.columns.shop.log=id,ts\n", &err), TB_OK, "%s", err.msg);
    char *envp[] = {"TRIBUTARY_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092", "TRIBUTARY_KEY_COLUMNS_SHOP_AUDIT=a", NULL};
    cr_assert_eq(cfg_load_env(c, envp, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "kafka.linger.ms", "5", "--set", &err), TB_OK);
    cr_assert_str_eq(cfg_get_str(c, "kafka.bootstrap.servers"), "127.0.0.1:9092");
    cr_assert_str_eq(cfg_get_str(c, "key.columns.shop.audit"), "a");
    cr_assert_str_eq(cfg_get_str(c, "key.columns.shop.log"), "id,ts");
    tb_buf b;
    tb_buf_init(&b, 0);
    cfg_each_prefixed(c, "kafka.", collect, &b);
    cr_assert_str_eq(tb_buf_cstr(&b), "acks=all;bootstrap.servers=127.0.0.1:9092;linger.ms=5;");
    tb_buf_free(&b);
    tb_error_clear(&err);
    cr_assert_eq(cfg_set(c, "kafka.", "x", "--set", &err), TB_ERR_CONFIG, "a pattern needs a suffix");
    cfg_free(c);
}

Test(cfg, secrets_masked_in_dump)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(cfg_set(c, "source.password", "hunter2", "--set", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "kafka.sasl.password", "s3cret", "--set", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "kafka.ssl.key.password", "k3y", "--set", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "kafka.sasl.username", "bob", "--set", &err), TB_OK);
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(cfg_dump(c, &b), TB_OK);
    const char *d = tb_buf_cstr(&b);
    cr_assert_null(strstr(d, "hunter2"));
    cr_assert_null(strstr(d, "s3cret"));
    cr_assert_null(strstr(d, "k3y"));
    cr_assert_not_null(strstr(d, "source.password=********\n"));
    cr_assert_not_null(strstr(d, "kafka.sasl.password=********\n"));
    cr_assert_not_null(strstr(d, "kafka.ssl.key.password=********\n"));
    cr_assert_not_null(strstr(d, "kafka.sasl.username=bob\n"));
    cr_assert_not_null(strstr(d, "source.port=3306\n"), "defaults are dumped");
    cr_assert_not_null(strstr(d, "\nname=tributary\n") ? strstr(d, "\nname=tributary\n") : strstr(d, "name=tributary\n"));
    tb_buf_free(&b);
    cr_assert(cfg_key_is_secret("source.password"));
    cr_assert(cfg_key_is_secret("kafka.sasl.password"));
    cr_assert_not(cfg_key_is_secret("source.password.file"));
    static const char *const secret[] = {"kafka.ssl.key.pem", "kafka.sasl.oauthbearer.config",
                                         "kafka.sasl.oauthbearer.client.secret", "kafka.ssl.key.location",
                                         "kafka.ssl_key.pem", "kafka.sasl.oauthbearer.token.endpoint.url",
                                         "source.ssl.key", "password", "kafka.ssl.keystore.password"};
    for (size_t i = 0; i < sizeof secret / sizeof *secret; i++)
        cr_expect(cfg_key_is_secret(secret[i]), "%s is a secret", secret[i]);
    static const char *const plain[] = {"kafka.sasl.username", "kafka.ssl.ca.location", "source.ssl.ca",
                                        "kafka.sasl.mechanisms", "kafka.sasl.password.file", "source.user"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        cr_expect_not(cfg_key_is_secret(plain[i]), "%s is not a secret", plain[i]);
    /* an inline key and an OAUTHBEARER config: masked in the dump */
    cr_assert_eq(cfg_set(c, "kafka.ssl.key.pem", "-----BEGIN PRIVATE KEY-----xyz", "--set", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "kafka.sasl.oauthbearer.config", "principal=p extension_x=tok3n", "--set", &err), TB_OK);
    tb_buf_init(&b, 0);
    cr_assert_eq(cfg_dump(c, &b), TB_OK);
    cr_assert_null(strstr(tb_buf_cstr(&b), "PRIVATE KEY"));
    cr_assert_null(strstr(tb_buf_cstr(&b), "tok3n"));
    cr_assert_not_null(strstr(tb_buf_cstr(&b), "kafka.ssl.key.pem=********\n"));
    tb_buf_free(&b);
    cfg_free(c);
}

Test(cfg, ssl_verify_modes_need_a_ca)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(cfg_set(c, "sink", "stdout", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "offsets.storage", "file", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "source.ssl.mode", "verify_identity", "f:3", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "f:3: source.ssl.mode=verify_identity needs source.ssl.ca (a CA file) or "
                              "source.ssl.capath to verify the server certificate against");
    cr_assert_eq(cfg_set(c, "source.ssl.capath", "/etc/ssl/certs", "t", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "source.ssl.mode", "required", "t", &err), TB_OK);
    cfg_free(c);
    c = cfg_new();
    cr_assert_eq(cfg_set(c, "sink", "stdout", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "offsets.storage", "file", "t", &err), TB_OK);
    cr_assert_eq(cfg_set(c, "source.ssl.mode", "required", "t", &err), TB_OK);
    cr_assert_eq(cfg_validate(c, &err), TB_OK, "required checks no certificate: %s", err.msg);
    cr_assert_eq(cfg_set(c, "source.ssl.mode", "nope", "t", &err), TB_ERR_CONFIG);
    cfg_free(c);
}

Test(cfg, secret_from_file)
{
    cfg *c = cfg_new();
    tb_error err;
    char *s = (char *)1;
    cr_assert_eq(cfg_get_secret(c, "source.password", &s, &err), TB_OK);
    cr_assert_null(s, "no secret configured");
    const char *p = write_file("pw", "pa ss\n");
    cr_assert_eq(cfg_set(c, "source.password.file", p, "f:2", &err), TB_OK);
    cr_assert_eq(cfg_get_secret(c, "source.password", &s, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(s, "pa ss");
    free(s);
    cr_assert_eq(cfg_set(c, "source.password.file", "/nonexistent/pw", "f:3", &err), TB_OK);
    cr_assert_eq(cfg_get_secret(c, "source.password", &s, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "f:3: source.password.file: /nonexistent/pw: no such file");
    cr_assert_eq(cfg_set(c, "source.password", "direct", "--set", &err), TB_OK);
    cr_assert_eq(cfg_get_secret(c, "source.password", &s, &err), TB_OK);
    cr_assert_str_eq(s, "direct");
    free(s);
    cfg_free(c);
}

Test(cfg, pass_through_secret_file_is_read_at_set)
{
    cfg *c = cfg_new();
    tb_error err;
    const char *p = write_file("sasl", "t0ps3cret\r\n");
    cr_assert_eq(cfg_set(c, "kafka.sasl.password.file", p, "f:1", &err), TB_OK, "%s", err.msg);
    cr_assert_not(cfg_is_set(c, "kafka.sasl.password.file"), "never passed to librdkafka");
    cr_assert_str_eq(cfg_get_str(c, "kafka.sasl.password"), "t0ps3cret");
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(cfg_dump(c, &b), TB_OK);
    cr_assert_null(strstr(tb_buf_cstr(&b), "t0ps3cret"));
    tb_buf_free(&b);
    const char *k = write_file("keypw", "k3ypass\n");
    cr_assert_eq(cfg_set(c, "kafka.ssl.key.password.file", k, "f:2", &err), TB_OK, "%s", err.msg);
    cr_assert_not(cfg_is_set(c, "kafka.ssl.key.password.file"));
    cr_assert_str_eq(cfg_get_str(c, "kafka.ssl.key.password"), "k3ypass");
    cr_assert_eq(cfg_set(c, "kafka.ssl.key.password.file", "/nonexistent/k", "f:2", &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "f:2: kafka.ssl.key.password.file: /nonexistent/k: no such file");
    cfg_free(c);
}

Test(cfg, help_text_lists_every_key)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    cr_assert_eq(cfg_help_text(&b), TB_OK);
    tb_buf md;
    tb_buf_init(&md, 0);
    cr_assert_eq(cfg_help_markdown(&md), TB_OK);
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    cr_assert_gt(n, 40);
    for (size_t i = 0; i < n; i++) {
        char needle[256];
        snprintf(needle, sizeof(needle), "  %s (", props[i].name);
        cr_assert_not_null(strstr(tb_buf_cstr(&b), needle), "help text lacks %s", props[i].name);
        snprintf(needle, sizeof(needle), "| `%s` |", props[i].name);
        cr_assert_not_null(strstr(tb_buf_cstr(&md), needle), "markdown lacks %s", props[i].name);
    }
    cr_assert_not_null(strstr(tb_buf_cstr(&b), "source.port (int: 1 .. 65535, default 3306)"));
    cr_assert_not_null(strstr(tb_buf_cstr(&md), "| `source.type` | enum | `mysql` | `mysql`, `sqlite` |"));
    tb_buf_free(&b);
    tb_buf_free(&md);
}

Test(cfg, table_is_well_formed)
{
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    for (size_t i = 0; i < n; i++) {
        const cfg_prop *p = &props[i];
        cr_assert_not_null(p->help, "%s has help", p->name);
        cr_assert_not_null(p->group, "%s has a group", p->name);
        cr_assert_eq(cfg_prop_find(p->name), p, "%s found (no duplicate rows)", p->name);
        if (p->type == CFG_ENUM)
            cr_assert_not_null(p->values, "%s lists its values", p->name);
        /* Every default passes the row's own validation. */
        if (p->def) {
            cfg *c = cfg_new();
            tb_error err;
            char key[256];
            snprintf(key, sizeof(key), "%s", p->name);
            size_t len = strlen(key);
            if (key[len - 1] == '*')
                snprintf(key + len - 1, sizeof(key) - len + 1, "x.y");
            cr_assert_eq(cfg_set(c, key, p->def, "table", &err), TB_OK, "default of %s: %s", p->name, err.msg);
            cfg_free(c);
        }
    }
}

Test(cfg, docs_are_fresh)
{
    tb_buf want, have;
    tb_buf_init(&want, 0);
    tb_buf_init(&have, 0);
    cr_assert_eq(cfg_help_markdown(&want), TB_OK);
    tb_error err;
    tb_code rc = tb_file_read(TB_SOURCE_DIR "/docs/configuration.md", 0, &have, &err);
    cr_assert_eq(rc, TB_OK, "%s", err.msg);
    cr_assert(want.len == have.len && memcmp(want.data, have.data, want.len) == 0,
              "docs/configuration.md is stale: regenerate with "
              "`cmake --build <build dir> --target config_docs` "
              "(= tributary --help-config --markdown > docs/configuration.md)");
    tb_buf_free(&want);
    tb_buf_free(&have);
}

Test(cfg, edit_distance)
{
    cr_assert_eq(cfg_edit_distance("source.host", "source.host"), 0);
    cr_assert_eq(cfg_edit_distance("soruce.host", "source.host"), 1);
    cr_assert_eq(cfg_edit_distance("source.hst", "source.host"), 1);
    cr_assert_eq(cfg_edit_distance("", "abc"), 3);
    cr_assert_eq(cfg_edit_distance("abc", ""), 3);
    cr_assert_eq(cfg_edit_distance("kitten", "sitting"), 3);
    cr_assert_eq(cfg_edit_distance("ca", "abc"), 3, "OSA distance, not full Damerau");
}

Test(cfg, random_files_never_crash_and_errors_are_one_line)
{
    static const char alphabet[] = "=:#!\\ \t\r\nabkx.ye01-_*(|";
    unsigned seed = 12345;
    int ok = 0, bad = 0;
    for (int round = 0; round < 1500; round++) {
        char text[200];
        size_t len = (size_t)(rand_r(&seed) % (sizeof(text) - 1));
        for (size_t i = 0; i < len; i++)
            text[i] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
        text[len] = '\0';
        /* Sometimes start from a valid key so values get validated too. */
        static const char *const starts[] = {"", "source.port=", "tables.include=", "kafka.", "exactly.once="};
        char full[256];
        snprintf(full, sizeof(full), "%s%s", starts[round % 5], text);
        cfg *c = cfg_new();
        tb_error err;
        tb_error_clear(&err);
        tb_code rc = load_text(c, full, &err);
        if (rc == TB_OK) {
            ok++;
        } else {
            bad++;
            cr_assert_eq(rc, TB_ERR_CONFIG, "input: %s", full);
            cr_assert_null(strchr(err.msg, '\n'), "one line: %s", err.msg);
            cr_assert(strncmp(err.msg, tmpdir, strlen(tmpdir)) == 0, "names the file: %s", err.msg);
        }
        cfg_free(c);
    }
    cr_assert_gt(ok, 0);
    cr_assert_gt(bad, 0);
}

Test(cfg, relative_paths_follow_the_config_file)
{
    /* tmpdir may itself sit behind a symbolic link: compare with its real path. */
    char *real = realpath(tmpdir, NULL);
    cr_assert_not_null(real);
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_str_eq(cfg_get_str(c, "offsets.file"), "tributary.offsets", "no file: relative to the working dir");
    cr_assert_eq(load_text(c,
                           "offsets.file=state/off\nsource.path=./shop.db\nstatus.file=/abs/s.json\n"
                           "source.host=rel/not/a/path\n",
                           &err),
                 TB_OK, "%s", err.msg);
    char want[600];
    snprintf(want, sizeof want, "%s/state/off", real);
    cr_assert_str_eq(cfg_get_str(c, "offsets.file"), want);
    snprintf(want, sizeof want, "%s/shop.db", real);
    cr_assert_str_eq(cfg_get_str(c, "source.path"), want);
    cr_assert_str_eq(cfg_get_str(c, "status.file"), "/abs/s.json", "absolute paths stay");
    cr_assert_str_eq(cfg_get_str(c, "source.host"), "rel/not/a/path", "only path keys");
    /* a relative default follows the file too, without counting as set */
    snprintf(want, sizeof want, "%s/tributary-cache.db", real);
    cr_assert_str_eq(cfg_get_str(c, "cache.path"), want);
    cr_assert(!cfg_is_set(c, "cache.path"));
    /* --set and the environment stay relative to the working directory */
    cr_assert_eq(cfg_set(c, "offsets.file", "cli/off", "--set", &err), TB_OK);
    cr_assert_str_eq(cfg_get_str(c, "offsets.file"), "cli/off");
    cfg_free(c);
    free(real);
}

/* file.mode: the owner's 0600, the group may read; other bits are refused with the reason. */
Test(cfg, file_mode_keeps_files_private)
{
    static const char *const ok[] = {"0600", "0640", "600", "640"};
    static const char *const bad[] = {"0666", "0644", "0660", "0620", "0604", "0602", "0601", "0700", "0610",
                                      "0777", "0400", "0", "-1", "0x180", "0800", "0640 "};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]) + sizeof(bad) / sizeof(bad[0]); i++) {
        bool good = i < sizeof(ok) / sizeof(ok[0]);
        const char *m = good ? ok[i] : bad[i - sizeof(ok) / sizeof(ok[0])];
        cfg *c = cfg_new();
        tb_error err;
        cr_assert_eq(cfg_set(c, "sink", "stdout", "t", &err), TB_OK);
        cr_assert_eq(cfg_set(c, "offsets.storage", "file", "t", &err), TB_OK);
        cr_assert_eq(cfg_set(c, "file.mode", m, "f:4", &err), TB_OK, "%s", err.msg);
        if (good) {
            cr_expect_eq(cfg_validate(c, &err), TB_OK, "%s: %s", m, err.msg);
        } else {
            cr_expect_eq(cfg_validate(c, &err), TB_ERR_CONFIG, "%s accepted", m);
            cr_expect_not_null(strstr(err.msg, "f:4: file.mode: '"), "%s: %s", m, err.msg);
            cr_expect_not_null(strstr(err.msg, "is not 0600 or 0640"), "%s: %s", m, err.msg);
        }
        cfg_free(c);
    }
}

/* An empty secret file (or one of line ends only) is refused, naming the key and the file. */
Test(cfg, empty_secret_file_refused)
{
    cfg *c = cfg_new();
    tb_error err;
    char *s = (char *)1;
    const char *p = write_file("empty", "");
    cr_assert_eq(cfg_set(c, "source.password.file", p, "f:2", &err), TB_OK);
    cr_assert_eq(cfg_get_secret(c, "source.password", &s, &err), TB_ERR_CONFIG);
    cr_assert_null(s);
    cr_expect_not_null(strstr(err.msg, "f:2: source.password.file: "), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, " is empty"), "%s", err.msg);
    const char *nl = write_file("nl", "\r\n");
    cr_assert_eq(cfg_set(c, "kafka.sasl.password.file", nl, "f:3", &err), TB_ERR_CONFIG);
    cr_expect_not_null(strstr(err.msg, "f:3: kafka.sasl.password.file: "), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, " is empty"), "%s", err.msg);
    cr_assert_not(cfg_is_set(c, "kafka.sasl.password"));
    cfg_free(c);
}

/* cfg_filter: tables.include / tables.exclude over "db.table"; system schemas and the signal
 * table never match; an empty filter matches the rest. */
Test(cfg, table_filter)
{
    cfg *c = cfg_new();
    tb_error err;
    cr_assert_eq(cfg_set(c, "tables.include", "^shop\\.", "--set", &err), TB_OK, "%s", err.msg);
    cr_assert_eq(cfg_set(c, "tables.exclude", "\\.audit_", "--set", &err), TB_OK, "%s", err.msg);
    cfg_filter f;
    cr_assert_eq(cfg_filter_init(&f, c, &err), TB_OK, "%s", err.msg);
    cr_assert(cfg_filter_match(&f, "shop", "orders"));
    cr_assert_not(cfg_filter_match(&f, "shop", "audit_log"));
    cr_assert_not(cfg_filter_match(&f, "other", "orders"));
    cr_assert_not(cfg_filter_match(&f, "shop", CFG_SIGNAL_TABLE));
    cfg_filter_free(&f);
    cfg_filter_free(&f); /* again: a no-op */
    cfg_free(c);
    c = cfg_new();
    cr_assert_eq(cfg_filter_init(&f, c, &err), TB_OK);
    cr_assert(cfg_filter_match(&f, "x", "y"));
    cr_assert_not(cfg_filter_match(&f, "mysql", "user"));
    cr_assert_not(cfg_filter_match(&f, "performance_schema", "threads"));
    cr_assert_not(cfg_filter_match(&f, "x", "tributary_signal"));
    cfg_filter_free(&f);
    cfg_free(c);
}
