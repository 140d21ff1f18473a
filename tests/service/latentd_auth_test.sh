#!/usr/bin/env bash
# API authentication (setting api-tokens) against a running latentd
# (127.0.0.1, ports chosen by the daemon): without a token a call fails as
# UNAUTHENTICATED (TCP, via latentctl) or 401 with "WWW-Authenticate:
# Bearer" (HTTP, via curl); a read token queries but cannot ingest
# (PERMISSION_DENIED / 403); a write token ingests but cannot checkpoint;
# admin checkpoints; --token wins over LATENTD_TOKEN; /healthz, /readyz and
# /metrics are open by default and want a read token with open-health off;
# a bad tokens file is a start-up error naming file:line; SIGHUP reloads
# the file (a bad one keeps the tokens).
# Usage: latentd_auth_test.sh LATENTD LATENTCTL
set -euo pipefail
LATENTD=$1
CTL=$2
CORPUS=${LATENTD_TEST_CORPUS:?the test corpus directory (tests/testdata)}
# shellcheck source=tests/service/daemon_lib.sh
source "$(dirname "$0")/daemon_lib.sh"
unset LATENTD_TOKEN

READ=read-token-0123456789abcdef
WRITE=write-token-0123456789abcdef
ADMIN=admin-token-0123456789abcdef
cat >"$DIR/tokens" <<TOKENS
# role token
read $READ
write $WRITE
admin $ADMIN
TOKENS

# A bad tokens file stops the start, naming file:line (timeout: a daemon
# that accepted it would otherwise serve forever and hang the test).
printf 'read %s\nowner %s-x\n' "$READ" "$READ" >"$DIR/bad"
timeout 30 "$LATENTD" --data-dir "$DIR/bad-node" --api-tokens "$DIR/bad" \
  --http 127.0.0.1:0 --listen 127.0.0.1:0 >"$DIR/bad.log" 2>&1 &&
  fail "a bad tokens file was accepted"
grep -q "$DIR/bad:2: unknown role 'owner'" "$DIR/bad.log" || fail "bad role: $(cat "$DIR/bad.log")"
printf '# short\nadmin short-token\n' >"$DIR/bad"
timeout 30 "$LATENTD" --data-dir "$DIR/bad-node" --api-tokens "$DIR/bad" \
  --http 127.0.0.1:0 --listen 127.0.0.1:0 >"$DIR/bad.log" 2>&1 &&
  fail "a short token was accepted"
grep -q "$DIR/bad:2: token shorter than 16" "$DIR/bad.log" || fail "short token: $(cat "$DIR/bad.log")"

start() {  # start [extra latentd flags...]
  rm -f "$DIR/node/ports"
  start_latentd "$DIR/latentd.log" --data-dir "$DIR/node" \
    --corpus "$CORPUS/corpus.ldac" --format ldac \
    --vocab "$CORPUS/vocab.txt" --topics 10 --max-sweeps 3 \
    --http 127.0.0.1:0 --listen 127.0.0.1:0 --api-tokens "$DIR/tokens" "$@"
  wait_ports "$DIR/node"
}
# code PATH [curl args...]: the HTTP status of a request.
code() {
  local path=$1
  shift
  curl -s -o "$DIR/body" -D "$DIR/headers" -w '%{http_code}' "$@" "http://$HTTP$path"
}

start

# TCP (framed protobuf) through latentctl.
"$CTL" status --addr "$TCP" 2>"$DIR/e" && fail "status without a token accepted"
grep -q "the daemon wants a token.*: give --token or LATENTD_TOKEN" "$DIR/e" || fail "no token: $(cat "$DIR/e")"
"$CTL" status --addr "$TCP" --token not-a-known-token-0123 2>"$DIR/e" && fail "unknown token accepted"
grep -q "knows no such token" "$DIR/e" || fail "unknown token: $(cat "$DIR/e")"
"$CTL" status --addr "$TCP" --token "$READ" | grep -q "^topics: 10$" || fail "status with a read token"
LATENTD_TOKEN=$READ "$CTL" status --addr "$TCP" --json | grep '"topics":10' >/dev/null || fail "LATENTD_TOKEN"
LATENTD_TOKEN=wrong-token-0123456789 "$CTL" status --addr "$TCP" --token "$READ" >/dev/null ||
  fail "--token does not win over LATENTD_TOKEN"
