#!/usr/bin/env bash
# Configures and builds ember. Usage: tools/build.sh [release|sanitize|tsan] [TARGET...]
# Builds into build/ (release), build-sanitize/ (ASan + UBSan) or
# build-tsan/ (ThreadSanitizer): every target, or only the TARGETs named
# (e.g. `ember`).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
shift $(( $# > 0 ? 1 : 0 ))
case "$kind" in
  release) dir=build; extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  sanitize) dir=build-sanitize; extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=ON -DEMBER_CUDA=OFF) ;;
  tsan) dir=build-tsan; extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_TSAN=ON -DEMBER_CUDA=OFF -DEMBER_MPI=OFF) ;;
  *) echo "usage: $0 [release|sanitize|tsan]" >&2; exit 2 ;;
esac
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# ccache, where installed, makes rebuilds in fresh checkouts cheap: paths
# are hashed relative to the checkout, so a clone elsewhere hits the cache.
if command -v ccache >/dev/null; then
  gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" "${gen[@]}" "${extra[@]}" >/dev/null
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
