# syntax=docker/dockerfile:1
# Build stage: Debian 12 with exactly the packages and commands of README command (b)'s build
# (scripts/install-deps.sh, scripts/build.sh); the tests are left to CI.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/build.sh scripts/
RUN ./scripts/install-deps.sh --build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN BUILD_DIR=/build BUILD_TYPE=Release ./scripts/build.sh -DSHMGUARD_BUILD_TESTS=OFF \
 && strip /build/shmguard

# Runtime: Debian 12 slim with only the shared libraries shmguard links
# (tests/deploy/deploy_test.cc checks this list against `ldd` of the binary).
FROM debian:12-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libcpp-httplib0.11 libssl3 libyaml-0-2 libspdlog1.10 libfmt9 libsimdjson14 libjemalloc2 \
 && rm -rf /var/lib/apt/lists/*
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd lookup.
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["shmguard"]
CMD ["serve", "--tls-cert-file=/etc/shmguard/tls/tls.crt", "--tls-key-file=/etc/shmguard/tls/tls.key"]

# `--target prebuilt`, with a context that holds only a `shmguard` built on Debian 12 (the host's
# scripts/build.sh): the same image without compiling again (scripts/build-images.sh).
FROM runtime AS prebuilt
COPY shmguard /usr/local/bin/shmguard

# The default: the binary of the build stage above.
FROM runtime
COPY --from=build /build/shmguard /usr/local/bin/shmguard
