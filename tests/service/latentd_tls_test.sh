#!/usr/bin/env bash
# TLS on both APIs (settings tls-cert, tls-key) against a running latentd
# (127.0.0.1, ports chosen by the daemon), with a test CA the test makes
# with the openssl CLI in its temp dir:
#   - latentctl verifies the daemon's certificate (--tls-ca) over TCP,
#     HTTP (protobuf) and JSON; curl --cacert over HTTPS;
#   - a certificate from another CA, or one that does not name the host
#     dialled, is refused with a clear error;
#   - API tokens are still enforced over TLS (no token, role too low);
#   - a 3 MB document crosses TLS whole on TCP and HTTPS (protobuf and
#     JSON); 5 MB is refused,
#     the limit named (TCP: the daemon's reply; HTTP: latentctl's guess);
#   - a plaintext client against a TLS port gets a clear error at once, not
#     a hang (latentctl on TCP and HTTP, curl http://);
#   - a TLS client against a plaintext port fails clearly too;
#   - a bad certificate or key file is a start-up error naming it.
# Usage: latentd_tls_test.sh LATENTD LATENTCTL
set -euo pipefail
LATENTD=$1
CTL=$2
CORPUS=${LATENTD_TEST_CORPUS:?the test corpus directory (tests/testdata)}
# shellcheck source=tests/service/daemon_lib.sh
source "$(dirname "$0")/daemon_lib.sh"
unset LATENTD_TOKEN

# The test CA, a server certificate for 127.0.0.1 (IP subjectAltName only)
# signed by it, and a second CA that signed nothing of the daemon's.
ca() {  # ca NAME
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=latentd test $1" \
    -keyout "$DIR/$1.key" -out "$DIR/$1.pem" 2>/dev/null
}
ca ca
ca other-ca
openssl req -newkey rsa:2048 -nodes -subj "/CN=latentd node" \
  -keyout "$DIR/server.key" -out "$DIR/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$DIR/san.ext"
openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" \
  -CAcreateserial -days 2 -extfile "$DIR/san.ext" -out "$DIR/server.pem" 2>/dev/null

READ=read-token-0123456789abcdef
WRITE=write-token-0123456789abcdef
printf 'read %s\nwrite %s\nadmin admin-token-0123456789abcdef\n' "$READ" "$WRITE" >"$DIR/tokens"

# A key that does not match the certificate stops the start, naming both.
timeout 30 "$LATENTD" --data-dir "$DIR/bad-node" --tls-cert "$DIR/server.pem" \
  --tls-key "$DIR/ca.key" --http 127.0.0.1:0 --listen 127.0.0.1:0 >"$DIR/bad.log" 2>&1 &&
  fail "a mismatched key was accepted"
grep -q "TLS key $DIR/ca.key does not match the certificate $DIR/server.pem" "$DIR/bad.log" ||
  fail "mismatched key: $(cat "$DIR/bad.log")"
timeout 30 "$LATENTD" --data-dir "$DIR/bad-node" --tls-cert "$DIR/missing.pem" \
  --tls-key "$DIR/server.key" --http 127.0.0.1:0 --listen 127.0.0.1:0 >"$DIR/bad.log" 2>&1 &&
  fail "a missing certificate was accepted"
grep -q "TLS certificate $DIR/missing.pem: cannot be used" "$DIR/bad.log" ||
  fail "missing certificate: $(cat "$DIR/bad.log")"

start_latentd "$DIR/latentd.log" --data-dir "$DIR/node" \
  --corpus "$CORPUS/corpus.ldac" --format ldac \
  --vocab "$CORPUS/vocab.txt" --topics 10 --max-sweeps 3 \
  --http 127.0.0.1:0 --listen 127.0.0.1:0 --api-tokens "$DIR/tokens" \
  --tls-cert "$DIR/server.pem" --tls-key "$DIR/server.key"
wait_ports "$DIR/node"
grep -q "TLS on both APIs" "$DIR/latentd.log" || fail "no TLS line in the log"

# Verified TLS, every protocol.
for p in tcp http json; do
  addr=$TCP
  [ "$p" = tcp ] || addr=$HTTP
  "$CTL" status --addr "$addr" --protocol "$p" --tls-ca "$DIR/ca.pem" --token "$READ" \
    >"$DIR/out" 2>"$DIR/e" || fail "$p over TLS: $(cat "$DIR/e")"
  grep -q "^topics: 10$" "$DIR/out" || fail "$p over TLS: $(cat "$DIR/out")"
done
curl -sf --cacert "$DIR/ca.pem" "https://$HTTP/healthz" | grep -q '^ok$' || fail "curl https"

# Another CA's trust: refused, saying the certificate does not verify.
for p in tcp http json; do
  addr=$TCP
  [ "$p" = tcp ] || addr=$HTTP
  timeout 20 "$CTL" status --addr "$addr" --protocol "$p" --tls-ca "$DIR/other-ca.pem" \
    --token "$READ" 2>"$DIR/e" && fail "$p: a certificate of another CA was accepted"
  grep -q "certificate does not verify" "$DIR/e" || fail "$p wrong CA: $(cat "$DIR/e")"
done
grep -q "unable to get local issuer certificate\|unable to verify" "$DIR/e" ||
  grep -q "other-ca.pem" "$DIR/e" || fail "wrong CA message: $(cat "$DIR/e")"
