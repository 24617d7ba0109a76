/* The `tributary` binary: help, config errors, exit codes, status. */
#include <dlfcn.h>
#include <librdkafka/rdkafka.h>
#include <link.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "app_status.h"
#include "cfg.h"
#include "json_oracle.h"
#include "run_util.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tb-cli-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cli, .init = setup, .fini = teardown);

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

Test(cli, help_exits_0)
{
    run_result r = run_tributary((const char *[]){"--help", NULL}, NULL);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err.data);
    cr_assert_not_null(strstr(r.out.data, "usage: tributary <command>"));
    cr_assert_eq(r.err.len, 0, "stderr: %s", r.err.data);
    cr_assert_not_null(strstr(r.out.data, "status"));
    run_result_free(&r);
}

/* --version names the libraries the binary runs with, as the libraries themselves report them. */
Test(cli, version_names_the_libraries)
{
    run_result r = run_tributary((const char *[]){"--version", NULL}, NULL);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err.data);
    char want[128];
    snprintf(want, sizeof want, "\nlibrdkafka %s\n", rd_kafka_version_str());
    cr_expect_not_null(strstr(r.out.data, want), "no '%s' in:\n%s", want, r.out.data);
    snprintf(want, sizeof want, "\nSQLite %s\n", sqlite3_libversion());
    cr_expect_not_null(strstr(r.out.data, want), "no '%s' in:\n%s", want, r.out.data);
    cr_expect(strncmp(r.out.data, "tributary ", 10) == 0, "%s", r.out.data);
    cr_expect_not_null(strstr(r.out.data, "\nMariaDB Connector/C 3."), "%s", r.out.data);
    cr_expect_not_null(strstr(r.out.data, "\nJansson 2."), "%s", r.out.data);
    cr_expect_not_null(strstr(r.out.data, "\nlibmicrohttpd "), "%s", r.out.data);
    run_result_free(&r);
}

/* libcurl, libavro and libmicrohttpd are loaded at their first use (DESIGN 2): a command that
 * uses none of them maps none of them, nor their own dependencies (GnuTLS, Kerberos, snappy). The
 * dynamic loader's own trace is the oracle. */
Test(cli, optional_libraries_are_not_loaded_unless_used)
{
    run_result r = run_tributary((const char *[]){"--help", NULL}, (const char *[]){"LD_DEBUG=libs", NULL});
    cr_assert_eq(r.status, 0, "stderr: %s", r.err.data);
    cr_assert_not_null(strstr(r.err.data, "librdkafka.so.1"), "no loader trace:\n%.2000s", r.err.data);
    const char *absent[] = {"libcurl.so", "libavro.so", "libmicrohttpd.so", "libgnutls.so", "libkrb5", "libsnappy.so"};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        cr_expect_null(strstr(r.err.data, absent[i]), "%s is loaded by --help", absent[i]);
    run_result_free(&r);
}

/* The file a shared library name resolves to, as the dynamic loader finds it. */
static void lib_path(const char *soname, char *out, size_t cap)
{
    void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    cr_assert_not_null(h, "%s: %s", soname, dlerror());
    struct link_map *lm = NULL;
    cr_assert_eq(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
    snprintf(out, cap, "%s", lm->l_name);
    dlclose(h);
}

/* A host without the library a setting needs: exit 2 at start, naming the library, what needs it
 * and the package to install. The library is hidden in a mount namespace of the command only. */
Test(cli, missing_optional_library_is_exit_2_naming_it)
{
    char lib[512];
    lib_path("libmicrohttpd.so.12", lib, sizeof lib);
    char body[512];
    snprintf(body, sizeof body,
             "name=dl_missing\nsource.type=mysql\nsource.host=127.0.0.1\nsource.port=1\nsource.user=u\n"
             "source.password=p\ntopic.prefix=dl\nkafka.bootstrap.servers=127.0.0.1:1\noffsets.storage=file\n"
             "offsets.file=%s/off\nha.enabled=false\nmetrics.listen=127.0.0.1:0\n",
             dir);
    const char *conf = write_file("dl.properties", body);
    char errf[128], cmd[2048];
    snprintf(errf, sizeof errf, "%s/dl.err", dir);
    snprintf(cmd, sizeof cmd, "unshare -m sh -c 'mount --bind /dev/null %s && exec %s run --config %s' 2>%s", lib,
             TRIBUTARY_BIN, conf, errf);
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "%s", cmd);
    tb_buf err;
    tb_buf_init(&err, 0);
    run_slurp(errf, &err);
    cr_assert_eq(WEXITSTATUS(st), 2, "%s\n%s", cmd, tb_buf_cstr(&err));
    cr_expect_not_null(strstr(tb_buf_cstr(&err), "metrics.listen"), "%s", tb_buf_cstr(&err));
    cr_expect_not_null(strstr(tb_buf_cstr(&err), "libmicrohttpd.so.12"), "%s", tb_buf_cstr(&err));
    cr_expect_not_null(strstr(tb_buf_cstr(&err), "install libmicrohttpd12"), "%s", tb_buf_cstr(&err));
    tb_buf_free(&err);
}

