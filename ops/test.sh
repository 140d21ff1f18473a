#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install dependencies
# (Redis included, for the cluster tests), build in Release and run every
# ctest test there but the unit GoogleTest binaries (label unit_gtest:
# they are neither built nor run in Release here); then the sanitizer run:
# those binaries and the libFuzzer harnesses built with clang, ASan and
# UBSan in BUILD-asan, the unit tests run there, and every harness run
# over its seed corpus (label fuzz_replay; ops/fuzz.sh N is the fuzzing
# run); beside them ThreadSanitizer over the
# multi-threaded tests in BUILD-tsan (ops/tsan.sh). The two sanitizer trees
# build at nice 19 while the Release tests run. Prints how long each phase
# took. With SANITIZERS=0 the unit GoogleTest binaries run in Release.
# Usage: ops/test.sh [build-dir] (default: build-test)
# Environment: SANITIZERS=0 skips the sanitizer runs (both); UNITY=OFF
# builds every source as its own unit (default ON); CCACHE_DISABLE=1 builds
# without ccache; LATENTD_DATA_DIR (default ../shared/data beside the checkout): the real
# corpora of the tests labelled data, which are skipped, each naming the
# file it lacks, where they are absent.
set -euo pipefail
cd "$(dirname "$0")/.."
export LATENTD_DATA_DIR=${LATENTD_DATA_DIR:-$PWD/../shared/data}
BUILD=${1:-build-test}
phase() {
  printf 'test.sh: %-34s %4ds\n' "$1" "$((SECONDS - start))"
  start=$SECONDS
}
start=$SECONDS
ops/install-deps.sh
phase "install dependencies"
unit_gtests_in_release=OFF
release_ctest=(-LE unit_gtest)
if [ "${SANITIZERS:-1}" = "0" ]; then
  unit_gtests_in_release=ON
  release_ctest=()
fi
# Unity builds (CMake compiles each target's sources 8 to a unit): the
# three trees are built once here and never rebuilt, and each unit's
# headers and inline code compile once per 8 sources instead of once per
# source (the Release tree: about half the CPU time). ops/check.sh's
# incremental tree stays one source per unit. UNITY=OFF builds as it does.
export UNITY=${UNITY:-ON}
# ccache (ops/install-deps.sh installs it) for every tree, ops/tsan.sh's
# too (CMake takes the launcher from this variable at a first configure):
# on a machine that ran the gate before, most units come from the cache;
# on a fresh one it costs a few percent. The sloppiness lets it cache the
# units that use a precompiled header; CCACHE_BASEDIR lets a clean clone
# at the same path hit. CCACHE_DISABLE=1 turns it off.
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  mkdir -p "$BUILD"
  export CCACHE_STATSLOG=$(cd "$BUILD" && pwd)/ccache-stats.log
  rm -f "$CCACHE_STATSLOG"
fi
# Cold code (LATENTD_COLD_DIRS, cmake/LatentdHelpers.cmake) compiles at
# -O0: in the Release tree the tests' own sources and the benchmarks'
# drivers, which it only smoke-tests (the latentd under test stays as
# shipped); in the ASan tree also service/, sync/ and cli/. The
# TSan tree keeps every folder optimised: its oneTBB suppressions match
# frames that -O0 leaves un-inlined (tsan_tbb_suppressions_reduce_race_test
# fails at -O0).
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLATENTD_DATA_DIR="$LATENTD_DATA_DIR" -DCMAKE_UNITY_BUILD="$UNITY" \
  -DLATENTD_UNIT_GTESTS_IN_ALL="$unit_gtests_in_release" \
  "-DLATENTD_COLD_DIRS=tests;ops"
cmake --build "$BUILD" -j"$(nproc)"
phase "release build"

ASAN_BUILD="$BUILD-asan"
TSAN_BUILD="$BUILD-tsan"
sanitizer_log="$BUILD/sanitizer-build.log"
if [ "${SANITIZERS:-1}" != "0" ]; then
  # The sanitizer trees build at the lowest priority while the Release
  # tests run: the multi-daemon tests leave the CPUs idle much of the time
  # (failure timeouts, sync rounds), and at nice 19 the compiler takes
  # almost nothing from a test that wants the CPU.
  # Without UBSan's vptr check (-DLATENTD_UBSAN_VPTR=OFF): 9% of this
  # tree's CPU time (490 -> 448 s here; a quarter of the heaviest units'),
  # and ASan still sees a use of a freed object. ops/fuzz.sh's own tree and
  # a plain sanitizer build keep it. Without libFuzzer's coverage counters
  # (-DLATENTD_FUZZ_COVERAGE=OFF, about 9% of this tree): the harnesses
  # here replay their seed corpora; ops/fuzz.sh's tree fuzzes.
  CC=clang CXX=clang++ cmake -S . -B "$ASAN_BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLATENTD_SANITIZE=address,undefined \
    -DLATENTD_UBSAN_VPTR=OFF -DLATENTD_BUILD_FUZZERS=ON -DLATENTD_FUZZ_COVERAGE=OFF \
    -DLATENTD_BUILD_BENCHMARKS=OFF \
    -DCMAKE_UNITY_BUILD="$UNITY" -DLATENTD_DATA_DIR="$LATENTD_DATA_DIR" \
    "-DLATENTD_COLD_DIRS=tests;service;sync;cli" >/dev/null
  # (Its own session, so that a failed test run can stop it whole.)
  ASAN_BUILD="$ASAN_BUILD" TSAN_BUILD="$TSAN_BUILD" setsid -w nice -n 19 \
    bash -c 'cmake --build "$ASAN_BUILD" -j"$(nproc)" --target unit_gtests \
      fuzzers && TSAN_BUILD_ONLY=1 ops/tsan.sh' >"$sanitizer_log" 2>&1 &
  sanitizer_build=$!
  trap 'kill -- -"$sanitizer_build" 2>/dev/null || true' EXIT
fi
rc=0
ctest --test-dir "$BUILD" "${release_ctest[@]}" -j"$(nproc)" --output-on-failure || rc=$?
phase "release tests"
if [ "${SANITIZERS:-1}" = "0" ]; then exit $rc; fi
if [ $rc -ne 0 ]; then exit $rc; fi
if ! wait "$sanitizer_build"; then
  tail -n 60 "$sanitizer_log"
  echo "test.sh: the sanitizer build failed (log: $sanitizer_log)"
  exit 1
fi
phase "sanitizer builds (after the tests)"
if [ -n "${CCACHE_STATSLOG:-}" ] && [ -f "$CCACHE_STATSLOG" ]; then
  ccache --show-log-stats | grep -E "Hits|Misses" | sed 's/^ */test.sh: ccache /' || true
fi

# The TSan tests, one at a time, run beside the ASan ones: each of the two
# runs leaves a core idle at times (a test waiting on a timeout, the last
# long test alone), and the two took 41 + 34 s one after the other.
tsan_log="$TSAN_BUILD/tsan.log"
TSAN_BUILD="$TSAN_BUILD" TSAN_JOBS=1 ops/tsan.sh >"$tsan_log" 2>&1 &
tsan=$!
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$ASAN_BUILD" -L "^(unit_gtest|fuzz_replay)$" -j"$(nproc)" \
  --output-on-failure || rc=$?
phase "asan+ubsan unit tests, fuzz replays"
wait "$tsan" || rc=$?
cat "$tsan_log"
phase "tsan tests (after the asan ones)"
exit $rc
