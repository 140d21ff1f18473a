#!/usr/bin/env bash
# End-to-end LDA benchmark: time to quality of latentd's kernels and starts
# against today's path (SparseLDA from the uniform random start) and the
# plain dense O(K) Gibbs sampler, all in one run, same corpus build and seed,
# α=50/K, β=0.01 fixed, the exact joint log p(w, z) per token after every
# sweep (computed outside the timed sweep).
#
# Workloads (corpus × K), each with these configurations:
#   sparse-t1, sparse-t2  SparseLDA, uniform start, 1 and 2 threads (baseline)
#   auto-t1, auto-t2      --kernel auto after the progressive start: what
#                         latentctl train and latentd do by default
#   uniform-t1, uniform-t2  --kernel auto from the uniform start (the
#                         default before the progressive start)
#   sstart-t1, sstart-t2  --kernel auto after the sparse start (1 topic per
#                         word, --sparse-start 1)
#   mh-t1, mh-t2          MH every sweep (2 cycles a token), uniform start
#   mh-sparse-t1          MH every sweep after the sparse start
#   dense                 the plain O(K) sampler, one thread
# (CONFIGS picks some, e.g. CONFIGS="sparse-t1 auto-t1")
#   news20.lines.zst  K=100 (target -9.22), K=1000 (target -9.83): the
#                     log-likelihoods WarpLDA reaches in 100 iterations
#                     (issue 15; no WarpLDA binary on the dev machine)
#   blei-ap           K=100 (target -8.2), K=1000 (target -8.6)
# Each run stops after MAX_SECONDS of sampling or SWEEPS sweeps. Prints per
# run: time to the target (the last crossing from below), the
# log-likelihood after 3 s and 10 s of sampling, mean tokens/s, sweeps run;
# then per workload each configuration's speed-up to the target over
# sparse-t1 (same run, so the ratios hold on a loaded machine).
#
# Then the parallel-quality table (issue 15): the joint log-likelihood per
# token at sweeps 10, 25 and 50, mean of the seeds in QUALITY_SEEDS
# (default "1 2 3"; each seed draws the start and seeds the samplers), of
#   dense        the serial dense sampler (the reference)
#   t1, t2       latentd SparseLDA, uniform start, 1 and 2 threads: the
#                batch overlay (following words of at most 256 tokens)
#                and batches sized to the corpus (defaults)
#   t1-all, t2-all  the overlay following every word
#                (--overlay-max-word-tokens 0)
#   t2-before    2 threads as before issue 15: --no-overlay, 16k-token
#                batches whatever the corpus (--min-batches 0)
#   t2-64, t2-off  2 threads, the overlay following words of at most 64
#                tokens, or off (batches sized to the corpus)
# (QUALITY_CONFIGS picks some: default "dense t1 t2 t1-all t2-all t2-before")
# and each one's gap to dense in % (negative: below dense). Corpora
# (QUALITY_CORPORA, default "brown-sentences ap"; "" skips the table):
#   brown-sentences  each sentence of the Brown corpus a document (56k
#                    documents of about 8.5 tokens after stop words), built
#                    from ../shared/data into a temporary file; K=50, α=1
#   reuters-titles   each Reuters-21578 title a document (about 5 tokens);
#                    K=50, α=1
#   ap               blei-ap; K=100, α=0.5
# Usage: ops/bench/lda_bench.sh [build-dir] [max-seconds] [corpora] [Ks] [sweeps]
#   e.g. ops/bench/lda_bench.sh build 20 news20 "100 1000"
#   only the quality table: ops/bench/lda_bench.sh build 20 ""
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
MAX_SECONDS=${2:-20}
CORPORA=${3-news20}
TOPICS=${4:-100 1000}
SWEEPS=${5:-200}
QUALITY_CORPORA=${QUALITY_CORPORA-brown-sentences ap}
QUALITY_SEEDS=${QUALITY_SEEDS:-1 2 3}
DATA=${LATENTD_DATA_DIR:-../shared/data}
BIN=$BUILD/ops/bench/lda_bench
LOG=$(mktemp -d)/lda_bench
CONFIGS=${CONFIGS:-sparse-t1 sparse-t2 auto-t1 auto-t2 uniform-t1 uniform-t2 sstart-t1 sstart-t2 mh-t1 mh-t2 mh-sparse-t1 dense}

config_args() {  # name -> lda_bench arguments
  case $1 in
    sparse-t1) echo --kernel sparse --threads 1 ;;
    sparse-t2) echo --kernel sparse --threads 2 ;;
    auto-t1) echo --kernel auto --progressive-start --threads 1 ;;
    auto-t2) echo --kernel auto --progressive-start --threads 2 ;;
    uniform-t1) echo --kernel auto --threads 1 ;;
    uniform-t2) echo --kernel auto --threads 2 ;;
    sstart-t1) echo --kernel auto --init-row-topics 1 --threads 1 ;;
    sstart-t2) echo --kernel auto --init-row-topics 1 --threads 2 ;;
    mh-t1) echo --kernel mh --threads 1 ;;
    mh-t2) echo --kernel mh --threads 2 ;;
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

