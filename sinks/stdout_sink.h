/*
 * stdout_sink: the stdout sink (DESIGN.md 10, sink=stdout).
 *
 * Every message an event becomes (evt_render: upsert; delete event +
 * tombstone; delete + tombstone + create on a key change) is printed as one
 * JSON line {"topic":…,"key":…,"value":…|null} (evt_json_line). Before the
 * first event of a table, and before the first event of each new schema
 * version of it, the schema record is printed as a line on topic
 * "<topic.prefix>.schema" (key {"db":…,"table":…}, value = descriptor), as
 * the Kafka sink writes it. Lines are gathered and written with write(2) on
 * the FILE's descriptor, whole lines only: at the end of every source
 * transaction (the event with last_in_tx), at commit, and whenever 1 MiB is
 * waiting. So output is never torn by the sink; a write cut short by kill -9
 * can leave a partial last line in a file, which the next open cuts off (its
 * events were not committed, so they come again): a regular-file output holds
 * whole JSON lines only.
 *
 * Positions: with offsets.storage=file, stdout_sink_commit() flushes the
 * output and then stores the position in offsets.file in the same format as
 * the Kafka sink's file store (tb_position_format text + "\n", replaced
 * atomically: temp file, fsync, rename, fsync of the directory), so
 * ksink_offsets_read() and `tributary offsets show` read it back. With
 * offsets.storage=kafka commit only flushes: the caller stores the position.
 *
 * Ownership: stdout_sink_open() returns a sink the caller frees with
 * stdout_sink_close() (NULL-safe). The FILE is borrowed (not closed) and must
 * outlive the sink. Events passed to stdout_sink_send() are borrowed for the
 * call only.
 */
#ifndef STDOUT_SINK_H
#define STDOUT_SINK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "cfg.h"
#include "sink_keys.h"
#include "evt.h"
#include "tb_error.h"
#include "tb_position.h"

typedef struct stdout_sink stdout_sink;

/* Open a sink writing to fp (usually stdout) with the settings of c
 * (topic.prefix, name, value.format, value.schemas, offsets.storage,
 * offsets.file). c is only read during the call. */
TB_MUST_USE tb_code stdout_sink_open(const cfg *c, FILE *fp, stdout_sink **out, tb_error *err);

/* Print the messages of one event (and the schema record when due).
 * TB_ERR_IO when the stream fails (e.g. a closed pipe); an event whose
 * builder failed is refused with its own error. */
TB_MUST_USE tb_code stdout_sink_send(stdout_sink *s, const evt_event *e, tb_error *err);

/* Print the schema record of t now (a dropped table's, or one that says
 * where the table was renamed from; see ksink_announce_table). */
TB_MUST_USE tb_code stdout_sink_announce(stdout_sink *s, const evt_table *t, tb_error *err);

/* Flush the output, then store pos (offsets.storage=file). pos must be a
 * transaction boundary whose events were all sent; NULL = flush only. */
TB_MUST_USE tb_code stdout_sink_commit(stdout_sink *s, const tb_position *pos, tb_error *err);

/* Whether the output is a regular file this process can read back: then
 * the output read from its first line is the changelog of each topic its
 * lines name, and stdout_sink_topic_keys reads a topic's keys from it. */
bool stdout_sink_keys_readable(const stdout_sink *s);

/* The keys the lines of t's topic hold (the latest line of the key is not a
 * tombstone, "value":null) whose digests keep (NULL: none) lacks, each to fn
 * once as the line holds it (sink_keys_held), after a flush; read to the end
 * the output had at the call. TB_ERR_INVALID for a line of the topic that is
 * not a whole line this sink writes, or when the output cannot be read back. */
TB_MUST_USE tb_code stdout_sink_topic_keys(stdout_sink *s, const evt_table *t, const struct tb_kset *keep,
                                           sink_keys_give_fn fn, void *opaque, tb_error *err);
/* The digest of e's key as its lines hold it (tb_kset_digest of the rendered key). */
TB_MUST_USE tb_code stdout_sink_key_digest(stdout_sink *s, const evt_event *e, uint64_t *digest, tb_error *err);
/* db.table as the latest schema record in the output that describes it says (as
 * ksink_schema_last); *out NULL when there is none or the output cannot be read back. */
TB_MUST_USE tb_code stdout_sink_schema_last(stdout_sink *s, const char *db, const char *table, evt_table **out,
                                            tb_error *err);

/* Flush and free. NULL-safe. Does not commit. */
void stdout_sink_close(stdout_sink *s);

#endif
