/*
 * The property table: the one place every configuration key is declared.
 * Add a key here (in its group) and validation, --help-config and
 * docs/configuration.md follow. Regenerate the docs with
 *   cmake --build <build dir> --target config_docs
 * (= tributary --help-config --markdown > docs/configuration.md; a unit test
 * fails while the committed file is stale).
 */
#include <stddef.h>
#include <string.h>

#include "cfg.h"

static const char *const v_source_type[] = {"mysql", "sqlite", NULL};
static const char *const v_sqlite_mode[] = {"wal", "trigger", NULL};
static const char *const v_sqlite_checkpoint[] = {"off", "on", "barrier", NULL};
static const char *const v_value_format[] = {"envelope", "row", NULL};
static const char *const v_value_encoding[] = {"tributary", "debezium", NULL};
static const char *const v_converter[] = {"json", "avro", NULL};
static const char *const v_dbz_decimal[] = {"precise", "string", "double", NULL};
static const char *const v_dbz_bigint[] = {"long", "precise", NULL};
static const char *const v_dbz_time[] = {"adaptive_time_microseconds", "connect", NULL};
static const char *const v_dbz_binary[] = {"bytes", "base64", "base64-url-safe", "hex", NULL};
static const char *const v_snapshot_mode[] = {"initial", "initial_only", "never", "when_needed", NULL};
static const char *const v_snapshot_locking[] = {"minimal", "none", NULL};
static const char *const v_snapshot_initial_method[] = {"consistent", "chunked", NULL};
static const char *const v_offsets_storage[] = {"kafka", "file", NULL};
static const char *const v_sink[] = {"kafka", "stdout", NULL};
static const char *const v_cache_mode[] = {"global", "group", NULL};
static const char *const v_error_policy[] = {"fail", "skip", "dlq", NULL};
static const char *const v_cache_dbz_time[] = {"adaptive_time_microseconds", "adaptive", "connect", NULL};
static const char *const v_log_level[] = {"error", "warn", "info", "debug", "trace", NULL};
static const char *const v_revoke[] = {"drop", "keep", NULL};
static const char *const v_offline_policy[] = {"rebuild", "fail", NULL};
static const char *const v_row_image_policy[] = {"fail", "warn", NULL};
static const char *const v_truncate_policy[] = {"tombstone", "fail", NULL};
static const char *const v_ssl_mode[] = {"disabled", "preferred", "required", "verify_ca", "verify_identity", NULL};
static const char *const v_drop_policy[] = {"warn", "tombstone", NULL};
static const char *const v_alter_policy[] = {"resnapshot", "warn", NULL};
static const char *const v_fk_cascade_policy[] = {"resnapshot", "fail", "warn", NULL};
static const char *const v_missing_policy[] = {"fail", "resnapshot", NULL};

#define I64MAX INT64_MAX

