#!/usr/bin/env bash
# Cluster synchronization benchmark (issue 4). Workloads, all on blei-ap
# (2,246 documents, 435,838 tokens), α = 50/K, β = 0.01 fixed:
#   K=50, 20 sweeps, async      1, 2, 3 nodes vs one node with 1, 2, 3 threads
#   K=50, 20 sweeps, ssp:1      the same under bounded staleness
#   K=50, 20 sweeps, async, 1 round per sweep instead of 4 (less sync
#                               CPU, staler counts)
# Each line: aggregate tokens/s (single node; m unsynchronized trainers on
# the cluster's shards, "indep"; cluster), the cluster's ratio to the single
# node (goal >= 0.9) and to indep, cpu_ratio (process CPU seconds per
# token, single over cluster),
# sync bytes sent + received per sampled token, mean round time,
# mean staleness (sweeps), log-likelihood per token of both and their
# difference (goal <= 2%). Nodes run in one process on 127.0.0.1 with a
# private redis-server; a machine with fewer cores than nodes is
# oversubscribed, for the single-node baseline and the cluster alike.
# Each figure is the best of REPEAT runs (environment, default 2); ratio_med
# is the median over the REPEAT repetitions of the cluster's ratio to the
# single-node run made just before it.
# Usage: ops/bench/cluster_bench.sh [build-dir] [sweeps] [topics]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SWEEPS=${2:-20}
TOPICS=${3:-50}
REPEAT=${REPEAT:-2}
ninja -C "$BUILD" cluster_bench >/dev/null
nproc | sed 's/^/# cores: /'
for c in async ssp:1; do
  "$BUILD/ops/bench/cluster_bench" --sweeps "$SWEEPS" --topics "$TOPICS" \
    --consistency "$c" --nodes 1,2,3 --repeat "$REPEAT"
done
"$BUILD/ops/bench/cluster_bench" --sweeps "$SWEEPS" --topics "$TOPICS" \
  --consistency async --nodes 1,2,3 --rounds-per-sweep 1 --repeat "$REPEAT"
