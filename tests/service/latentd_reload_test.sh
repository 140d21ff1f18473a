#!/usr/bin/env bash
# SIGHUP follows the daemon convention: the daemon keeps running, re-reads
# its --config file and applies the runtime settings (max-sweeps here: a
# stopped sampler resumes), logs a changed restart-only setting as not
# applied, and reopens its --log-file (logrotate moves it away first).
# A bad config on reload changes nothing. Then SIGTERM exits 0.
# Usage: latentd_reload_test.sh LATENTD LATENTCTL
set -euo pipefail
LATENTD=$1
CTL=$2
# shellcheck source=tests/service/daemon_lib.sh
source "$(dirname "$0")/daemon_lib.sh"
sweep() { "$CTL" status --addr "$TCP" --json | sed -n 's/.*"sweep":"\{0,1\}\([0-9]*\).*/\1/p'; }
at_sweep() { [ "$(sweep)" = "$1" ]; }
wait_sweep() { wait_until 30 "sweep $1 not reached" at_sweep "$1"; }

for d in $(seq 200); do
  echo "oil prices opec crude barrel $d market energy"
  echo "football match goal team player $d season coach"
done >"$DIR/corpus.txt"
cat >"$DIR/latentd.conf" <<CONF
data-dir = $DIR/node
corpus = $DIR/corpus.txt
topics = 4
max-sweeps = 3
http = off
listen = 127.0.0.1:0
log-file = $DIR/latentd.log
CONF
# stdout and stderr to DIR/stderr; the log lines go to --log-file.
start_latentd "$DIR/stderr" --config "$DIR/latentd.conf"
DAEMON_LOGS+=("$DIR/latentd.log")
wait_ports "$DIR/node"
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z info    latentd: serving' "$DIR/latentd.log" ||
  fail "log file not written, or lines not timestamped and levelled"
wait_sweep 3
sleep 0.5
[ "$(sweep)" = 3 ] || fail "sampled past max-sweeps"
grep -q "info    latentd: sweep 3/3: .* tokens/s.*max-sweeps reached" "$DIR/latentd.log" ||
  fail "no progress line for the last sweep"

# logrotate: the file is moved away, then SIGHUP.
mv "$DIR/latentd.log" "$DIR/latentd.log.1"
sed -i 's/^max-sweeps = 3/max-sweeps = 6/; s/^topics = 4/topics = 9/' "$DIR/latentd.conf"
kill -HUP "$PID"
wait_sweep 6
kill -0 "$PID" 2>/dev/null || fail "SIGHUP killed the daemon"
[ -s "$DIR/latentd.log" ] || fail "log file not reopened"
grep -q "max-sweeps: '3' -> '6'" "$DIR/latentd.log" || fail "reload not logged"
grep -q "topics: '4' -> '9' (not applied: restart to change)" "$DIR/latentd.log" || fail "restart-only setting not reported"
"$CTL" status --addr "$TCP" --json | grep '"topics":4' >/dev/null || fail "topics changed without a restart"

# A bad config on reload: logged, nothing changes, the daemon goes on.
echo "max-sweeps = lots" >>"$DIR/latentd.conf"
kill -HUP "$PID"
wait_until 5 "bad reload not logged" grep -q "settings unchanged" "$DIR/latentd.log"
grep -q "latentd.conf:[0-9]*: setting max-sweeps" "$DIR/latentd.log" || fail "bad reload: $(tail -3 "$DIR/latentd.log")"
kill -0 "$PID" 2>/dev/null || fail "a bad reload killed the daemon"
[ "$(sweep)" = 6 ] || fail "a bad reload changed the model"

stop_latentd
grep -q "checkpoint written at sweep 6" "$DIR/latentd.log" || fail "no final checkpoint"
echo "latentd SIGHUP reload: all checks passed"
