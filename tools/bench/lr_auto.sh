#!/usr/bin/env bash
# --lr auto against fixed step sizes (issue: KG quality, item 3). On each
# generated graph, trains at lr 0.01, 0.03, 0.1 and 0.3 and at auto (all
# else default, 2 threads), and prints filtered test MRR against all nodes
# (a seeded sample of 2000 test edges, 5000 for gen kg), the step auto chose, and
# what auto's probes cost: their seconds and their share of the whole
# auto run (target: at most 10 %, which ember sizes the probes for).
# Graphs (the "--lr auto" table of docs/knowledge-graphs.md): gen kg at 20000 entities (dense,
# and sparse with --facts-per-node 0.1) and 4000, ComplEx, dim 100, 5
# epochs; R-MAT scale 14 (dot, dim 64, 10 epochs); R-MAT scale 16 with 8
# hubs of 5 % degree (dot, dim 100, 10 epochs); SBM of 20000 nodes in 50
# blocks (dot, dim 64, 10 epochs). Imports use --split 0.9,0.05,0.05 where
# the generator writes no split.
# Two more, the graphs of tests/train/lr_auto_guard_test.cc, with a
# dependency graph's skew (three nodes of degree > 10 k, most below 5; dot,
# dim 100, 12 epochs): rmat14-hubs (R-MAT scale 14, 2 edges per node, 3
# hubs linked to 65 % of the nodes) and sbm-hubs (SBM of 20000 nodes in 400
# blocks, average degree 2, 3 hubs linked from 55 % of the nodes).
# GRAPH@OPERATOR/COMPARATOR/DIM trains that graph with another model, e.g.
# kg20k@translation/l2/32 (the per-operator sweep in docs/knowledge-graphs.md).
# SEEDS=N runs auto N times, with --seed 1..N (the probes' edge sample,
# validation sample and initial rows), and prints each step chosen and
# each run's MRR: whether the choice holds run after run.
# EMBER=path/to/ember measures another build (e.g. the rule before).
# Usage: tools/bench/lr_auto.sh [GRAPH...]   (kg20k kg20k-sparse kg4k rmat14 rmat16-hubs sbm;
#        also rmat14-hubs sbm-hubs)
# --json-out FILE also writes the figures as JSON (tools/bench/json_out.sh).
set -euo pipefail
# shellcheck source=tools/bench/json_out.sh
source "$(dirname "$0")/json_out.sh" "$@"; set -- "${bench_args[@]+"${bench_args[@]}"}"
cd "$(dirname "$0")/../.."
ember=${EMBER:-build/ember}
work=${WORK:-$(mktemp -d /tmp/ember-bench-lr.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] || tools/build.sh release >/dev/null
graphs=("$@")
[ ${#graphs[@]} -gt 0 ] || graphs=(kg20k kg20k-sparse kg4k rmat14 rmat16-hubs sbm)

make_graph() {  # name -> $work/name, and prints its train flags
  local name=$1 g=$work/$1
  case $name in
    kg20k|kg20k-sparse|kg4k)
      local gen=(--nodes 20000)
      [ "$name" = kg4k ] && gen=(--nodes 4000 --seed 3)
      [ "$name" = kg20k-sparse ] && gen+=(--facts-per-node 0.1)
      "$ember" gen kg "${gen[@]}" --quiet --out "$g.train" --valid-out "$g.valid" --test-out "$g.test"
      "$ember" import --out "$g" --valid "$g.valid" --test "$g.test" --quiet "$g.train" >/dev/null
      echo "--operator complex_diagonal --dim 100 --epochs 5" ;;
    rmat14|rmat16-hubs)
      local gen=(--scale 14)
      [ "$name" = rmat16-hubs ] && gen=(--scale 16 --hubs 8 --hub-fraction 0.05)
      "$ember" gen rmat "${gen[@]}" --seed 1 --quiet --out "$g.tsv"
      "$ember" import --out "$g" --integer-ids --split 0.9,0.05,0.05 --quiet "$g.tsv" >/dev/null
      if [ "$name" = rmat14 ]; then echo "--dim 64 --epochs 10"; else echo "--dim 100 --epochs 10"; fi ;;
    sbm)
      "$ember" gen sbm --nodes 20000 --blocks 50 --seed 1 --quiet --out "$g.tsv" --labels-out "$g.labels"
      "$ember" import --out "$g" --integer-ids --split 0.9,0.05,0.05 --quiet "$g.tsv" >/dev/null
      echo "--dim 64 --epochs 10" ;;
    rmat14-hubs)
      "$ember" gen rmat --scale 14 --edge-factor 2 --hubs 3 --hub-fraction 0.65 --seed 1 --quiet --out "$g.tsv"
      "$ember" import --out "$g" --integer-ids --split 0.9,0.05,0.05 --quiet "$g.tsv" >/dev/null
      echo "--dim 100 --epochs 12" ;;
    sbm-hubs)
      "$ember" gen sbm --nodes 20000 --blocks 400 --avg-degree 2 --seed 1 --quiet --out "$g.tsv" \
        --labels-out "$g.labels"
      awk 'BEGIN { srand(7); for (h = 0; h < 3; h++) for (i = 0; i < 20000; i++)
                   if (i != h && rand() < 0.55) print i "\t" h }' >>"$g.tsv"
      "$ember" import --out "$g" --integer-ids --split 0.9,0.05,0.05 --quiet "$g.tsv" >/dev/null
      echo "--dim 100 --epochs 12" ;;
    *) echo "unknown graph $name" >&2; exit 2 ;;
  esac
}