Test(cli, no_arguments_is_usage_error)
{
    run_result r = run_tributary((const char *[]){NULL}, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_not_null(strstr(r.err.data, "usage: tributary"));
    run_result_free(&r);
}

Test(cli, help_config_lists_every_key)
{
    run_result r = run_tributary((const char *[]){"--help-config", NULL}, NULL);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err.data);
    size_t n;
    const cfg_prop *props = cfg_props(&n);
    for (size_t i = 0; i < n; i++) {
        char needle[256];
        snprintf(needle, sizeof(needle), "\n  %s (", props[i].name);
        cr_assert_not_null(strstr(r.out.data, needle), "--help-config lacks %s", props[i].name);
    }
    run_result_free(&r);
}

/* `tributary --help-config <flag>` prints exactly the committed file (both are generated). */
static void expect_committed(const char *flag, const char *path)
{
    run_result r = run_tributary((const char *[]){"--help-config", flag, NULL}, NULL);
    cr_assert_eq(r.status, 0);
    tb_buf doc;
    tb_buf_init(&doc, 0);
    run_slurp(path, &doc);
    cr_assert(doc.len == r.out.len && memcmp(doc.data, r.out.data, doc.len) == 0,
              "%s differs from `tributary --help-config %s`: regenerate it", path, flag);
    tb_buf_free(&doc);
    run_result_free(&r);
}

Test(cli, help_config_markdown_is_the_committed_doc)
{
    expect_committed("--markdown", TB_SOURCE_DIR "/docs/configuration.md");
}

/* The man page is generated too (app/main.c, config/cfg_help.c), and groff
 * reads it without a warning (scripts/deps installs groff-base). */
Test(cli, help_config_man_is_the_committed_page)
{
    expect_committed("--man", TB_SOURCE_DIR "/docs/tributary.1");
    FILE *p = popen("groff -man -Tutf8 -ww -z " TB_SOURCE_DIR "/docs/tributary.1 2>&1", "r");
    cr_assert_not_null(p);
    char line[512];
    size_t warnings = 0;
    while (fgets(line, sizeof line, p)) {
        cr_log_error("groff: %s", line);
        warnings++;
    }
    cr_expect_eq(pclose(p), 0, "groff failed (is groff-base installed? scripts/deps installs it)");
    cr_expect_eq(warnings, 0, "groff warns about docs/tributary.1");
}

Test(cli, every_subcommand_answers_help)
{
    static const char *const cmds[] = {"run", "snapshot", "cache", "offsets", "status", "decode", "sqlite"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        run_result r = run_tributary((const char *[]){cmds[i], "--help", NULL}, NULL);
        cr_assert_eq(r.status, 0, "%s --help exit %d, stderr: %s", cmds[i], r.status, r.err.data);
        cr_assert_gt(r.out.len, 0, "%s --help prints something", cmds[i]);
        cr_assert_eq(r.err.len, 0, "%s --help: stderr: %s", cmds[i], r.err.data);
        run_result_free(&r);
    }
}

