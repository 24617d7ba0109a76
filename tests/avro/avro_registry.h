/*
 * avro_registry.h: the schema registry as the Avro integration tests ask it (curl against the
 * testenv registry, TRIBUTARY_TEST_REGISTRY_URL). Header-only, for one Criterion executable.
 *
 *   registry()                        the registry's Confluent-compatible base URL
 *   set_compatibility(subject, level) PUT /config/<subject>
 *   subject_versions(subject)         GET /subjects/<subject>/versions (a Jansson array)
 */
#ifndef AVRO_REGISTRY_H
#define AVRO_REGISTRY_H

#include <jansson.h>

#include "../e2e/e2e_util.h"

static inline const char *registry(void) { return tb_itest_env("TRIBUTARY_TEST_REGISTRY_URL"); }

/* The subject's compatibility level. Each attempt is bounded (20 s) and tried again: the registry
 * has been seen to hold a PUT without an answer (the test then waited for its own timeout). */
static inline void set_compatibility(const char *subject, const char *level)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "curl -fsS --max-time 20 --retry 5 --retry-delay 1 --retry-all-errors -X PUT "
             "-H 'Content-Type: application/vnd.schemaregistry.v1+json' "
             "--data '{\"compatibility\":\"%s\"}' '%s/config/%s' >&2",
             level, registry(), subject);
    fflush(NULL);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* The registry's versions of subject: a JSON array (caller decrefs). */
static inline json_t *subject_versions(const char *subject)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "curl -fsS --max-time 20 --retry 5 --retry-delay 1 --retry-all-errors '%s/subjects/%s/versions'",
             registry(), subject);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    int st = pclose(p);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", cmd, st);
    json_t *v = jo_parse(buf, n);
    cr_assert(json_is_array(v), "%s: %.*s", cmd, (int)n, buf);
    return v;
}

#endif
