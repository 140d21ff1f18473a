#!/usr/bin/env bash
# End to end through latentctl: train on the test corpus (tests/testdata),
# list topics, infer (text, and JSON with --json), and bad input (unknown
# topic, unknown words, empty lines, a malformed corpus, an LDA-C or UCI
# file read as lines, bad flags) each give a clear error while good input
# still works.
set -u
CTL=$1
CORPUS=${LATENTD_TEST_CORPUS:?the test corpus directory (tests/testdata)}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CTL" train --corpus "$CORPUS/corpus.ldac" --vocab "$CORPUS/vocab.txt" \
  --format ldac --topics 10 --sweeps 5 --out "$DIR/m" --holdout 0.1 \
  >"$DIR/out" 2>"$DIR/err" || fail "train: $(cat "$DIR/err")"
grep -q "loglik/token" "$DIR/err" || fail "no progress lines"
grep -q "^sweep 1/5 .* ETA " "$DIR/err" || fail "no 'sweep i/N' with ETA: $(head -5 "$DIR/err")"
grep -q "^sweep 5/5 " "$DIR/err" || fail "no last sweep line"
# The table's memory, last, in the form ops/bench/big_corpus.sh reads (an
# AddressSanitizer build has no arena to report).
tail -n 1 "$DIR/err" | grep -Eq "^word-topic table: [0-9]+\.[0-9] MiB in rows of [0-9]+ words(, its arena at most [0-9]+\.[0-9] MiB)?$" ||
  fail "no table memory line last: $(tail -n 2 "$DIR/err")"
# The default start is progressive: the first sweep line says so and what
# the pass took; the settings record it.
grep -q "^sweep 1/5 .*(progressive start [0-9.]* s)" "$DIR/err" ||
  fail "no progressive start on sweep 1: $(head -2 "$DIR/err")"
grep -q "progressive start" <(grep "^sweep 2/5" "$DIR/err") &&
  fail "progressive start again on sweep 2"
grep -q "train.start.*progressive" "$DIR/m/settings"* ||
  fail "settings lack train.start: $(ls "$DIR/m")"
grep -q "held-out log-likelihood per token -[0-9.]*, perplexity [0-9.]* (document completion" "$DIR/err" ||
  fail "no held-out line: $(tail -3 "$DIR/err")"
# evaluate scores the same held-out documents the same way: the same value.
"$CTL" evaluate "$DIR/m" >"$DIR/ev" 2>&1 || fail "evaluate: $(cat "$DIR/ev")"
train_ll=$(grep -o "held-out log-likelihood per token -[0-9.]*" "$DIR/err")
grep -q "^$train_ll, .* of $DIR/m/heldout.lts" "$DIR/ev" ||
  fail "evaluate differs from train: '$train_ll' vs $(cat "$DIR/ev")"
# --corpus: another corpus, tokenized as the model's; unknown words dropped.
printf 'stock market prices fell sharply as investors sold shares
qqzx zzqx
police arrested two men after the shooting in the city
' >"$DIR/eval.txt"
"$CTL" evaluate "$DIR/m" --corpus "$DIR/eval.txt" --format lines --json >"$DIR/evj" 2>&1 ||
  fail "evaluate --corpus: $(cat "$DIR/evj")"
for key in '"documents":2' '"logLikelihoodPerToken":-[0-9]' '"perplexity":[0-9]' '"scoredTokens":[0-9]'; do
  grep -q "$key" "$DIR/evj" || fail "evaluate --corpus --json lacks $key: $(cat "$DIR/evj")"
done
printf 'qqzx zzqx
' >"$DIR/unknown.txt"
"$CTL" evaluate "$DIR/m" --corpus "$DIR/unknown.txt" --format lines 2>"$DIR/eve" &&
  fail "evaluate of unknown words accepted"
grep -q "no document has two or more words the model knows" "$DIR/eve" || fail "message: $(cat "$DIR/eve")"
for f in model.bin vocab.txt settings.txt tokens.lts topics.txt alpha.txt doc_topics.tsv word_topic_counts.tsv; do
  [ -s "$DIR/m/$f" ] || fail "missing $f"
done

