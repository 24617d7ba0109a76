#!/usr/bin/env python3
"""Seeds of fuzz_binlog_json: MySQL binary JSON values (layout atop
capture/mysql/binlog_json.c), byte 0 even = a value, odd = before image + diff."""
import os, struct
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_binlog_json")
os.makedirs(here, exist_ok=True)

obj_a1 = bytes([0x00]) + struct.pack("<HH", 1, 12) + struct.pack("<HH", 11, 1) + bytes([0x05, 1, 0]) + b"a"
arr = bytes([0x02]) + struct.pack("<HH", 2, 12) + bytes([0x05, 1, 0, 0x0c, 10, 0]) + bytes([1]) + b"x"
values = {
    "null": bytes([0x04, 0x00]), "true": bytes([0x04, 0x01]), "false": bytes([0x04, 0x02]),
    "int16": bytes([0x05]) + struct.pack("<h", -7), "uint16": bytes([0x06]) + struct.pack("<H", 65535),
    "int32": bytes([0x07]) + struct.pack("<i", -2**31), "uint32": bytes([0x08]) + struct.pack("<I", 2**32 - 1),
    "int64": bytes([0x09]) + struct.pack("<q", -2**63), "uint64": bytes([0x0a]) + struct.pack("<Q", 2**64 - 1),
    "double": bytes([0x0b]) + struct.pack("<d", 1.5e300), "string": bytes([0x0c, 3]) + b"abc",
    "decimal": bytes([0x0f, 246, 5, 5, 2, 0x80, 0x7b, 0x2d]),
    "datetime": bytes([0x0f, 12, 8]) + struct.pack("<q", 0x19A0E8B3C4000000),
    "object": obj_a1, "array": arr,
}
for name, v in values.items():
    with open(os.path.join(here, "value-" + name), "wb") as f:
        f.write(b"\x00" + v)
# diff: REPLACE $.a with int16 2; INSERT $.b; REMOVE $.a
diffs = {
    "replace": bytes([0, 3]) + b"$.a" + bytes([3, 0x05, 2, 0]),
    "insert": bytes([1, 3]) + b"$.b" + bytes([2, 0x04, 0x00]),
    "remove": bytes([2, 3]) + b"$.a",
}
for name, d in diffs.items():
    with open(os.path.join(here, "diff-" + name), "wb") as f:
        f.write(b"\x01" + struct.pack("<H", len(obj_a1)) + obj_a1 + d)
