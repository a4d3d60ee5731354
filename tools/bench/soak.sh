#!/usr/bin/env bash
# Soak test (a script, not in CI): `ember train` for many epochs on a
# generated SBM graph, checkpointing every few buckets, while readers
# (`ember eval`, `ember export`, `ember inspect`) loop beside it. Samples the
# trainer's RSS and open file descriptors (/proc/PID) once a second and
# checks that they stay flat: the last fifth's mean against the second
# fifth's (after warm-up), and the least-squares slope per minute. Checks
# that no reader ever saw a mixed checkpoint: every export's
# partition_versions (its .meta.json) equal those the manifest named for the
# checkpoint it reports, as a poller of MANIFEST.json saw them committed,
# and none is above that checkpoint. Prints a summary; exits non-zero when a
# check fails.
# The trainer runs under --memory-budget MEMORY_BUDGET (default 256M): its
# RocksDB block cache and memtables share an eighth of the budget, and they
# fill as the checkpoints write new table files. Under the 2G default the
# 128 MiB block cache takes longer than a soak to fill (RSS climbs about
# 3 MiB/min on this 20000-node graph, then stops at the cap); at 256M the
# caches are full within the warm-up, so growth after it is a leak.
# Usage: tools/bench/soak.sh [SECONDS] [NODES]   (default 300 s, 20000 nodes)
# Env: EMBER (binary, default build/ember), WORK (scratch dir, kept if set),
#      MEMORY_BUDGET (default 256M), RSS_GROWTH_MAX (MiB, default 16),
#      FD_GROWTH_MAX (default 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-300}
nodes=${2:-20000}
ember=${EMBER:-build/ember}
budget=${MEMORY_BUDGET:-256M}
rss_max=${RSS_GROWTH_MAX:-16}
fd_max=${FD_GROWTH_MAX:-2}
python=/usr/bin/python3
[ -x "$python" ] || python=python3
[ -x "$ember" ] || tools/build.sh release ember >/dev/null
if [ -n "${WORK:-}" ]; then
  work=$WORK
  mkdir -p "$work"
else
  work=$(mktemp -d /tmp/ember-soak.XXXXXX)
fi
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

g=$work/g
echo "soak: ${seconds} s, SBM of $nodes nodes in 4 partitions, dim 64, checkpoint every 4 buckets, memory budget $budget"
"$ember" gen sbm --nodes "$nodes" --blocks 20 --seed 1 --out "$work/edges.tsv" \
  --labels-out "$work/labels.tsv" --quiet
"$ember" import --out "$g" --partitions 4 --split 0.95,0,0.05 --quiet "$work/edges.tsv" >/dev/null

# The manifest's committed checkpoints, polled: "version v0 v1 v2 v3" lines.
"$python" - "$g/MANIFEST.json" "$work/history.txt" <<'EOF' &
import json, os, sys, time
path, out = sys.argv[1], sys.argv[2]
seen = {}
with open(out, "w") as f:
    while True:
        try:
            with open(path) as m:
                t = json.load(m)["training"]
            v = t.get("checkpoint_version", 0)
            pv = t.get("state", {}).get("partition_versions")
            if v and pv is not None and v not in seen:
                seen[v] = pv
                f.write("%d %s\n" % (v, " ".join(map(str, pv))))
                f.flush()
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.001)
EOF
pids+=($!)

"$ember" train "$g" --epochs 1000000 --dim 64 --lr 0.1 --threads 1 --checkpoint-every 4 \
  --memory-budget "$budget" --quiet >"$work/train.out" 2>"$work/train.err" &
trainer=$!
pids+=($trainer)

# Readers, one after another in a loop, until told to stop.
reader() {
  local i=0
  while [ ! -e "$work/stop" ]; do
    i=$((i + 1))
    case $((i % 3)) in
      0) "$ember" eval "$g" --json --max-edges 500 --quiet >"$work/eval.json" 2>"$work/reader.err" \
           && echo eval-ok || echo "eval-failed $(head -c 300 "$work/reader.err")" ;;
      1) rm -f "$work/emb.tsv" "$work/emb.tsv.meta.json"
         if "$ember" export "$g" --format tsv --out "$work/emb.tsv" --quiet 2>"$work/reader.err" >/dev/null; then
           echo "export-ok $("$python" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["checkpoint_version"], *m["partition_versions"])' "$work/emb.tsv.meta.json")"
         else
           echo "export-failed $(head -c 300 "$work/reader.err")"
         fi ;;
      2) "$ember" inspect "$g" --json >/dev/null 2>"$work/reader.err" \
           && echo inspect-ok || echo "inspect-failed $(head -c 300 "$work/reader.err")" ;;
    esac
  done >"$work/reads.txt"
}
# Readers start once the first checkpoint is committed (before it there is
# nothing to read).
while [ ! -s "$work/history.txt" ]; do
  kill -0 "$trainer" 2>/dev/null || { cat "$work/train.err" >&2; exit 1; }
  sleep 0.1
