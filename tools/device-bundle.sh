#!/usr/bin/env bash
# Builds what tools/gpu-check.sh runs on a GPU machine that lacks ember's
# Debian libraries (RocksDB, oneTBB, Abseil, OpenBLAS, GTest) and may have
# another C library. Usage, on a machine with them and nvcc:
#   tools/device-bundle.sh          # then carry build-device/ to the GPU machine
#   build-device/run PROG [ARGS]    # PROG: ember, train_test, gpu_train_bench
#
# Builds ember, train_test and gpu_train_bench in build-device-cmake/ (no
# -march=native: -mavx2 -mfma; CUDA where nvcc is), strips them and packs
# them with every shared library that `ldd` lists, the C library and its
# loader included, into build-device/bundle.tar.gz: gzip keeps the bundle
# under the 64 MiB that may travel (OpenBLAS alone is 35 MB). Left out: the
# driver (libcuda) and the CUDA toolkit's libraries (libcudart, libcublas,
# libnccl), which the GPU machine has. build-device/run unpacks the bundle
# once, into ${EMBER_BUNDLE_CACHE:-${TMPDIR:-/tmp}/ember-bundle}/<bundle id>,
# and starts PROG through the bundled loader, so that the bundled libraries
# win and only the driver and CUDA toolkit come from the host.
# build-device/bundle.txt lists the contents. Fails over 60 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-device-cmake
out=build-device
programs=(ember tests/train_test tools/bench/gpu_train_bench)
limit_mib=60

gen=(-G Ninja)
command -v ccache >/dev/null && gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DEMBER_NATIVE=OFF >/dev/null
grep -E '^EMBER_CUDA:|^CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" >&2 || true
cmake --build "$build" -j "${JOBS:-2}" --target "${programs[@]##*/}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/libc"
for p in "${programs[@]}"; do
  strip -o "$stage/bin/${p##*/}" "$build/$p"
done
# Every library the loader would map, minus the host's driver and toolkit.
ldd "$stage"/bin/* | awk '/=> \// {print $3} /^\t\// {print $1}' | sort -u |
  grep -Ev '/lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-)[^/]*$' |
  while read -r lib; do cp -L "$lib" "$stage/lib/${lib##*/}"; done
# The C library and its loader apart (libc/): a host whose C library is as
# new starts the programs with its own loader and C library, and only the
# other libraries come from here (run, below).
for lib in "$stage"/lib/*; do
  case ${lib##*/} in
    ld-linux*|lib[cm].so.*|lib{pthread,dl,rt,resolv,util,anl,mvec,BrokenLocale}.so.*)
      mv "$lib" "$stage/libc/" ;;
  esac
