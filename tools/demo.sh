#!/usr/bin/env bash
# Sets up everything and runs ember end to end on a small generated graph:
# gen -> import -> inspect -> train -> eval. Usage: tools/demo.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh release
ember=build/ember
work=${1:-$(mktemp -d /tmp/ember-demo.XXXXXX)}
mkdir -p "$work"
echo "== demo in $work"

echo "== ember gen sbm: 20k nodes in 20 planted communities"
$ember gen sbm --nodes 20000 --blocks 20 --avg-degree 20 --mixing 0.1 --seed 1 \
  --out "$work/sbm.tsv" --labels-out "$work/labels.tsv" --overwrite --quiet

echo "== ember import (4 partitions, 90/5/5 split)"
$ember import --out "$work/graph" --partitions 4 --split 0.9,0.05,0.05 --seed 1 \
  --overwrite "$work/sbm.tsv"

echo "== ember inspect"
$ember inspect "$work/graph" | head -20

echo "== ember train (out of core: 2 of 4 partitions in memory)"
$ember train "$work/graph" --epochs 5 --dim 64 --buffer-partitions 2 --bucket-order beta \
  --from-scratch --eval-valid

echo "== ember eval (test split, filtered and raw)"
$ember eval "$work/graph" --split test
echo "== done: graph at $work/graph"
