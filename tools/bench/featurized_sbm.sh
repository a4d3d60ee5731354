# shellcheck shell=bash
# Sourced by tools/bench/batching.sh and unequal.sh: the heavy-tailed
# featurized graph they train. bench_featurized_sbm EMBER WORK NODES
# PARTITIONS ALPHA writes WORK/graph, a planted-partition graph (ember gen
# sbm: NODES nodes, 100 blocks, avg degree 20, mixing 0.1) whose nodes have
# sparse features (ember gen features: vocab 100000, non-zeros per node
# Pareto ALPHA in [1, 4096]), imported into PARTITIONS partitions with a
# 0.9/0.05/0.05 split, and prints a line that says so.
bench_featurized_sbm() {
  local ember=$1 work=$2 nodes=$3 partitions=$4 alpha=$5
  "$ember" gen sbm --nodes "$nodes" --blocks 100 --avg-degree 20 --mixing 0.1 --seed 1 \
    --out "$work/sbm.tsv" --labels-out "$work/labels.tsv" --quiet
  "$ember" gen features --labels "$work/labels.tsv" --vocab 100000 --nnz-alpha "$alpha" --seed 1 \
    --out "$work/features.tsv" --quiet
  "$ember" import --out "$work/graph" --partitions "$partitions" --split 0.9,0.05,0.05 --seed 1 \
    --node-features "$work/features.tsv" --quiet "$work/sbm.tsv" >/dev/null
  printf "SBM: %d nodes, 100 blocks, avg degree 20; features: vocab 100000, nnz/node Pareto %s " \
    "$nodes" "$alpha"
  printf "in [1, 4096]\n"
}
