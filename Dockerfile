# syntax=docker/dockerfile:1
# An image per deployable: `--target webhook` (shmguard-webhook, the chart's Deployment; also
# the default) and `--target agent` (shmguard-agent, the chart's DaemonSet). Each carries its own
# program and no other.
#
# Build stage: Debian 12 with exactly the packages and commands of README command (b)'s build
# (scripts/install-deps.sh, scripts/build.sh); the tests are left to CI.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/build.sh scripts/
RUN ./scripts/install-deps.sh --build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN BUILD_DIR=/build BUILD_TYPE=Release ./scripts/build.sh -DSHMGUARD_BUILD_TESTS=OFF \
 && strip /build/shmguard-webhook /build/shmguard-agent

# Runtime: Debian 12 slim with only the shared libraries the programs link
# (tests/deploy/deploy_test.cc checks this list against `ldd` of each).
FROM debian:12-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libcpp-httplib0.11 libssl3 libyaml-0-2 libspdlog1.10 libfmt9 libsimdjson14 libjemalloc2 \
 && rm -rf /var/lib/apt/lists/*
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd lookup.
USER 65532:65532

FROM runtime AS agent-base
EXPOSE 8080
ENTRYPOINT ["shmguard-agent"]

FROM runtime AS webhook-base
EXPOSE 8443 8080
ENTRYPOINT ["shmguard-webhook"]
CMD ["--tls-cert-file=/etc/shmguard/tls/tls.crt", "--tls-key-file=/etc/shmguard/tls/tls.key"]

# `--target webhook-prebuilt` / `agent-prebuilt`, with a context that holds only the program
# built on Debian 12 (the host's scripts/build.sh): the same images without compiling again
# (scripts/build-images.sh).
FROM agent-base AS agent-prebuilt
COPY shmguard-agent /usr/local/bin/shmguard-agent

FROM webhook-base AS webhook-prebuilt
COPY shmguard-webhook /usr/local/bin/shmguard-webhook

# The programs of the build stage above.
FROM agent-base AS agent
COPY --from=build /build/shmguard-agent /usr/local/bin/shmguard-agent

FROM webhook-base AS webhook
COPY --from=build /build/shmguard-webhook /usr/local/bin/shmguard-webhook
