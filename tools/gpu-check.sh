#!/usr/bin/env bash
# The GPU check, for a machine with one NVIDIA GPU and the CUDA toolkit but
# none of ember's Debian libraries: it runs what tools/device-bundle.sh
# built elsewhere (carry build-device/ to it). Usage, from the repo root:
#   tools/gpu-check.sh [SCALE]        # SCALE: R-MAT scale of the benchmark, default 24
# It cannot pass by accident: every step runs under `pipefail` with its own
# timeout and an explicit exit code; a failed step is reported and the next
# one still runs; a summary table comes last; exit 0 only when every step
# passed. No GPU (nvidia-smi lists none) is a failure, exit 3.
# Steps (GPU_CHECK_STEPS, default "tests bench e2e torch"; the whole check is
# capped at 355 s, each step's timeout cut to what is left):
#   tests  train_test --gtest_filter='Cuda*' (only the tests that need a GPU;
#          the emulated Device* tests run in CI): a skip fails, 120 s
#   bench  gpu_train_bench on cuda:0 (R-MAT SCALE, dim 100, batch 1000, chunk
#          50, 50 negatives, softmax, dot; 30 s timed), 130 s
#   e2e    `ember train` on R-MAT scale 20, cuda:0 then cpu; a run that fails
#          or prints no edges/s fails the step, 80 s
#   torch  tools/bench/torch_reference.py on cuda: PyTorch's edges/s and the
#          ratio ember / PyTorch, 35 s
#   probe  only when the bundle is missing or cannot start here, instead of
#          the steps above: tools/bench/gpu_fallback_probe.cu built by nvcc
#          alone (-arch from nvidia-smi's compute capability) and run at
#          batch 1000 and 4000: the real kernel bodies and step sequence
#          checked against the host, then timed with a breakdown, 150 s
# Inventory first: GPU, driver, the library search path of the bundle
# (EMBER_LIBRARY_PATH, the toolkit, PyTorch's nvidia/* packages), and where
# libcublas and libnccl were found. Logs go to $OUT (a temporary folder when
# unset). For tests of the check itself: GPU_CHECK_BUNDLE (default
# build-device), GPU_CHECK_NO_GPU_OK=1 (go on without a GPU) and
# GPU_CHECK_PROBE (a probe already built, not nvcc's).
set -uo pipefail
cd "$(dirname "$0")/.."
scale=${1:-24}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
bundle=${GPU_CHECK_BUNDLE:-build-device}
steps=${GPU_CHECK_STEPS:-tests bench e2e torch}
start=$SECONDS
names=() rcs=() secs=() notes=()
record() { names+=("$1"); rcs+=("$2"); secs+=("$3"); notes+=("$4"); }
summary() {
  echo; echo "== summary ($((SECONDS - start)) s)"
  printf '%-10s %-6s %5s  %s\n' step result s note
  local i bad=0
  for i in "${!names[@]}"; do
    local r=PASS; [ "${rcs[$i]}" -ne 0 ] && r=FAIL bad=1
    printf '%-10s %-6s %5s  %s\n' "${names[$i]}" "$r" "${secs[$i]}" "${notes[$i]}"
  done
  [ ${#names[@]} -eq 0 ] && bad=1 && echo "(no step ran)"
  if [ "$bad" -ne 0 ]; then echo "FAILED"; else echo "PASSED"; fi
  return $bad
}

# run_step NAME TIMEOUT FUNCTION: FUNCTION in a fresh bash with pipefail and
# errexit, under its own timeout; its rc is recorded, its note read from
# $out/NAME.note.
run_step() {
  local name=$1 limit=$2 fn=$3 t0=$SECONDS rc
  # The whole check stays under 6 minutes (355 s), so a rerun fits in one
  # session's device time: a step gets at most what is left.
  local left=$((355 - (SECONDS - start)))
  if [ "$left" -lt 10 ]; then
    echo; echo "== $name: not run, the 6-minute budget is spent"
    record "$name" 1 0 "not run: 6-minute budget spent"; return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo; echo "== $name (timeout $limit s)"
  rm -f "$out/$name.note"
  bundle=$bundle out=$out scale=$scale nvcc=$nvcc timeout --kill-after=5 "$limit" \
    bash -o pipefail -o errexit -o nounset -c "$(declare -f "$fn"); $fn"
  rc=$?
  local note; note=$(cat "$out/$name.note" 2>/dev/null || true)
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && note="timed out after $limit s; $note"
  [ "$rc" -ne 0 ] && echo "gpu-check: step $name FAILED (rc $rc): $note"
  record "$name" "$rc" "$((SECONDS - t0))" "rc $rc${note:+; $note}"
}

echo "== gpu-check on $(hostname), $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
uname -a
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
gpus=0
if command -v nvidia-smi >/dev/null; then
  timeout 20 nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version,clocks.max.sm \
    --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  gpus=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
else
  echo "gpu: nvidia-smi not found"
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ]; then echo "nvcc: $("$nvcc" --version | tail -2 | head -1)"; else echo "nvcc: not found"; fi
echo "host C library: $(ldd --version 2>&1 | head -1)"
echo "EMBER_LIBRARY_PATH: ${EMBER_LIBRARY_PATH:-(unset)}"
if [ "$gpus" -eq 0 ]; then
  echo "gpu-check: FAILURE: no GPU on this machine (nvidia-smi lists none): nothing here can" \
    "show that ember runs on a device" >&2
  record gpu 3 0 "no GPU (nvidia-smi lists none)"
  if [ "${GPU_CHECK_NO_GPU_OK:-0}" != 1 ]; then summary; exit 3; fi
else
  record gpu 0 0 "$gpus GPU(s)"
fi
# The fallback probe (tools/bench/gpu_fallback_probe.cu): built here by nvcc
# alone (GPU_CHECK_PROBE: a probe already built), then run at batch 1000
# and 4000: the kernel bodies and step sequence checked against the host
# and timed, when ember's bundle cannot start.
probe_step() {
  local bin=${GPU_CHECK_PROBE:-} cc arch
  if [ -z "$bin" ]; then
    cc=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . || true)
    arch=sm_${cc:-90}
    bin="$out/gpu_fallback_probe"
    echo "building the probe: $nvcc -O3 -std=c++17 -arch=$arch (no library but the toolkit's)"
    "$nvcc" -O3 -std=c++17 -arch="$arch" -I. tools/bench/gpu_fallback_probe.cu -o "$bin" -ldl \
      >"$out/probe-build.log" 2>&1 || { tail -20 "$out/probe-build.log";
        echo "nvcc failed to build the probe" >"$out/probe.note"; exit 1; }
  fi
  local rc=0
  "$bin" --batch 1000 --steps 200 >"$out/probe.txt" 2>&1 || rc=$?
  cat "$out/probe.txt"
  if [ "$rc" -eq 0 ]; then
    "$bin" --batch 4000 --steps 50 >"$out/probe-4000.txt" 2>&1 || rc=$?
    cat "$out/probe-4000.txt"
  fi
  { grep -h -m1 -oE 'no CUDA device|FAILED.*' "$out"/probe*.txt
    grep -h -oE 'one step at a time: [0-9.e+]+ edges/s' "$out"/probe*.txt | sed 's/.*: //'
  } | paste -sd';' - >"$out/probe.note" || true
  exit "$rc"
}

