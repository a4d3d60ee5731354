#!/usr/bin/env bash
# Training benchmark (issue: CPU training). R-MAT scale 20 (16.8 M edges),
# dim 100, batch 1000, chunk 50, 50 uniform negatives, softmax, dot,
# 2 threads; one epoch in memory and one out of core (--partitions 8
# --buffer-partitions 3), and on CPUs with AVX512-BF16 one in memory with
# --precision bf16. Prints edges/s, the scoring work's FLOP/s and its
# ratio to OpenBLAS sgemm FLOP/s at the chunk shape and to the cores' FMA
# peak, both measured in this run. Every figure is the best of several
# runs (RUNS training runs per mode, default 3; five repetitions of each
# ceiling): a shared machine only slows runs down.
# The sgemm ceiling and ember run the same GEMM start-up (train/blas): the
# kernel the CPU's features deserve unless OPENBLAS_CORETYPE is set (a user's
# setting wins); the script prints the kernel of both and the deserved one.
# Usage: tools/bench/train.sh [SCALE] [EPOCHS] [--json-out FILE]
# --json-out FILE also writes the figures as JSON (tools/bench/json_out.sh),
# with each training run's peak RSS where /usr/bin/time is installed.
set -euo pipefail
# shellcheck source=tools/bench/json_out.sh
source "$(dirname "$0")/json_out.sh" "$@"; set -- "${bench_args[@]+"${bench_args[@]}"}"
cd "$(dirname "$0")/../.."
scale=${1:-20}
epochs=${2:-1}
ember=${EMBER:-build/ember}
bench=${SCORE_BENCH:-build/tools/bench/score_bench}
work=${WORK:-$(mktemp -d /tmp/ember-bench-train.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$ember" ] && [ -x "$bench" ] || tools/build.sh release >/dev/null
threads=2 dim=100 chunk=50 negs=50
runs=${RUNS:-3}  # training runs per mode; the best counts, as for the ceilings

"$ember" gen rmat --scale "$scale" --edge-factor 16 --seed 1 --out "$work/rmat.tsv" --quiet
"$ember" import --out "$work/g1" --integer-ids --partitions 1 --quiet "$work/rmat.tsv" >/dev/null
"$ember" import --out "$work/g8" --integer-ids --partitions 8 --quiet "$work/rmat.tsv" >/dev/null

# Each ceiling is the best of five repetitions (sgemm_ceiling.sh).
# shellcheck source=tools/bench/sgemm_ceiling.sh
source tools/bench/sgemm_ceiling.sh
# sgemm ceiling: the chunk step's six GEMMs on both cores at once.
sgemm_json=$(sgemm_ceiling_json)
sgemm=$(echo "$sgemm_json" | best_flops)
# FMA peak: register-only fused multiply-adds on both cores (BM_FmaPeak).
peak=$("$bench" --benchmark_filter='BM_FmaPeak/real_time/threads:2' --benchmark_format=json \
  --benchmark_min_time=0.2 --benchmark_repetitions=5 2>/dev/null | best_flops)
ctx() { echo "$sgemm_json" | python3 -c "import json,sys; print(json.load(sys.stdin)['context'].get('$1', '?'))"; }
kernel=$(ctx blas_kernel) deserved=$(ctx blas_deserved)

# Scoring FLOPs per positive edge: forward + backward GEMMs of both sides,
# 12 * (chunk + negs) * dim (see train/model/chunk_scorer.h).
flops_per_edge=$(( 12 * (chunk + negs) * dim ))
timed=()  # peak RSS of each training run, for the JSON
[ -x /usr/bin/time ] && timed=(/usr/bin/time -f %M -o "$work/rss")
train() {  # label graph extra flags...
  local label=$1 graph=$2; shift 2
  local eps gflops share
  local run best=0 ember_kernel
  for run in $(seq "$runs"); do
    rm -f "$work/rss"
    eps=$("${timed[@]}" "$ember" train "$graph" --from-scratch --epochs "$epochs" --dim $dim --batch-size 1000 \
      --chunk-size $chunk --num-uniform-negs $negs --loss softmax --comparator dot --threads $threads --quiet --json "$@" \
      | python3 -c 'import json,sys; r=[json.loads(l) for l in sys.stdin]; print("%.1f %s" % (sum(x["edges"] for x in r)/sum(x["seconds"] for x in r), r[0]["gemm"]["kernel"]))')
    ember_kernel=${eps#* }; eps=${eps%% *}
    best=$(python3 -c "print(max($best, $eps))")
  done
  eps=$best
  [ "$ember_kernel" = "$kernel" ] || echo "warning: ember ran kernel $ember_kernel, the ceiling $kernel" >&2
  gflops=$(echo "$eps * $flops_per_edge / 1000000000" | bc -l)
  share=$(echo "$eps * $flops_per_edge / $sgemm" | bc -l)
  peak_share=$(echo "$eps * $flops_per_edge / $peak" | bc -l)
  printf "%-34s %10.0f edges/s  scoring %6.1f GFLOP/s  = %5.1f%% of sgemm, %4.1f%% of the FMA peak\n" \
    "$label" "$eps" "$gflops" "$(echo "100 * $share" | bc -l)" "$(echo "100 * $peak_share" | bc -l)"
  echo "$eps" > "$work/$label.eps"
  bench_json run "$label" edges_per_second="$eps" scoring_gflops="$gflops" sgemm_share="$share" \
    fma_peak_share="$peak_share"
  [ ! -s "$work/rss" ] || bench_json run "$label" peak_rss_mib="$(echo "$(tail -1 "$work/rss") / 1024" | bc -l)"
}
printf "R-MAT scale %d (%d edges), dim %d, chunk %d, %d negatives, softmax/dot, %d threads\n" \
  "$scale" $(( 16 << scale )) $dim $chunk $negs $threads
printf "OpenBLAS sgemm at the chunk shape, kernel %s (this CPU deserves %s%s), %d threads: %.1f GFLOP/s\n" \
  "$kernel" "${deserved:-its own choice}" "${OPENBLAS_CORETYPE:+; OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE is set}" \
  $threads "$(echo "$sgemm / 1000000000" | bc -l)"
printf "FMA peak (register-only fused multiply-adds), %d threads: %.1f GFLOP/s; the sgemm is %.1f%% of it\n" \
  $threads "$(echo "$peak / 1000000000" | bc -l)" "$(echo "100 * $sgemm / $peak" | bc -l)"
bench_json config "" scale="$scale" edges=$(( 16 << scale )) dim=$dim chunk=$chunk negatives=$negs \
  threads=$threads epochs="$epochs" sgemm_gflops="$(echo "$sgemm / 1000000000" | bc -l)" \
  fma_peak_gflops="$(echo "$peak / 1000000000" | bc -l)" \
  blas_kernel="$kernel" blas_deserved="$deserved"
train in-memory "$work/g1"
train out-of-core "$work/g8" --buffer-partitions 3 --bucket-order beta
ratio=$(echo "$(cat "$work/out-of-core.eps") / $(cat "$work/in-memory.eps")" | bc -l)
printf "out-of-core / in-memory edges/s: %.2f\n" "$ratio"
bench_json summary "" out_of_core_over_in_memory="$ratio"
# Where the CPU has AVX512-BF16, also --precision bf16 in memory: its
# products do twice the work per instruction, so its share of the fp32
# sgemm ceiling is not like for like; its share of the same six products
# in bf16 (BM_Bf16ChunkSequence, best of five, packing included) is, and so
# is its speed-up over fp32.
if grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null; then
  bf16_ceiling=$("$bench" --benchmark_filter='BM_Bf16ChunkSequence/real_time/threads:2' \
    --benchmark_format=json --benchmark_min_time=0.5 --benchmark_repetitions=5 2>/dev/null | best_flops)
  train in-memory-bf16 "$work/g1" --precision bf16
  bf16=$(echo "$(cat "$work/in-memory-bf16.eps") / $(cat "$work/in-memory.eps")" | bc -l)
  bf16_share=$(echo "$(cat "$work/in-memory-bf16.eps") * $flops_per_edge / $bf16_ceiling" | bc -l)
  printf "bf16 products: %.1f GFLOP/s ceiling (the six products in bf16, packing included), ember at %.1f%% of it; %.2fx fp32's edges/s in memory\n" \
    "$(echo "$bf16_ceiling / 1000000000" | bc -l)" "$(echo "100 * $bf16_share" | bc -l)" "$bf16"
  bench_json summary "" bf16_over_fp32="$bf16" bf16_ceiling_gflops="$(echo "$bf16_ceiling / 1000000000" | bc -l)" \
    bf16_ceiling_share="$bf16_share"
fi
bench_json_write train
