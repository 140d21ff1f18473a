#!/usr/bin/env bash
# The fast loop while working: an incremental build of everything and the
# unit tests (ctest -L unit, about 80 s with two jobs on the shared 2-core
# machine; the tests labelled only cluster, fault or slow, a few minutes of
# multi-daemon and long runs, are left out; those of the unit tests labelled
# data are skipped where the real corpora are absent). The whole suite, the
# sanitizers and the fuzzers are ops/test.sh's job, before a merge.
# Usage: ops/check.sh [build-dir] (default: build). A build directory that
# does not exist yet is configured as Release with Ninja (and ccache when
# installed); an existing one is built as it is configured.
# Environment: JOBS (default: the number of CPUs) for the build and ctest;
# LATENTD_DATA_DIR, when set, is passed to a first configure.
# Ends with one line: the build's and the tests' times and the counts.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
JOBS=${JOBS:-$(nproc)}
# ccache can cache the compiles that use a precompiled header
# (cmake/LatentdPch.cmake) only with this sloppiness.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}

start=$SECONDS
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    ${LATENTD_DATA_DIR:+-DLATENTD_DATA_DIR="$LATENTD_DATA_DIR"} >/dev/null
fi
if ! cmake --build "$BUILD" -j"$JOBS"; then
  echo "check.sh: build FAILED after $((SECONDS - start)) s ($BUILD)"
  exit 1
fi
build_s=$((SECONDS - start))

start=$SECONDS
log="$BUILD/check-ctest.log"
rc=0
ctest --test-dir "$BUILD" -L '^unit$' -j"$JOBS" --output-on-failure \
  2>&1 | tee "$log" || rc=$?
test_s=$((SECONDS - start))
total=$(grep -oP 'tests failed out of \K[0-9]+' "$log" || echo 0)
failed=$(grep -oP '[0-9]+(?= tests failed out of)' "$log" || echo 0)
skipped=$(grep -c '(Skipped)$' "$log" || true)
status=passed
[ "$rc" -eq 0 ] || status=FAILED
echo "check.sh: $status: build ${build_s} s, unit tests ${test_s} s:" \
  "$((total - failed - skipped)) passed, $failed failed, $skipped skipped" \
  "of $total ($BUILD)"
exit "$rc"
