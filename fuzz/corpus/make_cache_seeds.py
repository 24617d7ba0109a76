#!/usr/bin/env python3
"""Seeds of fuzz_cache (fuzz/fuzz_cache.c): lines "TOPIC\\tKEY\\tVALUE".

From two sources, both committed:
  tests/fixtures/debezium/*/{pairs,types}.tsv  what Debezium 3.6.1 wrote (KEY\\tVALUE lines),
                                               on topic <topic.prefix>.golden.<table>
  fuzz/corpus/tributary/*.jsonl                what tributary writes: `tributary snapshot`
                                               with sink=stdout of tests/fixtures/debezium/
                                               golden.sql (MariaDB: envelope, row, Connect
                                               schemas, value.encoding=debezium) and of a small
                                               SQLite database ({"topic","key","value"} lines,
                                               schema records included)
Each source gives seeds of a few messages each (under 64 KiB, the fuzz run's -max_len):
the messages as written, then with a tombstone of their key, and, for tributary's, a schema
record that adds a column followed by a row that has it (a schema change between messages).
Run from the repository root: fuzz/corpus/make_cache_seeds.py
"""
import json
import os
import pathlib

root = pathlib.Path(__file__).resolve().parents[2]
out = root / "fuzz/corpus/fuzz_cache"
out.mkdir(parents=True, exist_ok=True)
for f in out.iterdir():
    # inputs the fuzzer found (found-*) and the crashes it reported (crash-*): kept as regression seeds
    if not f.name.startswith(("found-", "crash-")):
        f.unlink()
MAX = 60000
n = 0


def emit(name, lines):
    global n
    data = "".join(l + "\n" for l in lines).encode()
    if len(data) > MAX:
        return
    (out / name).write_bytes(data)
    n += 1


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


# Debezium's topics
for d in sorted((root / "tests/fixtures/debezium").iterdir()):
    if not d.is_dir() or not (d / "connector.properties").exists():
        continue
    props = dict(l.split("=", 1) for l in (d / "connector.properties").read_text().splitlines() if "=" in l)
    prefix = props["topic.prefix"]
    for table in ("pairs", "types"):
        rows = [l for l in (d / f"{table}.tsv").read_text().splitlines() if l]
        topic = f"{prefix}.golden.{table}"
        msgs = [f"{topic}\t{r}" for r in rows]
        for i in range(0, len(msgs), 3):
            chunk = msgs[i:i + 3]
            emit(f"dbz-{d.name}-{table}-{i}", chunk)
            key = chunk[0].split("\t")[1]
            emit(f"dbz-{d.name}-{table}-{i}-tomb", chunk + [f"{topic}\t{key}\t"])

# Debezium's schema history (cache.debezium.history.topic) before the Connect schemas it types
for d in sorted((root / "tests/fixtures/debezium/history").iterdir()):
    if not d.is_dir():
        continue
    prefix = d.name.replace("-", "_")
    hist = [f"{prefix}.schemahistory\tNULL\t{l.split(chr(9), 1)[1]}"
            for l in (d / "schemahistory.tsv").read_text().splitlines() if l]
    for table in ("t", "k"):
        rows = [f"{prefix}.fsp.{table}\t{l}" for l in (d / f"{table}.tsv").read_text().splitlines() if l]
        emit(f"dbz-history-{d.name}-{table}", hist + rows)

# tributary's topics
for f in sorted((root / "fuzz/corpus/tributary").glob("*.jsonl")):
    recs = [json.loads(l) for l in f.read_text().splitlines() if l]
    lines = [f"{r['topic']}\t{compact(r['key'])}\t{'' if r['value'] is None else compact(r['value'])}" for r in recs]
    emit(f"tb-{f.stem}-all", lines)
    schemas = [i for i, r in enumerate(recs) if r["topic"].endswith(".schema")]
    for s in schemas:
        rec = recs[s]
        rows = [i for i in range(s + 1, len(recs)) if not recs[i]["topic"].endswith(".schema")]
        rows = [i for i in rows if recs[i]["value"] is not None][:2]
        base = [lines[s]] + [lines[i] for i in rows]
        emit(f"tb-{f.stem}-{s}", base)
        if not rows:
            continue
        r0 = recs[rows[0]]
        emit(f"tb-{f.stem}-{s}-tomb", base + [f"{r0['topic']}\t{compact(r0['key'])}\t"])
        # a schema change: version 2 adds a column, then a row with it
        v2 = json.loads(json.dumps(rec["value"]))
        v2["version"] = v2.get("version", 1) + 1
        v2["columns"].append({"name": "added", "type": "varchar", "default": "d"})
        row = json.loads(json.dumps(r0["value"]))
        img = row.get("after", row) if isinstance(row, dict) else row
        if isinstance(img, dict) and "payload" in img and isinstance(img["payload"], dict):
            img = img["payload"].get("after", img["payload"])
        if isinstance(img, dict):
            img["added"] = "x"
        emit(f"tb-{f.stem}-{s}-alter", base + [f"{rec['topic']}\t{compact(rec['key'])}\t{compact(v2)}",
                                               f"{r0['topic']}\t{compact(r0['key'])}\t{compact(row)}"])
