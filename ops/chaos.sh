#!/usr/bin/env bash
# The network-fault harness's long form (tests/service/daemon_netfault_test.cc,
# whose short form is `ctest -R service_DaemonNetFault`): four latentd nodes
# and Redis in network namespaces of their own, seeded schedules cutting and
# healing links (one node cut off, a node cut from Redis, two halves, a
# flapping link) while documents are ingested and training runs, and the
# checker after each. Prints one summary line per schedule and a total; the
# full output is kept in BUILD/test-output/chaos-SEED.log.
#
# Usage: ops/chaos.sh [SCHEDULES] [SEED] [CUT_MS] [FLAP_CYCLES]
#   SCHEDULES    schedules to run (default 40)
#   SEED         the first schedule's seed (default: the time); schedule i
#                has seed SEED+i, its kind is that seed mod 4
#   CUT_MS       MIN-MAX length of a cut in ms (default 4000-10000)
#   FLAP_CYCLES  down/up cycles of a flapping link, 1 s each (default 6)
# Environment: BUILD (default build), built with the test target;
# LATENTD_NETFAULT_KINDS=halves,flap runs only schedules of those kinds
# (isolate, redis-cut, halves, flap); LATENTD_NETFAULT_SWEEP_MS (default 0:
# every node samples back to back; the short form in ctest spaces sweeps
# 20 ms apart to bound its CPU). Needs root and `ip netns` (else exit
# 77).
# Exit status: the test's (0: every schedule run passed).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SCHEDULES=${1:-40}
SEED=${2:-$(date +%s)}
CUT_MS=${3:-4000-10000}
FLAP_CYCLES=${4:-6}
BIN=$BUILD/tests/service/service_daemon_netfault_test
[ -x "$BIN" ] || {
  echo "chaos.sh: $BIN is not built (cmake --build $BUILD --target service_daemon_netfault_test)"
  exit 2
}
mkdir -p "$BUILD/test-output"
LOG=$BUILD/test-output/chaos-$SEED.log
echo "chaos.sh: $SCHEDULES schedules from seed $SEED, cuts $CUT_MS ms," \
  "$FLAP_CYCLES flap cycles; log $LOG"
rc=0
LATENTD_BIN=$PWD/$BUILD/cli/latentd \
  LATENTD_NETFAULT_SCHEDULES=$SCHEDULES LATENTD_NETFAULT_SEED=$SEED \
  LATENTD_NETFAULT_CUT_MS=$CUT_MS LATENTD_NETFAULT_FLAP_CYCLES=$FLAP_CYCLES \
  LATENTD_NETFAULT_SWEEP_MS=${LATENTD_NETFAULT_SWEEP_MS:-0} \
  "$BIN" --gtest_filter=DaemonNetFault.SeededPartitionsHealExact \
  >"$LOG" 2>&1 || rc=$?
grep -E '^netfault' "$LOG" || true
if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
  echo "chaos.sh: FAILED (exit $rc); the failures:"
  grep -E 'Failure|not exact|did not' "$LOG" | head -20 || true
elif [ "$rc" -eq 77 ]; then
  grep -E 'Skipped|no network namespaces' "$LOG" | head -3 || true
fi
exit "$rc"
