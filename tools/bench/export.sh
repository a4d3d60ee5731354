#!/usr/bin/env bash
# Export and nearest-neighbour benchmark, measured in one run (~1-2 min):
#   - trains an R-MAT graph (default scale 17, edge factor 16, 4 partitions,
#     1 epoch, dim 64);
#   - export MB/s for tsv, npy, w2v, fvecs against `cat FILE > /dev/null` of
#     the exported bytes (warm cache), i.e. export time / read-floor time;
#   - ember neighbors queries/s for flat, ivf and hnsw on 1000 random nodes
#     (index build and query time reported separately by the command), and
#     recall@10 of ivf/hnsw against flat.
# Usage: tools/bench/export.sh [SCALE] [DIM]
# Env: EMBER (binary, default build/ember), WORK (scratch dir).
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=${1:-17}
dim=${2:-64}
ember=${EMBER:-build/ember}
work=${WORK:-$(mktemp -d /tmp/ember-bench-export.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] || tools/build.sh release >/dev/null
python=/usr/bin/python3
[ -x "$python" ] || python=python3

now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc -l; }

echo "graph: R-MAT scale $scale, edge factor 16, 4 partitions, 1 epoch, dim $dim ($(nproc) cores)"
t0=$(now)
"$ember" gen rmat --scale "$scale" --edge-factor 16 --seed 1 --out "$work/rmat.tsv" --quiet
"$ember" import --out "$work/g" --integer-ids --partitions 4 --quiet "$work/rmat.tsv" > /dev/null
"$ember" train "$work/g" --epochs 1 --dim "$dim" --quiet > /dev/null
t1=$(now)
nodes=$("$ember" inspect "$work/g" --json | "$python" -c 'import json,sys; print(json.load(sys.stdin)["nodes"])')
printf "setup (gen + import + train): %.1f s; %d nodes\n\n" "$(elapsed "$t0" "$t1")" "$nodes"

printf "%-6s %10s %9s %10s %10s %9s\n" format MiB "export s" "export MB/s" "cat MB/s" "export/cat"
for format in tsv npy w2v fvecs; do
  out="$work/emb.$format"
  t0=$(now)
  "$ember" export "$work/g" --format "$format" --out "$out" --quiet > /dev/null
  t1=$(now)
  bytes=$(stat -c %s "$out")
  export_s=$(elapsed "$t0" "$t1")
  cat "$out" > /dev/null  # warm
  c0=$(now); cat "$out" > /dev/null; c1=$(now)
  cat_s=$(elapsed "$c0" "$c1")
  printf "%-6s %10.1f %9.3f %10.0f %10.0f %9.1fx\n" "$format" \
    "$(echo "$bytes / 1048576" | bc -l)" "$export_s" \
    "$(echo "$bytes / $export_s / 1000000" | bc -l)" \
    "$(echo "$bytes / $cat_s / 1000000" | bc -l)" \
    "$(echo "$export_s / $cat_s" | bc -l)"
done
echo "(export time is the whole command: open graph, read RocksDB, format, fsync, rename)"
echo

# 1000 random nodes (fixed seed) from the exported names.
"$python" - "$work/emb.npy.names.tsv" "$work/queries.txt" <<'EOF'
import random, sys
names = open(sys.argv[1]).read().split("\n")[:-1]
random.seed(1)
open(sys.argv[2], "w").write("\n".join(random.sample(names, min(1000, len(names)))) + "\n")
EOF
printf "%-5s %9s %9s %12s %s\n" index "build s" "query s" "queries/s" "params"
for index in flat ivf hnsw; do
  "$ember" neighbors "$work/g" --index "$index" --k 10 --json --queries "$work/queries.txt" \
    > "$work/nn.$index.jsonl" 2> "$work/nn.$index.err"
  line=$(grep "built in" "$work/nn.$index.err")
  # "... built in B s; Q queries in S s (R queries/s)"
  build=$(echo "$line" | sed -E 's/.*built in ([0-9.]+) s.*/\1/')
  query=$(echo "$line" | sed -E 's/.* queries in ([0-9.]+) s.*/\1/')
  rate=$(echo "$line" | sed -E 's/.*\(([0-9.]+) queries\/s\).*/\1/')
  params=$(echo "$line" | sed -E 's/.*index \(([^)]*)\).*/\1/')
  printf "%-5s %9s %9s %12s %s\n" "$index" "$build" "$query" "$rate" "$params"
done
"$python" - "$work" <<'EOF'
import json, sys
def load(kind):
    return [json.loads(l) for l in open(f"{sys.argv[1]}/nn.{kind}.jsonl")]
flat = load("flat")
for kind in ("ivf", "hnsw"):
    approx = load(kind)
    hit = total = 0
    for e, a in zip(flat, approx):
        want = {n["node"] for n in e["neighbors"]}
        hit += sum(n["node"] in want for n in a["neighbors"])
        total += len(want)
    print(f"recall@10 {kind} vs flat: {hit / total:.4f}")
EOF
