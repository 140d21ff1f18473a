#!/usr/bin/env bash
# Runs README.md's "Run the daemon" code block exactly as printed (read from
# README.md, so that this test breaks when the README changes): copy the
# quickstart's model, start latentd in the background, then at once
# `latentctl status` (no sleep: latentctl waits for the daemon), infer,
# ingest --wait-merged and at once `profile` (no wait: the ingest waited),
# the status page, the metrics, GetTopic, and stopping it with `kill %1`.
#
# The block uses the default ports 7070/7071 and /tmp/node, so it runs in
# namespaces of its own (unshare: its own loopback and /tmp); where those
# cannot be made it runs as is if the ports and /tmp/node are free, else it
# is skipped (exit 77) saying why. The quickstart's model is stood in for by
# a model of the test corpus (tests/testdata) in build/brown-model of a
# scratch directory; `xdg-open URL` is a function that fetches the URL.
# Usage: readme_daemon_test.sh BUILD_DIR README
set -euo pipefail
BUILD=$(cd "$1" && pwd)
README=$2
CORPUS=${LATENTD_TEST_CORPUS:?the test corpus directory (tests/testdata)}
W=$BUILD/test-output/readme_daemon_test
fail() {
  echo "FAIL: $*"
  [ -f "$W/node.log" ] && { echo "== latentd's log"; tail -20 "$W/node.log"; }
  exit 1
}
rm -rf "$W" && mkdir -p "$W/build"
ln -s "$BUILD/cli" "$W/build/cli"

# The block: the indented lines after the "Run the daemon" paragraph.
awk '/^\*\*Run the daemon `latentd`\*\*/ { found = 1; next }
     found && /^    / { inblock = 1; print substr($0, 5); next }
     inblock { exit }' "$README" >"$W/block.sh"
[ -s "$W/block.sh" ] || fail "no \"Run the daemon\" code block in $README"
for want in "latentd --data-dir /tmp/node" "latentctl status" "latentctl ingest" \
  "latentctl profile alice" "kill %1"; do
  grep -q -- "$want" "$W/block.sh" || fail "the README's block lacks '$want': $(cat "$W/block.sh")"
done
# No line may wait by sleeping: the commands must wait for themselves.
grep -q "sleep" "$W/block.sh" && fail "the README's block sleeps: $(cat "$W/block.sh")"

"$BUILD/cli/latentctl" train --corpus "$CORPUS/corpus.ldac" --vocab "$CORPUS/vocab.txt" \
  --format ldac --topics 10 --sweeps 5 --threads 1 --out "$W/build/brown-model" \
  >"$W/train.log" 2>&1 || fail "train: $(tail "$W/train.log")"

# Runs the block with `set -e` (any failing line fails it), every line
# echoed before it runs, and waits for the daemon to exit after `kill %1`.
cat >"$W/run.sh" <<'EOF'
set -euo pipefail
xdg-open() { curl -sf -o page.html "$1" && grep -qi "<html" page.html && echo "opened $1"; }
cd "$1"
set -x
EOF
cat "$W/block.sh" >>"$W/run.sh"
cat >>"$W/run.sh" <<'EOF'
set +x
rc=0
wait %1 || rc=$?
echo "latentd exited with status $rc"
cp /tmp/node/latentd.log node.log 2>/dev/null || true
EOF

# Its own network (loopback up) and /tmp.
isolated=(unshare -r -m -n bash -c
  'ip link set lo up && mount -t tmpfs tmpfs /tmp && exec bash "$@"' isolated)
if "${isolated[@]}" -c true >/dev/null 2>&1; then
  runner=("${isolated[@]}")
else
  for port in 7070 7071; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "SKIP: no namespaces (unshare -rmn) and port $port is in use"
      exit 77
    fi
  done
  [ -e /tmp/node ] && { echo "SKIP: no namespaces (unshare -rmn) and /tmp/node exists"; exit 77; }
  trap 'rm -rf /tmp/node' EXIT
  runner=(bash)
fi
rc=0
timeout 120 "${runner[@]}" "$W/run.sh" "$W" >"$W/out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "the README's block failed (exit $rc): $(tail -30 "$W/out")"

out=$W/out
# status right after the start: the model's numbers, not "Connection refused".
grep -q "^topics: 10$" "$out" || fail "status: $(cat "$out")"
grep -q "^documents: 2246$" "$out" || fail "status documents: $(cat "$out")"
grep -q "Connection refused" "$out" && ! grep -q "waiting up to" "$out" &&
  fail "a refused connection was not waited for: $(cat "$out")"
# infer: one line, "1" then topic:weight pairs.
grep -q "^1	[0-9]*:0\.[0-9]*" "$out" || fail "infer: $(cat "$out")"
grep -q "^accepted 1 documents$" "$out" || fail "ingest: $(cat "$out")"
grep -q "^merged into the model at sweep [0-9]*$" "$out" || fail "ingest --wait-merged: $(cat "$out")"
# profile right after the ingest: alice is in the model.
grep -q "^user alice: 1 events, [1-9][0-9]* tokens" "$out" || fail "profile: $(cat "$out")"
grep -q "^opened http://localhost:7070/$" "$out" || fail "status page: $(cat "$out")"
grep -q "^latentd_sweeps" "$out" || fail "metrics: $(cat "$out")"
grep -q '"topic":{"id":3,' "$out" || fail "GetTopic: $(cat "$out")"
grep -q "^latentd exited with status 0$" "$out" || fail "kill %1: $(tail -5 "$out")"
echo "PASS"