bundle_starts=0
if [ ! -x "$bundle/run" ]; then
  echo "gpu-check: no $bundle/run. Make it on a machine with ember's dependencies and nvcc" \
    "(tools/device-bundle.sh), then carry $bundle/ here. Running the fallback probe instead." >&2
  record bundle 2 0 "no $bundle/run: the fallback probe runs instead"
elif ! timeout 60 "$bundle/run" --library-dirs >/dev/null 2>&1; then
  echo "gpu-check: $bundle/run cannot start here; running the fallback probe instead." >&2
  record bundle 2 0 "$bundle/run cannot start: the fallback probe runs instead"
else
  bundle_starts=1
fi
bundle_note="ok"
grep -q '^cuda: yes' "$bundle/bundle.txt" 2>/dev/null || bundle_note="built without CUDA"
if [ "$bundle_starts" -eq 0 ]; then
  # The probe's loader path: EMBER_LIBRARY_PATH, the toolkit's folders,
  # PyTorch's nvidia/* packages (cuBLAS).
  probe_dirs=$( { echo "${EMBER_LIBRARY_PATH:-}" | tr : '\n'
    ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/*/lib \
      /{opt,venv,usr/local/lib,usr/lib,root/.local}/{,*/}{,lib/}python3*/site-packages/nvidia/*/lib \
      2>/dev/null; } | grep -v '^$' | paste -sd: -)
  echo "probe library path: ${probe_dirs:-(none)}"
  export LD_LIBRARY_PATH="${probe_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  run_step probe 150 probe_step
  summary; exit $?
fi
grep -E '^(id|glibc|built on|cuda):' "$bundle/bundle.txt" 2>/dev/null
dirs=$(timeout 60 "$bundle/run" --library-dirs 2>&1)
echo "library search path (after the bundle's own, EMBER_LIBRARY_PATH, before LD_LIBRARY_PATH):"
echo "$dirs" | sed 's/^/  /'
for lib in libcublas.so libcublasLt.so libnccl.so libcudart.so; do
  found=$( { echo "${EMBER_LIBRARY_PATH:-}" | tr : '\n'; echo "$dirs"; } | while read -r d; do
    [ -n "$d" ] && ls "$d"/$lib* 2>/dev/null; done | head -3 | paste -sd' ')
  echo "$lib: ${found:-NOT FOUND}"
done
record bundle "$([ "$bundle_note" = ok ] && echo 0 || echo 1)" 0 "$bundle_note"
echo "logs: $out"

tests_step() {
  local log="$out/tests.log" rc=0
  "$bundle/run" train_test --gtest_filter='Cuda*' >"$log" 2>&1 || rc=$?
  grep -E '^\[ *(OK|FAILED|SKIPPED) *\]' "$log" | grep -v ' tests\?, listed below' | head -60 || true
  count() { sed -nE "s/^\[ *$1 *\] ([0-9]+) tests?.*/\1/p" "$log" | head -1; }
  local passed skipped failures
  passed=$(count PASSED); skipped=$(count SKIPPED); failures=$(count FAILED)
  echo "${passed:-0} passed, ${skipped:-0} skipped, ${failures:-0} failed" >"$out/tests.note"
  cat "$out/tests.note"
  if [ "$rc" -ne 0 ]; then tail -20 "$log"; exit "$rc"; fi
  [ "${passed:-0}" -gt 0 ] || { echo "no CUDA test ran" >>"$out/tests.note"; exit 1; }
  if [ "${skipped:-0}" -ne 0 ]; then
    grep --no-group-separator -A1 ': Skipped$' "$log" | head -10 || true
    echo "skipped on a GPU machine: the device was not used" >>"$out/tests.note"; exit 1
  fi
}

