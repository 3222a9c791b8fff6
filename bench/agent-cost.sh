#!/usr/bin/env bash
# What the node agent costs a node: its CPU and memory, from its pod's cgroup, with 10 and 100
# pods that mount a memory-backed /dev/shm (e2e/cmd/agent-cost, run by bench/on-node.sh).
#   bench/agent-cost.sh [COUNTS [SECONDS]]     e.g. bench/agent-cost.sh 10,100 60
exec "$(dirname "$0")/on-node.sh" agent-cost --pods "${1:-10,100}" --seconds "${2:-60}"
