# shellcheck shell=bash
# Sourced by the training benchmarks (train.sh, kg_default.sh) after they cd
# to the checkout: the GEMM ceiling their scoring FLOP/s are measured
# against, from score_bench ($bench). Each figure is the best of five
# repetitions: a shared machine only ever slows a run down, so the best is
# the honest ceiling (and the one hardest to come near). With UseRealTime
# the FLOPS counter is the rate of both threads together.
# sgemm_ceiling_json: the chunk step's six sgemm calls on both cores at
#   once (BM_SgemmChunkSequence), Google Benchmark's JSON.
# best_flops: the best FLOPS of such JSON on stdin.

best_flops() {
  python3 -c 'import json,sys; print("%.1f" % max(b["FLOPS"] for b in json.load(sys.stdin)["benchmarks"] if b.get("run_type") != "aggregate"))'
}

sgemm_ceiling_json() {
  OPENBLAS_NUM_THREADS=1 "$bench" --benchmark_filter='BM_SgemmChunkSequence/real_time/threads:2' \
    --benchmark_format=json --benchmark_min_time=0.5 --benchmark_repetitions=5 2>/dev/null
}