"$CTL" topics --addr "$TCP" --token "$READ" --topic 1 --top 3 >/dev/null || fail "topics with a read token"
echo 'oil prices' | "$CTL" ingest --addr "$TCP" --token "$READ" --user ann 2>"$DIR/e" &&
  fail "ingest with a read token accepted"
grep -q "the token's role (read) cannot call Ingest: it needs write" "$DIR/e" || fail "read ingest: $(cat "$DIR/e")"
echo 'oil prices and opec' | "$CTL" ingest --addr "$TCP" --token "$WRITE" --user ann |
  grep -q "^accepted 1 documents$" || fail "ingest with a write token"
"$CTL" checkpoint --addr "$TCP" --token "$WRITE" 2>"$DIR/e" && fail "checkpoint with a write token accepted"
grep -q "role (write) cannot call Checkpoint: it needs admin" "$DIR/e" || fail "write checkpoint: $(cat "$DIR/e")"
"$CTL" checkpoint --addr "$TCP" --token "$ADMIN" | grep -q "^checkpoint written at sweep" ||
  fail "checkpoint with an admin token"

# HTTP through curl (JSON) and latentctl --protocol json.
[ "$(code /v1/Status)" = 401 ] || fail "HTTP status without a token: $(cat "$DIR/body")"
grep -qi '^WWW-Authenticate: Bearer' "$DIR/headers" || fail "no Bearer challenge: $(cat "$DIR/headers")"
grep -q '"code":"UNAUTHENTICATED"' "$DIR/body" || fail "401 body: $(cat "$DIR/body")"
[ "$(code /v1/Status -H "Authorization: Bearer nope-not-a-token-0123")" = 401 ] || fail "HTTP unknown token"
[ "$(code /v1/Status -H "Authorization: Bearer $READ")" = 200 ] || fail "HTTP read status: $(cat "$DIR/body")"
[ "$(code /v1/Ingest -H "Authorization: Bearer $READ" -d '{"documents":[{"text":"oil"}]}')" = 403 ] ||
  fail "HTTP ingest with a read token: $(cat "$DIR/body")"
grep -q '"code":"PERMISSION_DENIED"' "$DIR/body" || fail "403 body: $(cat "$DIR/body")"
[ "$(code /v1/Ingest -H "Authorization: Bearer $WRITE" -d '{"documents":[{"text":"oil prices"}]}')" = 200 ] ||
  fail "HTTP ingest with a write token: $(cat "$DIR/body")"
# The fields nodes set for each other need an admin token: a write token
# cannot put documents with chosen topics into the model (local + topics)
# nor copies into a replica log (replica_of).
[ "$(code /v1/Ingest -H "Authorization: Bearer $WRITE" -d '{"local":true,"documents":[{"words":["oil"],"topics":[3]}]}')" = 403 ] ||
  fail "HTTP local ingest with a write token: $(cat "$DIR/body")"
grep -q "local and replica_of are for cluster nodes: they need an admin token" "$DIR/body" ||
  fail "local ingest 403 body: $(cat "$DIR/body")"
[ "$(code /v1/Ingest -H "Authorization: Bearer $WRITE" -d '{"replicaOf":"127.0.0.1:1","documents":[{"text":"oil"}]}')" = 403 ] ||
  fail "HTTP replica ingest with a write token: $(cat "$DIR/body")"
[ "$(code /v1/Checkpoint -H "Authorization: Bearer $WRITE" -d '{}')" = 403 ] || fail "HTTP write checkpoint"
[ "$(code /v1/Checkpoint -H "Authorization: Bearer $ADMIN" -d '{}')" = 200 ] ||
  fail "HTTP admin checkpoint: $(cat "$DIR/body")"
