#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ with clang, ASan and UBSan
# (a build directory of their own) and runs each for SECONDS, starting from
# its seed corpus (tests/fuzz/corpus/<harness>/, copied: the committed seeds
# are never changed). Prints the executions of each harness and the total.
# Exits non-zero on a finding: a crash, a sanitizer report, a violated
# invariant, a leak, a timeout (-timeout=10 s per input) or an input using
# more than 2 GiB; the input is kept as <build>/fuzz-artifacts/<harness>-*
# and the harness's log as <build>/fuzz-logs/<harness>.log.
#
# Usage: ops/fuzz.sh [SECONDS] [HARNESS...]   (default 60 s, every harness)
#        ops/fuzz.sh --seeds                  rewrite tests/fuzz/corpus/
# Environment: FUZZ_BUILD (default build-asan; ops/test.sh's ASan tree has
# no coverage counters and only replays the seeds), FUZZ_JOBS (build parallelism, default nproc),
# FUZZ_PARALLEL (harnesses fuzzed at once, default FUZZ_JOBS),
# FUZZ_NO_BUILD=1 (run the harnesses as built),
# FUZZ_SEED (libFuzzer's -seed; unset: a random seed each run; set it to
# explore the same mutations again).
# Reproduce a finding: <build>/tests/fuzz/<harness> <artifact>.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FUZZ_BUILD:-build-asan}
JOBS=${FUZZ_JOBS:-$(nproc)}

ALL=(fuzz_sync_frame fuzz_sync_owner fuzz_sync_admission fuzz_sync_reply
     fuzz_api fuzz_api_tokens fuzz_document_reader fuzz_edge_list
     fuzz_tokenizer fuzz_token_store fuzz_ingest_log fuzz_model_snapshot fuzz_ring_config)

SECONDS_EACH=60
if [ $# -gt 0 ] && [ "$1" != "--seeds" ]; then SECONDS_EACH=$1; shift; fi
SEEDS=0
if [ $# -gt 0 ] && [ "$1" = "--seeds" ]; then SEEDS=1; shift; fi
HARNESSES=("$@")
if [ ${#HARNESSES[@]} -eq 0 ]; then HARNESSES=("${ALL[@]}"); fi

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ not found (ops/install-deps.sh installs clang)" >&2
  exit 2
fi
if [ "${FUZZ_NO_BUILD:-0}" != "1" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLATENTD_SANITIZE=address,undefined \
    -DLATENTD_BUILD_FUZZERS=ON -DLATENTD_FUZZ_COVERAGE=ON \
    -DLATENTD_BUILD_BENCHMARKS=OFF >/dev/null
fi
if [ $SEEDS -eq 1 ]; then
  cmake --build "$BUILD" -j"$JOBS" --target make_fuzz_seeds
  "$BUILD"/tests/fuzz/make_fuzz_seeds tests/fuzz/corpus
  echo "fuzz.sh: seeds written to tests/fuzz/corpus/"
  exit 0
fi
if [ "${FUZZ_NO_BUILD:-0}" != "1" ]; then
  cmake --build "$BUILD" -j"$JOBS" --target "${HARNESSES[@]}"
fi

# Leaks are findings; an abort (a violated invariant) leaves a core-less
# report; UBSan stops at its first report (-fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$BUILD/fuzz-artifacts" "$BUILD/fuzz-logs"
seed_flag=()
if [ -n "${FUZZ_SEED:-}" ]; then seed_flag=(-seed="$FUZZ_SEED"); fi
# fuzz_one HARNESS: fuzzes it, its log in fuzz-logs/HARNESS.log and its exit
# status in fuzz-logs/HARNESS.rc.
fuzz_one() {
  local h=$1 rc=0
  local work="$BUILD/fuzz-corpus/$h"
  mkdir -p "$work"
  "$BUILD/tests/fuzz/$h" "${seed_flag[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$BUILD/fuzz-artifacts/$h-" \
    "$work" "tests/fuzz/corpus/$h" >"$BUILD/fuzz-logs/$h.log" 2>&1 || rc=$?
  echo "$rc" >"$BUILD/fuzz-logs/$h.rc"
}
# FUZZ_PARALLEL harnesses at a time (default: one per CPU; each is
# single-threaded).
for h in "${HARNESSES[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "${FUZZ_PARALLEL:-$JOBS}" ]; do wait -n || true; done
  rm -f "$BUILD/fuzz-logs/$h.rc"
  fuzz_one "$h" &
done
wait
total=0
failed=()
for h in "${HARNESSES[@]}"; do
  log="$BUILD/fuzz-logs/$h.log"
  rc=$(cat "$BUILD/fuzz-logs/$h.rc" 2>/dev/null || echo "no exit status")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  execs=${execs:-0}
  total=$((total + execs))
  if [ "$rc" != 0 ]; then
    failed+=("$h")
    printf '%-22s %12s executions  FINDING (exit %s), log: %s\n' "$h" \
      "$execs" "$rc" "$log"
    grep -E 'ERROR|runtime error|invariant violated|Test unit written' \
      "$log" | head -5 | sed 's/^/    /'
  else
    printf '%-22s %12s executions in %ss, no finding\n' "$h" "$execs" \
      "$SECONDS_EACH"
  fi
done
printf '%-22s %12s executions, %d harnesses, %d with a finding\n' total \
  "$total" "${#HARNESSES[@]}" "${#failed[@]}"
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}" >&2
  exit 1
fi
