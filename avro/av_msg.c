/*
 * av_msg: Avro messages read back as the Kafka Connect JSON the codec writes
 * (av_msg.h): the writer schema by its id from the registry, once per id;
 * the Avro schema turned back into the Connect schema it was made from
 * (av_connect.c); the body read with av_dec.
 */
#include "av_msg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "av_dec.h"
#include "evt_json.h"
#include "sreg.h"

/* ============================================================ messages */

typedef struct av_msg_schema {
    uint32_t id;
    av_reader *rd;
    char *connect; /* the Connect schema's JSON text */
    size_t connect_len;
} av_msg_schema;

struct av_msg {
    sreg *reg;
    av_msg_schema *v;
    size_t n, cap;
};

tb_code av_msg_open(const sreg_opts *o, av_msg **out, tb_error *err)
{
    *out = NULL;
    av_msg *m = calloc(1, sizeof(*m));
    if (!m)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    tb_code rc = sreg_open(o, &m->reg, err);
    if (rc != TB_OK) {
        free(m);
        return rc;
    }
    *out = m;
    return TB_OK;
}

void av_msg_close(av_msg *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        av_reader_free(m->v[i].rd);
        free(m->v[i].connect);
    }
    free(m->v);
    sreg_close(m->reg);
    free(m);
}

bool av_msg_is_avro(const void *p, size_t len) { return p && len >= 5 && ((const uint8_t *)p)[0] == 0; }

static tb_code schema_of(av_msg *m, uint32_t id, av_msg_schema **out, tb_error *err)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].id == id) {
            *out = &m->v[i];
            return TB_OK;
        }
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        av_msg_schema *v = realloc(m->v, cap * sizeof(*v));
        if (!v)
            return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        m->v = v;
        m->cap = cap;
    }
    char *avsc = NULL;
    tb_code rc = sreg_schema_by_id(m->reg, id, &avsc, err); /* its error names the id and the registry */
    if (rc != TB_OK)
        return rc;
    av_msg_schema s = {id, NULL, NULL, 0};
    tb_buf cs;
    tb_buf_init(&cs, 0);
    rc = av_reader_new(avsc, strlen(avsc), &s.rd, err);
    if (rc == TB_OK)
        rc = av_msg_connect_schema(avsc, strlen(avsc), &cs, err);
    free(avsc);
    if (rc != TB_OK) {
        av_reader_free(s.rd);
        tb_buf_free(&cs);
        return tb_error_prefix(err, rc, "Avro schema id %u: ", id);
    }
    s.connect = tb_buf_detach(&cs, &s.connect_len);
    m->v[m->n] = s;
    *out = &m->v[m->n++];
    return TB_OK;
}

tb_code av_msg_json(av_msg *m, const void *msg, size_t len, tb_buf *out, tb_error *err)
{
    if (!av_msg_is_avro(msg, len))
        return tb_error_set(err, TB_ERR_INVALID, false, "not an Avro message (magic byte 0 and a schema id)");
    const uint8_t *p = msg;
    uint32_t id = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    av_msg_schema *s = NULL;
    tb_code rc = schema_of(m, id, &s, err);
    if (rc != TB_OK)
        return rc;
    tb_buf_reset(out);
    if ((rc = tb_buf_puts(out, "{\"schema\":")) != TB_OK || (rc = tb_buf_append(out, s->connect, s->connect_len)) != TB_OK ||
        (rc = tb_buf_puts(out, ",\"payload\":")) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    if ((rc = av_reader_json(s->rd, p + 5, len - 5, out, err)) != TB_OK)
        return tb_error_prefix(err, rc == TB_ERR_NOMEM ? rc : TB_ERR_INVALID, "Avro body (schema id %u): ", id);
    if ((rc = tb_buf_putc(out, '}')) != TB_OK)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    return TB_OK;
}