bench_step() {
  local rc=0
  "$bundle/run" gpu_train_bench --devices cuda:0 --scale "$scale" --seconds 30 \
    --cpu_seconds 10 >"$out/bench.txt" 2>"$out/bench.log" || rc=$?
  cat "$out/bench.txt"
  if [ "$rc" -ne 0 ]; then tail -20 "$out/bench.log"; exit "$rc"; fi
  grep -m1 -oE '[0-9.e+]+ edges/s' "$out/bench.txt" >"$out/bench.note" ||
    { echo "printed no edges/s" >"$out/bench.note"; exit 1; }
}

# End to end through the streaming pipeline (disk, windows, planning): what
# `ember train` feeds the GPU, beside the in-memory figure above.
e2e_step() {
  local g="$out/e2e" ember=("$bundle/run" ember) d dir json eps
  rm -rf "$g" && mkdir -p "$g"
  "${ember[@]}" gen rmat --scale 20 --out "$g/edges.tsv" --quiet 2>>"$out/e2e.log"
  "${ember[@]}" import --out "$g/graph" --partitions 1 --quiet "$g/edges.tsv" >/dev/null 2>>"$out/e2e.log"
  cp -r "$g/graph" "$g/graph-cpu"
  : >"$out/e2e.note"
  for d in cuda:0 cpu; do
    dir="$g/graph"; [ "$d" = cpu ] && dir="$g/graph-cpu"
    if ! json=$("${ember[@]}" train "$dir" --devices "$d" --threads "$(nproc)" --epochs 1 --lr 0.1 \
        --dim 100 --quiet --json 2>>"$out/e2e.log"); then
      echo "$d: ember train failed" >>"$out/e2e.note"; tail -10 "$out/e2e.log"; exit 1
    fi
    eps=$(echo "$json" | sed -nE 's/.*"edges_per_second": ?([0-9.e+]+).*/\1/p' | head -1)
    [ -n "$eps" ] || { echo "$d: no edges_per_second in the output" >>"$out/e2e.note"; exit 1; }
    echo "$d: $eps edges/s"; printf '%s: %s edges/s; ' "$d" "$eps" >>"$out/e2e.note"
  done
}

# The PyTorch reference (tools/bench/torch_reference.py), same step and shapes,
# with ember's benchmark figure for the ratio. Fails when no python3 has torch.
torch_step() {
  local py eps
  for py in $(command -v -a python3 2>/dev/null) /opt/*/bin/python3 /opt/*/.venv/bin/python3 /venv/bin/python3; do
    [ -x "$py" ] && timeout 30 "$py" -c 'import torch' 2>/dev/null && break
    py=
  done
  [ -n "$py" ] || { echo "no python3 with torch" >"$out/torch.note"; exit 1; }
  eps=$(grep -m1 -oE '[0-9.e+]+ edges/s' "$out/bench.txt" 2>/dev/null | cut -d' ' -f1 || true)
  "$py" tools/bench/torch_reference.py --device cuda --seconds 10 --ember "${eps:-0}" \
    2>&1 | tee "$out/torch.txt"
  grep -m1 -oE '(= [0-9.]+x|[0-9.e+]+ edges/s)' "$out/torch.txt" | tail -1 >"$out/torch.note"
}

for s in $steps; do
  case $s in
    tests) run_step tests 120 tests_step ;;
    bench) run_step bench 130 bench_step ;;
    e2e) run_step e2e 80 e2e_step ;;
    torch) run_step torch 35 torch_step ;;
    *) record "$s" 1 0 "unknown step" ;;
  esac
done
summary
