#!/usr/bin/env bash
# Large corpora from disk (issue 33): `latentctl train` on synthetic LDA
# corpora of about 2 M, 20 M and 200 M tokens (ops/bench/big_corpus.cc: a
# Zipf vocabulary of 200,000 words, 100 known topics, documents of about
# 200 tokens; each smaller corpus is the first documents of the largest),
# then the largest again in a cgroup whose memory cap is below the size of
# its token store, and news20 beside them at the same K, threads and sweeps.
# Per run: tokens, token store size, sampling tokens/s (the median over
# sweeps 2..S: sweep 1 holds the progressive start), wall seconds of the
# whole command (building the store, sampling, coherence, writing the
# model), its peak resident set (/usr/bin/time's maximum RSS), the most the
# word-topic table's arena held (table MiB: the model, which grows with
# the corpus until each word's row is full) and the peak RSS less it (rest
# MiB, at most what the rest held at the peak). Prints a
# table, then each run's tokens/s over news20's and peak RSS over the
# smallest synthetic corpus's, with and without the table.
# Usage: ops/bench/big_corpus.sh [build-dir] [work-dir] [K] [threads]
#        [sweeps] [sizes]
#   sizes: document counts, comma-separated (default 10000,100000,1000000)
#   e.g. ops/bench/big_corpus.sh build /var/tmp/big 100 2 5
# Environment: CAP_MIB, the memory cap of the capped run (default: the
# uncapped run's peak RSS and a quarter more); CAP=0 skips that run (it needs root and the
# cgroup v1 memory controller at /sys/fs/cgroup/memory). WARPLDA_DIR (the
# directory of `warplda` and `format`, ops/bench/build_warplda.sh) runs
# WarpLDA beside each uncapped run: the same tokens in its text format,
# converted by its `format`, then `warplda` for as many iterations on as
# many OpenMP threads (α = 50/K, β = 0.01): its tokens/s (the median over
# iterations 2..S), wall seconds (conversion and training) and the peak RSS
# of its training (its conversion's apart). The corpus is
# generated into work-dir once and kept (about 1.2 GB for 1,000,000
# documents); the model directories are removed after each run.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
WORK=${2:-/var/tmp/latentd-big-corpus}
K=${3:-100}
THREADS=${4:-2}
SWEEPS=${5:-5}
IFS=, read -r -a SIZES <<<"${6:-10000,100000,1000000}"
DATA=${LATENTD_DATA_DIR:-../shared/data}
NEWS20=$DATA/20newsgroups-bydate/news20.lines.zst
BIN=$BUILD/cli/latentctl
GEN=$BUILD/ops/bench/big_corpus
for b in "$BIN" "$GEN"; do
  [ -x "$b" ] || { echo "big_corpus.sh: no $b (build first)" >&2; exit 2; }
done
mkdir -p "$WORK"
largest=0
for s in "${SIZES[@]}"; do ((s > largest)) && largest=$s; done
full=$WORK/corpus.ldac
full_docs=0
[ -f "$full" ] && full_docs=$(wc -l <"$full")
if [ "$full_docs" -lt "$largest" ]; then
  echo "generating $largest documents into $WORK"
  "$GEN" --out "$WORK" --docs "$largest"
  full_docs=$largest
fi
echo "$(lscpu | grep 'Model name' | sed 's/  */ /g'); K=$K, $THREADS threads, $SWEEPS sweeps"

