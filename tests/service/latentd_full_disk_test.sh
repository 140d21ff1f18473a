#!/usr/bin/env bash
# A full disk: the data directory on a small tmpfs (root only: skipped
# otherwise), filled up. /readyz turns 503 saying how little is free and
# an ingest that finds no room is not acknowledged; freeing space makes the node ready
# again and ingest works, with nothing acknowledged lost.
# Usage: latentd_full_disk_test.sh LATENTD LATENTCTL
set -euo pipefail
LATENTD=$1
CTL=$2
SKIP=77
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to mount a tmpfs"; exit $SKIP; fi
# shellcheck source=tests/service/daemon_lib.sh
source "$(dirname "$0")/daemon_lib.sh"
MNT=$DIR/small
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=24m tmpfs "$MNT" 2>"$DIR/mount.err"; then
  echo "SKIP: cannot mount a tmpfs: $(cat "$DIR/mount.err")"
  exit $SKIP
fi
# Runs before daemon_lib's own cleanup removes DIR: the daemon has stopped.
on_exit "umount -l '$MNT'"

for d in $(seq 200); do
  echo "oil prices opec crude barrel $d market energy"
  echo "football match goal team player $d season coach"
done >"$DIR/corpus.txt"
start_latentd "$DIR/latentd.log" --data-dir "$MNT/node" --corpus "$DIR/corpus.txt" \
  --topics 4 --max-sweeps 3 --http 127.0.0.1:0 --listen 127.0.0.1:0
wait_ports "$MNT/node"
code() {
  local path=$1
  shift
  curl -s -o "$DIR/body" -w '%{http_code}' "$@" "http://$HTTP$path"
}
ingest() { code /v1/Ingest -H "Content-Type: application/json" -d "{\"documents\":[{\"text\":\"$1\"}]}"; }
ready() { [ "$(code /readyz)" = 200 ]; }
wait_until 30 "not ready on an empty disk: $(cat "$DIR/body" 2>/dev/null)" ready
[ "$(ingest 'oil prices before')" = 200 ] || fail "ingest: $(cat "$DIR/body")"

# Fill the file system (dd stops at ENOSPC).
dd if=/dev/zero of="$MNT/filler" bs=1M count=64 2>/dev/null || true
[ "$(code /readyz)" = 503 ] || fail "/readyz on a full disk: $(cat "$DIR/body")"
grep -q "bytes free, under the" "$DIR/body" || fail "503 body: $(cat "$DIR/body")"
# A small record could still fit in the log's last page; this one cannot.
big=$(for _ in $(seq 10000); do printf 'oil prices '; done)
status=$(ingest "$big")
[ "$status" != 200 ] || fail "a 110 kB document acknowledged on a full disk"
grep -q "No space left" "$DIR/body" || fail "ingest error: $(cat "$DIR/body")"
expect=2
[ "$(code /healthz)" = 200 ] || fail "/healthz on a full disk"

rm -f "$MNT/filler"
wait_until 10 "not ready after space was freed: $(cat "$DIR/body" 2>/dev/null)" ready
[ "$(ingest 'oil prices after')" = 200 ] || fail "ingest after: $(cat "$DIR/body")"
merged() { "$CTL" status --addr "$TCP" --json | grep "\"mergedSequence\":\"$expect\"" >/dev/null; }
wait_until 30 "the acknowledged documents were not all merged (expected $expect)" merged
stop_latentd
echo "PASS"
