#!/usr/bin/env bash
# Batching benchmark (issue: sparse node features and variance-aware
# batching). One planted-partition graph with heavy-tailed featurized nodes
# (ember gen sbm + gen features: non-zeros per node Pareto alpha $ALPHA, default 1.2, in
# [1, 4096]), trained side by side with --batching fixed and
# --batching variance-aware, both --featurized features --trainers 2 on the
# same partitions, seed and epochs. Prints for each: mean epoch time,
# coefficient of variation of per-batch time, share of trainer time spent
# idle, per-batch feature non-zeros cv, the measured edge cost (in
# non-zeros), and the final test MRR (1000 sampled
# negatives), then the speed-up and its bound, 1 / (1 - fixed idle share).
# Usage: tools/bench/batching.sh [NODES] [EPOCHS] [PARTITIONS] [--json-out FILE]
# --json-out FILE also writes the figures as JSON (tools/bench/json_out.sh),
# with each training run's peak RSS where /usr/bin/time is installed.
set -euo pipefail
# shellcheck source=tools/bench/json_out.sh
source "$(dirname "$0")/json_out.sh" "$@"; set -- "${bench_args[@]+"${bench_args[@]}"}"
# shellcheck source=tools/bench/featurized_sbm.sh
source "$(dirname "$0")/featurized_sbm.sh"
cd "$(dirname "$0")/../.."
nodes=${1:-100000}
epochs=${2:-3}
partitions=${3:-4}
alpha=${ALPHA:-1.2}
ember=${EMBER:-build/ember}
work=${WORK:-$(mktemp -d /tmp/ember-bench-batching.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] || tools/build.sh release >/dev/null
py=/usr/bin/python3

bench_featurized_sbm "$ember" "$work" "$nodes" "$partitions" "$alpha"
printf "%d partitions, --featurized features, --trainers 2 --threads 2, dim 64, " "$partitions"
printf "%d epochs, batch 1000\n\n" "$epochs"
printf "%-15s %10s %14s %8s %12s %10s %8s\n" batching "epoch s" "batch time cv" "idle" "batch nnz cv" "edge cost" "MRR"

timed=()  # peak RSS of each training run, for the JSON
[ -x /usr/bin/time ] && timed=(/usr/bin/time -f %M -o "$work/rss")
run() {  # batching
  local kind=$1 graph="$work/graph-$1"
  rm -rf "$graph" "$work/rss"
  cp -r "$work/graph" "$graph"
  "${timed[@]}" "$ember" train "$graph" --featurized features --batching "$kind" --trainers 2 --threads 2 \
    --epochs "$epochs" --dim 64 --seed 1 --quiet --json > "$work/$kind.train.json"
  "$ember" eval "$graph" --split test --negatives 1000 --max-edges 20000 --seed 1 --quiet --json \
    > "$work/$kind.eval.json"
  $py - "$kind" "$work/$kind.train.json" "$work/$kind.eval.json" "$work/$kind.summary" <<'EOF'
import json, sys
kind, train, evals, out = sys.argv[1:]
epochs = [json.loads(l) for l in open(train) if l.strip()]
mrr = json.load(open(evals))["filtered"]["mrr"]
n = len(epochs)
secs = sum(e["seconds"] for e in epochs) / n
cv = sum(e["batch_seconds_cv"] for e in epochs) / n
idle = sum(e["idle_share"] for e in epochs) / n
nnz = sum(e["batch_nnz_cv"] for e in epochs) / n
cost = epochs[-1]["edge_cost"]
print("%-15s %10.2f %14.3f %7.1f%% %12.3f %10d %8.4f" % (kind, secs, cv, 100 * idle, nnz, cost, mrr))
open(out, "w").write("%f %f %f\n" % (secs, mrr, idle))
open(out + ".json", "w").write(" ".join("%s=%r" % kv for kv in (
    ("epoch_seconds", secs), ("batch_seconds_cv", cv), ("idle_share", idle),
    ("batch_nnz_cv", nnz), ("edge_cost", cost), ("test_mrr", mrr))) + "\n")
EOF
  # shellcheck disable=SC2046  # one KEY=VALUE word each
  bench_json run "$kind" $(cat "$work/$kind.summary.json")
  [ ! -s "$work/rss" ] || bench_json run "$kind" peak_rss_mib="$(echo "$(tail -1 "$work/rss") / 1024" | bc -l)"
}
bench_json config "" nodes="$nodes" blocks=100 avg_degree=20 nnz_alpha="$alpha" vocab=100000 \
  partitions="$partitions" trainers=2 threads=2 dim=64 epochs="$epochs" batch_size=1000 \
  mrr_negatives=1000
run fixed
run variance-aware
read -r fixed_s fixed_mrr fixed_idle < "$work/fixed.summary"
read -r va_s va_mrr va_idle < "$work/variance-aware.summary"
speedup=$(echo "$fixed_s / $va_s" | bc -l)
mrr_change=$(echo "$va_mrr - $fixed_mrr" | bc -l)
bound=$(echo "1 / (1 - $fixed_idle)" | bc -l)
printf "\nvariance-aware speed-up (fixed epoch s / variance-aware epoch s): %.2fx; MRR change %+.4f\n" \
  "$speedup" "$mrr_change"
printf "most a scheduler can gain over fixed by removing its idle time: 1 / (1 - %.3f) = %.2fx\n" \
  "$fixed_idle" "$bound"
bench_json summary "" speedup="$speedup" mrr_change="$mrr_change" speedup_bound="$bound"
bench_json_write batching
