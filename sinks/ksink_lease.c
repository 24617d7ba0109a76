/* ksink_lease: one active instance per connector name (see ksink_lease.h). */
#include "ksink_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "ksink_int.h"
#include "tb_clock.h"
#include "tb_log.h"

#define LEASE_POLL_EVERY_MS 100
#define LEASE_HOLDER_EVERY_MS 1000
#define LEASE_SLICE_MS 10 /* lease_serve's longest single poll: how late it sees a change */
#define LEASE_DESCRIBE_MS 5000
#define LEASE_RING 8 /* renewals in flight at most */

struct ksink_lease {
    const cfg *c;
    char self[320];          /* "<host>:<pid>" */
    /* offsets.storage=kafka */
    rd_kafka_t *rk;
    char *topic;             /* <name>.offsets */
    char *group;             /* <name>.leader */
    int64_t session_ms, heartbeat_ms;
    bool assigned;           /* partition 0 is ours (set by the rebalance callback) */
    bool held;               /* assigned at least once */
    bool lost;               /* another instance holds it now: stop for good */
    bool suspect;            /* the group protocol revoked or lost the partition, or no renewal for
                                S - 2H: produce nothing until it is held again with no other holder
                                in between (see ksink_lease_check) */
    bool started;            /* the first renewal as holder succeeded */
    bool changed;            /* a group callback ran in this lease_serve: its wait ends */
    char lost_why[200];
    int64_t confirmed_ms;    /* monotonic send time of the newest successful renewal */
    int64_t renew_sent_ms;   /* monotonic send time of the newest renewal */
    /* Renewals are answered in the order they were sent (one coordinator
     * connection): the k-th answer is for sent_at[k % LEASE_RING]. */
    int64_t sent_at[LEASE_RING];
    int64_t sent_val[LEASE_RING]; /* the offset each renewal committed */
    int64_t last_val;        /* the offset of the newest successful renewal: the group's committed
                                offset while no other instance renewed since */
    uint64_t sent_n, done_n;
    rd_kafka_resp_err_t renew_err; /* answer to the newest answered renewal */
    int64_t last_poll_ms;
    int64_t holder_asked_ms;
    /* offsets.storage=file */
    int fd;
    char *lock_path;
};

/* Monotonic clock, coarse (a few ms): the hot path reads it per event. */
static int64_t lease_now_ms(void) { return tb_mono_coarse_ms(); }

/* ------------------------------------------------------------ group callbacks */

static bool lease_ours(const ksink_lease *l, const rd_kafka_topic_partition_list_t *parts)
{
    for (int i = 0; parts && i < parts->cnt; i++)
        if (parts->elems[i].partition == 0 && strcmp(parts->elems[i].topic, l->topic) == 0)
            return true;
    return false;
}

/* A callback changed what the lease knows: lease_serve returns at once rather than at its
 * timeout, so the waits on an assignment or a renewal's answer take the round trip, not the
 * caller's poll interval. rd_kafka_yield ends the poll that runs a commit callback; the one that
 * runs a rebalance callback goes on waiting (librdkafka 2.0), hence LEASE_SLICE_MS. */
static void lease_changed(ksink_lease *l)
{
    l->changed = true;
    rd_kafka_yield(l->rk);
}

/* librdkafka requires the (incremental) assign/unassign here; the rest only
 * sets flags. */
