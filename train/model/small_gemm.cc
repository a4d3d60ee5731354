#include "train/model/small_gemm.h"

#include <cblas.h>
#include <immintrin.h>

#include <algorithm>

#include "train/model/avx512_transpose.h"

// The AVX-512 kernels are compiled for AVX-512F whatever the build's -march
// and run only where the CPU has it (SmallGemmUsesAvx512), so that one
// binary serves both kinds of CPU.
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
// GCC 12's _mm512_setzero_ps and masked loads trip -Wmaybe-uninitialized on
// their own undefined-vector argument (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Its templates are compiled for the target above (register_tile.h).
#include "train/model/register_tile.h"

namespace ember {
namespace {

constexpr int kLanes = register_tile::kLanes;
using register_tile::FirstLanes;

// fp32 entries, one FMA per 16 lanes.
struct Fp32Policy {
  using Elem = float;
  using Vec = __m512;
  static Vec LoadB(const float* p) { return _mm512_loadu_ps(p); }
  static Vec LoadB(const float* p, __mmask16 lanes) { return _mm512_maskz_loadu_ps(lanes, p); }
  static Vec Broadcast(float a) { return _mm512_set1_ps(a); }
  static __m512 MultiplyAdd(__m512 acc, Vec a, Vec b) { return _mm512_fmadd_ps(a, b, acc); }
};

void Avx512Gemm(int rows, int cols, int depth, const float* a, int64_t a_row,
                int64_t a_depth, const float* b, int64_t ldb, float* c,
                int64_t ldc, bool accumulate) {
  register_tile::Gemm<Fp32Policy>(rows, cols, depth, a, a_row, a_depth, b, ldb, c, ldc,
                                  accumulate);
}

// y = xᵀ for one block of up to 16 × 16 (rows × cols of x), in registers.
void TransposeBlock(int rows, int cols, const float* x, int64_t ldx, float* y,
                    int64_t ldy) {
  const __mmask16 col_mask = FirstLanes(cols);
  __m512 r[kLanes];
  for (int i = 0; i < kLanes; ++i) {
    r[i] = i < rows ? _mm512_maskz_loadu_ps(col_mask, x + i * ldx) : _mm512_setzero_ps();
  }
  Transpose16x16(r);
  const __mmask16 row_mask = FirstLanes(rows);
  for (int k = 0; k < cols; ++k) _mm512_mask_storeu_ps(y + k * ldy, row_mask, r[k]);
}

void Avx512Transpose(int rows, int cols, const float* x, int64_t ldx, float* y,
                     int64_t ldy) {
  for (int i = 0; i < rows; i += kLanes) {
    for (int j = 0; j < cols; j += kLanes) {
      TransposeBlock(std::min(kLanes, rows - i), std::min(kLanes, cols - j), x + i * ldx + j,
                     ldx, y + j * ldy + i, ldy);
    }
  }
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

bool force_fallback = false;  // ForceSmallGemmFallbackForTesting

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  return has && !force_fallback;
}

}  // namespace

bool SmallGemmUsesAvx512() { return HasAvx512(); }

void ForceSmallGemmFallbackForTesting(bool force) { force_fallback = force; }

void SmallGemm(int rows, int cols, int depth, const float* a, int64_t a_row,
               int64_t a_depth, const float* b, int64_t ldb, float* c,
               int64_t ldc, bool accumulate) {
  if (rows == 0 || cols == 0) return;
  if (HasAvx512()) {
    return Avx512Gemm(rows, cols, depth, a, a_row, a_depth, b, ldb, c, ldc, accumulate);
  }
  // A is rows × depth row-major (a_depth == 1) or depth × rows (a_row == 1);
  // a stride that never moves (one row, or depth 1) is raised to the least
  // leading dimension the BLAS accepts.
  const bool a_transposed = a_depth != 1;
  const int64_t lda = a_transposed ? std::max<int64_t>(a_depth, rows)
                                   : std::max<int64_t>(a_row, depth);
  cblas_sgemm(CblasRowMajor, a_transposed ? CblasTrans : CblasNoTrans, CblasNoTrans, rows,
              cols, depth, 1.0f, a, static_cast<int>(std::max<int64_t>(lda, 1)), b,
              static_cast<int>(std::max<int64_t>(ldb, cols)), accumulate ? 1.0f : 0.0f, c,
              static_cast<int>(ldc));
}

void Transpose(int rows, int cols, const float* x, int64_t ldx, float* y,
               int64_t ldy) {
  if (HasAvx512()) return Avx512Transpose(rows, cols, x, ldx, y, ldy);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) y[j * ldy + i] = x[i * ldx + j];
  }
}

}  // namespace ember
