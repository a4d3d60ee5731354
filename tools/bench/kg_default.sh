#!/usr/bin/env bash
# The knowledge-graph default run (issue 34): `ember gen kg` (NODES
# entities, default 100000; 30 relations), trained as a user who passes only
# the model and the epochs would: `ember train G --operator complex_diagonal
# --epochs EPOCHS` (dim 100, chunk 50, 50 uniform negatives, softmax, dot,
# mixed-relation chunks, endpoint negatives, lr auto, a checkpoint every
# epoch; both cores). Prints
# - the whole command's wall time split into lr probes, training,
#   checkpoints, validation and the rest (start-up, loading), and the wall
#   time over the training time;
# - the training's edges/s, its scoring GFLOP/s (the chunk products,
#   12 · (chunk + negatives + chunk) · dim FLOPs an edge with endpoint
#   negatives) and their share of the sgemm ceiling train.sh measures (the
#   chunk step's six sgemm calls on both cores, best of five, this run);
# - the same for the single-relation path on the same edges (no operator,
#   grouped chunks, no endpoint negatives, 12 · (chunk + negatives) · dim),
#   as train.sh runs it;
# - with trainer_bench built, the CPU trainer alone on both cores for both
#   configurations (in memory, no pipeline, tools/bench/trainer_bench.cc):
#   how much of the gap is the step and how much the run around it.
# Runs are best of RUNS (default 2).
# Usage: tools/bench/kg_default.sh [NODES] [EPOCHS] [--json-out FILE]
set -euo pipefail
# shellcheck source=tools/bench/json_out.sh
source "$(dirname "$0")/json_out.sh" "$@"; set -- "${bench_args[@]+"${bench_args[@]}"}"
cd "$(dirname "$0")/../.."
nodes=${1:-100000}
epochs=${2:-10}
ember=${EMBER:-build/ember}
bench=${SCORE_BENCH:-build/tools/bench/score_bench}
trainer_bench=${TRAINER_BENCH:-build/tools/bench/trainer_bench}
runs=${RUNS:-2}
work=${WORK:-$(mktemp -d /tmp/ember-bench-kg-default.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] && [ -x "$bench" ] || tools/build.sh release >/dev/null
# shellcheck source=tools/bench/sgemm_ceiling.sh
source tools/bench/sgemm_ceiling.sh
chunk=50 negs=50 dim=100

"$ember" gen kg --nodes "$nodes" --relations 30 --seed 1 --quiet --out "$work/kg.train" \
  --valid-out "$work/kg.valid" --test-out "$work/kg.test"
"$ember" import --out "$work/kg" --valid "$work/kg.valid" --test "$work/kg.test" --quiet \
  "$work/kg.train" >/dev/null
sgemm=$(sgemm_ceiling_json | best_flops)
printf "generated knowledge graph: %d entities, 30 relations, %d train edges\n" "$nodes" \
  "$(wc -l <"$work/kg.train")"
printf "sgemm ceiling at the chunk shape, both cores: %.1f GFLOP/s\n" \
  "$(echo "$sgemm / 1000000000" | bc -l)"
bench_json config "" nodes="$nodes" relations=30 epochs="$epochs" dim=$dim chunk=$chunk \
  negatives=$negs sgemm_gflops="$(echo "$sgemm / 1000000000" | bc -l)"

# run LABEL FLOPS_PER_EDGE FLAGS...: the best of $runs runs (by training
# edges/s); prints its split and share.
run() {
  local label=$1 flops=$2; shift 2
  local k
  for k in $(seq "$runs"); do
    rm -rf "$work/run" && cp -r "$work/kg" "$work/run"
    local start end
    start=$(date +%s.%N)
    "$ember" train "$work/run" --epochs "$epochs" --json "$@" >"$work/$label.$k.json" \
      2>"$work/$label.$k.err"
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l >"$work/$label.$k.wall"
  done
  python3 - "$work" "$label" "$runs" "$flops" "$sgemm" <<'PY'
import json, re, sys
work, label, runs, flops, sgemm = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
best = None
for k in range(1, runs + 1):
    epochs = [json.loads(l) for l in open(f"{work}/{label}.{k}.json")]
    train = sum(e["seconds"] for e in epochs)
    eps = sum(e["edges"] for e in epochs) / train
    ckpt = sum(e.get("checkpoint_seconds", 0) for e in epochs)
    valid = sum(e.get("valid_seconds", 0) for e in epochs)
    m = re.search(r"of the run \(([0-9.]+) s\)", open(f"{work}/{label}.{k}.err").read())
    probes = float(m.group(1)) if m else 0.0
    wall = float(open(f"{work}/{label}.{k}.wall").read())
    if best is None or eps > best["eps"]:
        best = dict(eps=eps, train=train, ckpt=ckpt, valid=valid, probes=probes, wall=wall)
b = best
gflops = b["eps"] * flops / 1e9
share = b["eps"] * flops / sgemm
rest = b["wall"] - b["train"] - b["ckpt"] - b["valid"] - b["probes"]
print(f"{label:<16} {b['eps']:>9.0f} edges/s  scoring {gflops:6.1f} GFLOP/s = {100 * share:5.1f}% of sgemm")
print(f"{'':<16} wall {b['wall']:6.1f} s: probes {b['probes']:5.1f}, training {b['train']:6.1f}, "
      f"checkpoints {b['ckpt']:5.1f}, validation {b['valid']:4.1f}, rest {rest:4.1f}; "
      f"wall / training {b['wall'] / b['train']:.3f}")
with open(f"{work}/{label}.summary", "w") as f:
    f.write(f"edges_per_second={b['eps']:.1f} scoring_gflops={gflops:.2f} sgemm_share={share:.4f} "
            f"wall_seconds={b['wall']:.2f} probe_seconds={b['probes']:.2f} "
            f"train_seconds={b['train']:.2f} checkpoint_seconds={b['ckpt']:.2f} "
            f"valid_seconds={b['valid']:.2f} rest_seconds={rest:.2f} "
            f"wall_over_training={b['wall'] / b['train']:.4f}")
PY
  # shellcheck disable=SC2046
  bench_json run "$label" $(cat "$work/$label.summary")
}

run kg-default $(( 12 * (2 * chunk + negs) * dim )) --operator complex_diagonal
run single-relation $(( 12 * (chunk + negs) * dim )) --operator none --relation-batching grouped \
  --endpoint-negatives off --lr 0.1

if [ -x "$trainer_bench" ]; then
  echo "the CPU trainer alone, in memory, both cores (trainer_bench):"
  OPENBLAS_NUM_THREADS=1 "$trainer_bench" \
    --benchmark_filter='BM_TrainBatchesTwoSlots/(0/1/0/0|3/30/1/1)/' --benchmark_format=json \
    --benchmark_min_time=1 2>/dev/null | python3 -c "
import json, sys
for b in json.load(sys.stdin)['benchmarks']:
    print(f\"  {b['label']:<40} {b['edges']:>9.0f} edges/s  {b['FLOPS'] / 1e9:6.1f} GFLOP/s = \"
          f\"{100 * b['FLOPS'] / $sgemm:5.1f}% of sgemm\")"
fi
bench_json_write kg_default
