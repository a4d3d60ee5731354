// Chunk scoring throughput against raw OpenBLAS sgemm at the same shapes.
// Run single-threaded for per-core figures:
//   OPENBLAS_NUM_THREADS=1 build/tools/bench/score_bench
// FLOPs count GEMM work only: per side, forward 2·C·(C+N)·d and backward
// twice that, so one chunk step (both sides) is 12·C·(C+N)·d.
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "train/model/bf16_gemm.h"
#include "train/model/chunk_scorer.h"
#include "train/model/model_options.h"
#include "train/model/small_gemm.h"

namespace ember {
namespace {

constexpr int kDim = 100;
constexpr int kChunk = 50;
constexpr int kNegs = 50;

std::vector<float> RandomMatrix(int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::vector<float> m(static_cast<size_t>(rows) * cols);
  for (float& x : m) x = normal(rng);
  return m;
}

void SetFlops(benchmark::State& state, double flops_per_iter) {
  state.counters["FLOPS"] = benchmark::Counter(
      flops_per_iter * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

// C (m × n) = op(X) · op(Y), row-major, with the transposes the scorer uses:
//   NT: scores  = Q (C × d) · Kᵀ,   m = C,   n = C + N, k = d
//   NN: dQ      = G (C × (C+N)) · K, m = C,  n = d,     k = C + N
//   TN: dK      = Gᵀ · Q,           m = C+N, n = d,     k = C
void BM_Sgemm(benchmark::State& state, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb,
              int m, int n, int k) {
  const std::vector<float> x = RandomMatrix(m, k, 1);
  const std::vector<float> y = RandomMatrix(k, n, 2);
  std::vector<float> c(static_cast<size_t>(m) * n);
  const int lda = ta == CblasNoTrans ? k : m;
  const int ldb = tb == CblasNoTrans ? n : k;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, x.data(), lda, y.data(),
                ldb, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  SetFlops(state, 2.0 * m * n * k);
}
BENCHMARK_CAPTURE(BM_Sgemm, scores_NT_50x100x100, CblasNoTrans, CblasTrans,
                  kChunk, kChunk + kNegs, kDim);
BENCHMARK_CAPTURE(BM_Sgemm, dquery_NN_50x100x100, CblasNoTrans, CblasNoTrans,
                  kChunk, kDim, kChunk + kNegs);
BENCHMARK_CAPTURE(BM_Sgemm, dkey_TN_100x100x50, CblasTrans, CblasNoTrans,
                  kChunk + kNegs, kDim, kChunk);

// The core's FMA peak: twelve independent chains of fused multiply-adds on
// registers, the widest vectors this build targets (AVX-512 under
// -march=native on such a CPU, else AVX2). Nothing real runs faster; it is
// the denominator of "share of the FMA peak" in docs/performance.md. The
// chains start from distinct values: twelve identical chains are one chain
// to the compiler, which then times a single chain's latency instead of the
// units' throughput (this benchmark did so before, and overstated the peak
// by half).
void BM_FmaPeak(benchmark::State& state) {
#if defined(__AVX512F__)
  using V = float __attribute__((vector_size(64)));
#else
  using V = float __attribute__((vector_size(32)));
#endif
  constexpr int kLanes = sizeof(V) / sizeof(float);
  constexpr int kChains = 12;
  constexpr int kRepeats = 1000;
  const V b = V{} + 0.9999f, c = V{} + 0.0001f;
  V a[kChains];
  for (int k = 0; k < kChains; ++k) a[k] = V{} + (0.5f + 0.01f * k);
  for (auto _ : state) {
    for (int r = 0; r < kRepeats; ++r) {
#pragma GCC unroll 12
      for (int k = 0; k < kChains; ++k) a[k] = a[k] * b + c;
    }
    for (int k = 0; k < kChains; ++k) benchmark::DoNotOptimize(a[k]);
  }
  SetFlops(state, 2.0 * kChains * kLanes * kRepeats);
}
BENCHMARK(BM_FmaPeak);
BENCHMARK(BM_FmaPeak)->Threads(2)->UseRealTime();

// The operands of one chunk step's six products: both sides' rows (a, b:
// (C + N) × d), scores (C × (C + N)), their gradient g, the rows' gradients.
struct ChunkSequence {
  static constexpr int c = kChunk, n = kChunk + kNegs, d = kDim;
  const std::vector<float> a = RandomMatrix(n, d, 1), b = RandomMatrix(n, d, 2);
  const std::vector<float> g = RandomMatrix(c, n, 3);
  std::vector<float> s = std::vector<float>(c * n), da = std::vector<float>(n * d),
                     db = std::vector<float>(n * d), kt = std::vector<float>(n * d);
};

// Times `products(seq)` (the six products of one step) as 12 · C · (C + N) · d
// FLOPs per iteration.
template <typename Products>
void RunChunkSequence(benchmark::State& state, Products products) {
  ChunkSequence seq;
  for (auto _ : state) {
    products(seq);
    benchmark::DoNotOptimize(seq.da.data());
    benchmark::DoNotOptimize(seq.db.data());
    benchmark::ClobberMemory();
  }
  SetFlops(state, 12.0 * seq.c * seq.n * seq.d);
}

// The six sgemm calls of one chunk step back to back, nothing else: the
// ceiling the full step is measured against.
void BM_SgemmChunkSequence(benchmark::State& state) {
  RunChunkSequence(state, [](ChunkSequence& x) {
    const int c = x.c, n = x.n, d = x.d;
    for (int side = 0; side < 2; ++side) {
      const float* q = side == 0 ? x.a.data() : x.b.data();
      const float* k = side == 0 ? x.b.data() : x.a.data();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, n, d, 1.0f, q, d, k, d, 0.0f,
                  x.s.data(), n);
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, d, c, 1.0f, x.g.data(), n,
                x.b.data(), d, 0.0f, x.da.data(), d);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, d, n, 1.0f, x.g.data(), n,
                x.b.data(), d, 1.0f, x.da.data(), d);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, d, c, 1.0f, x.g.data(), n,
                x.a.data(), d, 0.0f, x.db.data(), d);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, d, n, 1.0f, x.g.data(), n,
                x.a.data(), d, 1.0f, x.db.data(), d);
  });
}
BENCHMARK(BM_SgemmChunkSequence);
// Both cores at once: the machine's GEMM ceiling at the chunk shape (the
// FLOPS counter sums the threads over wall time).
BENCHMARK(BM_SgemmChunkSequence)->Threads(2)->UseRealTime();

