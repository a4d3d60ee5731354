#!/usr/bin/env bash
# Reciprocal relations and N3 (docs/knowledge-graphs.md): trains one
# generated graph with each variant side by side and prints filtered test
# MRR, Hits@1 and Hits@10 (ranked against all nodes, 10000 test edges),
# edges/s, and for gen kg the MRR of each relation kind (edge-weighted).
# Usage: tools/bench/reciprocal.sh GRAPH [SEED] [-- VARIANT...]
#   GRAPH: kg (gen kg, 20000 entities, 30 relations), kg-sparse (the same at
#   --facts-per-node 0.1), kg4k (4000 entities), rmat (gen rmat --scale 14
#   --relations 8, 10 % valid and test).
#   SEED: the generator's seed (default 1); the training seed is 0.
#   VARIANT: LABEL=FLAGS, e.g. "n3=--regularizer n3 --reg-weight 0.001";
#   default: plain, reciprocal, n3 (weight 1e-4), reciprocal+n3.
# Environment: MODEL (default "--operator complex_diagonal"), EPOCHS (10),
# DIM (100), LR (0.1), THREADS (2), EMBER (build/ember).
set -euo pipefail
cd "$(dirname "$0")/../.."
graph=${1:?usage: $0 GRAPH [SEED] [-- VARIANT...]}
seed=${2:-1}
shift $(( $# >= 2 ? 2 : 1 ))
[ "${1:-}" = "--" ] && shift
variants=("$@")
if [ ${#variants[@]} -eq 0 ]; then
  variants=("plain=" "reciprocal=--reciprocal" "n3=--regularizer n3 --reg-weight 0.0001"
            "reciprocal+n3=--reciprocal --regularizer n3 --reg-weight 0.0001")
fi
model=${MODEL:---operator complex_diagonal}
epochs=${EPOCHS:-10}
dim=${DIM:-100}
lr=${LR:-0.1}
threads=${THREADS:-2}
ember=${EMBER:-build/ember}
work=${WORK:-$(mktemp -d /tmp/ember-bench-recip.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] || tools/build.sh release >/dev/null

case "$graph" in
  kg) gen=(kg --nodes 20000 --relations 30) ;;
  kg-sparse) gen=(kg --nodes 20000 --relations 30 --facts-per-node 0.1) ;;
  kg4k) gen=(kg --nodes 4000) ;;
  rmat) gen=(rmat --scale 14 --relations 8) ;;
  *) echo "unknown graph $graph" >&2; exit 2 ;;
esac
if [ "${gen[0]}" = kg ]; then
  "$ember" gen "${gen[@]}" --seed "$seed" --quiet --out "$work/g.train" \
    --valid-out "$work/g.valid" --test-out "$work/g.test" --relations-out "$work/g.rel"
  "$ember" import --out "$work/g" --valid "$work/g.valid" --test "$work/g.test" --quiet \
    "$work/g.train" >/dev/null
else
  "$ember" gen "${gen[@]}" --seed "$seed" --quiet --out "$work/g.tsv"
  "$ember" import --out "$work/g" --split 0.8,0.1,0.1 --quiet "$work/g.tsv" >/dev/null
fi

printf "%s seed %s: %s, dim %s, %s epochs, lr %s, %s threads\n" "$graph" "$seed" "$model" \
  "$dim" "$epochs" "$lr" "$threads"
for v in "${variants[@]}"; do
  label=${v%%=*}
  flags=${v#*=}
  rm -rf "$work/run" && cp -r "$work/g" "$work/run"
  # shellcheck disable=SC2086  # flags are words
  "$ember" train "$work/run" $model $flags --dim "$dim" --epochs "$epochs" --lr "$lr" \
    --threads "$threads" --quiet --json >"$work/train.json"
  "$ember" eval "$work/run" --json --by-relation --threads "$threads" >"$work/eval.json"
  python3 - "$work" "$label" <<'PY'
import json, os, sys
work, label = sys.argv[1], sys.argv[2]
epochs = [json.loads(l) for l in open(f"{work}/train.json")]
eps = sum(e["edges"] for e in epochs) / sum(e["seconds"] for e in epochs)
r = json.load(open(f"{work}/eval.json"))
f = r["filtered"]
kinds = ""
if os.path.exists(f"{work}/g.rel"):
    kind = {l.split("\t")[0]: l.split("\t")[1] for l in open(f"{work}/g.rel")}
    by = {}
    for x in r["relations"]:
        k = by.setdefault(kind[x["relation"]], [0, 0.0])
        k[0] += x["edges"]
        k[1] += x["edges"] * x["mrr"]
    kinds = "  " + " ".join(f"{k} {s / n:.3f}" for k, (n, s) in sorted(by.items()) if n)
print(f"{label:<16} MRR {f['mrr']:.4f} ± {f['mrr_ci95']:.4f}  Hits@1 {f['hits@1']:.4f}  "
      f"Hits@10 {f['hits@10']:.4f}  {eps / 1e3:6.0f} k edges/s{kinds}")
PY
done
