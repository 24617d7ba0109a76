# tributary on Debian 12, built from this repository with CMake and Debian's packages.
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config librdkafka-dev libmariadb-dev libsqlite3-dev \
      libjansson-dev libzstd-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTB_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target tributary

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      librdkafka1 libmariadb3 libsqlite3-0 libjansson4 libzstd1 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /var/lib/tributary --create-home tributary
COPY --from=build /build/app/tributary /usr/local/bin/tributary
USER tributary
WORKDIR /var/lib/tributary
ENTRYPOINT ["/usr/local/bin/tributary"]
CMD ["--help"]