// The same six products on SmallGemm (train/model/small_gemm.h), the
// scores' Kᵀ transposed first as the chunk step does.
void BM_SmallGemmChunkSequence(benchmark::State& state) {
  RunChunkSequence(state, [](ChunkSequence& x) {
    const int c = x.c, n = x.n, d = x.d;
    for (int side = 0; side < 2; ++side) {
      const float* q = side == 0 ? x.a.data() : x.b.data();
      const float* k = side == 0 ? x.b.data() : x.a.data();
      Transpose(n, d, k, d, x.kt.data(), n);
      SmallGemm(c, n, d, q, d, 1, x.kt.data(), n, x.s.data(), n, false);
    }
    SmallGemm(n, d, c, x.g.data(), 1, n, x.b.data(), d, x.da.data(), d, false);
    SmallGemm(c, d, n, x.g.data(), n, 1, x.b.data(), d, x.da.data(), d, true);
    SmallGemm(n, d, c, x.g.data(), 1, n, x.a.data(), d, x.db.data(), d, false);
    SmallGemm(c, d, n, x.g.data(), n, 1, x.a.data(), d, x.db.data(), d, true);
  });
}
BENCHMARK(BM_SmallGemmChunkSequence);
BENCHMARK(BM_SmallGemmChunkSequence)->Threads(2)->UseRealTime();

// The same six products in bf16 (train/model/bf16_gemm.h), each operand
// packed into pairs first as the chunk step does: the ceiling of
// --precision bf16, as BM_SgemmChunkSequence is fp32's.
void BM_Bf16ChunkSequence(benchmark::State& state) {
  if (!Bf16GemmAvailable()) {
    state.SkipWithError("this CPU has no AVX512-BF16");
    return;
  }
  ChunkSequence seq;
  const int c = seq.c, n = seq.n, d = seq.d;
  const int pd = PairCount(d), pn = PairCount(n), pc = PairCount(c);
  std::vector<uint32_t> pack_a(std::max({c * pd, c * pn, pc * n})),
      pack_b(std::max({pd * n, pn * d, pc * d}));
  for (auto _ : state) {
    for (int side = 0; side < 2; ++side) {
      const float* q = side == 0 ? seq.a.data() : seq.b.data();
      const float* k = side == 0 ? seq.b.data() : seq.a.data();
      PackPairsAlongRows(c, d, q, d, pack_a.data(), pd);
      PackPairsTransposed(n, d, k, d, pack_b.data(), n);
      Bf16Gemm(c, n, pd, pack_a.data(), pd, 1, pack_b.data(), n, seq.s.data(), n, false);
    }
    for (int side = 0; side < 2; ++side) {
      const float* rows = side == 0 ? seq.b.data() : seq.a.data();
      float* grads = side == 0 ? seq.da.data() : seq.db.data();
      // dK = Gᵀ · Q, then dQ += G · K.
      PackPairsAcrossRows(c, n, seq.g.data(), n, pack_a.data(), n);
      PackPairsAcrossRows(c, d, rows, d, pack_b.data(), d);
      Bf16Gemm(n, d, pc, pack_a.data(), 1, n, pack_b.data(), d, grads, d, false);
      PackPairsAlongRows(c, n, seq.g.data(), n, pack_a.data(), pn);
      PackPairsAcrossRows(n, d, rows, d, pack_b.data(), d);
      Bf16Gemm(c, d, pn, pack_a.data(), pn, 1, pack_b.data(), d, grads, d, true);
    }
    benchmark::DoNotOptimize(seq.da.data());
    benchmark::DoNotOptimize(seq.db.data());
    benchmark::ClobberMemory();
  }
  SetFlops(state, 12.0 * seq.c * seq.n * seq.d);
}
BENCHMARK(BM_Bf16ChunkSequence);
BENCHMARK(BM_Bf16ChunkSequence)->Threads(2)->UseRealTime();

