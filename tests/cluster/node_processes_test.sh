#!/usr/bin/env bash
# Cluster test with real processes (label cluster): a private redis-server
# and three latentd-cluster-node processes on 127.0.0.1, each on a third of
# the first 600 documents of the test corpus, K = 20, ssp:1.
#   1. all three finish; after the drain each node's final pass is quiet
#      (its every key equals the owner's global) and nobody is unavailable;
#   2. node 2 is killed with SIGKILL mid-run: the other two report one peer
#      unavailable, finish all their sweeps and exit 0 within the limit.
# Usage: node_processes_test.sh PATH/TO/latentd-cluster-node
set -u
NODE=${1:?usage: $0 latentd-cluster-node}
CORPUS=${LATENTD_TEST_CORPUS:?the test corpus directory (tests/testdata)}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${REDIS_PID:-}" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$WORK"/*.err; do echo "== $f"; tail -5 "$f"; done; exit 1; }

PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
  >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 100); do
  redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 && break
  sleep 0.05
done

# Every node proves the same cluster key on its sync connections.
KEY="$WORK/cluster.key"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$KEY"
chmod 600 "$KEY"

start_node() {  # cluster shard sweeps [extra flags]
  "$NODE" ${4:-} --cluster-key "$KEY" --redis "redis://127.0.0.1:$PORT" --cluster "$1" \
    --listen 127.0.0.1:0 --node-id "node$2" --members 3 --shard "$2" \
    --shards 3 --corpus "$CORPUS/corpus.ldac" --vocab "$CORPUS/vocab.txt" \
    --max-docs 600 --topics 20 --consistency ssp:1 --sweeps "$3" \
    --linger-s 60 >"$WORK/$1-$2.out" 2>"$WORK/$1-$2.err" &
  PIDS+=($!)
}

# 1. A clean run.
PIDS=()
for i in 0 1 2; do start_node clean "$i" 10; done
for i in 0 1 2; do
  wait "${PIDS[$i]}" || fail "clean run: node$i exited with $?"
done
for i in 0 1 2; do
  grep -q "quiet=1 all_finished=1 unavailable=0" "$WORK/clean-$i.out" ||
    fail "clean run: node$i not drained: $(cat "$WORK/clean-$i.out")"
done
echo "clean run: all three nodes drained, every final pass quiet"

# 2. Kill node 2 (SIGKILL) once it has sampled for a while.
PIDS=()
# 50 ms of sleep per sweep keeps the run over 1.5 s, so the kill lands
# mid-run.
for i in 0 1 2; do start_node kill "$i" 30 "--slow-ms 50"; done
for _ in $(seq 200); do
  grep -q joined "$WORK/kill-2.err" 2>/dev/null && break
  sleep 0.05
done
sleep 1
kill -9 "${PIDS[2]}"
wait "${PIDS[2]}" 2>/dev/null
[ -s "$WORK/kill-2.out" ] && fail "node2 had finished before the kill"
START=$(date +%s)
for i in 0 1; do
  timeout 120 tail --pid="${PIDS[$i]}" -f /dev/null ||
    fail "node$i still running 120 s after node2 was killed"
  wait "${PIDS[$i]}" || fail "node$i exited with $? after node2 was killed"
  grep -q "sweeps=30 .*unavailable=1" "$WORK/kill-$i.out" ||
    fail "node$i: $(cat "$WORK/kill-$i.out")"
  grep -q "node2 unavailable" "$WORK/kill-$i.err" ||
    fail "node$i did not report node2 unavailable"
done
echo "kill run: survivors finished 30 sweeps in $(( $(date +%s) - START )) s after the kill and reported node2 unavailable"
