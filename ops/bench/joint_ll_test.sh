#!/usr/bin/env bash
# joint_ll.py, the likelihood the WarpLDA side-by-side benchmark times
# latentd to, computes what latentd prints: a synthetic corpus trained 10
# sweeps with α fixed, its final state exported as a Mallet state, and the
# script's figure for that state equal to the sweep's loglik/token.
# Usage: joint_ll_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:?usage: joint_ll_test.sh BUILD_DIR WORK_DIR}
WORK=${2:?usage: joint_ll_test.sh BUILD_DIR WORK_DIR}
rm -rf "$WORK"
mkdir -p "$WORK"
"$BUILD/ops/bench/big_corpus" --out "$WORK" --docs 400 >/dev/null
"$BUILD/cli/latentctl" train --corpus "$WORK/corpus.ldac" --format ldac \
  --vocab "$WORK/vocab.txt" --topics 7 --alpha 3 --optimize-alpha off \
  --sweeps 10 --eval-every 10 --threads 1 --out "$WORK/model" \
  >/dev/null 2>"$WORK/train.log"
printed=$(sed -n 's/^sweep 10\/10 .* loglik\/token \([-0-9.]*\).*/\1/p' "$WORK/train.log")
[ -n "$printed" ] || { echo "FAIL: no loglik/token at sweep 10 in:"; cat "$WORK/train.log"; exit 1; }
"$BUILD/cli/latentctl" export "$WORK/model" --format mallet --out "$WORK/mallet" >/dev/null 2>&1
# α_k = 3 for each of 7 topics: the sum is 21.
computed=$(python3 ops/bench/joint_ll.py "$WORK/mallet/mallet_state.gz" 7 21 0.01)
echo "latentctl train: $printed; joint_ll.py: $computed"
# latentctl prints 4 decimals.
awk -v a="$printed" -v b="${computed%% *}" 'BEGIN {
  d = a - b; if (d < 0) d = -d
  if (d > 0.00006) { print "FAIL: they differ by " d; exit 1 }
  print "PASS" }'
