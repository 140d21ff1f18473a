#!/usr/bin/env bash
# End-to-end LDA benchmark: latentd (file token store, TBB pipeline,
# SparseLDA) against the plain dense O(K) Gibbs sampler, same run, same
# initial assignments, α=50/K, β=0.01 fixed.
#
# Workloads (corpus × K), each: latentd 1 thread, latentd 2 threads, dense.
#   news20.lines.zst  K=100, K=1000   (the corpus the peer systems used)
#   blei-ap           K=100, K=1000
# Prints per run the mean tokens/s, seconds to reach TARGET log-likelihood
# per token, peak RSS, and the ratios latentd/dense and 2 threads/1 thread.
# Usage: ops/bench/lda_bench.sh [build-dir] [sweeps]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SWEEPS=${2:-30}
DATA=${LATENTD_DATA_DIR:-../shared/data}
BIN=$BUILD/ops/bench/lda_bench
LOG=$(mktemp -d)/lda_bench

run() {  # name, args...
  local name=$1; shift
  "$BIN" --sweeps "$SWEEPS" "$@" > "$LOG.$name"
  grep '^result' "$LOG.$name" | sed "s/^result/$name/"
}
tps() { grep '^result' "$LOG.$1" | sed 's/.*tokens_per_s=\([0-9.]*\).*/\1/'; }
lastll() { grep '^sweep' "$LOG.$1" | tail -1 | awk '{print $NF}'; }

for corpus in news20 ap; do
  if [ $corpus = news20 ]; then
    args=(--corpus "$DATA/20newsgroups-bydate/news20.lines.zst" --format lines)
  else
    args=(--corpus "$DATA/blei-ap/ap.dat.zst" --vocab "$DATA/blei-ap/vocab.txt.zst" --format ldac)
  fi
  for K in 100 1000; do
    target=$([ $K = 100 ] && echo -9.22 || echo -9.5)
    common=("${args[@]}" --topics $K --target-ll $target)
    run "$corpus-K$K-latentd-t1" "${common[@]}" --engine latentd --threads 1
    run "$corpus-K$K-latentd-t2" "${common[@]}" --engine latentd --threads 2
    run "$corpus-K$K-dense" "${common[@]}" --engine dense
    t1=$(tps "$corpus-K$K-latentd-t1"); t2=$(tps "$corpus-K$K-latentd-t2")
    d=$(tps "$corpus-K$K-dense")
    echo "$corpus K=$K: latentd/dense tokens/s = $(echo "scale=2; $t1/$d" | bc)" \
         "(2 threads: $(echo "scale=2; $t2/$d" | bc)); 2 threads/1 thread =" \
         "$(echo "scale=2; $t2/$t1" | bc); final ll/token latentd-t1" \
         "$(lastll "$corpus-K$K-latentd-t1") dense $(lastll "$corpus-K$K-dense")"
  done
done
echo "per-sweep logs: $LOG.*"
