#!/usr/bin/env bash
# The held-out side of the WarpLDA benchmark (warplda_side_by_side.sh with
# HOLDOUT) scores a topic dump as latentd scores its own state: lda_bench
# trains a synthetic corpus with documents held out and dumps its final
# state in WarpLDA's form; with the word ids renumbered (as WarpLDA's
# `format` does) and its vocabulary in either form, --score-state must give
# the held-out log-likelihood lda_bench printed for that state, on a split
# built again from the same corpus, and joint_ll.py (with lda_bench's V)
# its training log-likelihood.
# Damaged dumps fail with the file and line named.
# Usage: heldout_state_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:?usage: heldout_state_test.sh BUILD_DIR WORK_DIR}
WORK=${2:?usage: heldout_state_test.sh BUILD_DIR WORK_DIR}
BENCH=$BUILD/ops/bench/lda_bench
rm -rf "$WORK"
mkdir -p "$WORK"
fail() { echo "FAIL: $*"; exit 1; }
"$BUILD/ops/bench/big_corpus" --out "$WORK" --docs 400 >/dev/null
common=(--corpus "$WORK/corpus.ldac" --vocab "$WORK/vocab.txt" --format ldac
  --topics 7 --holdout 0.2)

"$BENCH" "${common[@]}" --threads 1 --sweeps 5 --heldout-every 5 \
  --dump-state "$WORK/lat" --work-dir "$WORK/train" >"$WORK/train.log"
heldout=$(sed -n 's/^heldout sweep 5 .* ll\/token \([-0-9.]*\)$/\1/p' "$WORK/train.log")
final=$(sed -n 's/^result .* final_ll=\([-0-9.]*\) .*/\1/p' "$WORK/train.log")
words=$(sed -n '1s/.* tokens, \([0-9]*\) words;.*/\1/p' "$WORK/train.log")
[ -n "$heldout" ] && [ -n "$final" ] && [ -n "$words" ] ||
  fail "no held-out, final or vocabulary figure in: $(cat "$WORK/train.log")"

# Renumber the words from the end, in the vocabulary and the dump alike.
n=$(wc -l <"$WORK/lat.vocab")
awk -v n="$n" -F'\t' '{print n - 1 - $1 "\t" $2}' "$WORK/lat.vocab" | sort -n >"$WORK/warp.vocab"
awk -v n="$n" '{
  printf "%s", $1
  for (i = 2; i <= NF; i++) { split($i, p, ":"); printf " %d:%s", n - 1 - p[1], p[2] }
  printf "\n" }' "$WORK/lat.z.estimate" >"$WORK/warp.z.estimate"
cmp -s "$WORK/lat.z.estimate" "$WORK/warp.z.estimate" && fail "the renumbering changed nothing"

"$BENCH" "${common[@]}" --score-state "$WORK/warp.z.estimate" \
  --state-vocab "$WORK/warp.vocab" --work-dir "$WORK/score" >"$WORK/score.log"
scored=$(sed -n 's/^result state_heldout_ll=\([-0-9.]*\) .*/\1/p' "$WORK/score.log")
echo "lda_bench held-out: $heldout; the dump scored: $scored"
[ "$scored" = "$heldout" ] || fail "the dump scores $scored, lda_bench printed $heldout"

# The same vocabulary a word a line, its id the line's index (what the last
# WarpLDA writes).
cut -f2 "$WORK/warp.vocab" >"$WORK/warp.words"
"$BENCH" "${common[@]}" --score-state "$WORK/warp.z.estimate" \
  --state-vocab "$WORK/warp.words" --work-dir "$WORK/score" >"$WORK/score.log"
scored=$(sed -n 's/^result state_heldout_ll=\([-0-9.]*\) .*/\1/p' "$WORK/score.log")
[ "$scored" = "$heldout" ] || fail "with a word a line, the dump scores $scored, lda_bench printed $heldout"

joint=$(python3 ops/bench/joint_ll.py "$WORK/warp.z.estimate" 7 50 0.01 "$words")
echo "lda_bench final_ll: $final; joint_ll.py with V=$words: $joint"
awk -v a="$final" -v b="${joint%% *}" 'BEGIN {
  d = a - b; if (d < 0) d = -d; exit d > 0.00006 }' ||
  fail "joint_ll.py gives ${joint%% *}, lda_bench $final"

# The training text holds the training documents, one a line.
"$BENCH" "${common[@]}" --training-text "$WORK/train.txt" \
  --work-dir "$WORK/text" >/dev/null
[ "$(wc -l <"$WORK/train.txt")" = "$(wc -l <"$WORK/lat.z.estimate")" ] ||
  fail "training text: $(wc -l <"$WORK/train.txt") lines, the dump $(wc -l <"$WORK/lat.z.estimate")"
head -1 "$WORK/train.txt" | grep -q '^d1 d1 [^ ]' || fail "training text starts: $(head -c 80 "$WORK/train.txt")"

# Damaged dumps: a clear error naming file and line, exit status 1.
expect_error() {  # NAME EXPECTED-MESSAGE (the dump is $WORK/NAME)
  if "$BENCH" "${common[@]}" --score-state "$WORK/$1" --state-vocab "$WORK/warp.vocab" \
    --work-dir "$WORK/bad" >/dev/null 2>"$WORK/bad.err"; then
    fail "$1 was scored"
  fi
  grep -qF "$2" "$WORK/bad.err" || fail "$1: expected '$2', got: $(cat "$WORK/bad.err")"
}
sed '2s/:[0-9]*$/:7/' "$WORK/warp.z.estimate" >"$WORK/topic7"
expect_error topic7 "topic7:2: topic 7 outside 0..6"
sed '3s/^[0-9]*/1000000000/' "$WORK/warp.z.estimate" >"$WORK/count"
expect_error count "count:3: declares 1000000000 tokens, holds"
sed '1s/ [0-9]*:/ 99999999:/' "$WORK/warp.z.estimate" >"$WORK/word"
expect_error word "word:1: word 99999999 is not in"
sed '1s/ [0-9]*:[0-9]*/ x:y/' "$WORK/warp.z.estimate" >"$WORK/field"
expect_error field "field:1: 'x:y' is not word:topic"
echo PASS
