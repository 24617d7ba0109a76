#!/usr/bin/env python3
"""A steady SQLite application for bench/sqlite_steady_bench.sh (not a test).

  sqlite_app.py DB SECONDS [RATE]

Python's sqlite3 as an application uses it: default (deferred) transactions begun by the first
INSERT/UPDATE/DELETE, busy timeout 5 s, default autocheckpoint. RATE transactions a second
(default 100), each 1-4 row changes on two tables, one in ten with a 3-20 KB value.
RATE 0: the unpaced writer: as fast as it can, BEGIN IMMEDIATE transactions of 1-8 statements,
values up to 29 kB, wal_autocheckpoint=300 (busy timeout 5 s). Prints one
JSON line: transactions, errors, wall time per transaction (us), process CPU seconds, commit
latency p50/p99/max (ms, the time of the whole transaction from its first statement to the
return of COMMIT), and the largest WAL file size seen (polled after every commit; a WAL file
only grows until a TRUNCATE, so this is its largest size).
"""
import json, os, random, resource, sqlite3, sys, time

db_path, secs = sys.argv[1], float(sys.argv[2])
rate = float(sys.argv[3]) if len(sys.argv) > 3 else 100.0
unpaced = rate <= 0
db = sqlite3.connect(db_path, timeout=5.0, isolation_level=None if unpaced else "")
db.execute("PRAGMA journal_mode=WAL")
if unpaced:
    db.execute("PRAGMA wal_autocheckpoint=300")
db.execute("CREATE TABLE IF NOT EXISTS orders(id INTEGER PRIMARY KEY, customer INTEGER, note TEXT, amount REAL)")
db.execute("CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY, kind TEXT, payload BLOB)")
if not unpaced:
    db.commit()
rnd = random.Random(42)
lat, errors, n, wal_max = [], 0, 0, 0
t0 = time.monotonic()
cpu0 = resource.getrusage(resource.RUSAGE_SELF)
nxt = t0
while time.monotonic() - t0 < secs:
    if not unpaced:
        nxt += 1.0 / rate
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
    s = time.monotonic()
    if unpaced:
        try:
            db.execute("BEGIN IMMEDIATE")
            for _ in range(rnd.randrange(1, 9)):
                k = rnd.randrange(5)
                oid = rnd.randrange(1, 20000)
                if k == 0:
                    db.execute("INSERT OR REPLACE INTO orders VALUES(?,?,?,?)", (oid, rnd.randrange(1000), "n" * rnd.randrange(10, 29000), rnd.random() * 100))
                elif k == 1:
                    db.execute("UPDATE orders SET amount = amount + 1 WHERE id = ?", (oid,))
                elif k == 2:
                    db.execute("DELETE FROM orders WHERE id = ?", (oid,))
                else:
                    db.execute("INSERT INTO events VALUES(NULL,?,?)", ("big", os.urandom(rnd.randrange(16, 29000))))
            db.execute("COMMIT")
            n += 1
        except sqlite3.Error as e:
            errors += 1
            print("error: %s" % e, file=sys.stderr)
            if db.in_transaction:
                db.execute("ROLLBACK")
        lat.append((time.monotonic() - s) * 1000.0)
        try:
            wal_max = max(wal_max, os.stat(db_path + "-wal").st_size)
        except FileNotFoundError:
            pass
        continue
    try:
        k = rnd.randrange(4)
        oid = rnd.randrange(1, 20000)
        if k == 0:
            db.execute("INSERT OR REPLACE INTO orders VALUES(?,?,?,?)", (oid, rnd.randrange(1000), "n" * rnd.randrange(10, 200), rnd.random() * 100))
        elif k == 1:
            db.execute("UPDATE orders SET amount = amount + 1 WHERE id = ?", (oid,))
        elif k == 2:
            db.execute("DELETE FROM orders WHERE id = ?", (oid,))
        else:
            db.execute("INSERT INTO orders VALUES(NULL,?,?,?)", (rnd.randrange(1000), "new", 1.0))
        big = rnd.randrange(10) == 0
        db.execute("INSERT INTO events VALUES(NULL,?,?)", ("big" if big else "small", os.urandom(rnd.randrange(3000, 20000) if big else 64)))
        db.commit()
        n += 1
    except sqlite3.Error as e:
        errors += 1
        print("error: %s" % e, file=sys.stderr)
        db.rollback()
    lat.append((time.monotonic() - s) * 1000.0)
    try:
        wal_max = max(wal_max, os.stat(db_path + "-wal").st_size)
    except FileNotFoundError:
        pass
wall = time.monotonic() - t0
cpu1 = resource.getrusage(resource.RUSAGE_SELF)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0.0
busy = sum(lat) / 1000.0
print(json.dumps({"tx": n, "errors": errors, "wall_per_tx_us": round(busy / max(n, 1) * 1e6, 1),
                  "cpu_s": round((cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime), 3),
                  "p50_ms": round(q(0.50), 3), "p99_ms": round(q(0.99), 3), "max_ms": round(lat[-1], 3) if lat else 0,
                  "wal_max_bytes": wal_max, "seconds": round(wall, 1)}))
db.close()
