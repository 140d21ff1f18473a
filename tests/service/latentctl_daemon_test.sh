#!/usr/bin/env bash
# latentctl's client commands against a running latentd (127.0.0.1, ports
# chosen by the daemon): status, topics, infer, ingest, profile, checkpoint,
# over tcp and json, as text and with --json, plus an unreachable daemon, an
# unknown topic, and --addr pointing at the other protocol's port.
# Usage: latentctl_daemon_test.sh LATENTD LATENTCTL
set -euo pipefail
LATENTD=$1
CTL=$2
CORPUS=${LATENTD_TEST_CORPUS:?the test corpus directory (tests/testdata)}
# shellcheck source=tests/service/daemon_lib.sh
source "$(dirname "$0")/daemon_lib.sh"

start_latentd "$DIR/latentd.log" --data-dir "$DIR/node" \
  --corpus "$CORPUS/corpus.ldac" --format ldac \
  --vocab "$CORPUS/vocab.txt" --topics 10 --max-sweeps 10 \
  --http 127.0.0.1:0 --listen 127.0.0.1:0
wait_ports "$DIR/node"

# A second daemon on the same data directory exits non-zero naming the
# first (it would reuse the ingest log's sequences).
if "$LATENTD" --data-dir "$DIR/node" --listen 127.0.0.1:0 >"$DIR/second.log" 2>&1; then
  fail "a second latentd started on a data directory in use"
fi
grep -q "data directory $DIR/node is in use by process $PID" "$DIR/second.log" ||
  fail "second daemon's message: $(cat "$DIR/second.log")"

"$CTL" status --addr "$TCP" --json | grep '"topics":10' >/dev/null || fail "status --json"
"$CTL" status --addr "$TCP" >"$DIR/s" || fail "status"
grep -q "^topics: 10$" "$DIR/s" || fail "status text: $(cat "$DIR/s")"
grep -q "^version.sweep: [0-9]*$" "$DIR/s" || fail "status text: $(cat "$DIR/s")"
# Only the sections that apply: a single topic node has no graph, held-out
# or cluster lines.
grep -Eq "^(graph\.|heldout\.|node_id|ring_epoch|cluster_members)" "$DIR/s" &&
  fail "status shows sections that do not apply: $(cat "$DIR/s")"
# Wait for the 10 sweeps to end, so that both protocols' infer below read
# the same model.
idle() { "$CTL" status --addr "$TCP" | grep -q '^training: no$'; }
wait_until 60 "still training" idle
"$CTL" topics --addr "$TCP" --topic 3 --top 4 >"$DIR/t" || fail "topics"
[ "$(grep -c $'^  ' "$DIR/t")" = 4 ] || fail "topics: $(cat "$DIR/t")"
"$CTL" topics --addr "$TCP" --topic 10 2>"$DIR/e" && fail "topic 10 accepted"
grep -q "topic 10 does not exist" "$DIR/e" || fail "message: $(cat "$DIR/e")"
printf 'oil prices and opec ministers\nthe of and\n' |
  "$CTL" infer --addr "$HTTP" --protocol json --top 2 --seed 3 >"$DIR/i" 2>"$DIR/ie" || fail "infer"
[ "$(wc -l <"$DIR/i")" = 2 ] || fail "infer output: $(cat "$DIR/i")"
# Each topic with its 3 top words (--words' default).
grep -q "^1	[0-9]*:0\.[0-9]* ([^ )]* [^ )]* [^ )]*)	[0-9]*:0\." "$DIR/i" ||
  fail "infer line 1: $(cat "$DIR/i")"
grep -qx "2" "$DIR/i" || fail "infer line 2 (no known word): $(cat "$DIR/i")"
grep -q "line 2" "$DIR/ie" || fail "infer message: $(cat "$DIR/ie")"
# Same seed, other protocol: the same mixture.
echo 'oil prices and opec ministers' |
  "$CTL" infer --addr "$TCP" --top 2 --seed 3 | cmp - <(head -1 "$DIR/i") || fail "tcp and json differ"
printf 'oil prices and opec ministers\nthe of and\n' |
  "$CTL" infer --addr "$TCP" --top 2 --seed 3 --json >"$DIR/ij" 2>/dev/null || fail "infer --json"
