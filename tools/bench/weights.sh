#!/usr/bin/env bash
# Weighted edges benchmark (issue 32, item 4): import and train speed of an
# R-MAT graph unweighted, and with a weight column (weights 1..5) trained
# under --weights loss, sample and ignore; optionally against a second
# binary (BASE=path/to/ember, e.g. a build of the commit before weights) on
# the unweighted graph, whose speed weights must not change.
# Each figure is the best of RUNS runs (default 3) of the whole command
# (graph open, training, checkpoint): a shared machine only slows runs down. Runs OpenBLAS with the kernel the CPU deserves
# (OPENBLAS_CORETYPE unset).
# Usage: tools/bench/weights.sh [SCALE] [EPOCHS]
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=${1:-18}
epochs=${2:-1}
ember=${EMBER:-build/ember}
base=${BASE:-}
runs=${RUNS:-3}
threads=${THREADS:-2}
work=${WORK:-$(mktemp -d /tmp/ember-bench-weights.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
unset OPENBLAS_CORETYPE

"$ember" gen rmat --scale "$scale" --edge-factor 16 --seed 1 --out "$work/rmat.tsv" --quiet
awk 'BEGIN { OFS = "\t" } { print $1, $2, 1 + NR % 5 }' "$work/rmat.tsv" >"$work/rmat-w.tsv"

# best_of CMD...: the smallest wall time of `runs` runs, in seconds.
best_of() {
  local best="" t
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc)
    if [ -z "$best" ] || (($(echo "$t < $best" | bc))); then best=$t; fi
  done
  printf '%.2f' "$best"
}

import() {  # import BINARY OUT FILE [FLAGS...]
  local bin=$1 out=$2 file=$3
  shift 3
  "$bin" import --out "$out" --overwrite --integer-ids --threads "$threads" --quiet "$@" "$file"
}
train() {  # train BINARY GRAPH [FLAGS...]
  local bin=$1 graph=$2
  shift 2
  "$bin" train "$graph" --epochs "$epochs" --from-scratch --lr 0.1 --dim 100 \
    --threads "$threads" --quiet "$@"
}

edges=$(wc -l <"$work/rmat.tsv")
report() {  # report WHAT SECONDS [PASSES]: PASSES over the edges (default 1)
  printf '%-40s %8s s  %6.2f M edges/s\n' "$1" "$2" \
    "$(echo "$edges * ${3:-1} / $2 / 1000000" | bc -l)"
}
echo "R-MAT scale $scale: $edges edges, $epochs epoch(s), $threads threads, best of $runs"
if [ -n "$base" ]; then
  report "import unweighted (BASE)" "$(best_of import "$base" "$work/gb" "$work/rmat.tsv")"
fi
report "import unweighted" "$(best_of import "$ember" "$work/g" "$work/rmat.tsv")"
report "import weighted" "$(best_of import "$ember" "$work/gw" "$work/rmat-w.tsv" --weight-column 2)"
if [ -n "$base" ]; then
  report "train unweighted (BASE)" "$(best_of train "$base" "$work/gb")" "$epochs"
fi
report "train unweighted" "$(best_of train "$ember" "$work/g")" "$epochs"
for mode in loss sample ignore; do
  report "train weighted --weights $mode" \
    "$(best_of train "$ember" "$work/gw" --weights "$mode")" "$epochs"
done
