#!/usr/bin/env bash
# Out of file descriptors: latentd runs under an open-files limit of 128
# (soft and hard) and 300 clients connect to each API port and stay. The
# accept loops back off instead of spinning
# (the old loop spun at ~84% of a core: over 300 ticks in 4 s; the bound
# is 200, half a core, for a loaded machine) and log at most a line per
# listener per 10 s; once the clients go,
# /healthz and Status answer again.
# Usage: latentd_accept_backoff_test.sh LATENTD LATENTCTL
set -euo pipefail
LATENTD=$1
CTL=$2
# shellcheck source=tests/service/daemon_lib.sh
source "$(dirname "$0")/daemon_lib.sh"
for d in $(seq 100); do
  echo "oil prices opec crude barrel $d market energy"
  echo "football match goal team player $d season coach"
done >"$DIR/corpus.txt"
start_latentd "$DIR/latentd.log" --data-dir "$DIR/node" --corpus "$DIR/corpus.txt" \
  --topics 4 --max-sweeps 3 --http 127.0.0.1:0 --listen 127.0.0.1:0 \
  --http-max-connections-per-address 0 --listen-max-connections-per-address 0
wait_ports "$DIR/node"
# Lowered once it runs: latentd raises its soft limit to the hard one.
prlimit --pid "$PID" --nofile=128:128
healthy() { [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$HTTP/healthz")" = 200 ]; }
wait_until 30 "no /healthz" healthy

cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
python3 - "$TCP" "$HTTP" "$DIR/holding" <<'PY' &
import socket, sys, time
socks = []
for addr in sys.argv[1:3]:
    host, port = addr.rsplit(":", 1)
    for _ in range(300):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, int(port)))
            socks.append(s)
        except OSError:
            s.close()
open(sys.argv[3], "w").write(str(len(socks)))
time.sleep(6)
PY
CLIENTS=$!
wait_until 20 "the clients did not connect" test -s "$DIR/holding"
sleep 1
before=$(cpu_ticks)
sleep 4
after=$(cpu_ticks)
ticks=$((after - before))
hz=$(getconf CLK_TCK)
echo "held $(cat "$DIR/holding") connections; latentd used $ticks ticks ($hz a second) in 4 s"
[ "$ticks" -lt $((2 * hz)) ] || fail "the accept loops spin: $ticks ticks of CPU in 4 s"
grep -Eq "accept( failed)?: " "$DIR/latentd.log" || fail "no accept failure logged (did the limit bite?)"
lines=$(grep -Ec "accept( failed)?: " "$DIR/latentd.log" || true)
[ "$lines" -le 4 ] || fail "$lines accept lines in the log: not rate-limited"
wait "$CLIENTS" || true
wait_until 10 "no /healthz after the clients left" healthy
"$CTL" status --addr "$TCP" >/dev/null || fail "Status after the clients left"
# (The page is read whole first: grep -q stops at its first match, and
# under pipefail curl's broken pipe would fail the pipeline.)
metrics=$(curl -s "http://$HTTP/metrics")
grep -Eq '^latentd_accept_failures_total\{listener="(tcp|http)"\} [1-9]' <<<"$metrics" ||
  fail "no accept failures counted: $(grep accept_failures <<<"$metrics")"
stop_latentd
echo "PASS"