# ---- Parallel quality: threads vs the serial dense sampler ----
quality_args() {  # corpus -> lda_bench corpus arguments
  case $1 in
    brown-sentences)
      if [ ! -f "$SHORT/brown.lines" ]; then
        # Every non-blank line of the 500 Brown files is a sentence of
        # word/TAG tokens: the tags go, the sentence is a document.
        zstd -dc "$DATA/brown-corpus/brown.tar.zst" | tar -x -C "$SHORT"
        for f in "$SHORT"/brown/c[a-r][0-9][0-9]; do
          grep -v '^[[:space:]]*$' "$f" | sed -E 's#/[^ ]+##g; s/^[[:space:]]+//'
        done >"$SHORT/brown.lines"
      fi
      echo --corpus "$SHORT/brown.lines" --format lines --raw-text --topics 50 --alpha 1 ;;
    reuters-titles)
      if [ ! -f "$SHORT/titles.lines" ]; then
        zstd -dc "$DATA/reuters21578/reuters21578.tar.zst" | tar -x -C "$SHORT"
        cat "$SHORT"/reuters21578/reut2-*.sgm | tr -d '\r' |
          grep -o '<TITLE>[^<]*</TITLE>' | sed 's/<[^>]*>//g' >"$SHORT/titles.lines"
      fi
      echo --corpus "$SHORT/titles.lines" --format lines --raw-text --topics 50 --alpha 1 ;;
    ap)
      echo --corpus "$DATA/blei-ap/ap.dat.zst" --vocab "$DATA/blei-ap/vocab.txt.zst" \
        --format ldac --topics 100 ;;
  esac
}
quality_config() {  # name -> lda_bench arguments
  case $1 in
    dense) echo --engine dense ;;
    t1) echo --kernel sparse --threads 1 ;;
    t2) echo --kernel sparse --threads 2 ;;
    t1-all) echo --kernel sparse --threads 1 --overlay-max-word-tokens 0 ;;
    t2-all) echo --kernel sparse --threads 2 --overlay-max-word-tokens 0 ;;
    t2-before) echo --kernel sparse --threads 2 --no-overlay --min-batches 0 ;;
    t2-64) echo --kernel sparse --threads 2 --overlay-max-word-tokens 64 ;;
    t2-off) echo --kernel sparse --threads 2 --no-overlay ;;
  esac
}
ll_at() { grep "^sweep $2 " "$1" | sed 's/.* ll\/token \([-0-9.]*\).*/\1/'; }
if [ -n "$QUALITY_CORPORA" ]; then
  SHORT=$(mktemp -d)
  QCONFIGS=${QUALITY_CONFIGS:-dense t1 t2 t1-all t2-all t2-before}
  for corpus in $QUALITY_CORPORA; do
    # shellcheck disable=SC2046
    echo "== parallel quality: $corpus ($(quality_args "$corpus" | sed 's/.*--topics/--topics/')), seeds $QUALITY_SEEDS, 50 sweeps"
    printf '%-10s %9s %9s %9s %8s %8s %8s %10s\n' config ll@10 ll@25 ll@50 gap@10 gap@25 gap@50 tokens/s
    declare -A mean=()
    for c in $QCONFIGS; do
      s10=0 s25=0 s50=0 rate=0 n=0
      for seed in $QUALITY_SEEDS; do
        out="$LOG.quality-$corpus-$c-$seed"
        # shellcheck disable=SC2046
        "$BIN" $(quality_args "$corpus") --sweeps 50 --seed "$seed" \
          --work-dir "${TMPDIR:-/tmp}/lda_bench_$$" $(quality_config "$c") >"$out"
        s10=$(echo "$s10 + $(ll_at "$out" 10)" | bc -l)
        s25=$(echo "$s25 + $(ll_at "$out" 25)" | bc -l)
        s50=$(echo "$s50 + $(ll_at "$out" 50)" | bc -l)
        rate=$(echo "$rate + $(field "${out#"$LOG".}" tokens_per_s)" | bc -l)
        n=$((n + 1))
      done
      for at in 10 25 50; do
        v=s$at
        mean[$c-$at]=$(echo "scale=6; ${!v} / $n" | bc -l)
      done
      gaps=()
      for at in 10 25 50; do
        # The gap in %: (latentd - dense) / |dense|; negative is worse.
        gaps+=("$(echo "scale=4; 100 * (${mean[$c-$at]} - ${mean[dense-$at]}) / -(${mean[dense-$at]})" | bc -l)")
      done
      printf '%-10s %9.4f %9.4f %9.4f %7.2f%% %7.2f%% %7.2f%% %10.0f\n' "$c" \
        "${mean[$c-10]}" "${mean[$c-25]}" "${mean[$c-50]}" "${gaps[@]}" \
        "$(echo "$rate / $n" | bc -l)"
    done
    unset mean
  done
  rm -rf "$SHORT"
fi
echo "per-sweep logs: $LOG.*"