static void lease_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t e, rd_kafka_topic_partition_list_t *parts,
                               void *opaque)
{
    ksink_lease *l = opaque;
    lease_changed(l);
    bool coop = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    bool ours = lease_ours(l, parts);
    if (e == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        /* The lease never reads the partition: its fetch position starts at the end, not at the
         * group's committed offset, which is a renewal's clock value (out of the log's range:
         * a fetch there would be refused and reset, with a WARN). */
        for (int i = 0; i < parts->cnt; i++)
            parts->elems[i].offset = RD_KAFKA_OFFSET_END;
        if (coop) {
            rd_kafka_error_t *ke = rd_kafka_incremental_assign(rk, parts);
            if (ke)
                rd_kafka_error_destroy(ke);
        } else {
            rd_kafka_assign(rk, parts);
        }
        if (ours) {
            rd_kafka_pause_partitions(rk, parts); /* the lease never reads the offsets */
            l->assigned = true;
            l->held = true;
            l->confirmed_ms = lease_now_ms(); /* SyncGroup just answered */
        }
        return;
    }
    if (ours && l->held && !l->lost) {
        l->suspect = true;
        snprintf(l->lost_why, sizeof l->lost_why, "%s",
                 rd_kafka_assignment_lost(rk) ? "the group session was lost (no heartbeat within session.timeout.ms)"
                                              : "the partition was revoked in a rebalance");
    }
    if (ours)
        l->assigned = false;
    if (coop) {
        rd_kafka_error_t *ke = rd_kafka_incremental_unassign(rk, parts);
        if (ke)
            rd_kafka_error_destroy(ke);
    } else {
        rd_kafka_assign(rk, NULL);
    }
}

static void lease_commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t e, rd_kafka_topic_partition_list_t *offsets,
                            void *opaque)
{
    (void)rk;
    (void)offsets;
    ksink_lease *l = opaque;
    if (l->done_n == l->sent_n)
        return; /* not a renewal (the final commit of a close) */
    lease_changed(l);
    size_t k = l->done_n++ % LEASE_RING;
    l->renew_err = e;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && l->sent_at[k] >= l->confirmed_ms) {
        l->confirmed_ms = l->sent_at[k];
        l->last_val = l->sent_val[k];
    }
}

/* ------------------------------------------------------------ open */

static tb_code lease_put(rd_kafka_conf_t *conf, const char *k, const char *v, tb_error *err)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, k, v, errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
        return tb_error_set(err, TB_ERR_CONFIG, false, "lease consumer: %s=%s: %s", k, v, errstr);
    return TB_OK;
}

