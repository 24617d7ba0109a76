#!/usr/bin/env python3
"""The tests' independent Avro consumer: confluent-kafka's AvroDeserializer with its schema
registry client (and fastavro underneath) decode every message of the given topics, from the
beginning to the end, and print one JSON line per message:

  {"topic":T,"offset":N,"key":K,"value":V,"key_schema_id":I,"value_schema_id":J}

Values are made JSON-friendly in one way only: bytes as lower-case hex, decimal.Decimal as its
plain text (format 'f'), datetime/date/time as isoformat(), floats as repr() text. A null value (tombstone)
is null. A topic that does not exist yet has no messages. Exit status 124: the registry did not
answer a request within 30 s, or a topic's metadata or offsets are not there yet (try again). A message that does not decode stops the script with exit status 1, naming it.

usage: avro_consume.py BOOTSTRAP REGISTRY_URL TOPIC...
"""
import datetime
import decimal
import json
import struct
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext


def plain(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def schema_id(b):
    if b is None or len(b) < 5:
        return None
    if b[0] != 0:
        raise ValueError("magic byte %d, not 0" % b[0])
    return struct.unpack(">I", b[1:5])[0]


def main():
    bootstrap, url, topics = sys.argv[1], sys.argv[2], sys.argv[3:]
    src = SchemaRegistryClient({"url": url, "timeout": 30})
    deser = AvroDeserializer(src)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "avro-consume", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "enable.partition.eof": True})
    try:
        parts = partitions(c, topics)
    except KafkaException as e:  # a topic being created: metadata or offsets not there yet
        print("metadata: %r" % e, file=sys.stderr)
        sys.exit(124)
    if not parts:
        return
    read(c, deser, parts)


def partitions(c, topics):
    parts = []
    for t in topics:
        md = c.list_topics(t, timeout=30).topics[t]
        if md.error is not None:
            if md.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue  # not created yet: no messages
            sys.exit("topic %s: %s" % (t, md.error))
        for p in md.partitions:
            lo, hi = c.get_watermark_offsets(TopicPartition(t, p), timeout=30)
            if hi > lo:
                parts.append((t, p, lo, hi))
    return parts


def read(c, deser, parts):
    c.assign([TopicPartition(t, p, lo) for t, p, lo, hi in parts])
    left = {(t, p): hi for t, p, lo, hi in parts}
    while left:
        m = c.poll(30)
        if m is None:
            sys.exit("no message within 30 s; still waiting for %r" % left)
        if m.error():
            if m.error().code() == -191:  # partition EOF
                continue
            sys.exit("consumer error: %s" % m.error())
        tp = (m.topic(), m.partition())
        try:
            k = deser(m.key(), SerializationContext(m.topic(), MessageField.KEY)) if m.key() is not None else None
            v = deser(m.value(), SerializationContext(m.topic(), MessageField.VALUE)) if m.value() is not None else None
            rec = {"topic": m.topic(), "offset": m.offset(), "key": plain(k), "value": plain(v),
                   "key_schema_id": schema_id(m.key()), "value_schema_id": schema_id(m.value())}
        except Exception as e:  # noqa: BLE001 - any decoding failure fails the test
            if "Timeout" in type(e).__name__:  # the registry did not answer: the caller tries again
                print("%s offset %d: registry timeout: %r" % (m.topic(), m.offset(), e), file=sys.stderr)
                sys.exit(124)
            sys.exit("%s offset %d: cannot decode: %r" % (m.topic(), m.offset(), e))
        print(json.dumps(rec, sort_keys=True), flush=True)
        if tp in left and m.offset() + 1 >= left[tp]:
            del left[tp]
    c.close()


if __name__ == "__main__":
    main()
