#!/usr/bin/env bash
# End-to-end LDA benchmark: time to quality of latentd's kernels and starts
# against today's path (SparseLDA from the uniform random start) and the
# plain dense O(K) Gibbs sampler, all in one run, same corpus build and seed,
# α=50/K, β=0.01 fixed, the exact joint log p(w, z) per token after every
# sweep (computed outside the timed sweep).
#
# Workloads (corpus × K), each with these configurations:
#   sparse-t1, sparse-t2  SparseLDA, uniform start, 1 and 2 threads (baseline)
#   auto-t1, auto-t2      --kernel auto with the sparse start (1 topic/word):
#                         what latentctl train and latentd do by default
#   mh-t1                 MH every sweep (2 cycles a token), uniform start
#   mh-sparse-t1          MH every sweep after the sparse start
#   dense                 the plain O(K) sampler, one thread
#   news20.lines.zst  K=100 (target -9.22), K=1000 (target -9.83): the
#                     log-likelihoods WarpLDA reaches in 100 iterations
#                     (issue 15; no WarpLDA binary on the dev machine)
#   blei-ap           K=100 (target -8.2), K=1000 (target -8.6)
# Each run stops after MAX_SECONDS of sampling or SWEEPS sweeps. Prints per
# run: time to the target (the last crossing from below), the
# log-likelihood after 3 s and 10 s of sampling, mean tokens/s, sweeps run;
# then per workload each configuration's speed-up to the target over
# sparse-t1 (same run, so the ratios hold on a loaded machine).
# Usage: ops/bench/lda_bench.sh [build-dir] [max-seconds] [corpora] [Ks] [sweeps]
#   e.g. ops/bench/lda_bench.sh build 20 news20 "100 1000"
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
MAX_SECONDS=${2:-20}
CORPORA=${3:-news20}
TOPICS=${4:-100 1000}
SWEEPS=${5:-200}
DATA=${LATENTD_DATA_DIR:-../shared/data}
BIN=$BUILD/ops/bench/lda_bench
LOG=$(mktemp -d)/lda_bench
CONFIGS="sparse-t1 sparse-t2 auto-t1 auto-t2 mh-t1 mh-sparse-t1 dense"

config_args() {  # name -> lda_bench arguments
  case $1 in
    sparse-t1) echo --kernel sparse --threads 1 ;;
    sparse-t2) echo --kernel sparse --threads 2 ;;
    auto-t1) echo --kernel auto --init-row-topics 1 --threads 1 ;;
    auto-t2) echo --kernel auto --init-row-topics 1 --threads 2 ;;
    mh-t1) echo --kernel mh --threads 1 ;;
    mh-sparse-t1) echo --kernel mh --init-row-topics 1 --threads 1 ;;
    dense) echo --engine dense ;;
  esac
}
field() { grep '^result' "$LOG.$1" | sed "s/.* $2=\\([-0-9.]*\\).*/\\1/"; }
ratio() { echo "scale=2; $1/$2" | bc; }

for corpus in $CORPORA; do
  if [ "$corpus" = news20 ]; then
    args=(--corpus "$DATA/20newsgroups-bydate/news20.lines.zst" --format lines)
  else
    args=(--corpus "$DATA/blei-ap/ap.dat.zst" --vocab "$DATA/blei-ap/vocab.txt.zst" --format ldac)
  fi
  for K in $TOPICS; do
    if [ "$corpus" = news20 ]; then
      target=$([ "$K" = 100 ] && echo -9.22 || echo -9.83)
    else
      target=$([ "$K" = 100 ] && echo -8.2 || echo -8.6)
    fi
    echo "== $corpus K=$K, target $target, at most $MAX_SECONDS s of sampling"
    printf '%-14s %10s %9s %9s %10s %6s\n' config to_target ll_3s ll_10s tokens/s sweeps
    for c in $CONFIGS; do
      name="$corpus-K$K-$c"
      # shellcheck disable=SC2046
      "$BIN" "${args[@]}" --topics "$K" --target-ll "$target" --sweeps "$SWEEPS" \
        --max-seconds "$MAX_SECONDS" --work-dir "${TMPDIR:-/tmp}/lda_bench_$$" \
        $(config_args "$c") >"$LOG.$name"
      printf '%-14s %10s %9s %9s %10s %6s\n' "$c" "$(field "$name" seconds_to_target)" \
        "$(field "$name" ll_at_3s)" "$(field "$name" ll_at_10s)" \
        "$(field "$name" tokens_per_s)" "$(field "$name" sweeps)"
    done
    base=$(field "$corpus-K$K-sparse-t1" seconds_to_target)
    line="speed-up to $target over sparse-t1:"
    for c in $CONFIGS; do
      t=$(field "$corpus-K$K-$c" seconds_to_target)
      if [[ $base == -* ]]; then
        line+=" $c n/a (sparse-t1 did not reach it)"
      elif [[ $t == -* ]]; then
        line+=" $c <$(ratio "$base" "$MAX_SECONDS")"
      else
        line+=" $c $(ratio "$base" "$t")x"
      fi
    done
    echo "$line"
  done
done
echo "per-sweep logs: $LOG.*"
