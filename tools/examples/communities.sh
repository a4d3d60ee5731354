#!/usr/bin/env bash
# Planted communities, end to end: gen sbm -> import -> inspect -> train ->
# eval -> neighbors, ending on numbers a newcomer can judge. tools/demo.sh
# runs it after installing and building.
#
# Usage (from the repo root, on a built tree):
#   tools/examples/communities.sh [WORKDIR]
# Environment:
#   EMBER=path/to/ember   the binary (default: build/ember)
#   THREADS=N             worker threads (default: all cores)
#
# The graph is a stochastic block model: node i is in community i % 20, and
# 90% of its edges go to random nodes of its own community. Two figures say
# whether training worked:
#   - neighbour purity: the share of the 10 nearest neighbours of every
#     100th node that are in the node's own community; chance is 1 in 20.
#     The script fails (exit 1) below 10 times chance, so it doubles as a
#     smoke test.
#   - the test MRR of `ember eval`, beside chance and beside what a model
#     that knows the communities and nothing more would score: edges inside
#     a community are random, so no model can do much better than that.
set -euo pipefail

ember=${EMBER:-build/ember}
threads=${THREADS:-0}
nodes=20000 blocks=20 mixing=0.1 k=10

if [[ ! -x $ember ]]; then
  echo "communities.sh: no ember binary at '$ember' (build first, or set EMBER=...)" >&2
  exit 2
fi
work=${1:-$(mktemp -d /tmp/ember-demo.XXXXXX)}
mkdir -p "$work"
echo "== demo in $work"

echo "== ember gen sbm: $nodes nodes in $blocks planted communities"
"$ember" gen sbm --nodes $nodes --blocks $blocks --avg-degree 20 --mixing $mixing --seed 1 \
  --out "$work/sbm.tsv" --labels-out "$work/labels.tsv" --overwrite --quiet

echo "== ember import (4 partitions, 90/5/5 split)"
"$ember" import --out "$work/graph" --partitions 4 --split 0.9,0.05,0.05 --seed 1 \
  --threads "$threads" --overwrite "$work/sbm.tsv"

echo "== ember inspect"
"$ember" inspect "$work/graph" | head -20

echo "== ember train (out of core: 2 of 4 partitions in memory)"
"$ember" train "$work/graph" --epochs 5 --dim 64 --buffer-partitions 2 --bucket-order beta \
  --threads "$threads" --from-scratch --eval-valid

echo "== ember eval (test split, filtered and raw)"
"$ember" eval "$work/graph" --split test --threads "$threads"

echo "== ember neighbors: the $k nearest neighbours of every 100th node"
awk 'NR % 100 == 1 { print $1 }' "$work/labels.tsv" > "$work/queries.txt"
"$ember" neighbors "$work/graph" --queries "$work/queries.txt" --k $k --json --quiet \
  --threads "$threads" > "$work/neighbors.json"

echo "== what the numbers mean"
# labels.tsv: node<TAB>community. neighbors.json: one line per query,
# {"node":"Q","neighbors":[{"node":"N1",...},...]}.
awk -F'\t' -v blocks=$blocks 'FNR == NR { community[$1] = $2; next }
  { n = split($0, parts, "\"node\":\"")
    query = substr(parts[2], 1, index(parts[2], "\"") - 1)
    for (i = 3; i <= n; i++) {
      v = substr(parts[i], 1, index(parts[i], "\"") - 1)
      total++
      if (community[v] == community[query]) same++
    }
    queries++ }
  END {
    if (total == 0) { print "FAIL: no neighbours found"; exit 1 }
    share = same / total
    printf "neighbour purity: %.1f%% of the %d nearest neighbours of %d nodes are in the node'"'"'s own community (chance: 1 in %d = %.1f%%)\n",
      100 * share, total / queries, queries, blocks, 100 / blocks
    if (share < 10 / blocks) { print "FAIL: purity below 10 times chance"; exit 1 } }' \
  "$work/labels.tsv" "$work/neighbors.json"
# Chance ranks the true node uniformly among all n nodes: MRR H_n / n. A
# model of the communities alone ranks an in-community edge (share
# 1 - mixing) uniformly within its community of b = n / blocks nodes, and
# the others uniformly after those b.
awk -v n=$nodes -v blocks=$blocks -v m=$mixing 'BEGIN {
    b = n / blocks
    for (r = 1; r <= n; r++) { h += 1 / r; if (r == b) hb = h }
    printf "test MRR reference: chance %.4f; a model of the communities alone about %.4f (edges inside a community are random, so no model can do much better)\n",
      h / n, (1 - m) * hb / b + m * (h - hb) / (n - b) }'
echo "== done: graph at $work/graph"
