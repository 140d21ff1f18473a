#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install dependencies
# (Redis included, for the cluster tests), build everything in Release, run
# every ctest test (labels unit, slow; cluster once it exists).
# Usage: ops/test.sh [build-dir] (default: build-test)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-test}
ops/install-deps.sh
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" -j"$(nproc)" --output-on-failure