results=()
# median: the median of the numbers on stdin, one a line.
median() {
  sort -g | awk '{ r[NR] = $1 }
    END { print (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }'
}
# run NAME CORPUS FORMAT-ARGS...: one `latentctl train`, under $CGROUP if set.
run() {
  local name=$1 corpus=$2
  shift 2
  local out=$WORK/model-$name log=$WORK/train-$name.log
  rm -rf "$out"
  local cmd=(/usr/bin/time -f 'TIME %M %e' "$BIN" train --corpus "$corpus"
    "$@" --topics "$K" --threads "$THREADS" --sweeps "$SWEEPS"
    --eval-every 0 --checkpoint-every 0 --out "$out")
  local rc=0
  if [ -n "${CGROUP:-}" ]; then
    bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CGROUP" "${cmd[@]}" \
      >/dev/null 2>"$log" || rc=$?
  else
    "${cmd[@]}" >/dev/null 2>"$log" || rc=$?
  fi
  if [ $rc -ne 0 ]; then
    echo "$name: exit status $rc; the end of $log:"
    tail -n 5 "$log"
    rm -rf "$out"
    return 0
  fi
  local tokens store rate rss wall table
  tokens=$(sed -n 's/^corpus: [0-9]* documents, \([0-9]*\) tokens.*/\1/p' "$log")
  # The most the word-topic table's arena held (latentctl train's last
  # lines): the memory that grows with the model rather than the corpus.
  table=$(sed -n 's/^word-topic table: .*arena at most \([0-9.]*\) MiB$/\1/p' "$log")
  table=${table:-0}
  store=$(stat -c %s "$out/tokens.lts")
  rate=$(awk -v s="$SWEEPS" '/^sweep [0-9]+\// && !/in progress/ {
      split($2, a, "/"); if (a[1] > 1 || s == 1) print $5 }' "$log" |
    median)
  read -r rss wall < <(sed -n 's/^TIME //p' "$log")
  rm -rf "$out"
  printf '%-20s %12s %10.0f %12.2f %10.0f %10.0f %10.0f %10.0f\n' "$name" \
    "$tokens" "$((store >> 20))" "$rate" "$wall" "$((rss >> 10))" "$table" \
    "$(awk -v r="$((rss >> 10))" -v t="$table" 'BEGIN { print r - t }')"
  results+=("$name $rate $((rss >> 10)) $table")
  largest_store=$((store >> 20))
}

# warp NAME CORPUS FORMAT: WarpLDA on the same corpus (lines or ldac).
warp() {
  [ -n "${WARPLDA_DIR:-}" ] || return 0
  local name=$1 corpus=$2 format=$3 dir=$WORK/warplda-$1
  rm -rf "$dir"
  mkdir -p "$dir"
  # Yahoo!LDA's text format: two ids, then the words (an ldac word:count
  # written count times).
  if [ "$format" = lines ]; then
    zstd -dcf "$corpus" | awk '{ print "d" NR " d" NR " " $0 }'
  else
    awk '{ printf "d%d d%d", NR, NR
           for (i = 2; i <= NF; i++) {
             split($i, p, ":"); for (j = 0; j < p[2]; j++) printf " w%s", p[1] }
           printf "\n" }' "$corpus"
  fi >"$dir/in.txt"
  local t0=$SECONDS rc=0
  /usr/bin/time -f 'TIME %M %e' "$WARPLDA_DIR/format" -input "$dir/in.txt" \
    -prefix "$dir/c" >"$dir/format.log" 2>&1 || rc=$?
  rm -f "$dir/in.txt"
  if [ $rc = 0 ]; then
    (cd "$dir" && OMP_NUM_THREADS=$THREADS /usr/bin/time -f 'TIME %M %e' \
      "$WARPLDA_DIR/warplda" --prefix c --k "$K" --niter "$SWEEPS" --alpha 50 \
      --beta 0.01 --writeinfo=false --dumpmodel=false --dumpz=false) \
      >"$dir/train.log" 2>&1 || rc=$?
  fi
  if [ $rc != 0 ]; then
    echo "warplda-$name: exit status $rc; the end of its logs:"
    tail -n 3 "$dir"/*.log
    rm -rf "$dir"
    return 0
  fi
  local tokens rate rss format_rss
  tokens=$(sed -n 's/.* \([0-9]*\) total words$/\1/p' "$dir/train.log")
  rate=$(awk '/^Iteration / && $2 + 0 > 0 { print $5 }' "$dir/train.log" |
    median)
  rss=$(sed -n 's/^TIME \([0-9]*\) .*/\1/p' "$dir/train.log")
  format_rss=$(sed -n 's/^TIME \([0-9]*\) .*/\1/p' "$dir/format.log")
  printf '%-20s %12s %10s %12.2f %10.0f %10.0f   (its format: %.0f MiB)\n' \
    "warplda-$name" "$tokens" - "$rate" "$((SECONDS - t0))" "$((rss >> 10))" \
    "$((format_rss >> 10))"
  rm -rf "$dir"
}