// args: operator, comparator, loss (enum values), backward (0/1), precision
// (enum value).
void BM_Chunk(benchmark::State& state) {
  ModelOptions options;
  options.op = static_cast<Operator>(state.range(0));
  options.comparator = static_cast<Comparator>(state.range(1));
  options.loss = static_cast<Loss>(state.range(2));
  options.dim = kDim;
  options.precision = static_cast<Precision>(state.range(4));
  if (options.precision == Precision::kBf16 && !Bf16GemmAvailable()) {
    state.SkipWithError("this CPU has no AVX512-BF16");
    return;
  }
  const bool backward = state.range(3) != 0;
  state.SetLabel(std::string(OperatorName(options.op)) + "/" +
                 std::string(ComparatorName(options.comparator)) + "/" +
                 std::string(LossName(options.loss)) +
                 (backward ? "/fwd+bwd" : "/fwd") + "/" +
                 std::string(PrecisionName(options.precision)));

  const std::vector<float> lhs = RandomMatrix(kChunk, kDim, 1);
  const std::vector<float> rhs = RandomMatrix(kChunk, kDim, 2);
  const std::vector<float> src_negs = RandomMatrix(kNegs, kDim, 3);
  const std::vector<float> dst_negs = RandomMatrix(kNegs, kDim, 4);
  std::vector<float> rel(RelationParamSize(options.op, kDim));
  InitRelationParams(options.op, kDim, rel.data());
  std::vector<float> d_lhs(lhs.size()), d_rhs(rhs.size()),
      d_src(src_negs.size()), d_dst(dst_negs.size()), d_rel(rel.size());
  const ChunkInput input{
      lhs.data(), rhs.data(), src_negs.data(), dst_negs.data(), kChunk,
      kNegs,      kNegs};
  const ChunkGrads grads{d_lhs.data(), d_rhs.data(), d_src.data(), d_dst.data(),
                         d_rel.data()};
  ChunkWorkspace ws(kDim, kChunk, kNegs);
  for (auto _ : state) {
    float loss =
        backward ? ChunkForwardBackward(options, rel.data(), input, grads, &ws)
                 : ChunkForward(options, rel.data(), input, &ws);
    benchmark::DoNotOptimize(loss);
  }
  SetFlops(state, (backward ? 12.0 : 4.0) * kChunk * (kChunk + kNegs) * kDim);
}

void ChunkArgs(benchmark::internal::Benchmark* b) {
  constexpr int kSoftmax = static_cast<int>(Loss::kSoftmax);
  constexpr int kBf16 = static_cast<int>(Precision::kBf16);
  // The headline configuration: softmax / dot, each operator, fp32 and bf16.
  for (int op = 0; op < kNumOperators; ++op) b->Args({op, 0, kSoftmax, 1, 0});
  for (int op = 0; op < kNumOperators; ++op) b->Args({op, 0, kSoftmax, 1, kBf16});
  b->Args({0, 0, kSoftmax, 0, 0});
  // Other comparators and losses with the identity operator.
  for (int cmp = 1; cmp < kNumComparators; ++cmp)
    b->Args({0, cmp, kSoftmax, 1, 0});
  for (int loss = 0; loss < kSoftmax; ++loss) b->Args({0, 0, loss, 1, 0});
}
BENCHMARK(BM_Chunk)->Apply(ChunkArgs);

}  // namespace
}  // namespace ember

// main: tools/bench/bench_main.cc (the GEMM start-up first).
