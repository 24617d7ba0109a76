/*
 * ksink_lease: one active instance per connector name (DESIGN 12).
 *
 * Every `tributary run` of a connector takes the lease before it opens its
 * sink or reads its stored position, and stops producing as soon as it can
 * no longer be sure it holds it. Instances that do not hold it are standbys.
 *
 * offsets.storage=kafka: the lease is group membership. The instance joins
 * the consumer group "<name>.leader" (cooperative-sticky assignor, so a
 * standby joining never moves the partition away from the active instance),
 * subscribed to the one-partition offsets topic "<name>.offsets" (created if
 * missing); whoever is assigned partition 0 holds the lease. It never reads
 * from that partition (paused). client.id is "<name>.leader@<host>:<pid>",
 * which is how a standby names the active instance (DescribeGroups: the
 * member whose assignment holds the partition).
 *   session.timeout.ms  = S = 2/5 of ha.takeover.ms (6 s by default)
 *   heartbeat.interval.ms = H = S / 6
 * The holder renews every H: an OffsetCommit for the group (offset = the
 * wall-clock ms of the renewal), which the coordinator accepts only from a
 * current member of the current generation. A renewal sent at T0 that
 * succeeds proves the instance was a member after T0; the coordinator
 * cannot evict it before about T0 - H + S (its last heartbeat is at most H
 * older than a working commit), and a standby starts only after that
 * eviction and a rebalance. So the holder treats the lease as expired at
 * T0 + S - 2H. From then on, and when the group protocol revokes the
 * partition or reports the assignment lost (librdkafka's own session check
 * included), ksink_lease_check() lets nothing be produced until a renewal
 * succeeds, or the group's committed offset says who held the lease
 * meanwhile: every holder renews once before it produces anything (the
 * lease is HELD only after that), so while the committed offset is still
 * this instance's own last renewal nobody else held it (and the partition
 * coming back means: go on), and once it differs the lease is lost.
 * A paused process (SIGSTOP, a frozen VM) resumes past that deadline, so
 * its first check asks the coordinator before anything else is produced.
 *
 * offsets.storage=file: the lease is an exclusive flock() on
 * "<offsets.file>.lock" (the offsets file itself is replaced by rename at
 * every commit, so it cannot carry a lock); the holder writes "<host>:<pid>"
 * into it. Released by the kernel when the process ends. One host only.
 *
 * Ownership: ksink_lease_open() returns an object freed by
 * ksink_lease_close() (NULL-safe), which leaves the group (or unlocks): call
 * it only after the sink is closed, so that a standby cannot start while
 * this instance still produces. c is borrowed until then. One thread.
 */
#ifndef KSINK_LEASE_H
#define KSINK_LEASE_H

#include <stdbool.h>
#include <stdint.h>
#include "cfg.h"
#include "tb_buf.h"
#include "tb_error.h"

typedef struct ksink_lease ksink_lease;

typedef enum ksink_lease_state {
    KSINK_LEASE_WAITING, /* standby: not (yet) assigned */
    KSINK_LEASE_HELD,    /* this instance is the active one */
    KSINK_LEASE_LOST,    /* held, then lost: stop producing */
} ksink_lease_state;

/* Join the group (or open the lock file). Does not wait for the lease.
 * TB_ERR_CONFIG for a bad kafka.* key or an offsets topic that is missing
 * with topic.create=false. */
TB_MUST_USE tb_code ksink_lease_open(const cfg *c, ksink_lease **out, tb_error *err);

/* Serve the group protocol (callbacks) for up to timeout_ms and say where
 * the lease stands. Errors are fatal (configuration, missing topic). */
TB_MUST_USE tb_code ksink_lease_poll(ksink_lease *l, int timeout_ms, ksink_lease_state *state, tb_error *err);

/* The holder, "<host>:<pid>", appended to out when known (a standby asks
 * the group coordinator, at most once a second; may block up to 5 s).
 * False when no other instance is known to hold it. */
bool ksink_lease_holder(ksink_lease *l, tb_buf *out);

/* This instance's "<host>:<pid>". Borrowed, valid until close. */
const char *ksink_lease_self(const ksink_lease *l);

/* The holder's check before it produces or commits: TB_OK while the lease
 * is held and renewed (cheap: a clock read, a non-blocking poll every
 * 100 ms, a renewal every H). Unconfirmed (see above): it waits up to 2H,
 * then TB_ERR_STATE with retriable=true (call again; produce nothing
 * meanwhile). Lost: TB_ERR_STATE, not retriable, naming why, and from then
 * on always that. */
TB_MUST_USE tb_code ksink_lease_check(ksink_lease *l, tb_error *err);

/* Leave the group (or unlock and close the file). NULL-safe. */
void ksink_lease_close(ksink_lease *l);

#endif
