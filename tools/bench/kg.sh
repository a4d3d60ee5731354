#!/usr/bin/env bash
# Knowledge-graph chunking benchmark (issue: KG quality). `ember gen kg`
# (20000 entities, 30 relations by default), ComplEx (complex_diagonal, dot, softmax),
# dim 100, batch 1000 (BATCH=N for another), chunk 50, 50 uniform negatives,
# lr 0.1, 2 threads.
# Trains PBG's grouped chunks and mixed-relation chunks, each with and
# without endpoint negatives, side by side in one run, and prints edges/s,
# the mixed/grouped speed ratio, and filtered test MRR and Hits@1 against
# all nodes, overall and for inverse-pair edges.
# Usage: tools/bench/kg.sh [EPOCHS] [NODES] [RELATIONS]
set -euo pipefail
cd "$(dirname "$0")/../.."
epochs=${1:-5}
nodes=${2:-20000}
relations=${3:-30}
batch=${BATCH:-1000}
ember=${EMBER:-build/ember}
work=${WORK:-$(mktemp -d /tmp/ember-bench-kg.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] || tools/build.sh release >/dev/null

"$ember" gen kg --nodes "$nodes" --relations "$relations" --seed 1 --quiet --out "$work/kg.train" --valid-out "$work/kg.valid" \
  --test-out "$work/kg.test" --relations-out "$work/kg.rel"
"$ember" import --out "$work/kg" --valid "$work/kg.valid" --test "$work/kg.test" --quiet \
  "$work/kg.train" >/dev/null

run() {  # label flags...
  local label=$1; shift
  rm -rf "$work/run" && cp -r "$work/kg" "$work/run"
  "$ember" train "$work/run" --operator complex_diagonal --dim 100 --epochs "$epochs" --lr 0.1 \
    --batch-size "$batch" \
    --threads 2 --quiet --json "$@" >"$work/$label.train.json"
  "$ember" eval "$work/run" --by-relation --json >"$work/$label.eval.json"
  python3 - "$work" "$label" <<'PY'
import json, sys
work, label = sys.argv[1], sys.argv[2]
epochs = [json.loads(l) for l in open(f"{work}/{label}.train.json")]
eps = sum(e["edges"] for e in epochs) / sum(e["seconds"] for e in epochs)
kind = {l.split("\t")[0]: l.split("\t")[1] for l in open(f"{work}/kg.rel")}
r = json.load(open(f"{work}/{label}.eval.json"))
inv = [x for x in r["relations"] if kind[x["relation"]] == "inverse"]
n = sum(x["edges"] for x in inv)
inv_mrr = sum(x["edges"] * x["mrr"] for x in inv) / n
inv_h1 = sum(x["edges"] * x["hits@1"] for x in inv) / n
f = r["filtered"]
print(f"{label:<26} {eps:>10.0f} edges/s   MRR {f['mrr']:.3f}  Hits@1 {f['hits@1']:.3f}"
      f"   inverse MRR {inv_mrr:.3f}  Hits@1 {inv_h1:.3f}")
open(f"{work}/{label}.eps", "w").write(str(eps))
PY
}
printf "gen kg: %d entities, %d relations; ComplEx dim 100, %d epochs, batch %d, chunk 50, 50 negatives, lr 0.1\n" \
  "$nodes" "$relations" "$epochs" "$batch"
run grouped --relation-batching grouped --endpoint-negatives=false
run mixed --relation-batching mixed --endpoint-negatives=false
run grouped+endpoints --relation-batching grouped --endpoint-negatives=true
run mixed+endpoints --relation-batching mixed --endpoint-negatives=true
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
e = {k: float(open(f"{w}/{k}.eps").read()) for k in ["grouped", "mixed", "grouped+endpoints", "mixed+endpoints"]}
print(f"mixed / grouped edges/s: {e['mixed'] / e['grouped']:.2f} (no endpoint negatives), "
      f"{e['mixed+endpoints'] / e['grouped+endpoints']:.2f} (with)")
PY