static const cfg_prop props[] = {
    /* ---- general */
    {"name", CFG_STRING, "tributary", 0, 0, NULL,
     "Connector name: key of the offsets record, transactional id and client id prefix.", false, "general"},
    {"log.level", CFG_ENUM, "info", 0, 0, v_log_level, "Log level.", false, "general"},
    {"sink", CFG_ENUM, "kafka", 0, 0, v_sink,
     "Where events go: `kafka`, or `stdout` (one JSON line per message, DESIGN 10).", false, "general"},
    {"exactly.once", CFG_BOOL, "false", 0, 0, NULL,
     "Produce each batch of source transactions and its offsets record in one Kafka transaction.", false, "general"},
    {"transaction.topic", CFG_BOOL, "false", 0, 0, NULL,
     "Write BEGIN/END records with per-table event counts to <topic.prefix>.transaction (sink=kafka).", false,
     "general"},
    {"heartbeat.interval.ms", CFG_MS, "10000", 0, I64MAX, NULL,
     "Interval of source heartbeats, so the position advances on idle tables (0 = off).", false, "general"},
    {"file.mode", CFG_STRING, "0600", 0, 0, NULL,
     "Permission bits (octal) of the files tributary creates: cache database (and its -wal/-shm), offsets file, status file, incremental-snapshot state, SQLite shadow copy; folders get the matching search bits. Applied as the process umask, whatever the caller's. 0600 or 0640: the group may read them, nobody else may read or write them (other modes are refused).", false, "general"},
    {"status.file", CFG_PATH, NULL, 0, 0, NULL,
     "File where `run` writes its status (position, lag, throughput) for `tributary status`; default <offsets dir>/<name>.status.json.", false, "general"},

    /* ---- source */
    {"source.type", CFG_ENUM, "mysql", 0, 0, v_source_type, "Source database: `mysql` (also MariaDB) or `sqlite`.", false, "source"},
    {"source.host", CFG_STRING, "127.0.0.1", 0, 0, NULL, "MySQL/MariaDB host.", false, "source"},
    {"source.port", CFG_INT, "3306", 1, 65535, NULL, "MySQL/MariaDB port.", false, "source"},
    {"source.user", CFG_STRING, "root", 0, 0, NULL, "MySQL/MariaDB user; its grants are checked at start (README: server settings and grants).", false, "source"},
    {"source.password", CFG_STRING, NULL, 0, 0, NULL, "MySQL/MariaDB password. Prefer source.password.file or TRIBUTARY_SOURCE_PASSWORD.", true, "source"},
    {"source.password.file", CFG_PATH, NULL, 0, 0, NULL, "File holding the MySQL/MariaDB password.", false, "source"},
    {"source.ssl.mode", CFG_ENUM, "preferred", 0, 0, v_ssl_mode,
     "TLS to MySQL/MariaDB, for the replication and every snapshot connection: `disabled`; `preferred` (TLS when the server offers it); `required` (TLS, certificate not checked); `verify_ca` (the certificate must chain to source.ssl.ca/capath); `verify_identity` (and name source.host). With source.ssl.ca or capath set, preferred and required check the chain too.", false, "source"},
    {"source.ssl.ca", CFG_PATH, NULL, 0, 0, NULL, "PEM file of the CA certificates that may sign the server certificate.", false, "source"},
    {"source.ssl.capath", CFG_PATH, NULL, 0, 0, NULL, "Folder of hashed CA certificates (openssl rehash), instead of or beside source.ssl.ca.", false, "source"},
    {"source.ssl.cert", CFG_PATH, NULL, 0, 0, NULL, "Client certificate (PEM), for accounts that REQUIRE X509.", false, "source"},
    {"source.ssl.key", CFG_PATH, NULL, 0, 0, NULL, "Private key (PEM) of source.ssl.cert.", false, "source"},
    {"source.ssl.crl", CFG_PATH, NULL, 0, 0, NULL, "Certificate revocation list (PEM) checked against the server certificate.", false, "source"},
    {"source.ssl.cipher", CFG_STRING, NULL, 0, 0, NULL, "Allowed ciphers (OpenSSL cipher list; TLSv1.3 suites too), e.g. `ECDHE-ECDSA-AES256-GCM-SHA384`.", false, "source"},
    {"source.ssl.tls.version", CFG_STRING, NULL, 0, 0, NULL, "Allowed TLS versions, comma-separated, e.g. `TLSv1.2,TLSv1.3` (default: the TLS library's).", false, "source"},
    {"source.server.id", CFG_INT, NULL, 1, 4294967295LL, NULL,
     "Server id this replica announces; unique among the source's replicas. Default: derived from `name` (stable, 1073741824 .. 2147483647, printed at start), so connectors with different names never collide.", false, "source"},
    {"source.start.file", CFG_STRING, NULL, 0, 0, NULL, "Binlog file to start from when no offset is stored (default: current position).", false, "source"},
    {"source.start.position", CFG_INT, "4", 4, I64MAX, NULL, "Binlog offset to start from with source.start.file.", false, "source"},
    {"source.start.gtid", CFG_STRING, NULL, 0, 0, NULL, "GTID set to start after when no offset is stored (MySQL uuid:1-n or MariaDB d-s-n list).", false, "source"},
    {"source.connect.timeout.ms", CFG_MS, "10000", 0, I64MAX, NULL, "Connect timeout to the source.", false, "source"},
    {"source.connect.retry.ms", CFG_MS, "300000", 0, I64MAX, NULL,
     "At start, keep retrying a source or Kafka that cannot be reached for this long (0 = fail at once), with the reconnect backoff; each attempt is logged. While streaming, the same for the catalog queries a statement needs (a TRUNCATE's key columns, a RENAME's new table, the signal of a resnapshot) and the catalog lookups of a new table version (at most 60 s): the stream waits for the source instead of stopping.", false, "source"},
    {"source.reconnect.backoff.max.ms", CFG_MS, "30000", 0, I64MAX, NULL, "Upper bound of the exponential reconnect backoff.", false, "source"},
    {"source.row.image.policy", CFG_ENUM, "fail", 0, 0, v_row_image_policy,
     "binlog_row_image other than FULL (MINIMAL, NOBLOB), for the server or a writer's session: refuse to start, and stop at a row of a captured table logged with a partial image (`fail`), or `warn` and capture partial row images (absent columns are left out of before/after).", false, "source"},
    {"source.heartbeat.interval.ms", CFG_MS, "5000", 0, I64MAX, NULL, "Heartbeat period the binlog server is asked for (0 = none).", false, "source"},
    {"source.path", CFG_PATH, NULL, 0, 0, NULL, "SQLite database file.", false, "source"},
    {"source.sqlite.mode", CFG_ENUM, "wal", 0, 0, v_sqlite_mode, "SQLite capture: `wal` (read the write-ahead log) or `trigger` (change-log table).", false, "source"},
    {"source.sqlite.shadow", CFG_BOOL, "true", 0, 0, NULL,
     "Keep a shadow copy of the database at the committed position (exact before-images and restarts).", false, "source"},
    {"source.sqlite.shadow.path", CFG_PATH, NULL, 0, 0, NULL, "Shadow copy location (default: <offsets dir>/<name>.shadow.db).", false, "source"},
    {"source.sqlite.checkpoint", CFG_ENUM, "off", 0, 0, v_sqlite_checkpoint,
     "WAL reset windows: `on` runs PASSIVE checkpoints when caught up; `barrier` also holds the write lock for the few ms of a window, so the WAL resets under continuous commits (writers wait, a read-then-write transaction gets SQLITE_BUSY meanwhile). Off by default: WAL-reset bug before SQLite 3.51.3 (docs/sqlite-wal.md 2.9).", false, "source"},
    {"source.sqlite.wal.max.bytes", CFG_INT, "16777216", 0, I64MAX, NULL,
     "Bound on the application's WAL: from a quarter of it the connector checkpoints up to what it has read and lets the next commit rewind the WAL; from three eighths of it it does so under the write lock for a few ms once it has (nearly) read everything (writers wait with their busy timeout); from half of it it takes the write lock however far behind it is (writers wait until it has read the rest, at most a second). An application read transaction that stays open keeps it from being reset (a WARN names its pid). 0 = no bound. docs/sqlite-wal.md 2.13.", false, "source"},
    {"source.sqlite.poll.ms", CFG_MS, "50", 1, I64MAX, NULL, "How often the SQLite reader looks for new commits.", false, "source"},
    {"source.database.name", CFG_STRING, NULL, 0, 0, NULL, "The <db> part of SQLite topic names (default: file name without extension).", false, "source"},
    {"tables.include", CFG_REGEX, NULL, 0, 0, NULL, "Regex over db.table: capture only matching tables (default: all).", false, "source"},
    {"tables.exclude", CFG_REGEX, NULL, 0, 0, NULL, "Regex over db.table: never capture matching tables.", false, "source"},
    {"key.columns.*", CFG_STRING, NULL, 0, 0, NULL,
     "key.columns.<db>.<table>=c1,c2: key columns for a table without a primary key.", false, "source"},
    {"ddl.truncate.policy", CFG_ENUM, "tombstone", 0, 0, v_truncate_policy,
     "TRUNCATE TABLE on a captured table (MySQL/MariaDB): `tombstone` sends a delete and a tombstone for every key its topic holds (read from the topic), at the statement's position; `fail` stops naming the table and position (docs/statements.md).", false, "source"},
    {"ddl.alter.policy", CFG_ENUM, "resnapshot", 0, 0, v_alter_policy,
     "ALTER TABLE that can give existing rows of a captured table new values (MySQL/MariaDB: ADD/MODIFY/CHANGE/DROP COLUMN, CONVERT TO; SQLite: ADD COLUMN with a default, RENAME COLUMN, DROP COLUMN): `resnapshot` re-sends the table's rows (MySQL/MariaDB: an incremental snapshot, needs INSERT on the signalling table; SQLite: a read event per row in the ALTER's transaction), `warn` only says the topic keeps the old values until each row changes (docs/statements.md).", false, "source"},
    {"source.fk.cascade.policy", CFG_ENUM, "resnapshot", 0, 0, v_fk_cascade_policy,
     "MySQL/MariaDB: a foreign key of a captured table with ON DELETE or ON UPDATE CASCADE, SET NULL or SET DEFAULT changes the table's rows inside the storage engine, without row events in the binlog. After a transaction that deletes a parent row, or changes the columns such a key references, `resnapshot` signals an incremental snapshot of each captured table the action can reach (needs INSERT on the signalling table; its reconcile step deletes what the action deleted), `fail` stops at that row naming the constraint, `warn` says so once per table (docs/statements.md).", false, "source"},
    {"ddl.drop.policy", CFG_ENUM, "warn", 0, 0, v_drop_policy,
     "DROP TABLE of a captured table: `warn` leaves its topic as it is and says so; `tombstone` deletes every key (MySQL/MariaDB: every key the topic holds, as for TRUNCATE; SQLite: every row the table had just before it) at the DROP's position (docs/statements.md).", false, "source"},

    /* ---- snapshot */
    {"snapshot.mode", CFG_ENUM, "initial", 0, 0, v_snapshot_mode, "When to snapshot (DESIGN 7).", false, "snapshot"},
    {"snapshot.locking.mode", CFG_ENUM, "minimal", 0, 0, v_snapshot_locking,
     "MySQL 8: take a brief backup lock to read the position (`minimal`) or none.", false, "snapshot"},
    {"snapshot.chunk.size", CFG_INT, "10000", 1, 100000000, NULL, "Rows per chunk of an incremental snapshot (and of a `chunked` initial snapshot).", false, "snapshot"},
    {"snapshot.threads", CFG_INT, "1", 1, 64, NULL,
     "Connections that read the chunks of a `chunked` initial snapshot and of incremental snapshots at once: with N > 1 each watermark window holds up to N chunks, split at the keys `snapshot.chunk.size` rows apart (one query each), each read by its own connection and thread, and the next window is read ahead by a thread of its own, over a second set of N connections, while the current one is released; memory holds two windows of N chunks.", false, "snapshot"},
    {"snapshot.initial.method", CFG_ENUM, "consistent", 0, 0, v_snapshot_initial_method,
     "MySQL/MariaDB, `tributary run`: how the snapshot that `snapshot.mode` asks for is read. `consistent`: one consistent-snapshot transaction, streaming from its position afterwards; a crash reads every table again. `chunked`: streaming starts at once from the server's current position and every captured table is read as an incremental snapshot (primary-key chunks of `snapshot.chunk.size` between watermark rows in `<db>.tributary_signal`, no lock, no long transaction), its progress saved per chunk in the connector's state file (`<offsets.file>.incsnap`; with offsets.storage=kafka `<name>.incsnap` beside offsets.file), so a crash resumes with the chunks not done; needs INSERT and CREATE on `<db>.tributary_signal`, and each table's last row carries `snapshot=last`. `snapshot.mode=initial_only` and `tributary snapshot` always use `consistent` (docs/snapshot.md).", false, "snapshot"},

    /* ---- topics and values */
    {"topic.prefix", CFG_STRING, "tributary", 0, 0, NULL, "First part of every topic name.", false, "topics"},
    {"topic.partitions", CFG_INT, "1", 1, 100000, NULL, "Partitions of topics the sink creates.", false, "topics"},
    {"topic.delete.retention.ms", CFG_MS, "86400000", 0, I64MAX, NULL, "delete.retention.ms of the compacted topics the sink creates: how long Kafka keeps a tombstone once compacted, so the longest a cache (or any reader of the topic as a table) may stay stopped and still see every delete; a cache stopped longer rebuilds the topic's partitions (cache.offline.policy).", false, "topics"},
    {"topic.replication.factor", CFG_INT, NULL, 1, 32767, NULL,
     "Replication factor of topics the sink creates (offsets and lease topics too). Unset: the cluster's `default.replication.factor` (read from a broker), at most the number of brokers. An existing topic with replication factor 1 on a cluster of several brokers gets a WARN naming the fix.", false, "topics"},
    {"topic.min.insync.replicas", CFG_INT, NULL, 1, 32767, NULL,
     "`min.insync.replicas` of topics the sink creates: how many replicas must have a write before the brokers acknowledge it (the producer uses acks=all). Unset: 2 for a replication factor of 3 or more, else 1. An existing topic whose value can lose acknowledged writes (1 with 3 or more replicas) or stops writes (above, or with several replicas equal to, its replication factor) gets a WARN naming the fix.", false, "topics"},
    {"topic.missing.policy", CFG_ENUM, "fail", 0, 0, v_missing_policy,
     "A captured table's topic that is gone when `tributary run` resumes (deleted while the table is captured; the schema topic holds the table's record): `fail` refuses to start, naming the topic (recreated, it would hold only later changes); `resnapshot` (MySQL/MariaDB) creates it again with a WARN and signals an incremental snapshot of the table, whose reconcile step makes the topic equal the table (docs/DESIGN.md 6a). With topic.create=true.", false, "topics"},
    {"topic.check.compact", CFG_BOOL, "true", 0, 0, NULL, "Refuse an existing topic whose cleanup.policy is not compact.", false, "topics"},
    {"topic.create", CFG_BOOL, "true", 0, 0, NULL,
     "Create missing topics and check existing ones through the Kafka Admin API (false: topics must exist or be auto-created).", false, "topics"},
    {"value.format", CFG_ENUM, "envelope", 0, 0, v_value_format, "Message value format (DESIGN 4).", false, "topics"},
    {"value.schemas", CFG_BOOL, "false", 0, 0, NULL, "Wrap values as Kafka Connect JSON (schema + payload).", false, "topics"},
    {"key.schemas", CFG_BOOL, "false", 0, 0, NULL,
     "Wrap keys as Kafka Connect JSON (schema + payload), as JsonConverter with schemas.enable=true reads them (needed by the Debezium JDBC sink's primary.key.mode=record_key).", false, "topics"},
    {"value.encoding", CFG_ENUM, "tributary", 0, 0, v_value_encoding,
     "Column values and envelope: `tributary` (lossless, readable: DESIGN 5) or `debezium` (what Debezium 3.6's MySQL/MariaDB connector writes, with the debezium.* options: DESIGN 5a).", false, "topics"},
    {"key.converter", CFG_ENUM, "json", 0, 0, v_converter,
     "Table topics' keys as `json` or `avro`: Confluent's wire format (byte 0, 4-byte schema id, Avro binary) with the key's schema registered in schema.registry.url under <topic>-key (DESIGN 4b).", false, "topics"},
    {"value.converter", CFG_ENUM, "json", 0, 0, v_converter,
     "Table topics' values as `json` or `avro` (as key.converter, subject <topic>-value; the schemas of Debezium's Avro output under value.encoding=debezium: DESIGN 4b).", false, "topics"},
    {"schema.registry.url", CFG_STRING, NULL, 0, 0, NULL,
     "Base URL of a Confluent-compatible schema registry (e.g. http://127.0.0.1:8081, or Apicurio's .../apis/ccompat/v7); needed by key.converter or value.converter avro, and by tributary cache to read Avro topics (the writer schemas by id).", false, "topics"},
    {"schema.registry.basic.auth.user", CFG_STRING, NULL, 0, 0, NULL, "User for the schema registry's HTTP basic authentication.", false, "topics"},
    {"schema.registry.basic.auth.password", CFG_STRING, NULL, 0, 0, NULL,
     "Its password. Prefer schema.registry.basic.auth.password.file.", true, "topics"},
    {"schema.registry.basic.auth.password.file", CFG_PATH, NULL, 0, 0, NULL, "File holding the schema registry password.", false, "topics"},
    {"schema.registry.ssl.ca.location", CFG_PATH, NULL, 0, 0, NULL, "PEM file of the CA certificates that may sign an https registry's certificate (default: the system's).", false, "topics"},
    {"schema.registry.request.timeout.ms", CFG_INT, "10000", 100, 600000, NULL, "Timeout of one schema registry request, connecting included.", false, "topics"},
    {"schema.registry.retry.timeout.ms", CFG_INT, "300000", 0, I64MAX, NULL,
     "How long registering a schema is retried while the registry is unreachable, slow or failing (nothing is sent meanwhile), before the run stops with an error.", false, "topics"},
    {"debezium.decimal.handling.mode", CFG_ENUM, "precise", 0, 0, v_dbz_decimal,
     "value.encoding=debezium: DECIMAL as Connect Decimal bytes (`precise`), `string` or `double`.", false, "topics"},
    {"debezium.bigint.unsigned.handling.mode", CFG_ENUM, "long", 0, 0, v_dbz_bigint,
     "value.encoding=debezium: BIGINT UNSIGNED as int64 (`long`, wraps above 2^63-1: a WARN per column) or Connect Decimal (`precise`).", false, "topics"},
    {"debezium.time.precision.mode", CFG_ENUM, "adaptive_time_microseconds", 0, 0, v_dbz_time,
     "value.encoding=debezium: TIME as microseconds and DATETIME by precision (`adaptive_time_microseconds`), or Kafka Connect's millisecond types (`connect`).", false, "topics"},
    {"debezium.replace.null.with.default", CFG_BOOL, "true", 0, 0, NULL,
     "value.encoding=debezium: a NULL in a column with a default is written as the default, as Kafka Connect's JsonConverter does by default (its replace.null.with.default); `false` keeps the null.", false, "topics"},
    {"debezium.binary.handling.mode", CFG_ENUM, "bytes", 0, 0, v_dbz_binary,
     "value.encoding=debezium: binary columns as `bytes` (base64 in JSON), `base64`, `base64-url-safe` or `hex` strings.", false, "topics"},
    {"oversize.policy", CFG_ENUM, "fail", 0, 0, v_error_policy,
     "A message over message.max.bytes: stop (`fail`), write key and position to <name>.dlq (`dlq`), or log and `skip`.", false, "topics"},

    /* ---- offsets */
    {"offsets.storage", CFG_ENUM, "kafka", 0, 0, v_offsets_storage, "Where committed positions live: the <name>.offsets topic or a file.", false, "offsets"},
    {"offsets.file", CFG_PATH, "tributary.offsets", 0, 0, NULL, "Offsets file for offsets.storage=file.", false, "offsets"},
    {"offsets.commit.interval.ms", CFG_MS, "1000", 0, I64MAX, NULL, "How often acknowledged positions are committed.", false, "offsets"},

    /* ---- high availability */
    {"ha.enabled", CFG_BOOL, "true", 0, 0, NULL,
     "`run` takes a lease per connector name first, so only one instance streams; the others stand by and take over (DESIGN 12). offsets.storage=kafka: membership of the consumer group <name>.leader; offsets.storage=file: an exclusive lock on <offsets.file>.lock (one host).", false, "ha"},
    {"ha.takeover.ms", CFG_MS, "15000", 3000, 3600000, NULL,
     "How soon a standby takes over after the active instance dies or stops (offsets.storage=kafka): the group session timeout is 2/5 of it, which the broker must allow (group.min.session.timeout.ms, 6000 by default).", false, "ha"},

    /* ---- cache */
    {"cache.path", CFG_PATH, "tributary-cache.db", 0, 0, NULL, "The local SQLite table cache file.", false, "cache"},
    {"cache.topics", CFG_REGEX, NULL, 0, 0, NULL, "Regex of topics to replay (default: ^<topic.prefix>\\..*).", false, "cache"},
    {"cache.mode", CFG_ENUM, "global", 0, 0, v_cache_mode, "`global` (every partition) or `group` (consumer group).", false, "cache"},
    {"cache.group.id", CFG_STRING, NULL, 0, 0, NULL, "Consumer group for cache.mode=group (default: <name>-cache).", false, "cache"},
    {"cache.on.revoke", CFG_ENUM, "keep", 0, 0, v_revoke, "Group mode: drop or keep the rows of a revoked partition.", false, "cache"},
    {"cache.on.drop", CFG_ENUM, "keep", 0, 0, v_revoke, "A table dropped at the source (its schema record says `dropped`): `keep` its rows in the cache, or `drop` the cache table (messages of its topic read afterwards are not applied until the table is described again).", false, "cache"},
    {"cache.error.policy", CFG_ENUM, "fail", 0, 0, v_error_policy, "An undecodable message: stop, skip (logged) or copy to <name>.cache.dlq.", false, "cache"},
    {"cache.batch.size", CFG_INT, "5000", 1, 10000000, NULL, "Messages applied per SQLite transaction.", false, "cache"},
    {"cache.offline.policy", CFG_ENUM, "rebuild", 0, 0, v_offline_policy, "A cache started after it was stopped longer than a table topic's delete.retention.ms (read from the broker), or one that fell behind a partition by longer than that (a gap in its offsets past records older than delete.retention.ms), may have missed deletes whose tombstones compaction removed: `rebuild` replays that topic's partitions from the beginning (WARN), `fail` stops with an error naming the fix.", false, "cache"},
    {"cache.busy.timeout.ms", CFG_MS, "5000", 0, 3600000, NULL, "How long the cache waits for another process's lock on the cache file (a reader's checkpoint, an open write transaction in the sqlite3 shell) before it stops with an error naming the lock.", false, "cache"},
    {"cache.debezium.decimal.handling.mode", CFG_ENUM, "precise", 0, 0, v_dbz_decimal, "How the Debezium connector wrote DECIMAL values of topics without Connect schemas (its decimal.handling.mode): decoded by the types of tributary's schema record, named in the warning for a foreign topic.", false, "cache"},
    {"cache.debezium.time.precision.mode", CFG_ENUM, "adaptive_time_microseconds", 0, 0, v_cache_dbz_time, "How the Debezium connector wrote TIME/DATETIME values of topics without Connect schemas (its time.precision.mode).", false, "cache"},
    {"cache.debezium.history.topic", CFG_STRING, NULL, 0, 0, NULL, "Debezium's schema history topic (its schema.history.internal.kafka.topic), read for the fractional-second precision of TIME, DATETIME and TIMESTAMP columns, which its Connect schemas lack: with it a Debezium topic's temporal values are written with the column's fsp digits, as tributary's own topics hold them (a key is one text whoever wrote the topic); without it, the shortest exact fraction.", false, "cache"},
    {"cache.debezium.binary.handling.mode", CFG_ENUM, "bytes", 0, 0, v_dbz_binary, "How the Debezium connector wrote binary values of topics without Connect schemas (its binary.handling.mode).", false, "cache"},

    /* ---- verify */
    {"verify.memory.max.bytes", CFG_INT, "33554432", 16384, I64MAX, NULL,
     "`tributary verify`: the most memory the digest map of a table's other side (its topic or cache table) takes, 16 bytes a slot, at most 3/4 full (the default holds 1.5M keys). A table with more keys is compared in hash partitions through temporary files in TMPDIR (16 bytes per topic record, 24 per source row), read back once (DESIGN 10a).", false, "verify"},

    /* ---- metrics */
    {"metrics.token", CFG_STRING, NULL, 0, 0, NULL, "A bearer token every request to /metrics and /health must carry (`Authorization: Bearer <token>`; 401 without it). Prefer metrics.token.file or TRIBUTARY_METRICS_TOKEN. Without one, a metrics.listen address other than loopback gets a WARN at start; set but empty, it is refused.", true, "metrics"},
    {"metrics.token.file", CFG_PATH, NULL, 0, 0, NULL, "File holding metrics.token.", false, "metrics"},
    {"metrics.listen", CFG_STRING, NULL, 0, 0, NULL,
     "HOST:PORT where `run`, `cache` and `verify` serve GET /metrics (Prometheus text format) and GET /health (200 when active and healthy, else 503 with the reason); off when unset. Use 127.0.0.1 unless a scraper on another host needs it (0.0.0.0 in a container). With it (and with sink=kafka), `run` turns on librdkafka's statistics every 5 s for the tributary_kafka_* series and the \"kafka unreachable\" verdict of /health and of `tributary status`, unless kafka.statistics.interval.ms is set (0 turns them off; docs/metrics.md).", false, "metrics"},

    /* ---- kafka pass-through */
    {"kafka.*", CFG_STRING, NULL, 0, 0, NULL,
     "Passed to librdkafka without the prefix, e.g. kafka.bootstrap.servers=127.0.0.1:9092. They override the "
     "producer's defaults: linger.ms=5 (the longest a message waits while the run is busy; whenever the run waits for its source, everything held is sent at once), batch.size=1000000, batch.num.messages=100000, compression.type=lz4, "
     "queue.buffering.max.messages=1000000 and queue.buffering.max.kbytes=4096 (or room for two messages of "
     "kafka.message.max.bytes, if more): that queue bounds the memory of a catch-up or a snapshot; a larger one "
     "(32768) streams about 15% faster for about 10-40 MiB more. acks, enable.idempotence, partitioner and "
     "transactional.id cannot be changed. Each client gets the settings of its role: a producer setting is not "
     "given to the consumers (offsets reader, lease, topic scans, the cache's readers), nor a consumer setting "
     "to the producers, as librdkafka's own property table says; its value is checked all the same.", false, "kafka"},
};

