#!/usr/bin/env python3
"""Debezium's messages in Avro, the way Kafka Connect's Avro converter would write them.

Reads a fixture dump (tests/fixtures/debezium/<variant>/<table>.tsv: one message a line, the key,
a TAB, the value, each Kafka Connect JSON {"schema":...,"payload":...} as JsonConverter
schemas.enable=true wrote it; the value NULL is a tombstone), converts every key and value
schema to Avro with an implementation of Confluent's AvroData Connect -> Avro mapping written
here (independent of tributary's avro/av_conv.c), converts the payloads to Avro data, and
produces them with confluent-kafka's AvroSerializer (fastavro underneath; the schemas
registered under the TopicNameStrategy subjects <topic>-key and <topic>-value) to TOPIC, in
order, to partition 0. Tombstones stay null values. Prints the number of messages produced.

The mapping (AvroData.fromConnectSchema with its defaults: connect.meta.data=true,
enhanced.avro.schema.support=false):
  - struct: a record named by the Connect name split at its last '.' into namespace and name
    (no name: io.confluent.connect.avro.ConnectDefault); a record met again (the Envelope's
    before and after share one Value) is referred to by name, relative to the enclosing
    namespace as Avro's Java writer prints it;
  - int8/int16: "int" with connect.type; int32 "int"; int64 "long"; float32 "float"; float64
    "double"; boolean, string, bytes as themselves; array: "array" with its items;
  - org.apache.kafka.connect.data.Decimal: bytes, logicalType decimal, precision from the
    parameter connect.decimal.precision (64 without it), scale from the parameter scale;
    Date: int, logicalType date; Time: int, time-millis; Timestamp: long, timestamp-millis;
  - connect.version, connect.parameters, connect.default (a schema's default; bytes as base64,
    the way Jackson prints a binary node), connect.name on every type that has them (records too);
  - an optional field: ["null",T] with default null, or [T,"null"] with its default when the
    Connect schema has one; a required field with a default: that default.
Values: bytes (and Decimal, Bits) are the base64 of the JSON decoded; Decimal values are given
to the serializer as decimal.Decimal (unscaled two's complement and the schema's scale); every
other value is the JSON value.

usage: dbz_avro_produce.py BOOTSTRAP REGISTRY_URL TSV TOPIC
Exit status 124: the registry did not answer within 30 s (try again).
"""
import base64
import decimal
import json
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

DECIMAL = "org.apache.kafka.connect.data.Decimal"
LOGICAL = {
    DECIMAL: ("bytes", "decimal"),
    "org.apache.kafka.connect.data.Date": ("int", "date"),
    "org.apache.kafka.connect.data.Time": ("int", "time-millis"),
    "org.apache.kafka.connect.data.Timestamp": ("long", "timestamp-millis"),
}
PRIMITIVE = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float",
             "float64": "double", "float": "float", "double": "double", "boolean": "boolean",
             "string": "string", "bytes": "bytes"}


def split_name(full):
    i = full.rfind(".")
    return (full[:i], full[i + 1:]) if i >= 0 else ("", full)


