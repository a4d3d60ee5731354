#include "train/model/small_gemm.h"

#include <cblas.h>
#include <immintrin.h>

#include <algorithm>

namespace ember {
namespace {

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

constexpr int kLanes = 16;
// The register tile: kTileRows rows of C by up to kTileVectors · 16 columns
// (24 accumulators and 4 B vectors of the 32 registers).
constexpr int kTileRows = 6;
constexpr int kTileVectors = 4;

// C[0, R) × [0, 16·V) of the tile, the last vector's lanes limited by `last`.
template <int R, int V>
inline void Tile(int depth, const float* a, int64_t a_row, int64_t a_depth,
                 const float* b, int64_t ldb, float* c, int64_t ldc,
                 __mmask16 last, bool accumulate) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int t = 0; t < depth; ++t) {
    const float* bt = b + t * ldb;
    __m512 bv[V];
#pragma GCC unroll 8
    for (int v = 0; v + 1 < V; ++v) bv[v] = _mm512_loadu_ps(bt + v * kLanes);
    bv[V - 1] = _mm512_maskz_loadu_ps(last, bt + (V - 1) * kLanes);
    const float* at = a + t * a_depth;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 ar = _mm512_set1_ps(at[r * a_row]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const __mmask16 m = v + 1 < V ? __mmask16(0xffff) : last;
      __m512 x = acc[r][v];
      if (accumulate) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, cr + v * kLanes));
      _mm512_mask_storeu_ps(cr + v * kLanes, m, x);
    }
  }
}

// R rows of C, all its columns.
template <int R>
void RowBlock(int cols, int depth, const float* a, int64_t a_row,
              int64_t a_depth, const float* b, int64_t ldb, float* c,
              int64_t ldc, bool accumulate) {
  constexpr int kBlock = kTileVectors * kLanes;
  int j = 0;
  for (; j + kBlock <= cols; j += kBlock) {
    Tile<R, kTileVectors>(depth, a, a_row, a_depth, b + j, ldb, c + j, ldc, 0xffff, accumulate);
  }
  const int rest = cols - j;
  if (rest == 0) return;
  const int vectors = (rest + kLanes - 1) / kLanes;
  const int tail = rest - (vectors - 1) * kLanes;  // 1..16
  const __mmask16 last = static_cast<__mmask16>((1u << tail) - 1);
  switch (vectors) {
    case 1: return Tile<R, 1>(depth, a, a_row, a_depth, b + j, ldb, c + j, ldc, last, accumulate);
    case 2: return Tile<R, 2>(depth, a, a_row, a_depth, b + j, ldb, c + j, ldc, last, accumulate);
    case 3: return Tile<R, 3>(depth, a, a_row, a_depth, b + j, ldb, c + j, ldc, last, accumulate);
    default: return Tile<R, 4>(depth, a, a_row, a_depth, b + j, ldb, c + j, ldc, last, accumulate);
  }
}

void Avx512Gemm(int rows, int cols, int depth, const float* a, int64_t a_row,
                int64_t a_depth, const float* b, int64_t ldb, float* c,
                int64_t ldc, bool accumulate) {
  int i = 0;
  for (; i + kTileRows <= rows; i += kTileRows) {
    RowBlock<kTileRows>(cols, depth, a + i * a_row, a_row, a_depth, b, ldb, c + i * ldc, ldc,
                        accumulate);
  }
  const float* ai = a + i * a_row;
  float* ci = c + i * ldc;
  switch (rows - i) {
    case 0: return;
    case 1: return RowBlock<1>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
    case 2: return RowBlock<2>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
    case 3: return RowBlock<3>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
    case 4: return RowBlock<4>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
    default: return RowBlock<5>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
  }
}

// y = xᵀ for one block of up to 16 × 16 (rows × cols of x), in registers.
void TransposeBlock(int rows, int cols, const float* x, int64_t ldx, float* y,
                    int64_t ldy) {
  const __mmask16 col_mask = static_cast<__mmask16>((1u << cols) - 1);
  __m512 r[kLanes];
  for (int i = 0; i < kLanes; ++i) {
    r[i] = i < rows ? _mm512_maskz_loadu_ps(col_mask, x + i * ldx) : _mm512_setzero_ps();
  }
  __m512 t[kLanes];
  // Pairs of rows interleaved, then pairs of pairs, then 128-bit lanes
  // gathered in two steps: lane k of every row ends in row k.
  for (int i = 0; i < kLanes; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < kLanes; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  for (int i = 0; i < kLanes; i += 8) {
    for (int k = 0; k < 4; ++k) {
      t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88);
      t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xdd);
    }
  }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
  }
  const __mmask16 row_mask = static_cast<__mmask16>((1u << rows) - 1);
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
