# shellcheck shell=bash
# Shared preamble of the tests/service/*.sh tests that run latentd: a temp
# directory, starting daemons, waiting for them, failing with their logs,
# and stopping them at exit. Sourced (bash, set -euo pipefail) after
# LATENTD is set:
#
#   DIR                   a fresh temp directory, removed at exit
#   PID, LOG              the daemon last started and its log ('' once
#                         stopped)
#   start_latentd LOG ARGS...
#                         starts "$LATENTD" ARGS... in the background,
#                         stdout and stderr to LOG; sets PID and LOG
#   wait_ports DATADIR    waits (60 s at most) for DATADIR/ports, which the
#                         daemon writes once it serves; sets TCP and HTTP
#                         ('' for a protocol that is off). The daemons bind
#                         127.0.0.1:0, so concurrent runs never collide.
#   wait_until SECONDS WHAT CMD...
#                         runs CMD every 0.1 s until it succeeds; fails
#                         naming WHAT after SECONDS
#   stop_latentd          SIGTERM to PID; fails if it exits non-zero
#   fail MSG              prints "FAIL: MSG" and the tail of every log in
#                         DAEMON_LOGS (each daemon's; a test adds others),
#                         exits 1
#   on_exit CMD...        one more command for the exit trap (stopping a
#                         helper server), run after the daemons stopped
#
# Every wait checks that PID is still alive (kill -0), so a daemon that died
# fails the test at once with its log, instead of after the whole wait.
DIR=$(mktemp -d)
PID=
LOG=
DAEMON_PIDS=()
DAEMON_LOGS=()
EXIT_CMDS=()

daemon_lib_cleanup() {
  local p cmd
  for p in "${DAEMON_PIDS[@]+"${DAEMON_PIDS[@]}"}"; do
    kill "$p" 2>/dev/null || continue
    # SIGTERM checkpoints; a daemon that does not exit in 30 s is killed.
    for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  for cmd in "${EXIT_CMDS[@]+"${EXIT_CMDS[@]}"}"; do eval "$cmd" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap daemon_lib_cleanup EXIT

on_exit() { EXIT_CMDS+=("$*"); }

fail() {
  echo "FAIL: $*"
  local f
  for f in "${DAEMON_LOGS[@]+"${DAEMON_LOGS[@]}"}"; do
    [ -f "$f" ] && { echo "== ${f#"$DIR"/}"; tail -20 "$f"; }
  done
  exit 1
}

start_latentd() {
  LOG=$1
  shift
  "$LATENTD" "$@" >"$LOG" 2>&1 &
  PID=$!
  DAEMON_PIDS+=("$PID")
  case " ${DAEMON_LOGS[*]+"${DAEMON_LOGS[*]}"} " in
    *" $LOG "*) ;;
    *) DAEMON_LOGS+=("$LOG") ;;
  esac
}

# The daemon PID died: fail now, with its exit status.
check_alive() {
  [ -n "$PID" ] || return 0
  kill -0 "$PID" 2>/dev/null && return 0
  local rc=0
  wait "$PID" 2>/dev/null || rc=$?
  PID=
  fail "latentd exited (status $rc) while the test waited for it"
}

wait_until() {
  local seconds=$1 what=$2
  shift 2
  local i
  for ((i = 0; i < seconds * 10; i++)); do
    "$@" && return 0
    check_alive
    sleep 0.1
  done
  "$@" && return 0
  fail "$what (waited ${seconds} s)"
}

wait_ports() {
  wait_until 60 "daemon with data dir $1 did not start" test -s "$1/ports"
  TCP=$(sed -n 's/^tcp=//p' "$1/ports")
  HTTP=$(sed -n 's/^http=//p' "$1/ports")
}

stop_latentd() {
  kill -TERM "$PID"
  local rc=0
  wait "$PID" || rc=$?
  PID=
  [ $rc = 0 ] || fail "latentd exited with status $rc after SIGTERM"
}