"$CTL" topics "$DIR/m" --top 5 --topic 3 >"$DIR/t" || fail "topics"
[ "$(grep -c '^  ' "$DIR/t")" = 5 ] || fail "expected 5 words: $(cat "$DIR/t")"
"$CTL" topics "$DIR/m" --topic 1000000000 2>"$DIR/e" && fail "topic 10^9 accepted"
grep -q "does not exist: the model has 10 topics" "$DIR/e" || fail "message: $(cat "$DIR/e")"

printf 'stock market prices fell sharply\n\nzzqx qqzx\npolice arrested two men\n' |
  "$CTL" infer "$DIR/m" --top 3 >"$DIR/i" 2>"$DIR/ie" || fail "infer"
[ "$(wc -l <"$DIR/i")" = 4 ] || fail "one output line per input line: $(cat "$DIR/i")"
grep -q "^1	[0-9]*:0\." "$DIR/i" || fail "line 1 mixture: $(cat "$DIR/i")"
grep -q "^1	[0-9]*:0\.[0-9]* ([a-z]* [a-z]* [a-z]*)	" "$DIR/i" ||
  fail "line 1: each topic's 3 top words: $(cat "$DIR/i")"
printf 'stock market prices fell sharply\n' | "$CTL" infer "$DIR/m" --top 2 --words 0 |
  grep -qx "1	[0-9]*:0\.[0-9]*	[0-9]*:0\.[0-9]*" || fail "infer --words 0 prints no words"
grep -q "^4	[0-9]*:0\." "$DIR/i" || fail "line 4 after bad lines: $(cat "$DIR/i")"
grep -q "line 3: document has no known words" "$DIR/ie" || fail "unknown words: $(cat "$DIR/ie")"
grep -qx "3" "$DIR/i" || fail "a line without known words prints its number alone: $(cat "$DIR/i")"

# --json: one JSON object per line, the daemon API's field names.
"$CTL" topics "$DIR/m" --top 2 --topic 3 --json >"$DIR/tj" || fail "topics --json"
[ "$(wc -l <"$DIR/tj")" = 1 ] || fail "topics --json is not one line: $(cat "$DIR/tj")"
grep -q '^{"version":{"sweep":"5".*"topics":\[{"id":3,"alpha":.*"topWords":\[{"word":' "$DIR/tj" ||
  fail "topics --json: $(cat "$DIR/tj")"
printf 'stock market prices fell sharply\nzzqx qqzx\n' |
  "$CTL" infer "$DIR/m" --top 3 --json >"$DIR/ij" 2>/dev/null || fail "infer --json"
grep -q '^{"line":1,"version":{"sweep":"5".*"knownTokens":[1-9].*"topics":\[{"topic":[0-9]*,"weight":0\.' "$DIR/ij" ||
  fail "infer --json line 1: $(cat "$DIR/ij")"
grep -q '^{"line":2,"error":"document has no known words' "$DIR/ij" || fail "infer --json line 2: $(cat "$DIR/ij")"
printf 'oil prices crude opec\nfootball goal team coach\n' >"$DIR/j.txt"
"$CTL" train --corpus "$DIR/j.txt" --topics 2 --sweeps 2 --out "$DIR/j" \
  --json >"$DIR/trj" 2>/dev/null || fail "train --json"
[ "$(wc -l <"$DIR/trj")" = 1 ] || fail "train --json is not one line: $(cat "$DIR/trj")"
for key in '"modelDir":"'"$DIR/j"'"' '"sweep":2' '"sweepsRun":2' '"topics":2' '"tokens":[1-9]' \
  '"logLikelihoodPerToken":-' '"heldoutPerplexity":null' '"heldoutLogLikelihoodPerToken":null' \
  '"tableBytes":[1-9]' '"tableArenaPeakBytes":[0-9]'; do
  grep -q "$key" "$DIR/trj" || fail "train --json lacks $key: $(cat "$DIR/trj")"
done
"$CTL" evaluate "$DIR/j" 2>"$DIR/eve" && fail "evaluate without held-out documents accepted"
grep -q "has no held-out documents.*train with --holdout, or give --corpus" "$DIR/eve" ||
  fail "message: $(cat "$DIR/eve")"

