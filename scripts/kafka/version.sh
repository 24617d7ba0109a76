# Sourced by scripts/deps and scripts/testenv: which Kafka broker, and where its jars live.
# TRIBUTARY_CACHE overrides the cache folder (default ~/.cache/tributary, outside the tree).
TB_KAFKA_VERSION="${TB_KAFKA_VERSION:-4.1.0}"

# Print the folder holding the broker's jars.
tb_kafka_libs() {
  printf '%s/kafka-%s/libs\n' "${TRIBUTARY_CACHE:-${HOME:-/root}/.cache/tributary}" "$TB_KAFKA_VERSION"
}
