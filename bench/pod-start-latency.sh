#!/usr/bin/env bash
# What shmguard costs pods on a real node and what its pods cost the node: GPU pod start
# latency (create -> Running) with and without shmguard in interleaved rounds, and shmguard's
# pods' CPU time and memory (from their cgroups) over a burst of GPU pod creates
# (e2e/cmd/pod-start-latency, run by bench/on-node.sh).
#   bench/pod-start-latency.sh [PODS_PER_ROUND [ROUNDS [BURST]]]
exec "$(dirname "$0")/on-node.sh" pod-start-latency --pods "${1:-20}" --rounds "${2:-3}" --burst "${3:-200}"
