#!/usr/bin/env bash
# Import benchmark: R-MAT scale 22 (67 M edges), measured in one run:
#   edges/s, peak RSS, and import time / `cat FILE > /dev/null` time (the
#   read floor). Usage: tools/bench/import.sh [SCALE] [BUDGET] [--json-out FILE]
# Env: EMBER (binary, default build/ember), WORK (scratch dir).
# --json-out FILE also writes the figures as JSON (tools/bench/json_out.sh).
set -euo pipefail
# shellcheck source=tools/bench/json_out.sh
source "$(dirname "$0")/json_out.sh" "$@"; set -- "${bench_args[@]+"${bench_args[@]}"}"
cd "$(dirname "$0")/../.."
scale=${1:-22}
budget=${2:-1G}
ember=${EMBER:-build/ember}
work=${WORK:-$(mktemp -d /tmp/ember-bench-import.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] || tools/build.sh release >/dev/null
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

echo "generating R-MAT scale $scale, edge factor 16 ..."
"$ember" gen rmat --scale "$scale" --edge-factor 16 --seed 1 --out "$work/rmat.tsv" --quiet
bytes=$(stat -c %s "$work/rmat.tsv")
edges=$(( 16 << scale ))

now() { date +%s.%N; }
# Read floor: the same bytes through cat, warm cache (the import reads warm too).
cat "$work/rmat.tsv" > /dev/null
t0=$(now); cat "$work/rmat.tsv" > /dev/null; t1=$(now)
cat_s=$(echo "$t1 - $t0" | bc -l)

run_import() {  # label, extra flags...
  local label=$1; shift
  rm -rf "$work/g"
  /usr/bin/time -f "%e %M" -o "$work/time" "$ember" import --out "$work/g" --quiet \
    --partitions 4 --memory-budget "$budget" "$@" "$work/rmat.tsv" > /dev/null
  read -r secs rss_kb < "$work/time"
  local eps rss_mib over_cat
  eps=$(echo "$edges / $secs" | bc -l)
  rss_mib=$(echo "$rss_kb / 1024" | bc -l)
  over_cat=$(echo "$secs / $cat_s" | bc -l)
  printf "%-22s %8.2f s  %6.2f M edges/s  peak RSS %7.1f MiB  import/cat %6.1fx\n" \
    "$label" "$secs" "$(echo "$eps / 1000000" | bc -l)" "$rss_mib" "$over_cat"
  bench_json run "$label" seconds="$secs" edges_per_second="$eps" peak_rss_mib="$rss_mib" \
    import_over_cat="$over_cat"
}
printf "input: %d edges, %.1f MiB; cat: %.3f s (%.0f MiB/s); budget %s; 4 partitions; %d cores\n" \
  "$edges" "$(echo "$bytes / 1048576" | bc -l)" "$cat_s" \
  "$(echo "$bytes / 1048576 / $cat_s" | bc -l)" "$budget" "$(nproc)"
bench_json config "" scale="$scale" edges="$edges" input_mib="$(echo "$bytes / 1048576" | bc -l)" \
  cat_seconds="$cat_s" memory_budget="$budget" partitions=4 cores="$(nproc)"
run_import "integer ids" --integer-ids
run_import "string ids"
run_import "integer ids, split+dedupe" --integer-ids --split 0.9,0.05,0.05 --dedupe
bench_json_write import
