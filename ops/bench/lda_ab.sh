#!/usr/bin/env bash
# A/B benchmark of two lda_bench binaries (say, the build of the last
# commit and of a change) on news20 in alternating runs: on a machine
# shared with other work, a run's speed can move by a third within minutes,
# so only runs next to each other compare. Each pair runs the baseline
# first, then the candidate, with lda_bench's default configuration (what
# latentctl train and latentd do: --kernel auto after the progressive
# start). Prints per run: seconds to the target log-likelihood (WarpLDA's
# after 100 iterations, issue 15: -9.22 at K=100, -9.83 at K=1000; "-1" if
# not reached within the cap), mean tokens/s, the log-likelihood after
# sweep 10; then per pair candidate ÷ baseline of the time to target, and
# their median.
# Usage: ops/bench/lda_ab.sh BASE_BIN CANDIDATE_BIN [pairs] [K] [threads]
#          [max-seconds] [target]
#   e.g. ops/bench/lda_ab.sh /tmp/lda_bench.old build/ops/bench/lda_bench 3 1000 2
#   target: for another K (K=10,000: -11.6155, WarpLDA's after 100
#   iterations in warplda_side_by_side.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 2 ]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
BASE=$1
CAND=$2
PAIRS=${3:-3}
K=${4:-100}
THREADS=${5:-1}
MAX_SECONDS=${6:-8}
TARGET=${7:-}
DATA=${LATENTD_DATA_DIR:-../shared/data}
CORPUS=$DATA/20newsgroups-bydate/news20.lines.zst
for bin in "$BASE" "$CAND"; do
  [ -x "$bin" ] || { echo "lda_ab.sh: $bin is not an executable" >&2; exit 2; }
done
[ -f "$CORPUS" ] || { echo "lda_ab.sh: no corpus at $CORPUS" >&2; exit 2; }
case $TARGET:$K in
  :100) target=-9.22 ;;
  :1000) target=-9.83 ;;
  :*) echo "lda_ab.sh: give a target for K=$K (only 100 and 1000 are known)" >&2; exit 2 ;;
  *) target=$TARGET ;;
esac
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT

run() {  # bin -> "seconds tokens/s ll10"
  "$1" --corpus "$CORPUS" --format lines --topics "$K" --threads "$THREADS" \
    --kernel auto --progressive-start --sweeps 200 \
    --max-seconds "$MAX_SECONDS" --target-ll "$target" \
    --work-dir "$LOG/work" >"$LOG/out"
  local result seconds tokens ll10
  result=$(grep '^result ' "$LOG/out")
  seconds=$(tr ' ' '\n' <<<"$result" | sed -n 's/^seconds_to_target=//p')
  tokens=$(tr ' ' '\n' <<<"$result" | sed -n 's/^tokens_per_s=//p')
  ll10=$(awk '$1 == "sweep" && $2 == 10 {print $10}' "$LOG/out")
  echo "$seconds $tokens ${ll10:-n/a}"
}

echo "== news20 K=$K, $THREADS thread(s), target $target, $PAIRS pairs, at most $MAX_SECONDS s a run"
printf '%-5s %-10s %10s %10s %10s\n' pair binary to_target tokens/s ll_sweep10
ratios=()
for p in $(seq "$PAIRS"); do
  read -r b_s b_t b_l < <(run "$BASE")
  printf '%-5s %-10s %10s %10s %10s\n' "$p" baseline "$b_s" "$b_t" "$b_l"
  read -r c_s c_t c_l < <(run "$CAND")
  printf '%-5s %-10s %10s %10s %10s\n' "$p" candidate "$c_s" "$c_t" "$c_l"
  if [[ $b_s != -* && $c_s != -* ]]; then
    ratios+=("$(echo "scale=3; $c_s / $b_s" | bc)")
  fi
done
if [ ${#ratios[@]} -eq 0 ]; then
  echo "no pair where both reached $target (raise max-seconds)"
else
  median=$(printf '%s\n' "${ratios[@]}" | sort -n |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
  echo "candidate / baseline time to target, per pair: ${ratios[*]}; median $median"
fi
