#!/usr/bin/env bash
# latentd against WarpLDA on news20, side by side in one run: WarpLDA runs
# ITERATIONS iterations; its final state's joint log-likelihood per token
# (ops/bench/joint_ll.py on its topic dump) is the target; lda_bench, with
# latentd's defaults (the progressive start, --kernel auto), samples until
# it crosses that target. Both: α = 50/K, β = 0.01, fixed; the same tokens
# (news20.lines, every word kept); the same thread count.
#
# Usage: ops/bench/warplda_side_by_side.sh WARPLDA_DIR [BUILD] [Ks] [threads] [iterations] [repeat]
#   e.g. ops/bench/warplda_side_by_side.sh /var/tmp/warplda-build/src build "100 1000" "1 2" 100
#   WARPLDA_DIR holds `warplda` and `format` (ops/bench/build_warplda.sh).
#   repeat (1): pairs of runs per K and thread count, one after the other;
#   with more than one, a line after them gives the median of the pairs'
#   ratios and their range (a run that did not get there counts as 0).
# Prints per K and thread count: WarpLDA's seconds for its iterations (the
# sum of the times it prints, its corpus load not counted), the
# log-likelihood it prints for its last iteration and that of its final
# state, its peak RSS; latentd's seconds of sampling to that state's
# log-likelihood (off the clock: the corpus build and the per-sweep
# likelihood), its peak RSS (lda_bench's process: the store build and the
# likelihood included); and the ratio of the times. latentd runs for at
# most twice WarpLDA's time; "<" means it did not get there. A last line
# names the vector paths latentd sampled with (LATENTD_CPU caps them).
#
# HOLDOUT=F (e.g. 0.1) holds that share of the documents out (lda_bench's
# split, the same for every K) and trains both on the rest. Then WarpLDA's
# held-out quality is the second target: its final state's word-topic
# counts scored on the held-out documents by latentd's own document
# completion (lda_bench --score-state), and each row adds that figure,
# latentd's time to it (evaluated after every sweep, off the clock), its
# held-out figure at the end and the second ratio. The training target's V
# is then latentd's vocabulary, which counts words only held-out documents
# hold (joint_ll.py VOCAB_SIZE).
set -euo pipefail
cd "$(dirname "$0")/../.."
WARP=${1:?usage: warplda_side_by_side.sh WARPLDA_DIR [BUILD] [Ks] [threads] [iterations]}
BUILD=${2:-build}
TOPICS=${3:-100 1000}
THREADS=${4:-1 2}
ITERATIONS=${5:-100}
REPEAT=${6:-1}
HOLDOUT=${HOLDOUT:-0}
DATA=${LATENTD_DATA_DIR:-../shared/data}
CORPUS=$DATA/20newsgroups-bydate/news20.lines.zst
BENCH=$BUILD/ops/bench/lda_bench
for f in "$WARP/warplda" "$WARP/format" "$BENCH" "$CORPUS"; do
  [ -e "$f" ] || { echo "warplda_side_by_side.sh: $f missing" >&2; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# WarpLDA reads Yahoo!LDA's text format: two ids, then the words.
holdout_args=()
vocab_size=
if [ "$HOLDOUT" != 0 ]; then
  holdout_args=(--holdout "$HOLDOUT" --heldout-every 1)
  "$BENCH" --corpus "$CORPUS" --format lines --holdout "$HOLDOUT" \
    --training-text "$WORK/news20.txt" --work-dir "$WORK/split" >"$WORK/split.log" 2>&1 ||
    { cat "$WORK/split.log" >&2; exit 1; }
  vocab_size=$(sed -n '1s/.* tokens, \([0-9]*\) words;.*/\1/p' "$WORK/split.log")
else
  zstd -dc "$CORPUS" | awk '{print "d" NR " d" NR " " $0}' >"$WORK/news20.txt"
fi
"$WARP/format" -input "$WORK/news20.txt" -prefix "$WORK/news20" >"$WORK/format.log" 2>&1 ||
  { cat "$WORK/format.log" >&2; exit 1; }

split="every document"
[ "$HOLDOUT" != 0 ] && split="$HOLDOUT of the documents held out"
echo "news20 ($split), α = 50/K, β = 0.01; WarpLDA $ITERATIONS iterations; $(lscpu | sed -n 's/^Model name: *//p')"
header=$(printf '%6s %7s | %9s %10s %10s %8s | %9s %8s %9s | %7s' K threads \
  warp_s warp_ll_pr warp_ll warp_rss latentd_s ll_at_end lat_rss ratio)
[ "$HOLDOUT" != 0 ] && header+=$(printf ' | %8s %9s %8s | %7s' warp_ho lat_ho_s lat_ho ho_ratio)
echo "$header"
# The ratio of WarpLDA's seconds to latentd's ("<" and the most it could
# have been when latentd did not get there in max_s).
ratio_of() {  # WARP_S LATENTD_S MAX_S
  if [[ $2 == -* ]]; then echo "<$(echo "scale=2; $1 / $3" | bc -l)"; else
    echo "$(echo "scale=2; $1 / $2" | bc -l)x"; fi
}
# The median and range of a list of ratios ("<..." counts as 0).
print_median() {  # K T WHAT RATIO...
  local k=$1 t=$2 what=$3
  shift 3
  printf '%s\n' "$@" | sed 's/^<.*/0/; s/x$//' | sort -g | awk -v K="$k" -v T="$t" -v W="$what" '
    { r[NR] = $1 }
    END {
      m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
      printf "%6s %7s | median %sratio over %d pairs: %.2fx (%.2f-%.2f)\n", K, T, W, NR, m, r[1], r[NR]
    }'
}
for K in $TOPICS; do
  for T in $THREADS; do
   ratios=()
   ho_ratios=()
   for ((run = 1; run <= REPEAT; run++)); do
    log=$WORK/warplda-$K-$T.log
    (cd "$WORK" && OMP_NUM_THREADS=$T /usr/bin/time -f "rss_kb %M" "$WARP/warplda" \
      --prefix news20 --k "$K" --niter "$ITERATIONS" --alpha 50 --beta 0.01 \
      --writeinfo=false --dumpmodel=false) >"$log" 2>&1 ||
      { tail -5 "$log" >&2; exit 1; }
    warp_s=$(awk '/^Iteration /{s += $3} END {printf "%.2f", s}' "$log")
    warp_printed=$(awk '/^Iteration /{v = $NF} END {print v}' "$log")
    warp_rss=$(awk '/^rss_kb/{printf "%.0f", $2 / 1024}' "$log")
    target=$(python3 ops/bench/joint_ll.py "$WORK/news20.z.estimate" "$K" 50 0.01 $vocab_size | cut -d' ' -f1)
    ho_target_args=()
    if [ "$HOLDOUT" != 0 ]; then
      "$BENCH" --corpus "$CORPUS" --format lines --topics "$K" --holdout "$HOLDOUT" \
        --score-state "$WORK/news20.z.estimate" --state-vocab "$WORK/news20.vocab" \
        --work-dir "$WORK/score" >"$WORK/score.log" 2>&1 || { cat "$WORK/score.log" >&2; exit 1; }
      warp_ho=$(sed -n 's/^result state_heldout_ll=\([-0-9.]*\) .*/\1/p' "$WORK/score.log")
      ho_target_args=(--target-heldout "$warp_ho")
    fi
    lat=$WORK/latentd-$K-$T.log
    max_s=$(echo "2 * $warp_s" | bc -l)
    /usr/bin/time -f "rss_kb %M" "$BENCH" --corpus "$CORPUS" --format lines \
      --topics "$K" --threads "$T" --kernel auto --progressive-start \
      --sweeps 100000 --max-seconds "$max_s" --target-ll "$target" \
      "${holdout_args[@]}" "${ho_target_args[@]}" \
      --work-dir "$WORK/lda_bench" >"$lat" 2>&1 || { tail -5 "$lat" >&2; exit 1; }
    lat_s=$(grep '^result engine=' "$lat" | sed 's/.* seconds_to_target=\([-0-9.]*\).*/\1/')
    lat_ll=$(grep '^sweep ' "$lat" | tail -1 | sed 's/.* ll\/token \([-0-9.]*\).*/\1/')
    lat_rss=$(awk '/^rss_kb/{printf "%.0f", $2 / 1024}' "$lat")
    ratio=$(ratio_of "$warp_s" "$lat_s" "$max_s")
    ratios+=("$ratio")
    [[ $lat_s == -* ]] && lat_s="-"
    row=$(printf '%6s %7s | %9s %10s %10s %7sM | %9s %8s %8sM | %7s' "$K" "$T" \
      "$warp_s" "$warp_printed" "$target" "$warp_rss" "$lat_s" "$lat_ll" "$lat_rss" "$ratio")
    if [ "$HOLDOUT" != 0 ]; then
      lat_ho_s=$(sed -n 's/^result heldout_ll=.* seconds_to_heldout_target=\([-0-9.]*\).*/\1/p' "$lat")
      lat_ho=$(sed -n 's/^result heldout_ll=\([-0-9.]*\) .*/\1/p' "$lat")
      ho_ratio=$(ratio_of "$warp_s" "$lat_ho_s" "$max_s")
      ho_ratios+=("$ho_ratio")
      [[ $lat_ho_s == -* ]] && lat_ho_s="-"
      row+=$(printf ' | %8s %9s %8s | %7s' "$warp_ho" "$lat_ho_s" "$lat_ho" "$ho_ratio")
    fi
    echo "$row"
   done
   if ((REPEAT > 1)); then
     print_median "$K" "$T" "" "${ratios[@]}"
     if [ "$HOLDOUT" != 0 ]; then print_median "$K" "$T" "held-out " "${ho_ratios[@]}"; fi
   fi
  done
done
# The vector paths latentd sampled with (lda_bench's header; LATENTD_CPU
# caps them), so that a figure says which code it measured.
paths=$(grep -h -m1 -o 'row walk [^;]*' "$WORK"/latentd-*.log 2>/dev/null | head -1)
echo "latentd sampled with ${paths:-paths not reported (an older lda_bench)}"
