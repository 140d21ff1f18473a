#!/usr/bin/env bash
# End-to-end LDA benchmark: latentd (file token store, TBB pipeline,
# SparseLDA) against the plain dense O(K) Gibbs sampler, same run, same
# initial assignments, α=50/K, β=0.01 fixed.
#
# Workloads (corpus × K), each: latentd 1 thread, latentd 2 threads, dense.
#   news20.lines.zst  K=100, K=1000   (the corpus the peer systems used)
#   blei-ap           K=100, K=1000
# Prints per run the mean tokens/s over all sweeps and over the last quarter
# of them (once word rows have thinned out), seconds to reach TARGET
# log-likelihood per token, the final log-likelihood and peak RSS; then per
# workload the ratios latentd/dense (mean and last quarter), 2 threads/1
# thread, and dense's time to TARGET over latentd's.
# Usage: ops/bench/lda_bench.sh [build-dir] [sweeps] [corpora] [topic counts]
#   e.g. ops/bench/lda_bench.sh build 40 "news20 ap" "100 1000"
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SWEEPS=${2:-40}
CORPORA=${3:-news20 ap}
TOPICS=${4:-100 1000}
DATA=${LATENTD_DATA_DIR:-../shared/data}
BIN=$BUILD/ops/bench/lda_bench
LOG=$(mktemp -d)/lda_bench

run() {  # name, args...
  local name=$1; shift
  "$BIN" --sweeps "$SWEEPS" "$@" > "$LOG.$name"
  grep '^result' "$LOG.$name" | sed "s/^result/$name/"
}
field() { grep '^result' "$LOG.$1" | sed "s/.* $2=\\([-0-9.]*\\).*/\\1/"; }
tps() { field "$1" tokens_per_s; }
ratio() { echo "scale=2; $1/$2" | bc; }

for corpus in $CORPORA; do
  if [ $corpus = news20 ]; then
    args=(--corpus "$DATA/20newsgroups-bydate/news20.lines.zst" --format lines)
  else
    args=(--corpus "$DATA/blei-ap/ap.dat.zst" --vocab "$DATA/blei-ap/vocab.txt.zst" --format ldac)
  fi
  for K in $TOPICS; do
    target=$([ $K = 100 ] && echo -9.22 || echo -9.5)
    common=("${args[@]}" --topics $K --target-ll $target)
    run "$corpus-K$K-latentd-t1" "${common[@]}" --engine latentd --threads 1
    run "$corpus-K$K-latentd-t2" "${common[@]}" --engine latentd --threads 2
    run "$corpus-K$K-dense" "${common[@]}" --engine dense
    t1=$(tps "$corpus-K$K-latentd-t1"); t2=$(tps "$corpus-K$K-latentd-t2")
    d=$(tps "$corpus-K$K-dense")
    tail1=$(field "$corpus-K$K-latentd-t1" tail_tokens_per_s)
    taild=$(field "$corpus-K$K-dense" tail_tokens_per_s)
    reach1=$(field "$corpus-K$K-latentd-t1" seconds_to_target)
    reach2=$(field "$corpus-K$K-latentd-t2" seconds_to_target)
    reachd=$(field "$corpus-K$K-dense" seconds_to_target)
    speedup="n/a (target not reached in $SWEEPS sweeps)"
    if [[ $reach1 != -* && $reachd != -* ]]; then
      speedup="$(ratio "$reachd" "$reach1") (1 thr), $([[ $reach2 != -* ]] && ratio "$reachd" "$reach2" || echo n/a) (2 thr)"
    fi
    echo "$corpus K=$K: latentd/dense tokens/s = $(ratio "$t1" "$d") mean," \
         "$(ratio "$tail1" "$taild") last quarter (2 threads: $(ratio "$t2" "$d")" \
         "mean); 2 threads/1 thread = $(ratio "$t2" "$t1"); time to ll $target" \
         "dense/latentd = $speedup; final ll/token latentd-t1" \
         "$(field "$corpus-K$K-latentd-t1" final_ll) dense $(field "$corpus-K$K-dense" final_ll)"
  done
done
echo "per-sweep logs: $LOG.*"