done
reader &
pids+=($!)

# Samples: "elapsed rss_kib fds".
start=$(date +%s)
: >"$work/samples.txt"
while [ $(( $(date +%s) - start )) -lt "$seconds" ]; do
  if ! kill -0 "$trainer" 2>/dev/null; then
    echo "ember train exited early:" >&2
    cat "$work/train.err" >&2
    exit 1
  fi
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$trainer/status")
  fds=$(ls "/proc/$trainer/fd" | wc -l)
  echo "$(( $(date +%s) - start )) $rss $fds" >>"$work/samples.txt"
  sleep 1
done
touch "$work/stop"
wait "${pids[2]}" 2>/dev/null || true  # the reader finishes its read
kill "$trainer" 2>/dev/null || true

"$python" - "$work/samples.txt" "$work/reads.txt" "$work/history.txt" "$rss_max" "$fd_max" \
  "$g/metrics.jsonl" <<'EOF'
import sys
samples_path, reads_path, history_path, rss_max, fd_max, metrics_path = sys.argv[1:]
rss_max, fd_max = float(rss_max), float(fd_max)
samples = [tuple(map(float, l.split())) for l in open(samples_path) if l.strip()]
t = [s[0] for s in samples]
rss = [s[1] / 1024 for s in samples]  # MiB
fds = [s[2] for s in samples]

def slope_per_min(xs, ys):
    n = len(xs); mx = sum(xs) / n; my = sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs) or 1
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den

def fifth(ys, k):
    n = len(ys); a, b = n * k // 5, max(n * (k + 1) // 5, n * k // 5 + 1)
    part = ys[a:b]
    return sum(part) / len(part)

ok = True
n = len(samples)
# After warm-up: the second fifth against the last.
rss_early, rss_late = fifth(rss, 1), fifth(rss, 4)
fd_early, fd_late = fifth(fds, 1), fifth(fds, 4)
half = n // 5
print("trainer samples: %d over %.0f s" % (n, t[-1] - t[0]))
print("RSS MiB: first %.1f, second fifth %.1f, last fifth %.1f, max %.1f; slope after warm-up "
      "%+.3f MiB/min" % (rss[0], rss_early, rss_late, max(rss), slope_per_min(t[half:], rss[half:])))
print("open fds: first %d, second fifth %.1f, last fifth %.1f, max %d; slope after warm-up "
      "%+.3f /min" % (fds[0], fd_early, fd_late, max(fds), slope_per_min(t[half:], fds[half:])))
if rss_late - rss_early > rss_max:
    print("FAIL: RSS grew %.1f MiB (bound %.0f)" % (rss_late - rss_early, rss_max)); ok = False
if fd_late - fd_early > fd_max:
    print("FAIL: open fds grew %.1f (bound %.0f)" % (fd_late - fd_early, fd_max)); ok = False

history = {}
for line in open(history_path):
    v, *pv = map(int, line.split())
    history[v] = pv
counts, failures, checked, mixed = {}, [], 0, []
for line in open(reads_path):
    kind, _, rest = line.strip().partition(" ")
    counts[kind] = counts.get(kind, 0) + 1
    if kind.endswith("-failed") and "is being written by pid" not in rest:
        failures.append(line.strip())
    if kind == "export-ok":
        v, *pv = map(int, rest.split())
        if any(p > v for p in pv):
            mixed.append((v, pv, "a partition above the checkpoint"))
        elif v in history:
            checked += 1
            if history[v] != pv:
                mixed.append((v, pv, "committed as %s" % history[v]))
print("reads: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))
print("checkpoints committed: %d seen (versions %d..%d)" % (
    len(history), min(history or [0]), max(history or [0])))
epochs = sum(1 for _ in open(metrics_path)) if __import__("os").path.exists(metrics_path) else 0
print("epochs trained: %d" % epochs)
print("exports checked against the committed checkpoint they name: %d of %d" % (
    checked, counts.get("export-ok", 0)))
if mixed:
    print("FAIL: exports mixing checkpoints: %s" % mixed[:5]); ok = False
if failures:
    print("FAIL: reads failed other than by naming the writer: %s" % failures[:5]); ok = False
print("soak: %s" % ("OK" if ok else "FAILED"))
sys.exit(0 if ok else 1)
EOF
