#!/usr/bin/env bash
# Billion-edge benchmark (issue: bounded-memory training). On one machine,
# under one memory budget:
#   gen     R-MAT scale 26, edge factor 16 (1.07 B edges, 67 M nodes), as text
#   import  --partitions auto --memory-budget 6G (the text is deleted after)
#   train   one epoch at --dim 64, out of core, --memory-budget 6G, with
#           --lr auto (the default): the seconds its probes took and their
#           share of the epoch's time are printed (issue 34: at most 10 %;
#           a run too short to afford them is not probed, and says so)
#   eval    10,000 test edges against 1000 sampled negatives
# and prints, per phase: wall time, edges/s, peak RSS, bytes read and
# written (from /proc/<pid>/io: storage I/O, cached or not), and disk used.
# Writes the figures as JSON to $OUT (default WORK/billion.json).
# Usage: tools/bench/billion.sh [SCALE] [BUDGET]   (defaults 26, 6G;
#        EPOCHS=N trains N epochs instead of one)
# Needs ~60 GB of free disk at scale 26: 17 GB of text (deleted after
# import), the graph, and two checkpoint versions of 17 GB while the first
# epoch's checkpoint commits.
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=${1:-26}
budget=${2:-6G}
dim=${DIM:-64}
epochs=${EPOCHS:-1}
ember=${EMBER:-build/ember}
work=${WORK:-/tmp/ember-billion}
out=${OUT:-$work/billion.json}
[ -x "$ember" ] || tools/build.sh release >/dev/null
rm -rf "$work" && mkdir -p "$work"
edges=$(( 16 << scale ))
results=()

# phase NAME EDGES CMD...: runs CMD, sampling its /proc I/O counters and
# recording wall time, peak RSS (GNU time) and the graph's size on disk.
phase() {
  local name=$1 n=$2; shift 2
  local t0 t1 io_r=0 io_w=0
  t0=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$work/$name.rss" "$@" > "$work/$name.out" 2> "$work/$name.err" &
  local tpid=$!
  # The command is time's child; follow its I/O until it exits.
  while kill -0 "$tpid" 2>/dev/null; do
    local cpid
    cpid=$(pgrep -P "$tpid" | head -1 || true)
    if [ -n "$cpid" ] && [ -r "/proc/$cpid/io" ]; then
      read -r io_r io_w < <(awk '/^rchar/{r=$2} /^wchar/{w=$2} END{print r, w}' "/proc/$cpid/io" 2>/dev/null || echo "$io_r $io_w")
    fi
    sleep 2
  done
  wait "$tpid" || { echo "$name failed:"; tail -20 "$work/$name.err"; exit 1; }
  t1=$(date +%s.%N)
  local secs rss_kib disk
  secs=$(echo "$t1 - $t0" | bc -l)
  rss_kib=$(tail -1 "$work/$name.rss")
  disk=$(du -sb "$work" | cut -f1)
  printf "%-7s %8.1f s  %7.2f M edges/s  peak RSS %6.2f GiB  read %7.1f GB  written %7.1f GB  disk %6.1f GB\n" \
    "$name" "$secs" "$(echo "$n / $secs / 1000000" | bc -l)" "$(echo "$rss_kib / 1048576" | bc -l)" \
    "$(echo "$io_r / 1000000000" | bc -l)" "$(echo "$io_w / 1000000000" | bc -l)" "$(echo "$disk / 1000000000" | bc -l)"
  results+=("{\"phase\":\"$name\",\"seconds\":$secs,\"edges\":$n,\"peak_rss_kib\":$rss_kib,\"read_bytes\":$io_r,\"written_bytes\":$io_w,\"disk_bytes\":$disk}")
}

echo "R-MAT scale $scale ($edges edges), --memory-budget $budget, --dim $dim, $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
phase gen "$edges" "$ember" gen rmat --scale "$scale" --edge-factor 16 --seed 1 --out "$work/rmat.tsv" --quiet
phase import "$edges" "$ember" import --out "$work/g" --integer-ids --partitions auto --dim "$dim" \
  --memory-budget "$budget" --split 0.998,0.001,0.001 --quiet "$work/rmat.tsv"
rm -f "$work/rmat.tsv"
"$ember" inspect "$work/g" | grep -iE "partitions|nodes|edges" | head -5
train_edges=$(python3 -c "import json;print(json.load(open('$work/g/MANIFEST.json'))['edges']['train'])" 2>/dev/null || echo "$edges")
phase train "$(( train_edges * epochs ))" "$ember" train "$work/g" --epochs "$epochs" --dim "$dim" \
  --memory-budget "$budget" --json
cat "$work/train.out"
# --lr auto: what its probes cost against the epochs they chose for.
grep -E '^(lr auto|  lr |  \()' "$work/train.err" || true
probe_s=$(sed -n 's/^lr auto: probes .*(\([0-9.]*\) s):$/\1/p' "$work/train.err")
probe_s=${probe_s:-0}
epochs_s=$(python3 -c 'import json, sys
print(sum(json.loads(l)["seconds"] for l in open(sys.argv[1]) if l.startswith("{")))' "$work/train.out")
printf "lr auto probes %.1f s: %.1f %% of the %d epoch(s) trained (%.1f s; target: at most 10 %%)\n" \
  "$probe_s" "$(echo "100 * $probe_s / $epochs_s" | bc -l)" "$epochs" "$epochs_s"
results+=("{\"phase\":\"lr_probes\",\"seconds\":$probe_s,\"epochs\":$epochs,\"epoch_seconds\":$epochs_s}")
phase eval 10000 "$ember" eval "$work/g" --split test --negatives 1000 --max-edges 10000 --memory-budget "$budget" --json
cat "$work/eval.out"
printf '[%s]\n' "$(IFS=,; echo "${results[*]}")" > "$out"
echo "results: $out"