# hand-written: the cases the cache's tests name (tests/cache/test_cache_connect.c, test_cache_names.c)
def field(t, name, logical=None):
    f = {"type": t, "optional": name != "id", "field": name}
    if logical:
        f["name"] = logical
    return f


def wrap(schema, payload):
    return compact({"schema": schema, "payload": payload})


ks = {"type": "struct", "fields": [field("int32", "id")], "optional": False, "name": "t.Key"}
ks2 = dict(ks, name="t.Key2")
v1 = {"type": "struct", "fields": [field("int32", "id"), field("string", "a")], "optional": False, "name": "t.Value"}
v2 = dict(v1, fields=v1["fields"] + [field("bytes", "b")])
emit("hand-connect-schema-change", [
    f"c.db.t\t{wrap(ks, {'id': 1})}\t{wrap(v1, {'id': 1, 'a': 'x'})}",
    f"c.db.t\t{wrap(ks, {'id': 2})}\t{wrap(v2, {'id': 2, 'a': 'y', 'b': 'AP8='})}",
    f"c.db.t\t{wrap(ks2, {'id': 3})}\t{wrap(v2, {'id': 3, 'a': 'z', 'b': 'AQ=='})}",
    f"c.db.t\t{wrap(ks2, {'id': 3})}\t",
])
for logical in ("io.debezium.time.Date", "io.debezium.time.MicroTimestamp", "io.debezium.time.NanoTime"):
    vt = dict(v1, fields=[field("int32", "id"), field("int64", "v", logical)])
    emit(f"hand-temporal-{logical.rsplit('.', 1)[1]}", [
        f"c.db.t\t{wrap(ks, {'id': 1})}\t{wrap(vt, {'id': 1, 'v': 9223372036854775807})}",
        f"c.db.t\t{wrap(ks, {'id': 2})}\t{wrap(vt, {'id': 2, 'v': -9223372036854775808})}",
    ])


def rec(db, table, cols, **extra):
    v = {"db": db, "table": table, "version": extra.pop("version", 1), "names_known": True,
         "columns": [{"name": c, "type": t} for c, t in cols], "primary_key": [cols[0][0]]}
    v.update(extra)
    return f"p.schema\t{compact({'db': db, 'table': table})}\t{compact(v)}"


def env(op, after):
    return compact({"before": None, "after": after, "source": {}, "op": op})


cols = [("id", "int"), ("v", "varchar")]
emit("hand-names", [
    rec("r7", "Orders", cols), rec("r7", "orders", cols), rec("s5 space", "my table", cols),
    f"p.r7.Orders\t{{\"id\":1}}\t{env('c', {'id': 1, 'v': 'u'})}",
    f"p.r7.orders\t{{\"id\":1}}\t{env('c', {'id': 1, 'v': 'l'})}",
    f"p.s5_space.my_table\t{{\"id\":1}}\t{env('c', {'id': 1, 'v': 's'})}",
    f"p.r7.ORDERS\t{{\"id\":1}}\t{{\"id\":1,\"v\":\"i\"}}",
])
emit("hand-statements", [
    rec("d", "a", cols),
    f"p.d.a\t{{\"id\":1}}\t{env('c', {'id': 1, 'v': 'x'})}",
    f"p.d.a\t{{}}\t{env('t', None)}",
    f"p.d.a\t{{}}\t",
    rec("d", "b", cols, version=2, renamed_from={"db": "d", "table": "a"}),
    f"p.d.b\t{{\"id\":2}}\t{env('u', {'id': 2, 'v': 'y'})}",
    rec("d", "b", cols + [("w", "datetime")], version=3),
    rec("d", "b", [("id", "bigint"), ("v", "varchar")], version=4),
    f"p.d.b\t{{\"id\":2}}\t{env('d', None)}",
    rec("d", "b", cols, dropped=True),
    f"p.d.b\t{{\"id\":3}}\t{env('c', {'id': 3, 'v': 'z'})}",
    f"p\t\t{compact({'source': {}, 'ddl': 'DROP TABLE b'})}",
])
print(f"{n} seeds in {out.relative_to(root)}")
