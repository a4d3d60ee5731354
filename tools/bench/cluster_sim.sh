#!/usr/bin/env bash
# The cost model against 16 and 64 ranks (issue: several machines, evidence
# at scale): one epoch of an R-MAT graph (scale SCALE, default 16: 65 k
# nodes, 524 k edges) in 64 partitions, dim 100, trained by N ranks as
# threads of one process with the real schedule, transport and own-copy
# checkpoint protocol, each rank's link and disk modelled
# (tools/bench/cluster_sim.cc). Prints, for each N, the busiest rank's moves
# at round boundaries, the mean rank's wait for moves, the checkpoint's time
# and bytes, measured and as the cost model predicts them from the 16-rank
# run. 64 partitions, not 128: 64 ranks' copies of P + 1 RocksDB databases
# each must fit this machine's limit of open files (20000 here).
# Usage: tools/bench/cluster_sim.sh [SCALE] [-- cluster_sim flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=${1:-16}
shift || true
[ "${1:-}" = "--" ] && shift
ember=${EMBER:-build/ember}
sim=${SIM:-build/tools/bench/cluster_sim}
work=${WORK:-$(mktemp -d /tmp/ember-bench-cluster-sim.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] && [ -x "$sim" ] || tools/build.sh release ember cluster_sim >/dev/null
"$ember" gen rmat --scale "$scale" --edge-factor 8 --seed 1 --out "$work/rmat.tsv" --quiet
"$ember" import --out "$work/g" --integer-ids --partitions 64 --quiet "$work/rmat.tsv" >/dev/null
"$sim" "$work/g" --ranks 16,64 "$@"
