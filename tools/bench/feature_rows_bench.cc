// The ceiling of featurized training: random feature-row passes over a
// table the size of tools/bench/batching.sh's (100000 features x dim 64,
// 25.6 MB). Training touches each feature entry of a chunk's nodes three
// times (compose: read and accumulate; backprop: accumulate the gradient;
// Adagrad: update the row once per distinct feature and batch); these
// measure the rate of the two kinds of pass on random rows, per thread and
// on both cores (items = rows), without and with prefetching 8 rows ahead
// (argument: prefetch distance).
//   build/tools/bench/feature_rows_bench
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "train/model/adagrad.h"

namespace ember {
namespace {

constexpr int kDim = 64;
constexpr uint32_t kRows = 100000;
constexpr int kPassesPerIteration = 1024;

const std::vector<float>& Table() {
  static const std::vector<float> table = [] {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    std::vector<float> t(size_t{kRows} * kDim);
    for (float& x : t) x = normal(rng);
    return t;
  }();
  return table;
}

std::vector<uint32_t> RandomRows(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> rows(1 << 16);
  for (uint32_t& r : rows) r = rng() % kRows;
  return rows;
}

void PrefetchRow(const float* row) {
  const char* p = reinterpret_cast<const char*>(row);
  for (size_t b = 0; b < kDim * sizeof(float); b += 64) __builtin_prefetch(p + b, 1, 1);
}

// out += w * table[row] over random rows (composition).
void BM_RandomRowAxpy(benchmark::State& state) {
  const int ahead = static_cast<int>(state.range(0));
  const std::vector<float>& table = Table();
  const std::vector<uint32_t> rows = RandomRows(2 + state.thread_index());
  std::vector<float> out(kDim, 0.0f);
  size_t k = 0;
  for (auto _ : state) {
    for (int i = 0; i < kPassesPerIteration; ++i, ++k) {
      if (ahead > 0) PrefetchRow(table.data() + size_t{rows[(k + ahead) & 0xffff]} * kDim);
      const float* row = table.data() + size_t{rows[k & 0xffff]} * kDim;
      for (int d = 0; d < kDim; ++d) out[d] += 0.5f * row[d];
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kPassesPerIteration);
}
BENCHMARK(BM_RandomRowAxpy)->Arg(0)->Arg(8);
BENCHMARK(BM_RandomRowAxpy)->Arg(0)->Arg(8)->Threads(2)->UseRealTime();

// Row-wise Adagrad on random rows of a private copy of the table (update).
void BM_RandomRowAdagrad(benchmark::State& state) {
  const int ahead = static_cast<int>(state.range(0));
  std::vector<float> table = Table();
  std::vector<float> opt_state(kRows, 0.0f);
  const std::vector<uint32_t> rows = RandomRows(7 + state.thread_index());
  std::vector<float> grad(kDim, 1e-3f);
  size_t k = 0;
  for (auto _ : state) {
    for (int i = 0; i < kPassesPerIteration; ++i, ++k) {
      if (ahead > 0) {
        const uint32_t next = rows[(k + ahead) & 0xffff];
        PrefetchRow(table.data() + size_t{next} * kDim);
        __builtin_prefetch(&opt_state[next], 1, 1);
      }
      const uint32_t r = rows[k & 0xffff];
      AdagradRowUpdate(table.data() + size_t{r} * kDim, &opt_state[r], grad.data(), kDim, 0.1f);
    }
  }
  state.SetItemsProcessed(state.iterations() * kPassesPerIteration);
}
BENCHMARK(BM_RandomRowAdagrad)->Arg(0)->Arg(8);
BENCHMARK(BM_RandomRowAdagrad)->Arg(0)->Arg(8)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace ember

// main: tools/bench/bench_main.cc (the GEMM start-up first).