/* Nested subcommands answer --help too, and --help is never taken for a value. */
Test(cli, nested_subcommands_answer_help)
{
    const char *const *const argvs[] = {
        (const char *[]){"decode", "--wal", "--help", NULL},
        (const char *[]){"cache", "get", "--help", NULL},
        (const char *[]){"cache", "status", "--help", NULL},
        (const char *[]){"cache", "publish", "--help", NULL},
        (const char *[]){"sqlite", "uninstall", "--help", NULL},
    };
    for (size_t i = 0; i < sizeof(argvs) / sizeof(argvs[0]); i++) {
        run_result r = run_tributary(argvs[i], NULL);
        cr_assert_eq(r.status, 0, "%s %s --help: exit %d, stderr: %s", argvs[i][0], argvs[i][1], r.status, r.err.data);
        cr_assert_not_null(strstr(r.out.data, "usage: tributary"), "%s %s: %s", argvs[i][0], argvs[i][1], r.out.data);
        cr_assert_eq(r.err.len, 0, "stderr: %s", r.err.data);
        run_result_free(&r);
    }
}

/* Unknown options and options without their value are usage errors (exit 2) naming them. */
Test(cli, unknown_options_are_refused)
{
    static const struct {
        const char *argv[6];
        const char *says;
    } cases[] = {
        {{"decode", "--wal", "x.db", "--frobnicate", NULL}, "unknown option '--frobnicate'"},
        {{"decode", "--wal", "x.db", "stray", NULL}, "unexpected argument 'stray'"},
        {{"decode", "--wal", NULL}, "--wal needs a value"},
        {{"cache", "get", "--db", "c.db", "--tabel", NULL}, "unknown option '--tabel'"},
        {{"cache", "status", "--db", "c.db", "--broker=x", NULL}, "unknown option '--broker=x'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_result r = run_tributary(cases[i].argv, NULL);
        cr_assert_eq(r.status, 2, "case %zu: exit %d, stderr: %s", i, r.status, r.err.data);
        cr_assert_not_null(strstr(r.err.data, cases[i].says), "case %zu: stderr: %s", i, r.err.data);
        run_result_free(&r);
    }
}

/* A command that needs a configuration and got no --config says so first. */
Test(cli, missing_config_is_named)
{
    run_result r = run_tributary((const char *[]){"run", NULL}, NULL);
    cr_assert_eq(r.status, 2, "stderr: %s", r.err.data);
    cr_assert_not_null(strstr(r.err.data, "no --config FILE given"), "stderr: %s", r.err.data);
    run_result_free(&r);
}

Test(cli, unknown_command_exits_2)
{
    run_result r = run_tributary((const char *[]){"frobnicate", NULL}, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_not_null(strstr(r.err.data, "tributary: unknown command 'frobnicate'"));
    run_result_free(&r);
}

Test(cli, bad_config_is_one_line_naming_key_and_line)
{
    const char *path = write_file("bad.properties", "# connector\nname=shop\n\nsoruce.host=db1\n");
    run_result r = run_tributary((const char *[]){"status", "--config", path, NULL}, NULL);
    cr_assert_eq(r.status, 2, "exit %d", r.status);
    char want[512];
    snprintf(want, sizeof(want),
             "tributary status: %s:4: unknown key 'soruce.host' (did you mean 'source.host'?)\n", path);
    cr_assert_str_eq(r.err.data, want);
    cr_assert_eq(r.out.len, 0);
    run_result_free(&r);
}

Test(cli, bad_values_from_each_origin)
{
    const char *path = write_file("v.properties", "sink=stdout\noffsets.storage=file\nsource.port=99999\n");
    run_result r = run_tributary((const char *[]){"status", "--config", path, NULL}, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(count_lines(r.err.data), 1, "%s", r.err.data);
    cr_assert_not_null(strstr(r.err.data, ":3: source.port: 99999 is out of range (must be between 1 and 65535)"),
                       "%s", r.err.data);
    run_result_free(&r);

    r = run_tributary((const char *[]){"status", "--set", "sink=stdout", "--set", "offsets.storage=file",
                                       "--set", "exactly.once=perhaps", NULL},
                      NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err.data, "tributary status: --set: exactly.once: 'perhaps' is not a boolean (use true or false)\n");
    run_result_free(&r);

    r = run_tributary((const char *[]){"status", NULL}, (const char *[]){"TRIBUTARY_SOURCE_TYPE=oracle", NULL});
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.err.data,
                     "tributary status: environment TRIBUTARY_SOURCE_TYPE: source.type: 'oracle' is not one of mysql, sqlite\n");
    run_result_free(&r);

    r = run_tributary((const char *[]){"status", NULL}, NULL);
    cr_assert_eq(r.status, 2, "missing kafka.bootstrap.servers for the default sink");
    cr_assert_str_eq(r.err.data, "tributary status: no --config FILE given, and the environment and --set do not make "
                                 "a complete configuration: sink=kafka (the default) needs kafka.bootstrap.servers\n");
    run_result_free(&r);
}

Test(cli, set_overrides_env_overrides_file)
{
    /* The status file path comes from the name: which name won decides the message. */
    const char *path = write_file("p.properties", "sink=stdout\noffsets.storage=file\nname=from_file\n");
    char off[128];
    snprintf(off, sizeof(off), "offsets.file=%s/offsets", dir);
    run_result r = run_tributary((const char *[]){"status", "--config", path, "--set", off, NULL},
                                 (const char *[]){"TRIBUTARY_NAME=from_env", NULL});
    cr_assert_eq(r.status, 3, "no status file: not running");
    cr_assert_not_null(strstr(r.err.data, "/from_env.status.json"), "%s", r.err.data);
    run_result_free(&r);
    r = run_tributary((const char *[]){"status", "--config", path, "--set", off, "--set", "name=from_set", NULL},
                      (const char *[]){"TRIBUTARY_NAME=from_env", NULL});
    cr_assert_not_null(strstr(r.err.data, "/from_set.status.json"), "%s", r.err.data);
    run_result_free(&r);
}

Test(cli, status_without_file_exits_3)
{
    char set_file[160];
    snprintf(set_file, sizeof(set_file), "status.file=%s/none.json", dir);
    run_result r = run_tributary((const char *[]){"status", "--set", "sink=stdout", "--set", "offsets.storage=file",
                                                  "--set", set_file, NULL},
                                 NULL);
    cr_assert_eq(r.status, 3);
    char want[400];
    snprintf(want, sizeof(want),
             "tributary status: no status file %s/none.json (has `tributary run` been started with this "
             "configuration?)\n",
             dir);
    cr_assert_str_eq(r.err.data, want);
    run_result_free(&r);
}

Test(cli, status_prints_the_file_run_writes)
{
    char spath[160], set_file[200];
    snprintf(spath, sizeof(spath), "%s/shop.status.json", dir);
    snprintf(set_file, sizeof(set_file), "status.file=%s", spath);
    tb_position p;
    tb_position_init(&p);
    p.kind = TB_POS_MYSQL;
    p.mariadb = true;
    p.server_id = 1;
    p.pos = 1234;
    cr_assert_eq(tb_position_set_file(&p, "mysql-bin.000003"), TB_OK);
    cr_assert_eq(tb_position_set_gtid(&p, "0-1-7"), TB_OK);
    app_status st = {
        .name = "shop", .state = "streaming", .position = &p, .lag_ms = 120, .events_behind = 3,
        .events_total = 4242, .events_per_sec = 1500.54, .snapshot_state = "done", .snapshot_rows = 1000,
        .started_ms = tb_wall_ms() - 60000,
    };
    tb_error err;
    cr_assert_eq(app_status_write(spath, &st, &err), TB_OK, "%s", err.msg);

    run_result r = run_tributary((const char *[]){"status", "--set", "sink=stdout", "--set", "offsets.storage=file",
                                                  "--set", set_file, NULL},
                                 NULL);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err.data);
    cr_assert_eq(r.err.len, 0, "nothing on stderr (no sanitizer report): %s", r.err.data);
    const char *o = r.out.data;
    cr_assert_not_null(strstr(o, "connector:      shop\n"), "%s", o);
    cr_assert_not_null(strstr(o, "position:       mariadb;server_id=1;file=mysql-bin.000003;pos=1234"), "%s", o);
    cr_assert_not_null(strstr(o, "lag:            120 ms\n"), "%s", o);
    cr_assert_not_null(strstr(o, "events behind:  3\n"), "%s", o);
    cr_assert_not_null(strstr(o, "events total:   4242\n"), "%s", o);
    cr_assert_not_null(strstr(o, "throughput:     1500.5 events/s\n"), "%s", o);
    cr_assert_not_null(strstr(o, "snapshot:       done (1000 rows)\n"), "%s", o);
    /* The writer (this test process) is alive. */
    cr_assert_not_null(strstr(o, "state:          streaming\n"), "%s", o);
    run_result_free(&r);

    r = run_tributary((const char *[]){"status", "--set", "sink=stdout", "--set", "offsets.storage=file", "--set",
                                       set_file, "--json", NULL},
                      NULL);
    cr_assert_eq(r.status, 0);
    json_t *sj = jo_parse(r.out.data, r.out.len);
    cr_assert(jo_expect_at(sj, JO_PATH("name"), "\"shop\"") && jo_expect_at(sj, JO_PATH("lag_ms"), "120") &&
                  jo_expect_at(sj, JO_PATH("events_behind"), "3"),
              "%s", r.out.data);
    json_decref(sj);
    run_result_free(&r);
    tb_position_free(&p);
}

Test(cli, status_of_corrupt_file_exits_1)
{
    const char *spath = write_file("s.json", "{not json");
    char set_file[300];
    snprintf(set_file, sizeof(set_file), "status.file=%s", spath);
    run_result r = run_tributary((const char *[]){"status", "--set", "sink=stdout", "--set", "offsets.storage=file",
                                                  "--set", set_file, NULL},
                                 NULL);
    cr_assert_eq(r.status, 1);
    cr_assert_eq(count_lines(r.err.data), 1, "%s", r.err.data);
    cr_assert_not_null(strstr(r.err.data, "not a status file"), "%s", r.err.data);
    run_result_free(&r);
}

/* Files tributary creates are private whatever the caller's umask (here 022): the offsets file
 * of `offsets set` is 0600; file.mode=0640 widens it on purpose; a mode without 0600 is refused. */
Test(cli, created_files_are_private_under_umask_022)
{
    mode_t old = umask(022);
    char off[160], off2[160], set1[200], set2[200];
    snprintf(off, sizeof off, "%s/private.offsets", dir);
    snprintf(off2, sizeof off2, "%s/group.offsets", dir);
    snprintf(set1, sizeof set1, "offsets.file=%s", off);
    snprintf(set2, sizeof set2, "offsets.file=%s", off2);
    const char *pos = "mariadb;server_id=1;file=binlog.000001;pos=4;row=0;gtid=0-1-1";
    run_result r = run_tributary((const char *[]){"offsets", "set", "--position", pos, "--set", "sink=stdout",
                                                  "--set", "offsets.storage=file", "--set", set1, NULL},
                                 NULL);
    cr_assert_eq(r.status, 0, "%s", r.err.data);
    run_result_free(&r);
    struct stat st;
    cr_assert_eq(stat(off, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "offsets file mode %o under umask 022", st.st_mode & 0777);
    r = run_tributary((const char *[]){"offsets", "set", "--position", pos, "--set", "sink=stdout", "--set",
                                       "offsets.storage=file", "--set", set2, "--set", "file.mode=0640", NULL},
                      NULL);
    cr_assert_eq(r.status, 0, "%s", r.err.data);
    run_result_free(&r);
    cr_assert_eq(stat(off2, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0640, "file.mode=0640 gives %o", st.st_mode & 0777);
    r = run_tributary((const char *[]){"offsets", "show", "--set", "sink=stdout", "--set", "offsets.storage=file",
                                       "--set", set1, "--set", "file.mode=0444", NULL},
                      NULL);
    cr_expect_eq(r.status, 2);
    cr_expect_not_null(strstr(r.err.data, "file.mode: '0444'"), "%s", r.err.data);
    run_result_free(&r);
    umask(old);
}
