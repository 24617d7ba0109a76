# tributary on Debian 12, built from this repository with CMake and Debian's packages.
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config librdkafka-dev libmariadb-dev libsqlite3-dev \
      libjansson-dev libzstd-dev libmicrohttpd-dev libavro-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTB_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target tributary

FROM debian:bookworm-slim
# libmicrohttpd12 (metrics.listen) and libcurl4 (schema.registry.url) are loaded when a
# configuration uses them, not linked: install them here, the image's default serves /metrics.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      librdkafka1 libmariadb3 libsqlite3-0 libjansson4 libzstd1 libavro23 libmicrohttpd12 libcurl4 \
      ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /var/lib/tributary --create-home tributary
COPY --from=build /build/app/tributary /usr/local/bin/tributary
USER tributary
WORKDIR /var/lib/tributary
# /metrics and /health (docs/metrics.md) on every interface of the container; publish the port
# only where a scraper needs it. `tributary status` (exit 0 healthy, 1 unhealthy, 3 not running)
# is the alternative where no HTTP port is wanted.
ENV TRIBUTARY_METRICS_LISTEN=0.0.0.0:9464
EXPOSE 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:9464/health || exit 1
ENTRYPOINT ["/usr/local/bin/tributary"]
CMD ["--help"]
