#!/usr/bin/env bash
# Builds WarpLDA (Chen et al., VLDB 2016; github.com/thu-ml/warplda) from a
# checkout of its source, for the side-by-side benchmark
# (ops/bench/warplda_side_by_side.sh). Nothing of it enters this project.
#
# Usage: ops/bench/build_warplda.sh SRC_DIR [OUT_DIR]   (OUT_DIR default
#        /var/tmp/warplda-build); prints the directory holding `warplda`
#        and `format`.
#   SRC_DIR: `git clone https://github.com/thu-ml/warplda` (built here from
#   the tree as of its last commit, 2016). Its get_gflags.sh clones gflags
#   into SRC_DIR/gflags; Debian's libgflags-dev (ops/install-deps.sh) does
#   instead: an empty gflags/CMakeLists.txt satisfies its
#   add_subdirectory(gflags) and it links -lgflags from /usr/lib.
# Its own flags: -march=native, OpenMP (threads: OMP_NUM_THREADS); Release
# adds -O3. g++ 12 needs <stdexcept> in lda.cpp, which it does not include:
# given with -include rather than by editing the source.
set -euo pipefail
SRC=${1:?usage: build_warplda.sh SRC_DIR [OUT_DIR]}
OUT=${2:-/var/tmp/warplda-build}
[ -f "$SRC/src/warplda.cpp" ] || { echo "build_warplda.sh: $SRC/src/warplda.cpp missing: not a WarpLDA checkout" >&2; exit 1; }
[ -f /usr/include/gflags/gflags.h ] || { echo "build_warplda.sh: no gflags headers: apt-get install libgflags-dev libnuma-dev" >&2; exit 1; }
mkdir -p "$SRC/gflags"
[ -f "$SRC/gflags/CMakeLists.txt" ] || echo "# Debian's libgflags-dev is used" >"$SRC/gflags/CMakeLists.txt"
cmake -S "$SRC" -B "$OUT" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-include stdexcept" >"$OUT.cmake.log" 2>&1 ||
  { cat "$OUT.cmake.log" >&2; exit 1; }
cmake --build "$OUT" -j"$(nproc)" --target warplda format >"$OUT.build.log" 2>&1 ||
  { tail -30 "$OUT.build.log" >&2; exit 1; }
echo "$OUT/src"
