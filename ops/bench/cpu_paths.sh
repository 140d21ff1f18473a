#!/usr/bin/env bash
# The row walk's CPU paths end to end (issue 33): `latentctl train` on
# news20 with the sampler's row walk chosen by LATENTD_CPU (scalar, avx2,
# avx512; sampler/internal/row_masses.h), everything else the defaults
# (--kernel auto after the progressive start), the same seed, in
# alternating rounds: on a machine shared with other work a run's speed can
# move by a third within minutes, so only runs next to each other compare.
# A path the CPU lacks (/proc/cpuinfo) is left out. Each round runs, per
# path, latentctl train (tokens/s over all its sweeps: tokens ÷ sampling
# seconds, from its per-sweep lines; wall time, so it moves with the load
# beside it) and lda_bench with the same configuration (tokens per CPU
# second of sampling: what to compare on a loaded machine). Prints each
# run, then per path the medians over the rounds and their ratios to
# scalar's.
# Usage: ops/bench/cpu_paths.sh [build-dir] [K] [threads] [sweeps] [rounds]
#   e.g. ops/bench/cpu_paths.sh build 1000 1 10 3
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
K=${2:-1000}
THREADS=${3:-1}
SWEEPS=${4:-10}
ROUNDS=${5:-3}
DATA=${LATENTD_DATA_DIR:-../shared/data}
CORPUS=$DATA/20newsgroups-bydate/news20.lines.zst
BIN=$BUILD/cli/latentctl
LDA_BENCH=$BUILD/ops/bench/lda_bench
for b in "$BIN" "$LDA_BENCH"; do
  [ -x "$b" ] || { echo "cpu_paths.sh: no $b (build first)" >&2; exit 2; }
done
[ -f "$CORPUS" ] || { echo "cpu_paths.sh: no corpus at $CORPUS" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

paths=(scalar)
grep -qw avx2 /proc/cpuinfo && paths+=(avx2)
grep -qw avx512f /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo &&
  paths+=(avx512)
echo "$(lscpu | grep 'Model name' | sed 's/  */ /g'); paths: ${paths[*]}"
echo "news20, K=$K, $THREADS thread(s), $SWEEPS sweeps, $ROUNDS rounds"

declare -A wall cpu
for round in $(seq "$ROUNDS"); do
  for p in "${paths[@]}"; do
    log=$WORK/$p.$round.log
    LATENTD_CPU=$p "$BIN" train --corpus "$CORPUS" --format lines \
      --topics "$K" --threads "$THREADS" --sweeps "$SWEEPS" --seed 1 \
      --out "$WORK/model" --overwrite >/dev/null 2>"$log"
    # "sweep  i/N  S s  M Mtok/s ...": tokens = S * M * 1e6.
    w=$(awk '$1 == "sweep" && $4 == "s" && $6 == "Mtok/s" {
               t += $3 * $5 * 1e6; s += $3 }
             END { if (s > 0) printf "%.0f", t / s; else print 0 }' "$log")
    c=$(LATENTD_CPU=$p "$LDA_BENCH" --corpus "$CORPUS" --format lines \
          --topics "$K" --threads "$THREADS" --sweeps "$SWEEPS" --seed 1 \
          --kernel auto --progressive-start --max-seconds 1000 \
          --work-dir "$WORK" | grep '^result' |
          sed 's/.* tokens_per_cpu_s=\([0-9.]*\).*/\1/')
    awk -v r="$round" -v p="$p" -v w="$w" -v c="$c" 'BEGIN {
      printf "round %s  %-7s latentctl %5.2f M tokens/s  lda_bench %5.2f M tokens/CPU-s\n",
        r, p, w / 1e6, c / 1e6 }'
    wall[$p]+="$w "
    cpu[$p]+="$c "
  done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 }
  END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
wall_base=$(echo "${wall[scalar]}" | median)
cpu_base=$(echo "${cpu[scalar]}" | median)
for p in "${paths[@]}"; do
  w=$(echo "${wall[$p]}" | median)
  c=$(echo "${cpu[$p]}" | median)
  awk -v p="$p" -v w="$w" -v wb="$wall_base" -v c="$c" -v cb="$cpu_base" \
    'BEGIN { printf "%-7s median: latentctl %5.2f M tokens/s (%.2fx scalar)  lda_bench %5.2f M tokens/CPU-s (%.2fx scalar)\n",
      p, w / 1e6, w / wb, c / 1e6, c / cb }'
done
