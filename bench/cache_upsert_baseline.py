#!/usr/bin/env python3
"""Baseline of bench/cache_bench.sh: what a user would try first.

Reads `kcat -C -e -Z -f '%k\\t%s\\n'` lines (key TAB value, NULL for a tombstone) on stdin
and upserts the envelope's `after` into SQLite (INSERT ... ON CONFLICT DO UPDATE, executemany
in batches of 5000 per transaction), deletes on op=d and tombstones.

    cache_upsert_baseline.py DB TABLE
"""
import json
import sqlite3
import sys

db, table = sys.argv[1], sys.argv[2]
con = sqlite3.connect(db, isolation_level=None)
con.execute("PRAGMA journal_mode=WAL")
con.execute("PRAGMA synchronous=NORMAL")
cols = ["id", "name", "qty", "price", "updated"]
q = '"%s"' % table.replace('"', '""')
con.execute(f'CREATE TABLE IF NOT EXISTS {q}(id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, price TEXT, updated TEXT)')
up = (f'INSERT INTO {q}({",".join(cols)}) VALUES({",".join("?" * len(cols))}) '
      f'ON CONFLICT(id) DO UPDATE SET ' + ",".join(f"{c}=excluded.{c}" for c in cols[1:]))
dl = f'DELETE FROM {q} WHERE id=?'
n = 0
batch_up, batch_del = [], []


def flush():
    con.execute("BEGIN")
    if batch_up:
        con.executemany(up, batch_up)
    if batch_del:
        con.executemany(dl, batch_del)
    con.execute("COMMIT")
    batch_up.clear()
    batch_del.clear()


for line in sys.stdin:
    key, _, value = line.rstrip("\n").partition("\t")
    k = json.loads(key)
    if value == "NULL":
        batch_del.append((k["id"],))
    else:
        v = json.loads(value)
        if v.get("op") == "d":
            batch_del.append((k["id"],))
        else:
            a = v["after"]
            batch_up.append(tuple(a.get(c) for c in cols))
    n += 1
    if n % 5000 == 0:
        flush()
flush()
print(n)