printf '2 0:1 1:x\n1 0:2\n' >"$DIR/bad.ldac"
"$CTL" train --corpus "$DIR/bad.ldac" --format ldac --topics 2 --sweeps 1 \
  --out "$DIR/b" --on-malformed fail 2>"$DIR/be" && fail "malformed corpus accepted"
grep -q "bad.ldac:1" "$DIR/be" || fail "no file:line: $(cat "$DIR/be")"
# Without --vocab the LDA-C words are named by id: a warning says so.
grep -q "^warning: .*bad.ldac: an LDA-C corpus read without a vocabulary (--vocab): its words are named by their ids, w0, w1" "$DIR/be" ||
  fail "no --vocab warning: $(cat "$DIR/be")"
# Every line malformed (an edge list read as LDA-C): the error names the
# first records' file, line and reason, and their count.
printf '# FromNodeId\tToNodeId\n3466\t937\n3466\t5233\n' >"$DIR/edges.txt"
"$CTL" train --corpus "$DIR/edges.txt" --format ldac --topics 2 --sweeps 1 \
  --out "$DIR/g" 2>"$DIR/ge" && fail "edge list as LDA-C accepted"
grep -q "3 malformed.*edges.txt:1: term count N \"#\" is not a number; .*edges.txt:2: N=3466 but the line has 1 id:count pairs" "$DIR/ge" ||
  fail "malformed records not named: $(cat "$DIR/ge")"
: >"$DIR/empty.txt"
"$CTL" train --corpus "$DIR/empty.txt" --topics 2 --sweeps 1 --out "$DIR/c" 2>"$DIR/ce" && fail "empty corpus accepted"
grep -qi "empty corpus" "$DIR/ce" || fail "empty corpus message: $(cat "$DIR/ce")"
"$CTL" train --corpus x --topics 0 --out "$DIR/d" 2>/dev/null && fail "--topics 0 accepted"
"$CTL" train --corpus x --start random --out "$DIR/d" 2>"$DIR/de" && fail "--start random accepted"
grep -q "start" "$DIR/de" || fail "--start random message: $(cat "$DIR/de")"
# A bag-of-words file read as lines (the default format): a hint names the
# format it looks like.
printf '3 0:1 1:2 5:1\n2 0:1 3:1\n' >"$DIR/x.ldac"
"$CTL" train --corpus "$DIR/x.ldac" --topics 2 --sweeps 1 --out "$DIR/h1" 2>"$DIR/he" && fail "LDA-C as lines accepted"
grep -q "this looks like an LDA-C file: did you mean --format ldac?" "$DIR/he" || fail "no LDA-C hint: $(cat "$DIR/he")"
printf '3\n5\n4\n1 1 2\n1 2 1\n2 3 1\n3 5 1\n' >"$DIR/docword.txt"
"$CTL" train --corpus "$DIR/docword.txt" --topics 2 --sweeps 1 --out "$DIR/h2" 2>"$DIR/he" && fail "UCI as lines accepted"
grep -q "looks like a UCI bag-of-words (docword) file: did you mean --format uci?" "$DIR/he" || fail "no UCI hint: $(cat "$DIR/he")"
# Text, even with numbers in it, gets no hint; the hint does not change what
# is read (the LDA-C-looking line is an empty document of a lines corpus).
printf 'oil 3 prices\n2 0:1 3:1\ngoal team 7\n' >"$DIR/text.txt"
"$CTL" train --corpus "$DIR/text.txt" --topics 2 --sweeps 1 --out "$DIR/h3" >/dev/null 2>"$DIR/he" || fail "text: $(cat "$DIR/he")"
grep -q "looks like" "$DIR/he" && fail "hint on a text file: $(cat "$DIR/he")"
grep -q "input: 2 documents, 4 tokens, 1 empty" "$DIR/he" || fail "text corpus summary: $(cat "$DIR/he")"
"$CTL" topics "$DIR/nowhere" 2>/dev/null && fail "missing model accepted"
# A directory holding a model is not overwritten by mistake.
printf 'oil prices crude\nfootball goal team\noil opec barrel\n' >"$DIR/small.txt"
"$CTL" train --corpus "$DIR/small.txt" --topics 2 --sweeps 1 --out "$DIR/s" \
  2>/dev/null >/dev/null || fail "small train"
