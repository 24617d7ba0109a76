/* Unit tests of app_common.c: argv handling of app_load_config, app_fail, signals. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "evt_json.h"
#include "tb_log.h"

Test(app_common, load_config_consumes_its_options_and_keeps_the_rest)
{
    char path[] = "/tmp/tb-common-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *text = "sink=stdout\noffsets.storage=file\nname=file\ntopic.prefix=p\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    unsetenv("TRIBUTARY_NAME");
    char *argv[] = {"cmd", "--json", "--config", path, "pos1", "--set", "name=set", "--set=topic.prefix=q",
                    "--config=/dev/null", "--", "--set", NULL};
    int argc = 11;
    cfg *c = NULL;
    tb_error err;
    cr_assert_eq(app_load_config(&argc, argv, &c, &err), TB_OK, "%s", err.msg);
    cr_assert_eq(argc, 5);
    cr_assert_str_eq(argv[0], "cmd");
    cr_assert_str_eq(argv[1], "--json");
    cr_assert_str_eq(argv[2], "pos1");
    cr_assert_str_eq(argv[3], "--");
    cr_assert_str_eq(argv[4], "--set", "after -- nothing is consumed");
    cr_assert_null(argv[5]);
    cr_assert_str_eq(cfg_get_str(c, "name"), "set");
    cr_assert_str_eq(cfg_get_str(c, "topic.prefix"), "q");
    cr_assert_str_eq(cfg_get_str(c, "sink"), "stdout");
    cfg_free(c);
    unlink(path);
}

Test(app_common, load_config_errors)
{
    tb_error err;
    cfg *c = (cfg *)1;
    char *a1[] = {"cmd", "--config", NULL};
    int n1 = 2;
    cr_assert_eq(app_load_config(&n1, a1, &c, &err), TB_ERR_CONFIG);
    cr_assert_null(c);
    cr_assert_str_eq(err.msg, "--config needs a file name");
    char *a2[] = {"cmd", "--set", "=x", NULL};
    int n2 = 3;
    cr_assert_eq(app_load_config(&n2, a2, &c, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "--set '=x': expected key=value");
    char *a3[] = {"cmd", "--set", "sink=stdout", "--set", "offsets.storage=file", "--set", "log.level=loud", NULL};
    int n3 = 7;
    cr_assert_eq(app_load_config(&n3, a3, &c, &err), TB_ERR_CONFIG);
    cr_assert_str_eq(err.msg, "--set: log.level: 'loud' is not one of error, warn, info, debug, trace");
}

Test(app_common, env_applies_between_file_and_set)
{
    setenv("TRIBUTARY_TOPIC_PREFIX", "env", 1);
    setenv("TRIBUTARY_NAME", "env", 1);
    char *argv[] = {"cmd", "--set", "sink=stdout", "--set", "offsets.storage=file", "--set", "name=set", NULL};
    int argc = 7;
    cfg *c = NULL;
    tb_error err;
    cr_assert_eq(app_load_config(&argc, argv, &c, &err), TB_OK, "%s", err.msg);
    cr_assert_str_eq(cfg_get_str(c, "topic.prefix"), "env");
    cr_assert_str_eq(cfg_get_str(c, "name"), "set");
    cr_assert_eq(argc, 1);
    cfg_free(c);
    unsetenv("TRIBUTARY_TOPIC_PREFIX");
    unsetenv("TRIBUTARY_NAME");
}

Test(app_common, fail_prints_one_line_and_maps_exit_codes)
{
    tb_error err;
    tb_error_set(&err, TB_ERR_CONFIG, false, "two\nlines");
    cr_assert_eq(app_fail("x", &err), 2);
    tb_error_set(&err, TB_ERR_IO, false, "io");
    cr_assert_eq(app_fail("x", &err), 1);
}

Test(app_common, first_signal_sets_the_flag)
{
    app_install_signals();
    cr_assert_eq(app_stop_requested, 0);
    raise(SIGTERM);
    cr_assert_eq(app_stop_requested, 1);
}

Test(app_common, second_signal_kills, .signal = SIGINT)
{
    app_install_signals();
    raise(SIGINT);
    cr_assert_eq(app_stop_requested, 1);
    raise(SIGINT);
    cr_assert_fail("still alive after the second SIGINT");
}

static int prefix_warns;
static char prefix_line[1024];

static void prefix_sink(tb_log_level level, const char *line, void *opaque)
{
    (void)opaque;
    if (level == TB_LOG_WARN && strstr(line, "topic.prefix")) {
        prefix_warns++;
        snprintf(prefix_line, sizeof prefix_line, "%s", line);
    }
}

/* topic.prefix as the topics are named: `run` (evt_topic_name) and `cache` (its default regex and
 * schema topic) take the same sanitized prefix, with a WARN naming both forms. */
Test(app_common, topic_prefix_sanitized_like_the_topics)
{
    cfg *c = cfg_new();
    tb_error err;
    tb_buf b, t;
    tb_buf_init(&b, 0);
    tb_buf_init(&t, 0);
    tb_log_set_sink(prefix_sink, NULL);
    cr_assert_eq(cfg_set(c, "topic.prefix", "bad prefix!", "t", &err), TB_OK);
    cr_assert_str_eq(app_topic_prefix(c, &b), "bad_prefix_");
    cr_assert_eq(evt_topic_name("bad prefix!", "app", "t", &t), TB_OK);
    cr_assert_eq(strncmp(tb_buf_cstr(&t), tb_buf_cstr(&b), b.len), 0, "%s", tb_buf_cstr(&t));
    cr_assert_eq(prefix_warns, 1);
    cr_expect_not_null(strstr(prefix_line, "'bad prefix!'"), "%s", prefix_line);
    cr_expect_not_null(strstr(prefix_line, "'bad_prefix_'"), "%s", prefix_line);
    cr_assert_eq(cfg_set(c, "topic.prefix", "good.p-1_x", "t", &err), TB_OK);
    cr_assert_str_eq(app_topic_prefix(c, &b), "good.p-1_x");
    cr_assert_eq(prefix_warns, 1, "no WARN for a prefix Kafka takes");
    tb_log_set_sink(NULL, NULL);
    tb_buf_free(&b);
    tb_buf_free(&t);
    cfg_free(c);
}
