// The host's share of a GPU step: planning one batch (device_batch_plan.h),
// which each GPU slot's thread does before its copy and launches. Its time
// bounds the edges/s one host thread can feed a GPU: batch edges / time.
// Shapes as tools/gpu-check.sh's benchmark: batch 1000, chunk 50, 50
// uniform negatives, one partition of 2^24 rows; edges uniform over the rows
// (distinct rows: every one a cache miss in the planner's table) or over
// 2^12 rows (many repeats).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "train/device/device_batch_plan.h"

namespace ember {
namespace {

void BM_PlanBatch(benchmark::State& state) {
  const uint64_t rows = uint64_t{1} << state.range(0);
  const bool endpoints = state.range(1) != 0;
  std::mt19937_64 rng(1);
  std::vector<Edge> edges(1000);
  for (Edge& e : edges) e = {uint32_t(rng() % rows), 0, uint32_t(rng() % rows)};
  DeviceBatchInput in;
  in.chunk = 50;
  in.negs = 50;
  in.endpoints = endpoints;
  in.src_rows = in.dst_rows = rows;
  DeviceBatchPlanner planner;
  uint64_t batch = 0;
  for (auto _ : state) {
    in.seed = ++batch;
    benchmark::DoNotOptimize(planner.Plan(edges, in).u_node.size());
  }
  state.SetItemsProcessed(state.iterations() * edges.size());
  state.counters["edges/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * edges.size()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PlanBatch)->ArgsProduct({{24, 12}, {0, 1}})->ArgNames({"log2_rows", "endpoints"});

}  // namespace
}  // namespace ember

// main: tools/bench/bench_main.cc (the GEMM start-up first).