mrr() {  # graph-copy graph-name -> filtered test MRR
  local edges=2000
  case $2 in kg*) edges=5000 ;; esac
  "$ember" eval "$1" --max-edges $edges --json | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["filtered"]["mrr"])'
}

printf "%-30s %8s %8s %8s %8s   %-8s %6s %7s %9s\n" graph 0.01 0.03 0.1 0.3 auto chose "probe s" "of run"
for name in "${graphs[@]}"; do
  base=${name%%@*}
  [ -f "$work/$base.flags" ] || make_graph "$base" >"$work/$base.flags"
  read -r -a flags <"$work/$base.flags"
  if [ "$base" != "$name" ]; then
    IFS=/ read -r op cmp dim <<<"${name#*@}"
    flags+=(--operator "$op" --comparator "$cmp" --dim "$dim")
  fi
  row=()
  for lr in 0.01 0.03 0.1 0.3; do
    rm -rf "$work/run" && cp -r "$work/$base" "$work/run"
    "$ember" train "$work/run" "${flags[@]}" --lr $lr --threads 2 --quiet >/dev/null 2>"$work/fixed.err" ||
      { cat "$work/fixed.err" >&2; exit 1; }
    row+=("$(mrr "$work/run" "$base")")
  done
  seeds=(0)
  [ -n "${SEEDS:-}" ] && mapfile -t seeds < <(seq 1 "$SEEDS")
  for seed in "${seeds[@]}"; do
    rm -rf "$work/run" && cp -r "$work/$base" "$work/run"
    start=$(date +%s.%N)
    "$ember" train "$work/run" "${flags[@]}" --threads 2 --seed "$seed" --json 2>"$work/auto.err" \
      >"$work/auto.json"
    total=$(echo "$(date +%s.%N) - $start" | bc -l)
    auto=$(mrr "$work/run" "$base")
    chose=$(python3 -c 'import json,sys; print("%g" % json.loads(open(sys.argv[1]).readline())["lr"])' "$work/auto.json")
    probe_s=$(sed -n 's/^lr auto: probes .*(\([0-9.]*\) s):$/\1/p' "$work/auto.err")
    share=$(echo "100 * ${probe_s:-0} / $total" | bc -l)
    label=$name
    [ -n "${SEEDS:-}" ] && label="$name seed $seed"
    printf "%-30s %8s %8s %8s %8s   %-8s %6s %7s %8.1f%%\n" "$label" "${row[@]}" "$auto" "$chose" "${probe_s:-0}" "$share"
    bench_json run "$label" mrr_0.01="${row[0]}" mrr_0.03="${row[1]}" mrr_0.1="${row[2]}" mrr_0.3="${row[3]}" \
      mrr_auto="$auto" auto_lr="$chose" probe_seconds="${probe_s:-0}" probe_share="$share" seed="$seed"
  done
done
bench_json_write lr_auto
