#!/usr/bin/env bash
# One setting, one flag name: every binary that has a setting gives it the
# same primary name (from each binary's --help), a retired name is never a
# binary's primary name (only a deprecated second name), one name never
# means two things, and the aliases are accepted, not only listed.
# Usage: flag_names_test.sh LATENTD LATENTCTL LATENTD_CLUSTER_NODE
set -u
LATENTD=$1
CTL=$2
NODE=$3
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$LATENTD" --help >"$DIR/latentd" || fail "latentd --help"
"$NODE" --help >"$DIR/node" || fail "latentd-cluster-node --help"
for c in train topics infer status profile ingest checkpoint; do
  "$CTL" "$c" --help >"$DIR/ctl-$c" || fail "latentctl $c --help"
done
"$CTL" cluster status --help >"$DIR/ctl-cluster-status" || fail "latentctl cluster status --help"

# The option lines of a help text: "  --a,--b TYPE  text" -> "--a,--b".
names() { sed -n 's/^ \{1,4\}\(-[-a-z,]*\).*/\1/p' "$DIR/$1" | sed 's/^-h,//'; }
# NAME is the first name of one of HELP's options.
primary() { names "$1" | grep -q -- "^--$2\(,\|$\)"; }
# NAME is a second name of one of HELP's options.
secondary() { names "$1" | grep -q -- ",--$2\(,\|$\)"; }
# NAME is any name of one of HELP's options.
named() { names "$1" | tr ',' '\n' | grep -qx -- "--$2"; }

# setting's name | familiar aliases | the helps of the binaries that have it
while IFS='|' read -r name aliases helps; do
  for h in $helps; do
    primary "$h" "$name" || fail "$h: --$name is not an option's name: $(names "$h" | tr '\n' ' ')"
    for a in $aliases; do
      if [ "$h" = latentd ]; then
        # latentd's flags come from its settings table, a row per name.
        grep -q -- "^ *--$a .*Same as --$name" "$DIR/$h" || fail "$h: --$a is not an alias of --$name"
      else
        secondary "$h" "$a" || fail "$h: --$a is not a second name of --$name"
      fi
    done
  done
done <<'TABLE'
corpus||latentd node ctl-train
format||latentd node ctl-train
vocab||latentd node ctl-train
topics|num-topics|latentd node ctl-train
sweeps|iterations num-iterations|node ctl-train
max-sweeps||latentd
threads||latentd node ctl-train
seed||latentd node ctl-train
alpha||ctl-train
beta||latentd ctl-train
optimize-alpha||latentd ctl-train
stopwords||latentd ctl-train
eval-every||latentd ctl-train
checkpoint-every||latentd ctl-train
cluster-redis||latentd node ctl-cluster-status
cluster||latentd node ctl-cluster-status
cluster-size||latentd node
cluster-listen||latentd node
cluster-key||latentd node
insecure||latentd node
consistency||latentd node
listen||latentd
http||latentd
addr||ctl-topics ctl-infer ctl-status ctl-profile ctl-ingest ctl-checkpoint
protocol||ctl-topics ctl-infer ctl-status ctl-profile ctl-ingest ctl-checkpoint
json||ctl-train ctl-topics ctl-infer ctl-status ctl-profile ctl-ingest ctl-checkpoint ctl-cluster-status
TABLE

# Retired names: never a primary name; kept only as a deprecated one.
grep -q -- "^ *--corpus-vocab .*Deprecated name of --vocab" "$DIR/latentd" || fail "latentd: --corpus-vocab not marked deprecated"
for old in redis:cluster-redis members:cluster-size listen:cluster-listen; do
  primary node "${old%%:*}" && fail "node: --${old%%:*} is a primary name"
  names node | grep -q -- "^--${old#*:},--${old%%:*}\(,\|$\)" || fail "node: --${old%%:*} is not the old name of --${old#*:}"
done
# One name, one meaning: "sweeps to run now" and "stop at this total".
named latentd sweeps && fail "latentd has --sweeps (its setting is --max-sweeps)"
named ctl-train max-sweeps && fail "latentctl train has --max-sweeps"
named node max-sweeps && fail "latentd-cluster-node has --max-sweeps"
grep -q "total to stop at" "$DIR/ctl-train" || fail "train --sweeps help does not contrast --max-sweeps"
grep -q "^ *--max-sweeps .*in all" "$DIR/latentd" || fail "latentd --max-sweeps help does not say it is a total"
# latentd's --redis is its ingest stream; the cluster's Redis is elsewhere.
grep -q "^ *--redis .*stream" "$DIR/latentd" || fail "latentd --redis is not the ingest stream"
# Mallet's --alpha is a sum over topics; ours is per topic.
grep -q "Mallet's --alpha is the sum" "$DIR/ctl-train" || fail "--alpha help does not compare with Mallet"

# The aliases work, not only show.
printf 'oil prices crude\nfootball goal team\noil opec barrel\n' >"$DIR/c.txt"
"$CTL" train --corpus "$DIR/c.txt" --num-topics 3 --iterations 2 --out "$DIR/m" \
  >/dev/null 2>"$DIR/e" || fail "train with aliases: $(cat "$DIR/e")"
grep -q "^sweep 2/2 " "$DIR/e" || fail "--iterations 2 did not run 2 sweeps"
[ "$("$CTL" topics "$DIR/m" | grep -c '^topic')" = 3 ] || fail "--num-topics 3 did not give 3 topics"
"$CTL" train --corpus "$DIR/c.txt" --num-iterations 1 --out "$DIR/m" --overwrite \
  >/dev/null 2>"$DIR/e" || fail "--num-iterations: $(cat "$DIR/e")"
# latentd: an alias reaches its setting as a flag and as a config key (the
# bad value makes it stop before starting anything).
"$LATENTD" --data-dir "$DIR/d" --num-topics 0 2>"$DIR/e" && fail "latentd --num-topics 0 accepted"
grep -q "setting topics: '0'" "$DIR/e" || fail "latentd --num-topics: $(cat "$DIR/e")"
printf 'corpus-vocab = %s\nnum-topics = 0\n' "$DIR/c.txt" >"$DIR/old.conf"
"$LATENTD" --data-dir "$DIR/d" --config "$DIR/old.conf" 2>"$DIR/e" && fail "latentd: config num-topics = 0 accepted"
grep -q "setting topics: '0'" "$DIR/e" || fail "latentd config aliases: $(cat "$DIR/e")"
"$LATENTD" --print-config | grep -q "^# vocab = $" || fail "example config lacks vocab"
"$LATENTD" --print-config | grep -q "^#* *corpus-vocab =" && fail "example config lists the old name"
# latentd-cluster-node: a deprecated name works and says what replaced it
# (the node then fails on the missing corpus, which is fine here).
"$NODE" --redis redis://127.0.0.1:1 --cluster c --listen 127.0.0.1:0 --members 1 \
  --corpus "$DIR/none" --format lines >/dev/null 2>"$DIR/e" && fail "node ran without a corpus"
grep -q -- "--redis is deprecated: use --cluster-redis" "$DIR/e" || fail "node --redis: $(cat "$DIR/e")"
grep -q -- "--members is deprecated: use --cluster-size" "$DIR/e" || fail "node --members: $(cat "$DIR/e")"
grep -q "not expected\|required" "$DIR/e" && fail "node rejected an old name: $(cat "$DIR/e")"
echo "flag names: all checks passed"
