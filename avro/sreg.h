/*
 * sreg: a client of a Confluent-compatible schema registry (REST over HTTP or
 * HTTPS, libcurl; bodies read and written with Jansson). DESIGN.md 4b.
 *
 *   POST {url}/subjects/{subject}/versions  {"schema":"<Avro schema text>"}  -> {"id":N}
 *   GET  {url}/schemas/ids/{id}                                              -> {"schema":"…"}
 *   GET  {url}/config/{subject}, else {url}/config                           -> {"compatibilityLevel":"…"}
 *
 * Registering a schema the subject already holds returns its existing id (the
 * registry's rule), so registering at every start is safe.
 *
 * ERRORS
 *  No answer (connection refused, timeout, TLS failure) and HTTP 5xx or 429:
 *  TB_ERR_IO with retriable=true. HTTP 409 (the schema is incompatible with
 *  the subject's versions under its compatibility level): TB_ERR_CONFIG,
 *  retriable=false, err naming the subject, the compatibility level and the
 *  registry's message. Any other refusal (401, 403, 404, 422): TB_ERR_CONFIG.
 *
 * OWNERSHIP
 *  sreg_open copies the strings of its options. One thread uses a sreg.
 */
#ifndef SREG_H
#define SREG_H

#include <stdint.h>
#include "tb_error.h"

typedef struct sreg sreg;

typedef struct sreg_opts {
    const char *url;       /* e.g. http://127.0.0.1:8080/apis/ccompat/v7 (no trailing '/') */
    const char *user;      /* basic auth user, or NULL */
    const char *password;  /* basic auth password, or NULL */
    const char *ca_file;   /* PEM CA bundle for https, or NULL (the system's) */
    long timeout_ms;       /* per request, connect included */
} sreg_opts;

TB_MUST_USE tb_code sreg_open(const sreg_opts *o, sreg **out, tb_error *err);
void sreg_close(sreg *r); /* NULL-safe */

/* Register schema (Avro JSON text) under subject; its id in *id. */
TB_MUST_USE tb_code sreg_register(sreg *r, const char *subject, const char *schema, uint32_t *id, tb_error *err);
/* The schema with this id; *schema is malloc'ed, the caller frees it. */
TB_MUST_USE tb_code sreg_schema_by_id(sreg *r, uint32_t id, char **schema, tb_error *err);
/* The subject's compatibility level (or the registry's default); caller frees. */
TB_MUST_USE tb_code sreg_compatibility(sreg *r, const char *subject, char **level, tb_error *err);

#endif
