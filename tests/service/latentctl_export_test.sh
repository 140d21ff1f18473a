#!/usr/bin/env bash
# latentctl export against a running latentd (127.0.0.1, ports chosen by
# the daemon) that has stopped sampling (--max-sweeps): the model files
# over tcp, http and json are identical, also when fetched in many small
# pages; every word's row sums to its frequency in the corpus, every topic
# column to the topic's n_k in topics.txt, and all rows to the tokens the
# daemon's Status reports; vocab.txt is the node's. A directory holding a
# model is refused without --overwrite (and kept when the export fails);
# an unreachable address is an error naming it.
# Usage: latentctl_export_test.sh LATENTD LATENTCTL
set -euo pipefail
LATENTD=$1
CTL=$2
# shellcheck source=tests/service/daemon_lib.sh
source "$(dirname "$0")/daemon_lib.sh"
FILES="vocab.txt word_topic_counts.tsv alpha.txt topics.txt"

# Three themes, some words more frequent than others.
for d in $(seq 120); do
  case $((d % 3)) in
    0) echo "oil prices opec crude barrel energy oil market" ;;
    1) echo "football match goal team player season goal goal" ;;
    2) echo "court judge trial jury lawyer verdict appeal" ;;
  esac
  [ $((d % 4)) = 0 ] && echo "oil court football weather"
done >"$DIR/corpus.txt"

start_latentd "$DIR/latentd.log" --data-dir "$DIR/node" \
  --corpus "$DIR/corpus.txt" --topics 5 --max-sweeps 20 \
  --http 127.0.0.1:0 --listen 127.0.0.1:0
wait_ports "$DIR/node"
idle() {
  "$CTL" status --addr "$TCP" --json >"$DIR/status" && grep -q '"training":false' "$DIR/status"
}
wait_until 60 "still training" idle
TOKENS=$(sed -n 's/.*"tokens":"\{0,1\}\([0-9]*\).*/\1/p' "$DIR/status")
[ -n "$TOKENS" ] && [ "$TOKENS" -gt 0 ] || fail "no token count: $(cat "$DIR/status")"

# One export per protocol; tcp also with a JSON summary.
"$CTL" export --addr "$TCP" --out "$DIR/tcp" --json >"$DIR/summary" 2>"$DIR/e" ||
  fail "export over tcp: $(cat "$DIR/e")"
for f in $FILES; do [ -s "$DIR/tcp/$f" ] || fail "tcp: no $f"; done
grep -q "^exported sweep 20 (view [0-9]*) from $TCP: [0-9]* words, 5 topics, $TOKENS tokens in 1 page to $DIR/tcp$" "$DIR/e" ||
  fail "summary line: $(cat "$DIR/e")"
grep -q "\"tokens\":$TOKENS[,}]" "$DIR/summary" || fail "--json: $(cat "$DIR/summary")"
"$CTL" export --addr "$HTTP" --protocol http --out "$DIR/http" 2>"$DIR/e" || fail "export over http: $(cat "$DIR/e")"
"$CTL" export --addr "$HTTP" --protocol json --out "$DIR/json" 2>"$DIR/e" || fail "export over json: $(cat "$DIR/e")"
for f in $FILES; do
  cmp "$DIR/tcp/$f" "$DIR/http/$f" || fail "tcp and http $f differ"
  cmp "$DIR/tcp/$f" "$DIR/json/$f" || fail "tcp and json $f differ"
done
cmp "$DIR/tcp/vocab.txt" "$DIR/node/vocab.txt" || fail "vocab.txt is not the node's"

# Paging: 3 words a page, the same files.
WORDS=$(wc -l <"$DIR/tcp/vocab.txt")
"$CTL" export --addr "$TCP" --out "$DIR/paged" --page-words 3 2>"$DIR/e" || fail "paged export: $(cat "$DIR/e")"
grep -q "$TOKENS tokens in $(((WORDS + 2) / 3)) pages" "$DIR/e" || fail "pages: $(cat "$DIR/e")"
for f in $FILES; do cmp "$DIR/tcp/$f" "$DIR/paged/$f" || fail "paged $f differs"; done

# Exactness: row sums = corpus frequencies, column sums = n_k, total = Status.
awk '{ for (i = 1; i <= NF; i++) n[$i]++ } END { for (w in n) print w, n[w] }' \
  "$DIR/corpus.txt" | sort >"$DIR/freq"
awk -F'\t' '{ s = 0; for (i = 2; i <= NF; i++) { split($i, kc, ":"); s += kc[2] } print $1, s }' \
  "$DIR/tcp/word_topic_counts.tsv" | sort >"$DIR/rows"
cmp "$DIR/freq" "$DIR/rows" || fail "row sums are not the corpus frequencies: $(diff "$DIR/freq" "$DIR/rows" | head)"
awk -F'\t' '{ for (i = 2; i <= NF; i++) { split($i, kc, ":"); n[kc[1]] += kc[2]; t += kc[2] } }
  END { for (k in n) print k, n[k]; print "total", t }' "$DIR/tcp/word_topic_counts.tsv" | sort >"$DIR/cols"
sed -n 's/^topic \([0-9]*\)\talpha=[^\t]*\ttokens=\([0-9]*\)$/\1 \2/p' "$DIR/tcp/topics.txt" |
  awk '$2 > 0' >"$DIR/nk"
echo "total $TOKENS" >>"$DIR/nk"
sort -o "$DIR/nk" "$DIR/nk"
cmp "$DIR/cols" "$DIR/nk" || fail "column sums: $(diff "$DIR/cols" "$DIR/nk")"

# A directory holding a model: refused, untouched; --overwrite replaces it.
cp "$DIR/tcp/alpha.txt" "$DIR/alpha.before"
echo stale >"$DIR/tcp/model.bin"
set +e
"$CTL" export --addr "$TCP" --out "$DIR/tcp" 2>"$DIR/e"
rc=$?
set -e
[ $rc = 1 ] || fail "export into a model directory: exit $rc"
grep -q "$DIR/tcp already holds a model (.*): give --overwrite to replace it" "$DIR/e" || fail "message: $(cat "$DIR/e")"
"$CTL" export --addr 127.0.0.1:1 --wait 0 --out "$DIR/tcp" --overwrite 2>"$DIR/e" && fail "dead address accepted"
grep -q "127.0.0.1:1" "$DIR/e" || fail "message does not name the address: $(cat "$DIR/e")"
[ -e "$DIR/tcp/model.bin" ] && cmp -s "$DIR/alpha.before" "$DIR/tcp/alpha.txt" || fail "a failed export changed the directory"
"$CTL" export --addr "$TCP" --out "$DIR/tcp" --overwrite 2>"$DIR/e" || fail "--overwrite: $(cat "$DIR/e")"
[ ! -e "$DIR/tcp/model.bin" ] || fail "--overwrite kept the old model.bin"
for f in $FILES; do cmp "$DIR/http/$f" "$DIR/tcp/$f" || fail "--overwrite: $f differs"; done
set +e
"$CTL" export --addr 127.0.0.1:1 --wait 0 --out "$DIR/dead" 2>"$DIR/e"
rc=$?
set -e
[ $rc = 1 ] || fail "unreachable address: exit $rc"
grep -q "127.0.0.1:1" "$DIR/e" || fail "message: $(cat "$DIR/e")"

stop_latentd
echo "latentctl export: OK"
