#!/usr/bin/env bash
# `latentctl cluster status` (label cluster) against a private redis-server on
# a Unix socket in a temporary directory (no TCP port). The cluster is written
# with redis-cli, key by key as sync/control/cluster_admin.h documents the layout, so
# this also checks that the layout is what the header says:
#   1. an empty cluster: no epoch, no members, no move;
#   2. a ring at epoch 3 (node0 active with a heartbeat 1.5 s old, node1
#      leaving with one that carries its epoch and failover counters), node2
#      pending, a remove of node1 running: text and --json;
#   3. the command writes nothing (every key DUMPs the same before and after);
#   4. a garbage ring and a key of the wrong type: exit 1 naming the key; an
#      unreachable Redis: exit 1; a malformed URL: exit 2.
# Usage: cluster_status_test.sh PATH/TO/latentctl
set -u
LATENTCTL=${1:?usage: $0 latentctl}
WORK=$(mktemp -d)
cleanup() {
  [ -n "${REDIS_PID:-}" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

SOCK=$WORK/redis.sock
redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save "" \
  --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
cli() { redis-cli -s "$SOCK" "$@"; }
for _ in $(seq 100); do
  cli ping >/dev/null 2>&1 && break
  sleep 0.05
done
cli ping >/dev/null 2>&1 || fail "redis-server did not start: $(cat "$WORK/redis.log")"
URL=unix:$SOCK
status() { "$LATENTCTL" cluster status --cluster-redis "$URL" "$@"; }

# 1. Nothing written yet.
OUT=$(status --cluster empty) || fail "status of an empty cluster exited $?"
for want in "cluster: empty" "epoch: none (no ring written yet)" \
  "members: 0" "move: none"; do
  grep -qxF "$want" <<<"$OUT" || fail "empty cluster: no '$want' in: $OUT"
done
echo "empty cluster: no epoch, no members, no move"

# 2. A cluster at epoch 3. The ring is a RingConfigProto (ring_config.proto):
# two members {id, address, weight 1}, V 64, k 1, version 3, encoded by hand:
# 0a 19 = members (25 bytes): 0a 05 id, 12 0e address, 18 01 weight.
C=c1
P=latentd:$C
printf '\x0a\x19\x0a\x05node0\x12\x0e127.0.0.1:7000\x18\x01\x0a\x19\x0a\x05node1\x12\x0e127.0.0.1:7001\x18\x01\x10\x40\x18\x01\x20\x03' |
  cli -x SET "$P:ring" >/dev/null
mapfile -t T < <(cli TIME)
NOW=$((T[0] * 1000 + T[1] / 1000))
cli HSET "$P:states" node0 active node1 leaving >/dev/null
cli HSET "$P:pending" node2 10.0.0.3:7070 >/dev/null
# node0's heartbeat is an older node's (4 fields); node1's carries the
# epoch it routes by, its failover counters (retracted, re-seeds, stale),
# its keys under-replicated, failovers and the latest one's duration, and
# the copies it keeps of each key (r=2, its --replicas).
cli HSET "$P:heartbeats" node0 "$((NOW - 1500)) 12 3456 100" \
  node1 "$((NOW - 3000)) 13 2000 90 3 1 2 4 6 2 1380 r=2" >/dev/null
cli HSET "$P:move" kind remove node node1 mode handoff phase drain \
  from_epoch 2 to_epoch 3 started_ms "$((NOW - 4000))" updated_ms "$NOW" \
  finished_ms 0 status running error "" keys 10 bytes 2048 documents 7 >/dev/null
cli XADD "$P:epochs" '*' epoch 3 change leave node node1 mode handoff \
  time_ms "$NOW" >/dev/null

dump() {
  for k in ring states pending heartbeats move epochs members; do
    printf '%s=' "$k"; cli --no-raw DUMP "$P:$k"
  done
}
BEFORE=$(dump)
OUT=$(status --cluster "$C") || fail "status exited $?"
echo "$OUT"
grep -qxF "epoch: 3" <<<"$OUT" || fail "no 'epoch: 3'"
grep -qxF "ring: 2 members, V 64, 2 copies of each key" <<<"$OUT" ||
  fail "no ring line"
grep -qxF "members: 3" <<<"$OUT" || fail "not 3 members"
# The age is at least the 1.5 s written, plus however long the calls took.
grep -qE '^  node0  127\.0\.0\.1:7000  active   yes   ([1-9]|[1-5][0-9])\.[0-9] s ago \(sweep 12, 3456 keys, 100 documents\)$' <<<"$OUT" &&
  ! grep -qE ' 1\.[0-4] s ago ' <<<"$OUT" ||
  fail "node0's line"
grep -qE '^  node1  127\.0\.0\.1:7001  leaving  yes   ([3-9]|[1-5][0-9])\.[0-9] s ago \(sweep 13, 2000 keys, 90 documents; epoch 3, 1 retracted, 2 re-seeds, 4 stale; 6 keys under-replicated, 2 failovers \(last 1\.38 s\)\)$' <<<"$OUT" ||
  fail "node1's line"
grep -qE '^  node2  10\.0\.0\.3:7070   pending  no    -$' <<<"$OUT" ||
  fail "node2's line"
grep -qE '^move: remove node1 \(handoff\), epoch 2 -> 3, phase drain, running [0-9.]+ s; 10 keys, 2048 bytes, 7 documents moved$' <<<"$OUT" ||
  fail "the move line"
grep -qxF "cluster log-likelihood per token: none (node0: no evaluated sweep in its heartbeat yet; node1: no evaluated sweep in its heartbeat yet)" <<<"$OUT" ||
  fail "the log-likelihood line without parts"

JSON=$(status --cluster "$C" --json) || fail "status --json exited $?"
python3 - "$JSON" <<'EOF' || fail "JSON: $JSON"
import json, sys
s = json.loads(sys.argv[1])
assert s["cluster"] == "c1" and s["epoch"] == 3, s
assert s["virtualPointsPerWeight"] == 64 and s["keyCopies"] == 2, s
states = {m["id"]: (m["state"], m["inRing"]) for m in s["members"]}
assert states == {"node0": ("active", True), "node1": ("leaving", True),
                  "node2": ("pending", False)}, states
hb = s["members"][0]["heartbeat"]
assert hb["sweep"] == 12 and hb["keys"] == 3456 and hb["documents"] == 100, hb
assert 1500 <= hb["ageMs"] < 60000, hb
assert "epoch" not in hb and "keyCopies" not in hb, hb
hb1 = s["members"][1]["heartbeat"]
assert (hb1["sweep"], hb1["epoch"], hb1["sendersRetracted"],
        hb1["reseedRefused"], hb1["staleRefused"]) == (13, 3, 1, 2, 4), hb1
assert (hb1["keysUnderReplicated"], hb1["failovers"],
        hb1["lastFailoverMs"], hb1["keyCopies"]) == (6, 2, 1380, 2), hb1
m = s["move"]
assert (m["kind"], m["node"], m["mode"], m["phase"], m["status"]) == \
    ("remove", "node1", "handoff", "drain", "running"), m
assert (m["fromEpoch"], m["toEpoch"], m["bytes"], m["documents"]) == \
    (2, 3, 2048, 7), m
EOF
[ "$(dump)" = "$BEFORE" ] || fail "cluster status changed what Redis holds"
echo "epoch 3: text and JSON show the states, the heartbeat age and the move; nothing written"

# 3b. Members whose heartbeats carry their log-likelihood parts (sweep,
# tokens, doc part, owned word part): the cluster's figure is their sum
# over their tokens, (-2000.5 - 3000 - 1500 - 1500.5) / 1000.
P2=latentd:c2
printf '\x0a\x19\x0a\x05node0\x12\x0e127.0.0.1:7000\x18\x01\x0a\x19\x0a\x05node1\x12\x0e127.0.0.1:7001\x18\x01\x10\x40\x18\x01\x20\x03' |
  cli -x SET "$P2:ring" >/dev/null
cli HSET "$P2:states" node0 active node1 active >/dev/null
cli HSET "$P2:heartbeats" \
  node0 "$NOW 50 10 5 3 0 0 0 0 0 -1 50 600 -2000.5 -3000" \
  node1 "$NOW 50 10 5 3 0 0 0 0 0 -1 49 400 -1500 -1500.5" >/dev/null
OUT=$(status --cluster c2) || fail "status exited $?"
grep -qxF "cluster log-likelihood per token: -8.0010 (sweeps 49-50, 1000 tokens)" <<<"$OUT" ||
  fail "the cluster's log-likelihood line: $OUT"
JSON=$(status --cluster c2 --json) || fail "status --json exited $?"
python3 - "$JSON" <<'EOF' || fail "JSON: $JSON"
import json, sys
ll = json.loads(sys.argv[1])["logLikelihood"]
assert abs(ll["perToken"] + 8.001) < 1e-12, ll
assert (ll["firstSweep"], ll["lastSweep"], ll["tokens"], ll["missing"]) == \
    (49, 50, 1000, []), ll
EOF
echo "log-likelihood parts in the heartbeats: the cluster's figure"

# 4. Errors.
cli SET latentd:bad:ring "not a ring" >/dev/null
ERR=$(status --cluster bad 2>&1)
RC=$?
[ "$RC" = 1 ] || fail "garbage ring: exit $RC: $ERR"
grep -q "latentctl cluster status: latentd:bad:ring: " <<<"$ERR" ||
  fail "garbage ring: the error does not name the key: $ERR"
cli SET latentd:typed:pending x >/dev/null
ERR=$(status --cluster typed 2>&1)
RC=$?
[ "$RC" = 1 ] && grep -q "latentd:typed:pending" <<<"$ERR" ||
  fail "wrong type: exit $RC: $ERR"
ERR=$("$LATENTCTL" cluster status --cluster-redis "unix:$WORK/none.sock" 2>&1)
RC=$?
[ "$RC" = 1 ] && grep -q "redis" <<<"$ERR" || fail "no Redis: exit $RC: $ERR"
ERR=$("$LATENTCTL" cluster status --cluster-redis "redis://127.0.0.1:notaport" 2>&1)
RC=$?
[ "$RC" = 2 ] || fail "malformed URL: exit $RC: $ERR"
echo "errors: garbage ring and wrong type name the key (exit 1), no Redis exit 1, bad URL exit 2"
echo PASS
