/*
 * ksink_track: the in-flight transaction tracker of the Kafka sink (ksink.c
 * produces, the delivery callback there counts acknowledgements).
 *
 * IN-FLIGHT TRACKER
 *  ring[] holds the source transactions that are not committable yet, oldest
 *  first; transaction sequence numbers are consecutive, so the slot of seq s
 *  is ring[(head + s - head_seq) % cap]. Each message's delivery opaque is
 *  its transaction's seq (0 = offsets record, not tracked). The delivery
 *  callback decrements `pending`; ksink_advance() pops closed transactions
 *  with pending == 0 from the head, and `committable` becomes the position of
 *  the newest popped one that has a position kept. A failed delivery leaves
 *  pending raised forever, so the position cannot pass it, and records the
 *  error for the next call.
 *  Positions are kept apart from the 16-byte slots: `last_pos` always holds
 *  the newest closed transaction's, and marks[] (a FIFO in seq order) those
 *  of every transaction closed while at most KSINK_MARK_EVERY were in flight,
 *  else of one in KSINK_MARK_EVERY. So committable is exact whenever the
 *  acknowledgements catch up with the newest closed transaction (always at a
 *  flush) or few transactions are in flight, and otherwise lags by fewer than
 *  KSINK_MARK_EVERY transactions, far less than offsets.commit.interval.ms
 *  lets a restart repeat anyway. No allocation per transaction: the position
 *  buffers are reused.
 *  After an aborted Kafka transaction (exactly.once) reports for sequence
 *  numbers below `valid_seq` are ignored.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ksink_int.h"

#define KSINK_MARK_EVERY 64

ksink_tx *ksink_tail(ksink *ks)
{
    return ks->count ? &ks->ring[(ks->head + ks->count - 1) & (ks->cap - 1)] : NULL;
}

/* ring (cap elements of elem bytes, the oldest at *head) doubled (cap 0: to
 * initial) and unwrapped so the oldest is at index 0; the new slots are
 * zeroed. All cap old slots move (free ones may hold reusable buffers).
 * Returns the new ring (ring freed, *cap and *head updated), or NULL when out
 * of memory (ring, *cap and *head unchanged). */
static void *ksink_ring_grow(void *ring, size_t elem, size_t *cap, size_t *head, size_t initial)
{
    size_t ncap = *cap ? *cap * 2 : initial;
    char *nr = malloc(ncap * elem), *old = ring;
    if (!nr)
        return NULL;
    size_t first = *cap - *head; /* slots from head to the end of the old ring */
    if (*cap) {
        memcpy(nr, old + *head * elem, first * elem);
        memcpy(nr + first * elem, old, *head * elem);
    }
    memset(nr + *cap * elem, 0, (ncap - *cap) * elem);
    free(old);
    *cap = ncap;
    *head = 0;
    return nr;
}

/* The open transaction, starting one when the last one is closed. */
ksink_tx *ksink_cur_tx(ksink *ks, tb_error *err)
{
    ksink_tx *t = ksink_tail(ks);
    if (t && !t->closed)
        return t;
    if (ks->count == ks->cap) {
        ksink_tx *nr = ksink_ring_grow(ks->ring, sizeof(*ks->ring), &ks->cap, &ks->head, 1024);
        if (!nr) {
            tb_error_set(err, TB_ERR_NOMEM, false, "in-flight tracker: out of memory (%zu transactions)", ks->count);
            return NULL;
        }
        ks->ring = nr;
    }
    if (ks->count == 0)
        ks->head_seq = ks->next_seq;
    assert(ks->cap && (ks->cap & (ks->cap - 1)) == 0 && ks->count < ks->cap && "ring: capacity a power of two, room");
    assert(ks->head_seq + ks->count == ks->next_seq && "ring: slots and sequence numbers agree");
    t = &ks->ring[(ks->head + ks->count) & (ks->cap - 1)];
    ks->count++;
    ks->next_seq++;
    t->pending = 0;
    t->produced = false;
    t->closed = false;
    return t;
}

/* s into *buf, reusing *buf's memory when it is long enough (every buffer
 * here was allocated for at least its string's length + 1). */