# A request without a valid token is refused on its headers: its body is
# never waited for (here it never comes: the answer must still arrive at
# once), "100 Continue" is not sent, and the connection closes.
/usr/bin/python3 - "$HTTP" >"$DIR/early" 2>&1 <<'PY' || fail "refused on its headers: $(cat "$DIR/early")"
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
for extra in (b"", b"Expect: 100-continue\r\n",
              b"Authorization: Bearer nope-not-a-token-0123\r\n"):
    s = socket.create_connection((host, int(port)), timeout=3)
    s.sendall(b"POST /v1/Ingest HTTP/1.1\r\nHost: x\r\n"
              b"Content-Type: application/json\r\n" + extra +
              b"Content-Length: 1000000\r\n\r\n")
    start, answer = time.time(), b""
    while True:
        chunk = s.recv(4096)  # the timeout fails the test if nothing comes
        if not chunk:
            break
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 401 Unauthorized\r\n"), answer
    assert b"100 Continue" not in answer, answer
    assert b"WWW-Authenticate: Bearer" in answer, answer
    assert b"UNAUTHENTICATED" in answer, answer
    assert time.time() - start < 2, time.time() - start
    s.close()
PY
curl -s "http://$HTTP/metrics" >"$DIR/metrics"
awk '$1 == "latentd_http_requests_refused_total{reason=\"auth\"}" && $2 >= 3 { found = 1 }
     END { exit !found }' "$DIR/metrics" ||
  fail "the refusals on headers are not counted: $(grep 'reason="auth"' "$DIR/metrics")"
"$CTL" status --addr "$HTTP" --protocol json 2>"$DIR/e" && fail "json status without a token accepted"
grep -q "the daemon wants a token.*: give --token or LATENTD_TOKEN" "$DIR/e" || fail "json no token: $(cat "$DIR/e")"
"$CTL" status --addr "$HTTP" --protocol http --token "$READ" | grep -q "^topics: 10$" ||
  fail "protobuf/HTTP status with a read token"
# The probes are open by default.
[ "$(code /healthz)" = 200 ] || fail "/healthz not open"
[ "$(code /metrics)" = 200 ] || fail "/metrics not open"
stop_latentd

# open-health off: the probes want a read token.
start --open-health off
[ "$(code /healthz)" = 401 ] || fail "/healthz open with open-health off"
[ "$(code /metrics)" = 401 ] || fail "/metrics open with open-health off"
[ "$(code /healthz -H "Authorization: Bearer $READ")" = 200 ] || fail "/healthz with a read token"
code /readyz -H "Authorization: Bearer $READ" >/dev/null
grep -q "ready" "$DIR/body" || fail "/readyz with a read token: $(cat "$DIR/body")"

# SIGHUP reads the tokens file again: a new token works at once, a removed
# one no longer does; a bad file keeps the tokens and the log says why.
NEWREAD=new-read-token-0123456789abcdef
printf 'read %s\nadmin %s\n' "$NEWREAD" "$ADMIN" >"$DIR/tokens"
kill -HUP "$PID"
wait_until 10 "no reload line" grep -q "api-tokens $DIR/tokens: 2 tokens" "$DIR/latentd.log"
"$CTL" status --addr "$TCP" --token "$NEWREAD" | grep -q "^topics: 10$" || fail "new token after SIGHUP"
"$CTL" status --addr "$TCP" --token "$READ" 2>"$DIR/e" && fail "removed token still accepted"
grep -q "knows no such token" "$DIR/e" || fail "removed token: $(cat "$DIR/e")"
[ "$(code /healthz -H "Authorization: Bearer $NEWREAD")" = 200 ] || fail "HTTP new token after SIGHUP"
printf 'read %s\nowner %s-x\n' "$READ" "$READ" >"$DIR/tokens"
kill -HUP "$PID"
wait_until 10 "no line for the bad reload" grep -q "api-tokens not reloaded" "$DIR/latentd.log"
grep -q "api-tokens not reloaded, the tokens loaded before stay: $DIR/tokens:2: unknown role 'owner'" \
  "$DIR/latentd.log" || fail "bad file on SIGHUP: $(tail -3 "$DIR/latentd.log")"
"$CTL" status --addr "$TCP" --token "$NEWREAD" | grep -q "^topics: 10$" || fail "tokens lost on a bad reload"
"$CTL" status --addr "$TCP" --token "$READ" 2>/dev/null && fail "bad file's token accepted"
stop_latentd
echo PASS
