#!/usr/bin/env bash
# `cmake --install` into a DESTDIR staging directory, then checks what landed
# there: the installed programs run (--help), the installed daemon starts
# from the installed config with the unit's own arguments and stops cleanly
# on SIGTERM, the unit file names those paths, and systemd-analyze finds no
# problem in it (verify: syntax, keys, values; security: hardening).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR BINDIR CONFIG_PATH UNIT_DIR
# (the last three: absolute install paths from cmake/LatentdPackaging.cmake).
set -u
BUILD=$1 SRC=$2 BINDIR=$3 CONFIG=$4 UNITDIR=$5
STAGE=$(mktemp -d)
LATENTD_PID=
cleanup() {
  [ -n "$LATENTD_PID" ] && kill -9 "$LATENTD_PID" 2>/dev/null
  rm -rf "$STAGE"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

DESTDIR="$STAGE/root" cmake --install "$BUILD" >"$STAGE/install.log" 2>&1 ||
  fail "cmake --install: $(cat "$STAGE/install.log")"
ROOT=$STAGE/root
for b in latentd latentctl latentd-cluster-node; do
  [ -x "$ROOT$BINDIR/$b" ] || fail "$BINDIR/$b not installed"
done
UNIT=$ROOT$UNITDIR/latentd.service
[ -f "$UNIT" ] || fail "$UNITDIR/latentd.service not installed"
cmp -s "$ROOT$CONFIG" "$SRC/ops/latentd.conf" ||
  fail "$CONFIG is not ops/latentd.conf"
for d in README.md docs/design.md docs/operations.md docs/operator-guide.md \
    docs/api.md docs/benchmarks.md docs/testing.md; do
  [ -n "$(find "$ROOT" -path "*/doc/latentd/$d")" ] || fail "doc $d not installed"
done

# The installed programs run (no path into the build tree is needed).
"$ROOT$BINDIR/latentd" --help >"$STAGE/h" 2>&1 || fail "latentd --help: $(cat "$STAGE/h")"
grep -q -- "--data-dir" "$STAGE/h" && grep -q -- "--config" "$STAGE/h" ||
  fail "latentd --help lacks --config/--data-dir: $(cat "$STAGE/h")"
"$ROOT$BINDIR/latentctl" --help >"$STAGE/h" 2>&1 || fail "latentctl --help: $(cat "$STAGE/h")"
grep -q "train" "$STAGE/h" || fail "latentctl --help lacks train: $(cat "$STAGE/h")"
"$ROOT$BINDIR/latentd-cluster-node" --help >"$STAGE/h" 2>&1 ||
  fail "latentd-cluster-node --help: $(cat "$STAGE/h")"

# The unit runs the installed daemon on the installed config.
EXEC="ExecStart=$BINDIR/latentd --config $CONFIG --data-dir /var/lib/latentd"
grep -qxF "$EXEC" "$UNIT" || fail "unit lacks '$EXEC': $(grep ExecStart "$UNIT")"
for line in 'Type=notify' 'ExecReload=/bin/kill -HUP $MAINPID' \
    'KillSignal=SIGTERM' 'Restart=on-failure' 'DynamicUser=yes' \
    'StateDirectory=latentd' 'NoNewPrivileges=yes' 'ProtectSystem=strict'; do
  grep -qxF "$line" "$UNIT" || fail "unit lacks '$line'"
done

# Those arguments, staged: with no model and no corpus the daemon says so
# (so the config parsed); with a corpus it serves, then stops cleanly.
DATA=$STAGE/data
"$ROOT$BINDIR/latentd" --config "$ROOT$CONFIG" --data-dir "$DATA" \
  >/dev/null 2>"$STAGE/e" && fail "started without a corpus"
grep -q "holds no model yet" "$STAGE/e" || fail "no-corpus start: $(cat "$STAGE/e")"
printf 'oil prices rose as opec met\nstocks fell on wall street\n' >"$STAGE/c.txt"
"$ROOT$BINDIR/latentd" --config "$ROOT$CONFIG" --data-dir "$DATA" \
  --corpus "$STAGE/c.txt" --topics 2 --http 127.0.0.1:0 --listen 127.0.0.1:0 \
  >/dev/null 2>"$STAGE/e" &
LATENTD_PID=$!
for _ in $(seq 100); do [ -s "$DATA/ports" ] && break; sleep 0.1; done
[ -s "$DATA/ports" ] || fail "no $DATA/ports after 10 s: $(cat "$STAGE/e")"
kill -TERM "$LATENTD_PID"
wait "$LATENTD_PID" || fail "exit $? after SIGTERM: $(cat "$STAGE/e")"
LATENTD_PID=
grep -q "stopped cleanly" "$STAGE/e" || fail "no clean stop: $(cat "$STAGE/e")"

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze not installed; unit not verified"
  exit 0
fi
# verify checks that ExecStart is executable, so it reads a copy whose
# ExecStart is the staged binary. It reports bad keys and values as
# warnings with exit 0, so any line naming the unit fails the test.
sed "s|^ExecStart=$BINDIR/|ExecStart=$ROOT$BINDIR/|" "$UNIT" >"$STAGE/latentd.service"
grep -q "^ExecStart=$ROOT" "$STAGE/latentd.service" || fail "ExecStart not rewritten"
systemd-analyze verify "$STAGE/latentd.service" >"$STAGE/v" 2>&1 ||
  fail "systemd-analyze verify: $(cat "$STAGE/v")"
if grep -q "latentd.service" "$STAGE/v"; then
  fail "systemd-analyze verify: $(cat "$STAGE/v")"
fi
# Hardening: the overall exposure stays at 3.0 or less (threshold in tenths).
systemd-analyze security --offline=true --threshold=30 "$STAGE/latentd.service" \
  >"$STAGE/s" 2>&1 || fail "systemd-analyze security: $(tail -3 "$STAGE/s")"
echo "OK: $(grep 'Overall exposure' "$STAGE/s")"