sum=$(md5sum <"$DIR/s/model.bin")
"$CTL" train --corpus "$DIR/small.txt" --topics 3 --sweeps 1 --out "$DIR/s" \
  2>"$DIR/se" >/dev/null && fail "train over an existing model accepted"
grep -q "already holds a model.*--resume.*--overwrite" "$DIR/se" || fail "overwrite message: $(cat "$DIR/se")"
[ "$(md5sum <"$DIR/s/model.bin")" = "$sum" ] || fail "refused train changed model.bin"
"$CTL" train --corpus "$DIR/small.txt" --topics 3 --sweeps 1 --out "$DIR/s" \
  --resume --overwrite 2>/dev/null >/dev/null && fail "--resume with --overwrite accepted"
"$CTL" train --corpus "$DIR/small.txt" --topics 3 --sweeps 1 --out "$DIR/s" \
  --overwrite 2>"$DIR/se" >/dev/null || fail "--overwrite: $(cat "$DIR/se")"
grep -q "^3$" <("$CTL" topics "$DIR/s" | grep -c '^topic') || fail "overwritten model is not K=3"
"$CTL" train --out "$DIR/s" --resume --sweeps 1 2>"$DIR/se" >/dev/null || fail "--resume: $(cat "$DIR/se")"
grep -q "model sweep 2" "$DIR/se" || fail "resume progress: $(cat "$DIR/se")"
# A damaged model.bin: --resume takes model.prev.bin and says why; with both
# damaged it names both.
[ -s "$DIR/s/model.prev.bin" ] || fail "no model.prev.bin after a checkpoint"
printf 'X' | dd of="$DIR/s/model.bin" bs=1 seek=40 conv=notrunc 2>/dev/null
"$CTL" train --out "$DIR/s" --resume --sweeps 1 2>"$DIR/se" >/dev/null || fail "--resume, model.bin damaged: $(cat "$DIR/se")"
grep -q "model.bin refused: checksum mismatch" "$DIR/se" || fail "refusal not said: $(cat "$DIR/se")"
grep -q "from $DIR/s/model.prev.bin" "$DIR/se" || fail "not resumed from model.prev.bin: $(cat "$DIR/se")"
grep -q "model sweep 3" "$DIR/se" || fail "resume from model.prev.bin lost the sweep: $(cat "$DIR/se")"
printf 'X' | dd of="$DIR/s/model.bin" bs=1 seek=40 conv=notrunc 2>/dev/null
printf 'X' | dd of="$DIR/s/model.prev.bin" bs=1 seek=40 conv=notrunc 2>/dev/null
"$CTL" train --out "$DIR/s" --resume --sweeps 1 2>"$DIR/se" >/dev/null && fail "--resume with both snapshots damaged"
grep -q "model.bin refused: .*model.prev.bin refused: " "$DIR/se" || fail "both refusals not said: $(cat "$DIR/se")"
# --sweeps 0 with the progressive start: no token is placed before its
# pass, which says so; a resume runs the pass, and then there are topics.
"$CTL" train --corpus "$DIR/small.txt" --topics 2 --sweeps 0 --out "$DIR/z" \
  2>"$DIR/ze" >"$DIR/zo" || fail "--sweeps 0: $(cat "$DIR/ze")"
grep -q "^no topics yet: the progressive start places the tokens" "$DIR/zo" ||
  fail "--sweeps 0 output: $(cat "$DIR/zo")"
"$CTL" train --out "$DIR/z" --resume --sweeps 1 2>"$DIR/ze" >"$DIR/zo" ||
  fail "--resume at sweep 0: $(cat "$DIR/ze")"
grep -q "(progressive start" "$DIR/ze" || fail "no progressive start on resume: $(cat "$DIR/ze")"
[ "$(grep -c '^topic' "$DIR/zo")" = 2 ] || fail "no topics after the pass: $(cat "$DIR/zo")"
echo "latentctl end-to-end: all checks passed"
