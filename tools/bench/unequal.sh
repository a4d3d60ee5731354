#!/usr/bin/env bash
# Batching across trainers of unequal speed (issue: GPU trainer, part 3).
# The same heavy-tailed featurized graph as tools/bench/batching.sh (ember
# gen sbm + gen features: non-zeros per node Pareto alpha $ALPHA, default
# 1.2, in [1, 4096]), trained side by side with --batching fixed and
# --batching variance-aware, both --featurized features --trainers 2
# --threads 2, with trainer 1 slowed FACTOR times (default 3) by the
# benchmark-only --bench-slow-trainer 1:FACTOR: each of its batches takes
# FACTOR times as long, waiting, as a slower device would. On a machine
# with a GPU the same comparison is the GPU beside the CPU trainer.
# Prints for each: mean epoch time, batches per trainer (fast/slow) and the
# slow trainer's share, and the final test MRR
# (1000 sampled negatives) with its 95 % interval; then the speed-up of
# variance-aware over fixed (target 1.3x) and the MRR difference, and
# whether that difference lies within the evaluation's 95 % interval.
# Usage: tools/bench/unequal.sh [NODES] [EPOCHS] [PARTITIONS] [FACTOR] [--json-out FILE]
# --json-out FILE also writes the figures as JSON (tools/bench/json_out.sh).
set -euo pipefail
# shellcheck source=tools/bench/json_out.sh
source "$(dirname "$0")/json_out.sh" "$@"; set -- "${bench_args[@]+"${bench_args[@]}"}"
# shellcheck source=tools/bench/featurized_sbm.sh
source "$(dirname "$0")/featurized_sbm.sh"
cd "$(dirname "$0")/../.."
nodes=${1:-100000}
epochs=${2:-3}
partitions=${3:-4}
factor=${4:-3}
alpha=${ALPHA:-1.2}
ember=${EMBER:-build/ember}
work=${WORK:-$(mktemp -d /tmp/ember-bench-unequal.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] || tools/build.sh release >/dev/null
py=/usr/bin/python3

bench_featurized_sbm "$ember" "$work" "$nodes" "$partitions" "$alpha"
printf "%d partitions, --featurized features, --trainers 2 --threads 2, dim 64, " "$partitions"
printf "%d epochs, batch 1000\ntrainer 1 slowed %sx (--bench-slow-trainer 1:%s)\n\n" "$epochs" "$factor" "$factor"
printf "%-15s %10s %18s %11s %18s\n" batching "epoch s" "batches fast/slow" "slow share" "MRR"

run() {  # batching
  local kind=$1 graph="$work/graph-$1"
  rm -rf "$graph"
  cp -r "$work/graph" "$graph"
  "$ember" train "$graph" --featurized features --batching "$kind" --trainers 2 --threads 2 \
    --bench-slow-trainer "1:$factor" --epochs "$epochs" --dim 64 --lr 0.1 --seed 1 --quiet --json \
    > "$work/$kind.train.json"
  "$ember" eval "$graph" --split test --negatives 1000 --max-edges 20000 --seed 1 --quiet --json \
    > "$work/$kind.eval.json"
  $py - "$kind" "$work/$kind.train.json" "$work/$kind.eval.json" "$work/$kind.summary" <<'EOF'
import json, sys
kind, train, evals, out = sys.argv[1:]
epochs = [json.loads(l) for l in open(train) if l.strip()]
f = json.load(open(evals))["filtered"]
mrr, ci = f["mrr"], f["mrr_ci95"]
n = len(epochs)
secs = sum(e["seconds"] for e in epochs) / n
fast = sum(e["batches_per_trainer"][0] for e in epochs)
slow = sum(e["batches_per_trainer"][1] for e in epochs)
share = slow / max(1, fast + slow)
print("%-15s %10.2f %18s %10.1f%% %9.4f ± %.4f" % (
    kind, secs, "%d/%d" % (fast, slow), 100 * share, mrr, ci))
open(out, "w").write("%f %f %f\n" % (secs, mrr, ci))
open(out + ".json", "w").write(" ".join("%s=%r" % kv for kv in (
    ("epoch_seconds", secs), ("batches_fast", fast), ("batches_slow", slow),
    ("slow_share", share), ("test_mrr", mrr), ("test_mrr_ci95", ci))) + "\n")
EOF
  # shellcheck disable=SC2046  # one KEY=VALUE word each
  bench_json run "$kind" $(cat "$work/$kind.summary.json")
}
bench_json config "" nodes="$nodes" blocks=100 avg_degree=20 nnz_alpha="$alpha" vocab=100000 \
  partitions="$partitions" trainers=2 threads=2 slow_trainer=1 slow_factor="$factor" dim=64 \
  epochs="$epochs" batch_size=1000 lr=0.1 mrr_negatives=1000
run fixed
run variance-aware
read -r fixed_s fixed_mrr fixed_ci < "$work/fixed.summary"
read -r va_s va_mrr va_ci < "$work/variance-aware.summary"
speedup=$(echo "$fixed_s / $va_s" | bc -l)
mrr_change=$(echo "$va_mrr - $fixed_mrr" | bc -l)
noise=$(echo "sqrt($fixed_ci ^ 2 + $va_ci ^ 2)" | bc -l)
within=$(echo "define abs(x) { if (x < 0) return -x; return x; }; abs($mrr_change) <= $noise" | bc -l)
printf "\nvariance-aware speed-up (fixed epoch s / variance-aware epoch s): %.2fx (target 1.3x)\n" \
  "$speedup"
printf "MRR: fixed %.4f, variance-aware %.4f, difference %+.4f: %s the evaluation's 95%% interval (±%.4f)\n" \
  "$fixed_mrr" "$va_mrr" "$mrr_change" "$([ "$within" = 1 ] && echo within || echo OUTSIDE)" "$noise"
bench_json summary "" speedup="$speedup" mrr_change="$mrr_change" mrr_noise95="$noise" \
  mrr_within_noise="$within"
bench_json_write unequal