static tb_code ksink_str_assign(char **buf, const char *s)
{
    if (!s) {
        free(*buf);
        *buf = NULL;
        return TB_OK;
    }
    if (*buf && strcmp(*buf, s) == 0)
        return TB_OK;
    size_t n = strlen(s);
    if (!*buf || strlen(*buf) < n) {
        char *nb = realloc(*buf, n + 1);
        if (!nb)
            return TB_ERR_NOMEM;
        *buf = nb;
    }
    memcpy(*buf, s, n + 1);
    return TB_OK;
}

/* tb_position_copy without an allocation per transaction: dst's strings are
 * reused. On failure dst is left kind NONE (never half old, half new), still
 * owning its buffers. */
static tb_code ksink_pos_assign(tb_position *dst, const tb_position *src)
{
    char *file = dst->file, *gtid = dst->gtid_set;
    tb_code rc = ksink_str_assign(&file, src->file);
    if (rc == TB_OK)
        rc = ksink_str_assign(&gtid, src->gtid_set);
    *dst = *src;
    dst->file = file;
    dst->gtid_set = gtid;
    if (rc != TB_OK)
        dst->kind = TB_POS_NONE;
    return rc;
}

/* Keep pos as the position of closed transaction seq (see IN-FLIGHT TRACKER). */
tb_code ksink_keep_pos(ksink *ks, uint64_t seq, const tb_position *pos)
{
    tb_code rc;
    if ((rc = ksink_pos_assign(&ks->last_pos, pos)) != TB_OK)
        return rc;
    ks->last_seq = seq;
    if (ks->count > KSINK_MARK_EVERY && ks->mcount &&
        seq - ks->marks[(ks->mhead + ks->mcount - 1) & (ks->mcap - 1)].seq < KSINK_MARK_EVERY)
        return TB_OK;
    if (ks->mcount == ks->mcap) {
        ksink_mark *nm = ksink_ring_grow(ks->marks, sizeof(*ks->marks), &ks->mcap, &ks->mhead, 64);
        if (!nm)
            return TB_ERR_NOMEM;
        ks->marks = nm;
    }
    ksink_mark *m = &ks->marks[(ks->mhead + ks->mcount) & (ks->mcap - 1)];
    if ((rc = ksink_pos_assign(&m->pos, pos)) != TB_OK)
        return rc;
    m->seq = seq;
    ks->mcount++;
    return TB_OK;
}

void ksink_advance(ksink *ks)
{
    if (ks->eos)
        return; /* positions move only at commit_transaction */
    uint64_t from = ks->head_seq;
    while (ks->count > 0) {
        ksink_tx *t = &ks->ring[ks->head];
        assert(ks->count <= ks->cap && ks->head < ks->cap && "ring: head and count within the capacity");
        if (!t->closed || t->pending != 0)
            break;
        ks->head = (ks->head + 1) & (ks->cap - 1);
        ks->count--;
        ks->head_seq++;
    }
    if (ks->head_seq == from)
        return;
    uint64_t popped = ks->head_seq - 1; /* newest transaction now fully acknowledged */
    ksink_mark *newest = NULL;
    while (ks->mcount > 0 && ks->marks[ks->mhead].seq <= popped) {
        newest = &ks->marks[ks->mhead];
        ks->mhead = (ks->mhead + 1) & (ks->mcap - 1);
        ks->mcount--;
    }
    if (popped == ks->last_seq) {
        /* exact; on a failed copy committable is NONE until the next advance, so no
         * commit happens meanwhile (the stored position stays behind, which is safe) */
        (void)ksink_pos_assign(&ks->committable, &ks->last_pos);
    } else if (newest) {
        tb_position old = ks->committable; /* swapped: the mark keeps the old strings for reuse */
        ks->committable = newest->pos;
        newest->pos = old;
    }
}

void ksink_ring_clear(ksink *ks)
{
    ks->head = ks->count = 0;
    ks->head_seq = ks->next_seq;
    ks->mhead = ks->mcount = 0;
}

void ksink_ring_free(ksink *ks)
{
    for (size_t i = 0; i < ks->mcap; i++) /* free slots hold string buffers too */
        tb_position_free(&ks->marks[i].pos);
    free(ks->marks);
    free(ks->ring);
    tb_position_free(&ks->last_pos);
}