static tb_code lease_open_kafka(ksink_lease *l, tb_error *err)
{
    const char *name = cfg_get_str(l->c, CFGK_NAME);
    tb_code rc = TB_OK;
    rd_kafka_conf_t *conf = NULL;
    rd_kafka_topic_partition_list_t *sub = NULL;
    tb_buf b;
    tb_buf_init(&b, 0);
    if ((rc = ksink_offsets_topic(l->c, &b)) != TB_OK)
        goto out;
    l->topic = tb_buf_detach(&b, NULL);
    tb_buf_printf(&b, "%s.leader", name);
    l->group = tb_buf_detach(&b, NULL);
    if (!l->topic || !l->group) {
        rc = tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
        goto out;
    }
    l->session_ms = cfg_get_int(l->c, CFGK_HA_TAKEOVER_MS) * 2 / 5;
    l->heartbeat_ms = l->session_ms / 6 > 100 ? l->session_ms / 6 : 100;
    char client_id[400], session[32], heartbeat[32];
    snprintf(client_id, sizeof client_id, "%s@%s", l->group, l->self);
    snprintf(session, sizeof session, "%lld", (long long)l->session_ms);
    snprintf(heartbeat, sizeof heartbeat, "%lld", (long long)l->heartbeat_ms);
    if ((rc = ksink_conf_new(l->c, KSINK_ROLE_CONSUMER, &conf, err)) != TB_OK)
        goto out;
    /* after kafka.*: the lease's own settings win */
    if ((rc = lease_put(conf, "group.id", l->group, err)) != TB_OK ||
        (rc = lease_put(conf, "client.id", client_id, err)) != TB_OK ||
        (rc = lease_put(conf, "partition.assignment.strategy", "cooperative-sticky", err)) != TB_OK ||
        (rc = lease_put(conf, "session.timeout.ms", session, err)) != TB_OK ||
        (rc = lease_put(conf, "heartbeat.interval.ms", heartbeat, err)) != TB_OK ||
        (rc = lease_put(conf, "enable.partition.eof", "false", err)) != TB_OK ||
        (rc = lease_put(conf, "enable.auto.commit", "false", err)) != TB_OK ||
        (rc = lease_put(conf, "auto.offset.reset", "latest", err)) != TB_OK)
        goto out;
    rd_kafka_conf_set_opaque(conf, l);
    rd_kafka_conf_set_rebalance_cb(conf, lease_rebalance_cb);
    rd_kafka_conf_set_offset_commit_cb(conf, lease_commit_cb);
    rc = kafka_client_new(conf, RD_KAFKA_CONSUMER, "Kafka client", &l->rk, err);
    conf = NULL;
    if (rc != TB_OK)
        goto out;
    rd_kafka_poll_set_consumer(l->rk);
    /* An offsets topic the cluster has (every start but the first) is subscribed to before
     * it is checked, so that the group coordinator is looked up and the group joined in the
     * background meanwhile; no callback runs before the first poll, so the lease is never
     * held before the topic is ensured. A missing one is made first: subscribed to before it
     * exists, the group would assign its partition only at a later metadata refresh. */
    bool known = !cfg_get_bool(l->c, CFGK_TOPIC_CREATE);
    if (!known) { /* the ensure's own first request; its failure is the ensure's */
        kafka_cluster_md md;
        bool missing = true;
        if ((rc = kafka_topic_metadata(l->rk, l->topic, ksink_request_timeout_ms(l->c), &missing, &md, err)) !=
            TB_OK) {
            rc = tb_error_prefix(err, rc, "lease: ");
            goto out;
        }
        known = !missing && md.replicas > 0;
    }
    sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, l->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = known ? rd_kafka_subscribe(l->rk, sub) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (e) {
        rc = kafka_error(err, e, "lease: subscribe to %s in group %s", l->topic, l->group);
        goto out;
    }
    if ((rc = ksink_topic_ensure(l->rk, l->c, l->topic, 1, true, err)) != TB_OK) {
        rc = tb_error_prefix(err, rc, "lease: ");
        goto out;
    }
    if (!known && (e = rd_kafka_subscribe(l->rk, sub)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rc = kafka_error(err, e, "lease: subscribe to %s in group %s", l->topic, l->group);
        goto out;
    }
    TB_INFO("lease", "joined group %s (offsets topic %s) as %s; session timeout %lld ms", l->group, l->topic,
            client_id, (long long)l->session_ms);
out:
    if (conf)
        rd_kafka_conf_destroy(conf);
    if (sub)
        rd_kafka_topic_partition_list_destroy(sub);
    tb_buf_free(&b);
    return rc;
}

static tb_code lease_open_file(ksink_lease *l, tb_error *err)
{
    tb_buf b;
    tb_buf_init(&b, 0);
    tb_buf_printf(&b, "%s.lock", cfg_get_str(l->c, CFGK_OFFSETS_FILE));
    l->lock_path = tb_buf_detach(&b, NULL);
    if (!l->lock_path)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    l->fd = open(l->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (l->fd < 0)
        return tb_error_set(err, TB_ERR_IO, false, "lease: cannot open %s: %s (offsets.file decides where it is)",
                            l->lock_path, strerror(errno));
    return TB_OK;
}

tb_code ksink_lease_open(const cfg *c, ksink_lease **out, tb_error *err)
{
    *out = NULL;
    ksink_lease *l = calloc(1, sizeof *l);
    if (!l)
        return tb_error_set(err, TB_ERR_NOMEM, false, "out of memory");
    l->c = c;
    l->fd = -1;
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(l->self, sizeof l->self, "%s:%ld", host, (long)getpid());
    const char *storage = cfg_get_str(c, CFGK_OFFSETS_STORAGE);
    tb_code rc = storage && strcmp(storage, "file") == 0 ? lease_open_file(l, err) : lease_open_kafka(l, err);
    if (rc != TB_OK) {
        ksink_lease_close(l);
        return rc;
    }
    *out = l;
    return TB_OK;
}

/* ------------------------------------------------------------ poll */

/* Serve callbacks until timeout_ms passed or a callback changed the lease's state; a message
 * is only ever an error (the partition is paused). */
static tb_code lease_serve(ksink_lease *l, int timeout_ms, tb_error *err)
{
    int64_t deadline = lease_now_ms() + timeout_ms;
    l->changed = false;
    do {
        int64_t left = deadline - lease_now_ms();
        rd_kafka_message_t *m =
            rd_kafka_consumer_poll(l->rk, left > LEASE_SLICE_MS ? LEASE_SLICE_MS : left > 0 ? (int)left : 0);
        if (!m)
            continue;
        rd_kafka_resp_err_t e = m->err;
        /* (a topic just created can be unknown to the metadata for a moment) */
        if ((e == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC || e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) &&
            !cfg_get_bool(l->c, CFGK_TOPIC_CREATE)) {
            rd_kafka_message_destroy(m);
            return tb_error_set(err, TB_ERR_CONFIG, false,
                                "lease: the offsets topic %s does not exist; create it (one partition, compacted) "
                                "or set topic.create=true",
                                l->topic);
        }
        if (e == RD_KAFKA_RESP_ERR_INVALID_SESSION_TIMEOUT) {
            rd_kafka_message_destroy(m);
            return tb_error_set(err, TB_ERR_CONFIG, false,
                                "lease: the broker refuses session.timeout.ms=%lld (2/5 of ha.takeover.ms) for group "
                                "%s: raise ha.takeover.ms (the broker's group.min.session.timeout.ms is 6000 by default)",
                                (long long)l->session_ms, l->group);
        }
        if (e && e != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            TB_DEBUG("lease", "group %s: %s", l->group, rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
    } while (!l->changed && lease_now_ms() < deadline);
    l->last_poll_ms = lease_now_ms();
    return TB_OK;
}

static ksink_lease_state lease_state(const ksink_lease *l)
{
    if (l->lost)
        return KSINK_LEASE_LOST;
    return l->assigned && (l->started || !l->rk) ? KSINK_LEASE_HELD : KSINK_LEASE_WAITING;
}

static void lease_renew(ksink_lease *l, int64_t now);

tb_code ksink_lease_poll(ksink_lease *l, int timeout_ms, ksink_lease_state *state, tb_error *err)
{
    if (!l->rk) {
        /* the file lease */
        if (!l->held) {
            if (flock(l->fd, LOCK_EX | LOCK_NB) == 0) {
                l->held = l->assigned = true;
                char line[340];
                int n = snprintf(line, sizeof line, "%s\n", l->self);
                if (ftruncate(l->fd, 0) != 0 || pwrite(l->fd, line, (size_t)n, 0) != n)
                    TB_WARN("lease", "%s: cannot write this instance's name: %s", l->lock_path, strerror(errno));
            } else if (errno != EWOULDBLOCK && errno != EINTR) {
                return tb_error_set(err, TB_ERR_IO, false, "lease: flock %s: %s", l->lock_path, strerror(errno));
            } else if (timeout_ms > 0) {
                struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
                nanosleep(&ts, NULL); /* a flock cannot be waited for with a deadline */
            }
        }
        *state = lease_state(l);
        return TB_OK;
    }
    /* A new holder's first act is a renewal (its committed offset), before
     * anything is produced: an earlier holder that lost contact can then
     * tell whether someone else held the lease meanwhile. The renewal goes out
     * as soon as the partition is assigned and the lease is held as soon as
     * it is answered, both within this call's timeout. */
    int64_t deadline = lease_now_ms() + timeout_ms;
    tb_code rc;
    for (;;) {
        int64_t left = deadline - lease_now_ms();
        if ((rc = lease_serve(l, left > 0 ? (int)left : 0, err)) != TB_OK)
            break;
        if (l->assigned && !l->started) {
            if (l->confirmed_ms > 0 && l->last_val > 0)
                l->started = true;
            else if (lease_now_ms() - l->renew_sent_ms >= l->heartbeat_ms)
                lease_renew(l, lease_now_ms());
        }
        if (lease_state(l) != KSINK_LEASE_WAITING || lease_now_ms() >= deadline)
            break;
    }
    *state = lease_state(l);
    return rc;
}

/* ------------------------------------------------------------ holder */

static uint32_t lease_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Whether a ConsumerProtocolAssignment (version int16, [topic string,
 * [partition int32]], user data bytes) holds partition 0 of topic. */
static bool lease_assignment_has(const void *data, size_t len, const char *topic)
{
    if (!data || len < 6)
        return false;
    const unsigned char *p = data, *end = p + len;
    p += 2;
    uint32_t ntopics = lease_be32(p);
    p += 4;
    size_t tl = strlen(topic);
    for (uint32_t t = 0; t < ntopics; t++) {
        if (end - p < 2)
            return false;
        size_t n = (size_t)p[0] << 8 | p[1];
        p += 2;
        if ((size_t)(end - p) < n + 4)
            return false;
        bool same = n == tl && memcmp(p, topic, n) == 0;
        p += n;
        uint32_t nparts = lease_be32(p);
        p += 4;
        if ((size_t)(end - p) < (size_t)nparts * 4)
            return false;
        for (uint32_t i = 0; i < nparts; i++, p += 4)
            if (same && lease_be32(p) == 0)
                return true;
    }
    return false;
}

bool ksink_lease_holder(ksink_lease *l, tb_buf *out)
{
    if (!l->rk) {
        char line[340];
        ssize_t n = pread(l->fd, line, sizeof line - 1, 0);
        if (n <= 0)
            return false;
        line[n] = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        if (!*line || strcmp(line, l->self) == 0)
            return false;
        tb_buf_puts(out, line);
        return true;
    }
    int64_t now = lease_now_ms();
    if (l->holder_asked_ms && now - l->holder_asked_ms < LEASE_HOLDER_EVERY_MS)
        return false;
    l->holder_asked_ms = now;
    const struct rd_kafka_group_list *gl = NULL;
    if (rd_kafka_list_groups(l->rk, l->group, &gl, LEASE_DESCRIBE_MS) != RD_KAFKA_RESP_ERR_NO_ERROR || !gl)
        return false;
    bool found = false;
    size_t prefix = strlen(l->group) + 1; /* "<group>@" */
    for (int g = 0; g < gl->group_cnt && !found; g++) {
        const struct rd_kafka_group_info *gi = &gl->groups[g];
        for (int i = 0; i < gi->member_cnt && !found; i++) {
            const struct rd_kafka_group_member_info *mi = &gi->members[i];
            if (!lease_assignment_has(mi->member_assignment, (size_t)mi->member_assignment_size, l->topic))
                continue;
            const char *cid = mi->client_id ? mi->client_id : "";
            if (strncmp(cid, l->group, prefix - 1) == 0 && cid[prefix - 1] == '@')
                cid += prefix;
            if (strcmp(cid, l->self) == 0)
                continue;
            tb_buf_puts(out, cid);
            found = true;
        }
    }
    rd_kafka_group_list_destroy(gl);
    return found;
}

const char *ksink_lease_self(const ksink_lease *l)
{
    return l->self;
}

/* ------------------------------------------------------------ the holder's check */

static void lease_renew(ksink_lease *l, int64_t now)
{
    if (l->sent_n - l->done_n >= LEASE_RING / 2)
        return; /* the coordinator does not answer: the expiry decides */
    rd_kafka_topic_partition_list_t *o = rd_kafka_topic_partition_list_new(1);
    int64_t val = tb_wall_ms();
    if (val <= l->last_val)
        val = l->last_val + 1;
    rd_kafka_topic_partition_list_add(o, l->topic, 0)->offset = val;
    l->renew_sent_ms = now;
    if (rd_kafka_commit(l->rk, o, 1) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        l->sent_val[l->sent_n % LEASE_RING] = val;
        l->sent_at[l->sent_n++ % LEASE_RING] = now;
    }
    rd_kafka_topic_partition_list_destroy(o);
}

/* The group's committed offset of partition 0: the newest renewal of any
 * holder. -1 when it cannot be read now. */
static int64_t lease_committed(ksink_lease *l)
{
    rd_kafka_topic_partition_list_t *o = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(o, l->topic, 0);
    int64_t v = -1;
    if (rd_kafka_committed(l->rk, o, (int)l->heartbeat_ms) == RD_KAFKA_RESP_ERR_NO_ERROR && !o->elems[0].err)
        v = o->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(o);
    return v;
}

/* Expired or suspect: wait up to 2H for the lease to be confirmed (TB_OK),
 * for another holder to show (lost), or give up for now (TB_ERR_STATE,
 * retriable: call again). */
static tb_code lease_confirm(ksink_lease *l, tb_error *err)
{
    int64_t asked = lease_now_ms(), deadline = asked + 2 * l->heartbeat_ms, read_ms = 0;
    while (!l->lost && lease_now_ms() < deadline) {
        if (!l->suspect && l->assigned) {
            if (l->confirmed_ms >= asked)
                return TB_OK;
            if (l->sent_n == l->done_n || lease_now_ms() - l->renew_sent_ms >= l->heartbeat_ms)
                lease_renew(l, lease_now_ms());
        } else if (lease_now_ms() - read_ms >= l->heartbeat_ms) {
            /* No renewals now (they would overwrite what we look for): has
             * another instance renewed since our last renewal? */
            read_ms = lease_now_ms();
            int64_t v = lease_committed(l);
            bool mine = v == l->last_val; /* or a renewal whose answer was lost */
            for (uint64_t k = l->sent_n > LEASE_RING ? l->sent_n - LEASE_RING : 0; k < l->sent_n && !mine; k++)
                mine = v == l->sent_val[k % LEASE_RING];
            if (v >= 0 && !mine) {
                l->lost = true;
                snprintf(l->lost_why + strlen(l->lost_why), sizeof l->lost_why - strlen(l->lost_why),
                         "%sanother instance renewed it since", *l->lost_why ? "; " : "");
                break;
            }
            if (mine && l->assigned) {
                TB_INFO("lease", "group %s: the partition is ours again and nobody held it meanwhile", l->group);
                l->suspect = false;
                l->lost_why[0] = '\0';
                continue;
            }
        }
        tb_code rc = lease_serve(l, 50, err);
        if (rc != TB_OK)
            return rc;
    }
    if (l->lost)
        return tb_error_set(err, TB_ERR_STATE, false,
                            "lost the lease of group %s: %s; stopped producing (another instance is active now). "
                            "Restart this one to stand by",
                            l->group, l->lost_why);
    return tb_error_set(err, TB_ERR_STATE, true,
                        "lease of group %s not confirmed for %lld ms (%s): producing nothing until the group "
                        "coordinator answers",
                        l->group, (long long)(lease_now_ms() - l->confirmed_ms),
                        *l->lost_why ? l->lost_why : "no answer from the group coordinator");
}

tb_code ksink_lease_check(ksink_lease *l, tb_error *err)
{
    if (!l->rk)
        return TB_OK; /* a flock is held until the process ends */
    int64_t now = lease_now_ms();
    if (!l->lost && now - l->last_poll_ms >= LEASE_POLL_EVERY_MS) {
        tb_code rc = lease_serve(l, 0, err);
        if (rc != TB_OK)
            return rc;
        if (!l->suspect && now - l->renew_sent_ms >= l->heartbeat_ms)
            lease_renew(l, now);
    }
    if (!l->lost && !l->suspect && now < l->confirmed_ms + l->session_ms - 2 * l->heartbeat_ms)
        return TB_OK;
    /* No renewal for S - 2H (a pause, a partition, a blocked loop), or the
     * group protocol took the partition: nothing more is produced until the
     * coordinator confirms the membership, or the partition comes back with
     * no other holder in between. */
    return lease_confirm(l, err);
}

/* ------------------------------------------------------------ close */

static rd_kafka_t *lease_abandoned;

void ksink_lease_close(ksink_lease *l)
{
    if (!l)
        return;
    if (l->rk) {
        if (l->lost || l->suspect) {
            /* Not the holder: nothing to hand over. librdkafka 2.0.2 can wait
             * forever in consumer_close, and in destroy (joining its main
             * thread), when its group is in the middle of a rejoin, which is
             * when a lease is lost; the client is left to the process's exit,
             * which follows (kept reachable, so it is not reported as a leak). */
            lease_abandoned = l->rk;
        } else {
            rd_kafka_consumer_close(l->rk); /* LeaveGroup: a standby takes over at once */
            rd_kafka_destroy(l->rk);
        }
    }
    if (l->fd >= 0) {
        if (l->held && ftruncate(l->fd, 0) != 0)
            TB_DEBUG("lease", "%s: %s", l->lock_path, strerror(errno));
        close(l->fd); /* releases the flock */
    }
    free(l->topic);
    free(l->group);
    free(l->lock_path);
    free(l);
}
