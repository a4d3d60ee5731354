// `ember recommend`'s core beside the GEMM it cannot beat: the exact top-K
// of USERS users among ITEMS items (dim 100, k 100, dot) by RankCandidates
// (train/eval/recommender.h: GEMM blocks through the candidate scorer, a
// top-K heap per user, oneTBB over user blocks), against the same products
// as one OpenBLAS sgemm per block of 1024 users (all items at once, no
// selection: the ceiling). Both on every core (--threads of the task arena:
// all hardware threads), OpenBLAS at one thread inside the parallel blocks
// as ember runs it, and all threads for the ceiling's big GEMMs.
//
// tools/bench/recommend.sh runs both and prints the ratio. Defaults: 100k
// users x 20k items (the shape); BM_* names carry the sizes.
#include <cblas.h>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "storage/base/parallel.h"
#include "train/eval/recommender.h"
#include "train/model/model_options.h"

namespace ember {
namespace {

constexpr int kDim = 100;
constexpr uint32_t kTopK = 100;

std::vector<float> Rows(uint64_t n, uint64_t seed) {
  std::vector<float> rows(n * kDim);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  for (float& x : rows) x = normal(rng);
  return rows;
}

void BM_RecommendExact(benchmark::State& state) {
  const uint64_t users = state.range(0), items = state.range(1);
  const std::vector<float> user_rows = Rows(users, 1), item_rows = Rows(items, 2);
  ModelOptions model;
  model.dim = kDim;
  std::vector<RankQuery> queries(users);
  for (uint64_t u = 0; u < users; ++u) {
    queries[u].row = user_rows.data() + u * kDim;
    queries[u].id = items + u;  // never a candidate's
  }
  const int previous = openblas_get_num_threads();
  openblas_set_num_threads(1);
  for (auto _ : state) {
    std::vector<TopKHeap> heaps(users, TopKHeap(kTopK));
    RankCandidates(model, nullptr, queries, item_rows.data(), items, 0, heaps);
    benchmark::DoNotOptimize(heaps.front().TakeSorted());
  }
  openblas_set_num_threads(previous);
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * users * items * kDim, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_SgemmSameProducts(benchmark::State& state) {
  const uint64_t users = state.range(0), items = state.range(1);
  const std::vector<float> user_rows = Rows(users, 1), item_rows = Rows(items, 2);
  constexpr uint64_t kBlock = 1024;
  std::vector<float> scores(kBlock * items);
  const int previous = openblas_get_num_threads();
  openblas_set_num_threads(std::max(1u, std::thread::hardware_concurrency()));
  for (auto _ : state) {
    for (uint64_t lo = 0; lo < users; lo += kBlock) {
      const int n = static_cast<int>(std::min(kBlock, users - lo));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(items), kDim, 1.0f,
                  user_rows.data() + lo * kDim, kDim, item_rows.data(), kDim, 0.0f, scores.data(),
                  static_cast<int>(items));
    }
    benchmark::DoNotOptimize(scores.data());
  }
  openblas_set_num_threads(previous);
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * users * items * kDim, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_RecommendExact)
    ->Args({100000, 20000})
    ->Args({10000, 2000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SgemmSameProducts)
    ->Args({100000, 20000})
    ->Args({10000, 2000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace ember
