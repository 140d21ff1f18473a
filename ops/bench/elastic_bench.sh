#!/usr/bin/env bash
# Elastic cluster benchmark (issue 12). Workloads, on news20 (18,805
# documents, 2.18 M tokens, 19,950 words), K=100, 30 sweeps, α = 50/K,
# β = 0.01 fixed, async, in-process nodes on 127.0.0.1 with a private
# redis-server:
#   single  one node, one sampler thread, the whole corpus: the baseline
#           for cpu_eff (single-node CPU s/token ÷ the cluster's)
#   grow    3 -> 4 nodes: nodes 0..2 train shards 0..2 of 4; node3
#           (shard 3) joins and is admitted once node0 has done 10 sweeps
#   shrink  4 -> 3 nodes: node3 is removed with --drop once node0 has done
#           10 sweeps
# Each row: keys and bytes moved against the ring's ideal share (1/4 of the
# keys), the move's time (record, drain phase, last member settled), the
# cluster's tokens/s before, during and after the move and their ratio,
# CPU cores used, cpu_eff, and whether Σ n_k is exact after a drain (see
# elastic_bench.cc's header). Grow and shrink run REPEAT times
# (environment, default 3), one row each. On a 2-core machine the nodes
# share the cores: cpu_eff, not a wall-clock speed-up, is the figure.
# Usage: ops/bench/elastic_bench.sh [build-dir] [sweeps] [topics]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SWEEPS=${2:-30}
TOPICS=${3:-100}
REPEAT=${REPEAT:-3}
ninja -C "$BUILD" elastic_bench >/dev/null
nproc | sed 's/^/# cores: /'
"$BUILD/ops/bench/elastic_bench" --sweeps "$SWEEPS" --topics "$TOPICS" \
  --repeat "$REPEAT"
