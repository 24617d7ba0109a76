# Seeds of fuzz_sqlite_page and fuzz_sqlite_wal (fuzz/corpus/<target>/), written by the system SQLite
# through Python sqlite3: python3 fuzz/corpus/gen_sqlite_seeds.py fuzz/corpus (random blobs: a rerun
# differs byte for byte). wal seeds: 4-byte big-endian length, database file, its -wal (taken while the
# connection is open, autocheckpoint off); page seeds: a selector byte (page size 512 << (b % 8), bit 8 =
# page 1), then one page of those databases or their WAL frames.
import sqlite3, os, shutil, struct, sys
out = sys.argv[1]
cases = [
  (512, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, r REAL, b BLOB);", ["INSERT INTO t VALUES(1,'a',1.5,x'00ff')", "INSERT INTO t VALUES(2,'bb',2,NULL)", "UPDATE t SET v='A' WHERE id=1", "DELETE FROM t WHERE id=2"]),
  (512, "CREATE TABLE w(k TEXT PRIMARY KEY, v BLOB, n INT) WITHOUT ROWID;", ["INSERT INTO w VALUES('k1', randomblob(40), 1)", "INSERT INTO w VALUES('k2', zeroblob(900), 2)", "UPDATE w SET n=3 WHERE k='k1'", "DELETE FROM w WHERE k='k2'"]),
  (1024, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX tv ON t(v);", ["WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i<60) INSERT INTO t SELECT i, printf('row %d %s', i, hex(randomblob(8))) FROM s", "DELETE FROM t WHERE id % 3 = 0", "UPDATE t SET v = v || 'x' WHERE id < 10"]),
  (512, "CREATE TABLE o(id INTEGER PRIMARY KEY, big TEXT);", ["INSERT INTO o VALUES(1, printf('%.*c', 3000, 'z'))", "UPDATE o SET big = printf('%.*c', 1500, 'y') WHERE id = 1", "ALTER TABLE o ADD COLUMN e INT DEFAULT 7", "INSERT INTO o(id) VALUES(2)"]),
  (4096, "CREATE TABLE c(a TEXT, b TEXT, n INT, PRIMARY KEY(a,b));", ["INSERT INTO c VALUES('x','y',1)", "INSERT INTO c VALUES('x','z',2)", "CREATE TABLE d(id INTEGER PRIMARY KEY)", "INSERT INTO d VALUES(5)", "UPDATE c SET n=n+1"]),
]
os.makedirs(out + "/fuzz_sqlite_wal", exist_ok=True); os.makedirs(out + "/fuzz_sqlite_page", exist_ok=True)
for i, (ps, ddl, dml) in enumerate(cases):
    p = f"/tmp/i16seed/c{i}.db"
    for f in (p, p + "-wal", p + "-shm"):
        if os.path.exists(f): os.remove(f)
    db = sqlite3.connect(p, isolation_level=None)
    db.execute(f"PRAGMA page_size={ps}")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.executescript(ddl)
    if i % 2 == 0:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # schema in the file, changes in the WAL
    for s in dml:
        db.execute(s)
    dbb = open(p, "rb").read(); wal = open(p + "-wal", "rb").read()
    open(f"{out}/fuzz_sqlite_wal/seed{i}", "wb").write(struct.pack(">I", len(dbb)) + dbb + wal)
    # pages: from the db file and from WAL frames
    sel = {512: 0, 1024: 1, 4096: 3}[ps]
    pages = [dbb[k:k+ps] for k in range(0, len(dbb), ps)]
    for k in range(32, len(wal), ps + 24):
        pages.append(wal[k+24:k+24+ps])
    for j, pg in enumerate(pages[:6]):
        if len(pg) < ps: continue
        s = sel | (8 if (j == 0) else 0)
        open(f"{out}/fuzz_sqlite_page/seed{i}_{j}", "wb").write(bytes([s]) + pg)
    db.close()