class ToAvro:
    """One Connect schema to Avro: the records met so far (full name -> defined)."""

    def __init__(self):
        self.defined = set()

    def field_default(self, cs, value, prop=False):
        """A Connect default value (as JsonConverter wrote it: bytes in base64) as Avro's JSON
        default of that type (a field's default: bytes as code points 0-255), or with prop as
        the connect.default property (Jackson's text of a binary node: base64)."""
        if value is None:
            return None
        t = cs["type"]
        if t == "bytes":
            raw = base64.b64decode(value)
            return base64.b64encode(raw).decode("ascii") if prop else raw.decode("latin-1")
        if t == "struct":
            return {f["field"]: self.field_default(f, value.get(f["field"]), prop) for f in cs["fields"]}
        if t == "array":
            return [self.field_default(cs["items"], v, prop) for v in value]
        return value

    def schema(self, cs, space):
        """The Avro type of a Connect schema (without its optional union), in namespace space."""
        t, name = cs["type"], cs.get("name")
        if t == "struct":
            full = name or "io.confluent.connect.avro.ConnectDefault"
            ns, short = split_name(full)
            if full in self.defined:  # a reference, relative to the enclosing namespace
                return short if ns == space else full
            self.defined.add(full)
            rec = {"type": "record", "name": short}
            if ns != space:
                rec["namespace"] = ns
            rec["fields"] = [self.field(f, ns) for f in cs["fields"]]
            self.props(rec, cs)
            return rec
        if t == "array":
            base = {"type": "array", "items": self.optional(cs["items"], space)}
        elif t == "map":
            sys.exit("map schemas are not in the fixtures")
        else:
            base = {"type": PRIMITIVE[t]}
            if name in LOGICAL:
                base["type"], base["logicalType"] = LOGICAL[name]
                if name == DECIMAL:
                    params = cs.get("parameters") or {}
                    base["precision"] = int(params.get("connect.decimal.precision", "64"))
                    base["scale"] = int(params.get("scale", "0"))
            if t in ("int8", "int16"):
                base["connect.type"] = t
        self.props(base, cs)
        return base

    def props(self, avro, cs):
        if cs.get("version") is not None:
            avro["connect.version"] = cs["version"]
        if cs.get("parameters") is not None:
            avro["connect.parameters"] = cs["parameters"]
        if cs.get("default") is not None:
            avro["connect.default"] = self.field_default(cs, cs["default"], prop=True)
        if cs.get("name") is not None:
            avro["connect.name"] = cs["name"]

    def optional(self, cs, space):
        base = self.schema(cs, space)
        if not cs.get("optional"):
            return base
        return [base, "null"] if cs.get("default") is not None else ["null", base]

    def field(self, cs, space):
        f = {"name": cs["field"], "type": self.optional(cs, space)}
        if cs.get("default") is not None:
            f["default"] = self.field_default(cs, cs["default"])
        elif cs.get("optional"):
            f["default"] = None
        return f


def datum(cs, v):
    """A Connect JSON payload value as the Avro serializer's datum."""
    if v is None:
        return None
    t = cs["type"]
    if t == "struct":
        return {f["field"]: datum(f, v.get(f["field"])) for f in cs["fields"]}
    if t == "array":
        return [datum(cs["items"], x) for x in v]
    if t == "bytes":
        raw = base64.b64decode(v)
        if cs.get("name") == DECIMAL:
            scale = int((cs.get("parameters") or {}).get("scale", "0"))
            unscaled = int.from_bytes(raw, "big", signed=True)
            return decimal.Decimal(unscaled).scaleb(-scale)
        return raw
    return v


class Topic:
    def __init__(self, registry, topic):
        self.registry, self.topic, self.serializers = registry, topic, {}

    def encode(self, doc, field):
        """A Connect JSON message as Avro in Confluent's wire format."""
        cs = doc["schema"]
        avsc = json.dumps(ToAvro().optional(cs, ""), separators=(",", ":"))
        ser = self.serializers.get(avsc)
        if ser is None:
            ser = self.serializers[avsc] = AvroSerializer(self.registry, avsc)
        with decimal.localcontext() as ctx:
            ctx.prec = 100
            return ser(datum(cs, doc["payload"]), SerializationContext(self.topic, field))


def main():
    bootstrap, url, tsv, topic = sys.argv[1:5]
    registry = SchemaRegistryClient({"url": url, "timeout": 30})
    out = Topic(registry, topic)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    errors = []
    n = 0
    with open(tsv, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            k, v = line.split("\t", 1)
            try:
                key = out.encode(json.loads(k), MessageField.KEY) if k != "NULL" else None
                value = out.encode(json.loads(v), MessageField.VALUE) if v != "NULL" else None
            except Exception as e:  # noqa: BLE001 - a registry timeout is retried by the caller
                if "Timeout" in type(e).__name__:
                    print("registry timeout: %r" % e, file=sys.stderr)
                    sys.exit(124)
                raise
            p.produce(topic, key=key, value=value, partition=0,
                      on_delivery=lambda err, msg: errors.append(err) if err else None)
            n += 1
    left = p.flush(60)
    if left or errors:
        sys.exit("%s: %d messages not delivered, errors %r" % (topic, left, errors))
    print(n)


if __name__ == "__main__":
    main()
