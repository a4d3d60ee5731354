#!/usr/bin/env bash
# Typed against untyped layout, out of core: a user-item graph (USERS users,
# ITEMS items, LIKES likes each, items drawn by popularity 1/rank) imported
# twice, as a typed graph (--schema likes:user:item, users in P partitions,
# the items one resident partition: P buckets) and as today's untyped graph
# in P + 1 partitions (a (P+1) x (P+1) grid), then one epoch of each under
# the same memory budget, which holds fewer partitions than either graph
# has. Prints, side by side, the epoch's edges/s and partition loads, and
# the test Recall@10 of each beside the popularity baseline (eval --protocol
# recommend, items only in both: the untyped model ranks users too in
# `eval`'s link protocol, which this leaves out).
# Usage: tools/bench/typed.sh [USERS] [ITEMS] [P]   (defaults 1000000 50000 16)
# Environment: EMBER (default build/ember), WORK (default a temp dir),
# LIKES (default 10), BUDGET (default 1G), DIM (default 100), THREADS (2).
set -euo pipefail
cd "$(dirname "$0")/../.."
users=${1:-1000000} items=${2:-50000} P=${3:-16}
likes=${LIKES:-10} budget=${BUDGET:-1G} dim=${DIM:-100} threads=${THREADS:-2}
ember=${EMBER:-build/ember}
work=${WORK:-$(mktemp -d /tmp/ember-bench-typed.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] || tools/build.sh release ember >/dev/null

echo "== $users users x $likes likes over $items items"
awk -v users="$users" -v items="$items" -v likes="$likes" 'BEGIN {
  srand(1); h = 0
  for (r = 1; r <= items; ++r) h += 1 / r
  for (u = 0; u < users; ++u) {
    for (k = 0; k < likes; ++k) {
      # Rank by inverse CDF of 1/r: r ~ exp(U * H) roughly.
      r = int(exp(rand() * h * 0.999)); if (r >= items) r = items - 1
      printf "user%d\tlikes\titem%d\n", u, (r * 7919 + u % 3) % items
    }
  }
}' >"$work/likes.tsv"

"$ember" import --out "$work/typed" --schema likes:user:item --type-partitions "user=$P,item=1" \
  --split 0.95,0,0.05 --dedupe --threads "$threads" --quiet "$work/likes.tsv" >/dev/null
"$ember" import --out "$work/untyped" --partitions $((P + 1)) --split 0.95,0,0.05 --dedupe \
  --threads "$threads" --quiet "$work/likes.tsv" >/dev/null

run() {  # label graph
  local json
  json=$("$ember" train "$2" --epochs 1 --dim "$dim" --memory-budget "$budget" --lr 0.1 \
    --threads "$threads" --json --quiet | tail -n 1)
  local eps loads
  eps=$(echo "$json" | python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["edges_per_second"])')
  loads=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["partition_loads"])')
  local eval
  eval=$("$ember" eval "$2" --protocol recommend --relation likes --k 10 --max-sources 20000 \
    --threads "$threads" --json --quiet)
  local recall popular
  recall=$(echo "$eval" | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["model"]["recall@10"])')
  popular=$(echo "$eval" | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["popularity"]["recall@10"])')
  printf '%-8s %12s %14s %12s %14s\n' "$1" "$eps" "$loads" "$recall" "$popular"
}
printf '%-8s %12s %14s %12s %14s\n' layout "edges/s" "partition loads" "recall@10" "popularity@10"
run typed "$work/typed"
run untyped "$work/untyped"