printf '%-20s %12s %10s %12s %10s %10s %10s %10s\n' run tokens "store MiB" \
  "Mtok/s" "wall s" "RSS MiB" "table MiB" "rest MiB"
if [ -f "$NEWS20" ]; then
  run news20 "$NEWS20" --format lines
  warp news20 "$NEWS20" lines
else
  echo "(news20 skipped: no $NEWS20)"
fi
largest_corpus=$full
for s in "${SIZES[@]}"; do
  corpus=$full
  if [ "$s" -lt "$full_docs" ]; then
    corpus=$WORK/first-$s.ldac
    [ -f "$corpus" ] || head -n "$s" "$full" >"$corpus"
  fi
  run "docs-$s" "$corpus" --format ldac --vocab "$WORK/vocab.txt"
  warp "docs-$s" "$corpus" ldac
  [ "$s" = "$largest" ] && largest_corpus=$corpus
done

if [ "${CAP:-1}" != 0 ]; then
  MEMCG=/sys/fs/cgroup/memory
  if [ "$(id -u)" = 0 ] && [ -w "$MEMCG" ]; then
    CGROUP=$MEMCG/latentd-big-corpus-$$
    mkdir "$CGROUP"
    trap "rmdir '$CGROUP' 2>/dev/null || true" EXIT
    # The uncapped run's peak RSS and a quarter more (for the page cache
    # of the pieces in flight): below its token store's size.
    read -r _ _ largest_rss <<<"${results[${#results[@]} - 1]}"
    cap=${CAP_MIB:-$((largest_rss * 5 / 4))}
    echo "$((cap << 20))" >"$CGROUP/memory.limit_in_bytes"
    echo 0 >"$CGROUP/memory.swappiness" 2>/dev/null || true
    run "docs-$largest-cap" "$largest_corpus" --format ldac --vocab "$WORK/vocab.txt"
    echo "(capped run: memory cap $cap MiB, page cache included, against" \
      "a token store of $largest_store MiB;" \
      "the cgroup's peak: $(($(cat "$CGROUP/memory.max_usage_in_bytes") >> 20)) MiB," \
      "limit hits: $(cat "$CGROUP/memory.failcnt"))"
    unset CGROUP
  else
    echo "(capped run skipped: needs root and $MEMCG)"
  fi
fi

# Tokens/s against news20's (or the smallest corpus's without news20),
# peak RSS against the smallest synthetic corpus's.
rate_base=${results[0]}
rss_base=${results[0]}
[ "${results[0]%% *}" = news20 ] && [ ${#results[@]} -gt 1 ] &&
  rss_base=${results[1]}
read -r rate_name base_rate _ <<<"$rate_base"
read -r rss_name _ base_rss base_table <<<"$rss_base"
for r in "${results[@]}"; do
  read -r name rate rss table <<<"$r"
  awk -v n="$name" -v rn="$rate_name" -v r="$rate" -v br="$base_rate" \
    -v mn="$rss_name" -v m="$rss" -v bm="$base_rss" -v t="$table" \
    -v bt="$base_table" \
    'BEGIN { printf "%-16s tokens/s %.2f of %s; peak RSS %.2f of %s, less the table %.2f\n",
             n, r / br, rn, m / bm, mn, (m - t) / (bm - bt) }'
done