const cfg_prop *cfg_props(size_t *n)
{
    *n = sizeof(props) / sizeof(props[0]);
    return props;
}

static const cfg_renamed renamed[] = {
    {"exactly_once", "exactly.once", NULL},
    {"source.heartbeat.ms", "source.heartbeat.interval.ms", NULL},
    {"snapshot.fetch.size", NULL, "snapshot rows stream from the server as they are read, with no fetch size"},
};

const cfg_renamed *cfg_renamed_keys(size_t *n)
{
    *n = sizeof(renamed) / sizeof(renamed[0]);
    return renamed;
}

const cfg_renamed *cfg_renamed_find(const char *old_name)
{
    for (size_t i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++)
        if (strcmp(renamed[i].old_name, old_name) == 0)
            return &renamed[i];
    return NULL;
}

const cfg_prop *cfg_prop_find(const char *key)
{
    size_t n = sizeof(props) / sizeof(props[0]);
    for (size_t i = 0; i < n; i++)
        if (strcmp(props[i].name, key) == 0)
            return &props[i];
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(props[i].name);
        if (len > 0 && props[i].name[len - 1] == '*' && strncmp(props[i].name, key, len - 1) == 0 &&
            key[len - 1] != '\0')
            return &props[i];
    }
    return NULL;
}