# The right CA, but a host name the certificate does not carry.
PORT=${TCP##*:}
timeout 20 "$CTL" status --addr "localhost:$PORT" --tls-ca "$DIR/ca.pem" --token "$READ" \
  2>"$DIR/e" && fail "a certificate without the host name was accepted"
grep -q "certificate does not verify.*for 'localhost'" "$DIR/e" || fail "host name: $(cat "$DIR/e")"
# System CAs (--tls on) do not know the test CA.
timeout 20 "$CTL" status --addr "$TCP" --tls on --token "$READ" 2>"$DIR/e" &&
  fail "the test CA verified against the system's CAs"
grep -q "certificate does not verify.*system's CAs" "$DIR/e" || fail "--tls on: $(cat "$DIR/e")"
# A CA file that is not one: a clear error before any connection.
echo "not a certificate" >"$DIR/junk.pem"
"$CTL" status --addr "$TCP" --tls-ca "$DIR/junk.pem" 2>"$DIR/e" && fail "junk CA accepted"
grep -q "TLS CA file $DIR/junk.pem: cannot be loaded" "$DIR/e" || fail "junk CA: $(cat "$DIR/e")"

# Tokens are still enforced over TLS.
"$CTL" status --addr "$TCP" --tls-ca "$DIR/ca.pem" 2>"$DIR/e" && fail "TLS without a token accepted"
grep -q "the daemon wants a token" "$DIR/e" || fail "no token over TLS: $(cat "$DIR/e")"
echo 'oil prices' | "$CTL" ingest --addr "$TCP" --tls-ca "$DIR/ca.pem" --token "$READ" \
  --user ann 2>"$DIR/e" && fail "read token ingested over TLS"
grep -q "role (read) cannot call Ingest" "$DIR/e" || fail "read ingest over TLS: $(cat "$DIR/e")"
echo 'oil prices' | "$CTL" ingest --addr "$HTTP" --protocol json --tls-ca "$DIR/ca.pem" \
  --token "$WRITE" --user ann >/dev/null 2>"$DIR/e" || fail "write ingest over HTTPS: $(cat "$DIR/e")"
test "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$DIR/ca.pem" "https://$HTTP/v1/Status")" = 401 ||
  fail "HTTPS without a token not 401"

# Large frames over verified TLS: a 3 MB document (under max-body-bytes,
# 4 MiB) crosses the TCP API's TLS stream and HTTPS whole, in a few hundred
# records and many partial reads; 5 MB is refused, naming the limit, and
# the daemon goes on.
words_line() {  # words_line BYTES: one line of the vocabulary's words
  awk -v n="$1" '{ w = w $0 " " } END { while (length(w) < n) w = w w; print substr(w, 1, n) }' \
    "$CORPUS/vocab.txt"
}
words_line 3000000 >"$DIR/big.txt"
words_line 5000000 >"$DIR/huge.txt"
for p in tcp json; do
  addr=$TCP
  [ "$p" = tcp ] || addr=$HTTP
  "$CTL" ingest --addr "$addr" --protocol "$p" --tls-ca "$DIR/ca.pem" --token "$WRITE" \
    --user "big-$p" --json <"$DIR/big.txt" >"$DIR/out" 2>"$DIR/e" ||
    fail "3 MB over $p/TLS: $(cat "$DIR/e")"
  grep -q '"firstSequence"' "$DIR/out" || fail "3 MB over $p/TLS: $(cat "$DIR/out")"
  timeout 30 "$CTL" ingest --addr "$addr" --protocol "$p" --tls-ca "$DIR/ca.pem" \
    --token "$WRITE" --user huge <"$DIR/huge.txt" >/dev/null 2>"$DIR/e" &&
    fail "5 MB over $p/TLS accepted"
  grep -q "exceeds the limit of 4194304\|over the limit of 4194304" "$DIR/e" ||
    fail "5 MB over $p/TLS: $(cat "$DIR/e")"
done
"$CTL" status --addr "$TCP" --tls-ca "$DIR/ca.pem" --token "$READ" >/dev/null 2>"$DIR/e" ||
  fail "status after large frames: $(cat "$DIR/e")"

# Plaintext against the TLS ports: a clear error, at once.
start=$(date +%s)
timeout 20 "$CTL" status --addr "$TCP" --token "$READ" 2>"$DIR/e" && fail "plain TCP to TLS port accepted"
grep -q "this port speaks TLS" "$DIR/e" || fail "plain TCP: $(cat "$DIR/e")"
timeout 20 "$CTL" status --addr "$HTTP" --protocol json --token "$READ" 2>"$DIR/e" &&
  fail "plain HTTP to HTTPS port accepted"
grep -q "this port serves HTTPS" "$DIR/e" || fail "plain HTTP: $(cat "$DIR/e")"
test "$(curl -s -o "$DIR/body" -w '%{http_code}' --max-time 10 "http://$HTTP/healthz")" = 400 ||
  fail "curl http:// to the HTTPS port not 400"
grep -q "^This port serves HTTPS" "$DIR/body" || fail "curl http:// body: $(cat "$DIR/body")"
[ $(($(date +%s) - start)) -lt 10 ] || fail "plaintext clients waited"
kill -0 "$PID" || fail "daemon died"

stop_latentd

# TLS against a plaintext daemon: a clear TLS error, not a hang.
rm -f "$DIR/node/ports"
start_latentd "$DIR/latentd.log" --data-dir "$DIR/node" --http 127.0.0.1:0 \
  --listen 127.0.0.1:0
wait_ports "$DIR/node"
timeout 20 "$CTL" status --addr "$TCP" --tls-ca "$DIR/ca.pem" 2>"$DIR/e" && fail "TLS to a plain TCP port"
grep -q "TLS handshake with .* failed" "$DIR/e" || fail "TLS to plain TCP: $(cat "$DIR/e")"
timeout 20 "$CTL" status --addr "$HTTP" --protocol json --tls-ca "$DIR/ca.pem" 2>"$DIR/e" &&
  fail "TLS to a plain HTTP port"
grep -q "TLS handshake failed" "$DIR/e" || fail "TLS to plain HTTP: $(cat "$DIR/e")"
echo "PASS"
