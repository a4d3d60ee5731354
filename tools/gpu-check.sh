#!/usr/bin/env bash
# The GPU check, for a machine with one NVIDIA GPU and the CUDA toolkit but
# none of ember's Debian libraries: it runs what tools/device-bundle.sh
# built elsewhere (carry build-device/ to it). Usage, from the repo root:
#   tools/gpu-check.sh [SCALE]        # SCALE: R-MAT scale of the benchmark, default 24
# Prints what it runs on; runs the CUDA tests (train_test '*Cuda*:*Device*':
# a skipped test fails the check, as it means the GPU was not used); then
# gpu_train_bench on cuda:0 (R-MAT SCALE, dim 100, batch 1000, chunk 50, 50
# uniform negatives, softmax, dot: edges/s, FLOP/s against cuBLAS sgemm,
# peak device memory, and the CPU trainer on all cores); then `ember train`
# end to end on R-MAT scale 20, cuda:0 beside cpu. Each step has a timeout
# (120 + 240 + 110 s) so that the whole check ends within 8 minutes. Logs go to $OUT (a
# temporary folder when unset). Exit 0 only when every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."
scale=${1:-24}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
bundle=build-device
start=$SECONDS

echo "== gpu-check on $(hostname), $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
uname -a
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version,clocks.max.sm --format=csv,noheader
else
  echo "nvidia-smi: not found"
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] && "$nvcc" --version | tail -2 | head -1 || echo "nvcc: not found"
echo "host C library: $(ldd --version 2>&1 | head -1)"
if [ ! -x "$bundle/run" ]; then
  echo "gpu-check: no $bundle/run. Make it on a machine with ember's dependencies and nvcc" \
    "(tools/device-bundle.sh), then carry $bundle/ here." >&2
  exit 2
fi
grep -E '^(id|glibc|built on|cuda):' "$bundle/bundle.txt"
echo "logs: $out"

failed=()
grep -q '^cuda: yes' "$bundle/bundle.txt" || failed+=("the bundle was built without CUDA (no nvcc where it was made)")
echo; echo "== CUDA tests (train_test --gtest_filter='*Cuda*:*Device*')"
timeout 120 "$bundle/run" train_test --gtest_filter='*Cuda*:*Device*' >"$out/tests.log" 2>&1
rc=$?
grep -E '^\[ *(OK|FAILED|SKIPPED) *\]' "$out/tests.log" | grep -v ' tests\?, listed below' | head -60
count() { sed -nE "s/^\[ *$1 *\] ([0-9]+) tests?.*/\1/p" "$out/tests.log" | head -1; }
passed=$(count PASSED); skipped=$(count SKIPPED); failures=$(count FAILED)
echo "tests: rc $rc, ${passed:-0} passed, ${skipped:-0} skipped, ${failures:-0} failed"
if [ "$rc" -ne 0 ]; then
  failed+=("tests (rc $rc$([ "$rc" -eq 124 ] && echo ': timed out'); tail of $out/tests.log below)")
  tail -20 "$out/tests.log"
elif [ "${passed:-0}" -eq 0 ]; then
  failed+=("tests: no CUDA test ran")
fi
if [ "${skipped:-0}" -ne 0 ]; then
  echo "FAILURE: ${skipped} CUDA test(s) skipped on a GPU machine: the device was not used" \
    "(see the skip reasons in $out/tests.log)"
  grep --no-group-separator -A1 ': Skipped$' "$out/tests.log" | head -10
  failed+=("tests: ${skipped} skipped")
fi

echo; echo "== benchmark (gpu_train_bench --devices cuda:0 --scale $scale)"
timeout 240 "$bundle/run" gpu_train_bench --devices cuda:0 --scale "$scale" --seconds 45 \
  --cpu_seconds 15 >"$out/bench.txt" 2>"$out/bench.log"
rc=$?
cat "$out/bench.txt"
if [ "$rc" -ne 0 ]; then
  tail -20 "$out/bench.log"
  failed+=("benchmark (rc $rc$([ "$rc" -eq 124 ] && echo ': timed out'))")
fi

# End to end through the streaming pipeline (disk, windows, planning): what
# `ember train` feeds the GPU, beside the in-memory figure above.
echo; echo "== end to end (ember train, R-MAT scale 20, 1 epoch: cuda:0, then cpu)"
e2e() {
  local g="$out/e2e" ember=("$bundle/run" ember)
  rm -rf "$g" && mkdir -p "$g" &&
    "${ember[@]}" gen rmat --scale 20 --out "$g/edges.tsv" --quiet &&
    "${ember[@]}" import --out "$g/graph" --partitions 1 --quiet "$g/edges.tsv" >/dev/null &&
    cp -r "$g/graph" "$g/graph-cpu" &&
    for d in cuda:0 cpu; do
      local dir="$g/graph"; [ "$d" = cpu ] && dir="$g/graph-cpu"
      "${ember[@]}" train "$dir" --devices "$d" --threads "$(nproc)" --epochs 1 --lr 0.1 \
        --dim 100 --quiet --json | sed -nE "s/.*\"edges_per_second\": ?([0-9.e+]+).*/$d: \1 edges\/s/p" ||
        return 1
    done
}
timeout 110 bash -c "$(declare -f e2e); bundle=$bundle out=$out e2e" 2>"$out/e2e.log"
rc=$?
if [ "$rc" -ne 0 ]; then
  tail -10 "$out/e2e.log"
  failed+=("end to end (rc $rc$([ "$rc" -eq 124 ] && echo ': timed out'))")
fi

echo; echo "== gpu-check: $((SECONDS - start)) s"
if [ ${#failed[@]} -ne 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "PASSED"
