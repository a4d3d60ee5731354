#!/usr/bin/env bash
# `ember recommend`'s exact top-K beside the GEMM ceiling, in one run: the
# top 100 of 20,000 items for each of 100,000 users at dim 100
# (BM_RecommendExact: the job's core, RankCandidates) against the same
# products as OpenBLAS sgemm calls of 1024 users x all items, no selection
# (BM_SgemmSameProducts). Prints both times (best of REPS repetitions, a
# shared machine only slows a run) and their ratio.
# Usage: tools/bench/recommend.sh [USERS ITEMS]   (default 100000 20000;
# the benchmark binary also has 10000 2000 for a quick look)
# Environment: BENCH (default build/tools/bench/recommend_bench), REPS (3).
set -euo pipefail
cd "$(dirname "$0")/../.."
users=${1:-100000} items=${2:-20000}
bench=${BENCH:-build/tools/bench/recommend_bench}
[ -x "$bench" ] || tools/build.sh release recommend_bench >/dev/null
"$bench" --benchmark_filter="/$users/$items/" --benchmark_repetitions="${REPS:-3}" \
  --benchmark_format=json 2>/dev/null | python3 -c '
import json, sys
runs = [b for b in json.load(sys.stdin)["benchmarks"] if b.get("run_type") != "aggregate"]
def best(name):
    return min(b["real_time"] for b in runs if b["name"].startswith(name)) / 1000.0
ours, gemm = best("BM_RecommendExact"), best("BM_SgemmSameProducts")
print("recommend exact top-100: %.2f s; the same products as sgemm: %.2f s; ratio %.2fx"
      % (ours, gemm, ours / gemm))'
