#!/usr/bin/env bash
# latentd serving benchmark: starts latentd on blei-ap with K=100 (training
# continuously, 1 sampler thread), then runs latentd_bench: InferDocument
# with 200-token documents at concurrency 1, 8 and 32 over framed
# protobuf/TCP, protobuf over HTTP and HTTP/JSON. Ports are picked by the
# daemon (127.0.0.1 only).
# Usage: ops/bench/latentd_bench.sh [build-dir] [seconds-per-run]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SECONDS_PER_RUN=${2:-5}
DATA=${LATENTD_DATA_DIR:-../shared/data}
DIR=$(mktemp -d)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
"$BUILD/cli/latentd" --data-dir "$DIR/node" \
  --corpus "$DATA/blei-ap/ap.dat.zst" --format ldac \
  --vocab "$DATA/blei-ap/vocab.txt.zst" --topics 100 \
  --http 127.0.0.1:0 --listen 127.0.0.1:0 --http-threads 48 \
  --rpc-threads "${RPC_THREADS:-8}" --rpc-io-threads "${RPC_IO_THREADS:-0}" \
  --checkpoint-every 100 ${LATENTD_FLAGS:-} \
  >"$DIR/latentd.log" 2>&1 &
PID=$!
for _ in $(seq 600); do [ -s "$DIR/node/ports" ] && break; sleep 0.1; done
HTTP=$(sed -n 's/^http=//p' "$DIR/node/ports")
TCP=$(sed -n 's/^tcp=//p' "$DIR/node/ports")
sleep 2  # let training get going
"$BUILD/ops/bench/latentd_bench" --http "$HTTP" --tcp "$TCP" \
  --seconds "$SECONDS_PER_RUN" --concurrency 1,8,32 --tokens 200 \
  --protocols "${PROTOCOLS:-tcp,http,json}"
curl -s "http://$HTTP/v1/Status" 2>/dev/null | head -c 400 || true
echo