grep -q '^{"line":1,"version":.*"topics":\[{"topic":' "$DIR/ij" || fail "infer --json: $(cat "$DIR/ij")"
grep -q '^{"line":2,"error":"' "$DIR/ij" || fail "infer --json line 2: $(cat "$DIR/ij")"
"$CTL" topics --addr "$TCP" --topic 3 --top 4 --json | grep -q '^{"version":.*"topics":\[{"id":3,' ||
  fail "topics --json"
printf 'stocks fell on wall street\nthe dollar rose against the yen\n' |
  "$CTL" ingest --addr "$TCP" --user carol | grep -q "^accepted 2 documents$" || fail "ingest"
echo 'oil' | "$CTL" ingest --addr "$TCP" --json | grep -q '^{"accepted":"1",' || fail "ingest --json"
profiled() { "$CTL" profile carol --addr "$TCP" --json >"$DIR/p" 2>/dev/null; }
wait_until 10 "no profile for carol" profiled
grep -q '"events":"2"' "$DIR/p" || fail "profile --json: $(cat "$DIR/p")"
"$CTL" profile carol --addr "$TCP" >"$DIR/p" || fail "profile"
grep -q "^user carol: 2 events, [0-9]* tokens" "$DIR/p" || fail "profile text: $(cat "$DIR/p")"
"$CTL" profile nobody --addr "$TCP" 2>"$DIR/e" && fail "unknown user accepted"
grep -q "user 'nobody'" "$DIR/e" || fail "message: $(cat "$DIR/e")"
"$CTL" checkpoint --addr "$TCP" | grep -q "^checkpoint written at sweep [0-9]*: .*model.bin$" || fail "checkpoint"
"$CTL" checkpoint --addr "$TCP" --json | grep -q '"path":".*model.bin"' || fail "checkpoint --json"
# The wrong port for the protocol: the error says what to change.
"$CTL" status --addr "$HTTP" 2>"$DIR/e" && fail "tcp to the HTTP port accepted"
grep -q -- "--addr points at an HTTP port: use --protocol http or json" "$DIR/e" || fail "tcp to HTTP: $(cat "$DIR/e")"
"$CTL" status --addr "$TCP" --protocol json 2>"$DIR/e" && fail "json to the TCP port accepted"
grep -q -- "--addr points at the framed protobuf/TCP port: use --protocol tcp" "$DIR/e" || fail "json to TCP: $(cat "$DIR/e")"
# Nothing listens: retried for --wait seconds (saying so), then the error
# says how long it waited; --wait 0 fails at once. Both protocols.
start=$SECONDS
"$CTL" status --addr 127.0.0.1:1 --wait 1 2>"$DIR/e" && fail "dead address accepted"
grep -q "^latentctl: waiting up to 1 s for the daemon at 127.0.0.1:1 to listen" "$DIR/e" ||
  fail "no wait notice: $(cat "$DIR/e")"
grep -q "127.0.0.1:1: Connection refused (waited 1s for the daemon to listen: --wait)" "$DIR/e" ||
  fail "message: $(cat "$DIR/e")"
[ $((SECONDS - start)) -le 5 ] || fail "--wait 1 took $((SECONDS - start)) s"
"$CTL" status --addr 127.0.0.1:1 --protocol json --wait 0 2>"$DIR/e" && fail "dead address accepted (json)"
grep -q "waiting\|waited" "$DIR/e" && fail "--wait 0 waited: $(cat "$DIR/e")"
grep -q "127.0.0.1:1" "$DIR/e" || fail "json message: $(cat "$DIR/e")"
# ingest --wait-merged: the profile right after has the events, over both
# protocols (no wait_until).
"$CTL" ingest --addr "$HTTP" --protocol json --user dave --text "oil prices rose" \
  --wait-merged >"$DIR/wm" || fail "ingest --wait-merged"
grep -q "^merged into the model at sweep [0-9]*$" "$DIR/wm" || fail "--wait-merged: $(cat "$DIR/wm")"
"$CTL" profile dave --addr "$TCP" | grep -q "^user dave: 1 events" || fail "dave not merged"
printf 'stock market\nwall street\n' | "$CTL" ingest --addr "$TCP" --user dave --wait-merged --json >"$DIR/wm" ||
  fail "ingest --wait-merged --json"
grep -q '^{"accepted":"2",' "$DIR/wm" || fail "--wait-merged --json: $(cat "$DIR/wm")"
"$CTL" profile dave --addr "$TCP" | grep -q "^user dave: 3 events" || fail "dave's events not merged"
stop_latentd
grep -q "stopped cleanly" "$DIR/latentd.log" || fail "no clean stop"
echo "latentctl against latentd: OK"
