# Sourced by scripts/deps and scripts/testenv: which Kafka broker, and where its jars live.
# TRIBUTARY_CACHE overrides the cache folder (default ~/.cache/tributary, outside the tree).
TB_KAFKA_VERSION="${TB_KAFKA_VERSION:-4.1.0}"

# Print the folder holding the broker's jars.
tb_kafka_libs() {
  printf '%s/kafka-%s/libs\n' "${TRIBUTARY_CACHE:-${HOME:-/root}/.cache/tributary}" "$TB_KAFKA_VERSION"
}

# A librdkafka recent enough for SCRAM logins to Kafka 4 (2.6.1 or newer; Debian 12 ships 2.0.2):
# the one bundled in the confluent-kafka wheel from PyPI (auditwheel renamed it
# librdkafka-<hash>.so.1; it needs nothing but libc). scripts/deps extracts it and links
# librdkafka.so.1 to it; the SCRAM test runs tributary with LD_LIBRARY_PATH set to that folder.
TB_RDKAFKA_WHEEL_VERSION=2.12.2
TB_RDKAFKA_WHEEL_FILE=confluent_kafka-2.12.2-cp311-cp311-manylinux_2_28_x86_64.whl
TB_RDKAFKA_WHEEL_SHA256=f26e107597cacb28b6d3333942b665dcb5a3838a1bc2d7b979c4486d22320d0f

# Print the folder holding that librdkafka.so.1.
tb_rdkafka_scram_dir() {
  printf '%s/librdkafka-confluent-kafka-%s\n' "${TRIBUTARY_CACHE:-${HOME:-/root}/.cache/tributary}" \
    "$TB_RDKAFKA_WHEEL_VERSION"
}

# The schema registry for the Avro tests: Apicurio Registry (Confluent-compatible API at
# /apis/ccompat/v7), the runnable Quarkus tarball from Maven Central, unpacked into the cache.
# It needs Java 21 or newer; Debian 12 packages only Java 17, so it runs on the Temurin JDK that
# this kind of machine has beside it (TB_REGISTRY_JAVA_HOME overrides the folder).
TB_REGISTRY_VERSION=3.3.3
TB_REGISTRY_JAVA_HOME="${TB_REGISTRY_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
tb_registry_dir() {
  printf '%s/apicurio-registry-%s\n' "${TRIBUTARY_CACHE:-${HOME:-/root}/.cache/tributary}" "$TB_REGISTRY_VERSION"
}

# The independent Avro consumer of the tests: confluent-kafka's AvroDeserializer and schema
# registry client (with fastavro), in a virtual environment in the cache.
TB_PYAVRO_VERSION=2.16.1
tb_pyavro_venv() {
  printf '%s/pyavro-confluent-kafka-%s\n' "${TRIBUTARY_CACHE:-${HOME:-/root}/.cache/tributary}" "$TB_PYAVRO_VERSION"
}
