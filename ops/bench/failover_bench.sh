#!/usr/bin/env bash
# Failover benchmark (issue 13): kill -9 one of three latentd daemons
# training blei-ap thirds, 10 times over (each followed by its restart and
# return); the time from the kill to the first sync round completed by the
# new owners (min/median/max) and the survivors' tokens/s before, during
# and after each failover. See failover_bench.py's header for what each
# column measures. Default run: about a minute and a half.
# Usage: ops/bench/failover_bench.sh [build-dir] [kills] [topics]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
KILLS=${2:-10}
TOPICS=${3:-10}
ninja -C "$BUILD" latentd latentctl >/dev/null
exec python3 ops/bench/failover_bench.py --build "$BUILD" --kills "$KILLS" \
  --topics "$TOPICS" --failure-timeout "${FAILURE_TIMEOUT:-1}"
