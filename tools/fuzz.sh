#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (into build-fuzz/,
# EMBER_FUZZ=ON) and runs each for a bounded time, starting from its seed
# corpus tests/fuzz/corpus/<name>/. Usage: tools/fuzz.sh [SECONDS_EACH]
# (default 20). Exits non-zero when a target finds a crash; the input that
# crashed is left in build-fuzz/crashes/<name>/. Without clang++ it says so
# and exits 0 (the GCC build does not need it).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; fuzz targets not run" >&2
  exit 0
fi
dir=build-fuzz
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
command -v ccache >/dev/null && gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DEMBER_FUZZ=ON -DEMBER_CUDA=OFF >/dev/null
fi
targets=()
for src in tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$src" .cc)"); done
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
status=0
for target in "${targets[@]}"; do
  name=${target%_fuzz}
  work="$dir/fuzz-corpus/$name"
  crashes="$dir/crashes/$name"
  mkdir -p "$work" "$crashes"
  echo "fuzz.sh: $target for ${seconds}s" >&2
  if ! "$dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$crashes/" "$work" "tests/fuzz/corpus/$name" \
      >"$dir/$target.log" 2>&1; then
    echo "fuzz.sh: $target found a crash (see $dir/$target.log and $crashes/)" >&2
    tail -40 "$dir/$target.log" >&2
    status=1
  else
    grep -E "^stat::number_of_executed_units|^Done" "$dir/$target.log" >&2 || true
  fi
done
exit $status