done
missing=$(ldd "$stage"/bin/* | grep 'not found' | grep -Ev 'lib(cuda|cudart|cublas|nccl)' || true)
[ -z "$missing" ] || { echo "device-bundle: unresolved libraries: $missing" >&2; exit 1; }
[ -f "$stage/libc/ld-linux-x86-64.so.2" ] || { echo "device-bundle: no loader in ldd's output" >&2; exit 1; }

id="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo -dirty)-$(date +%Y%m%d%H%M%S)"
rm -rf "$out"
mkdir -p "$out"
tar -C "$stage" -czf "$out/bundle.tar.gz" bin lib libc
glibc=$("$stage/libc/libc.so.6" | head -1 | grep -oE 'version [0-9]+\.[0-9]+' | cut -d' ' -f2)
{
  echo "id: $id"
  echo "built on: $(uname -srm), $(ldd --version | head -1)"
  echo "glibc: $("$stage/libc/libc.so.6" | head -1)"
  # gpu_train_bench links cuBLAS exactly when the build has CUDA.
  echo "cuda: $(ldd "$stage/bin/gpu_train_bench" | grep -c libcublas >/dev/null && echo yes || echo no)"
  echo "host libraries it expects: libcuda.so.1 (driver); $(ldd "$stage"/bin/* | grep -oE 'lib(cudart|cublas|cublasLt|nccl)[^ ]*' | sort -u | tr '\n' ' ')"
  echo "contents (bytes unpacked):"
  (cd "$stage" && find bin lib libc -type f -printf '  %s\t%p\n' | sort -k2)
} >"$out/bundle.txt"
sed "s/@BUNDLE_ID@/$id/; s/@GLIBC@/$glibc/" >"$out/run" <<'RUN'
#!/usr/bin/env bash
# Runs a program of this bundle (tools/device-bundle.sh): build-device/run PROG [ARGS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${EMBER_BUNDLE_CACHE:-${TMPDIR:-/tmp}/ember-bundle}/@BUNDLE_ID@
if [ ! -x "$dir/libc/ld-linux-x86-64.so.2" ]; then
  mkdir -p "${dir%/*}"
  tmp=$(mktemp -d "$dir.XXXXXX")
  tar -C "$tmp" -xzf "$here/bundle.tar.gz"
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"  # another run unpacked it first
fi
prog=${1:?usage: $0 PROG [ARGS] (PROG: $(ls "$dir/bin" | tr '\n' ' '); or --library-dirs)}
shift
# Search path: the bundled libraries first (our C library must win); then
# EMBER_LIBRARY_PATH (colon-separated, added at run time); then the CUDA
# toolkit's folders and the cuBLAS/NCCL that PyTorch brings as Python packages
# (site-packages/nvidia/{cublas,nccl,cuda_runtime}/lib of every python3 found);
# then the driver's folders; then the caller's LD_LIBRARY_PATH, which
# --library-path would otherwise replace.
gpu_dirs() {
  local py sp
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64; do
    if [ -d "$d" ]; then echo "$d"; fi
  done
  for py in $(command -v -a python3 2>/dev/null) /opt/*/bin/python3 /opt/*/.venv/bin/python3 /venv/bin/python3 "${VIRTUAL_ENV:-/nonexistent}/bin/python3"; do
    [ -x "$py" ] || continue
    timeout 10 "$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null || true
  done | sort -u | while read -r sp; do
    for d in "$sp"/nvidia/cublas/lib "$sp"/nvidia/nccl/lib "$sp"/nvidia/cuda_runtime/lib "$sp"/nvidia/cu*/lib; do
      if [ -d "$d" ]; then echo "$d"; fi
    done
  done
  for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
    if [ -d "$d" ]; then echo "$d"; fi
  done
}
if [ "$prog" = --library-dirs ]; then gpu_dirs | awk '!seen[$0]++'; exit 0; fi
path="$dir/lib${EMBER_LIBRARY_PATH:+:$EMBER_LIBRARY_PATH}:$(gpu_dirs | awk '!seen[$0]++' | paste -sd:)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# A host C library at least as new as the bundle's (@GLIBC@) starts PROG the
# usual way, through the host's loader; an older one (or
# EMBER_BUNDLE_LOADER=1) through the bundled loader and C library. (On one
# GPU machine here, a loader started by name lost its first argument.)
host_glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
oldest=$(printf '%s\n' @GLIBC@ "${host_glibc:-0}" | sort -V | head -1)
if [ "${EMBER_BUNDLE_LOADER:-0}" != 1 ] && [ "$oldest" = @GLIBC@ ]; then
  LD_LIBRARY_PATH="$path" exec "$dir/bin/$prog" "$@"
fi
exec "$dir/libc/ld-linux-x86-64.so.2" --library-path "$dir/libc:$path" "$dir/bin/$prog" "$@"
RUN
chmod +x "$out/run"
size=$(du -sb "$out" | cut -f1)
cat "$out/bundle.txt" >&2
echo "device-bundle: $out is $((size / 1024 / 1024)) MiB ($size bytes; limit $limit_mib MiB), $(du -sb "$stage" | cut -f1) bytes unpacked" >&2
[ "$size" -le $((limit_mib * 1024 * 1024)) ] || { echo "device-bundle: over $limit_mib MiB" >&2; exit 1; }
