// The register-tile product that SmallGemm (fp32 FMAs, small_gemm.h) and
// Bf16Gemm (bf16 pairs, bf16_gemm.h) share: C (rows × cols, fp32) = A · B,
// plus C's old values when `accumulate`, computed 6 rows × 64 columns at a
// time in 24 accumulators; A(r, t) = a[r · a_row + t · a_depth] is broadcast
// one entry at a time, B(t, ·) = b + t · ldb loaded 16 lanes at a time.
//
// Include this file after a `#pragma GCC target(...)` that names AVX-512F
// and whatever the policy's instructions need: its templates are compiled
// for the target of the region they are included in.
//
// A policy P supplies the element type and the three steps that differ:
//   using Elem;                                         // A's and B's entries
//   using Vec;                                          // 16 lanes of B
//   static Vec LoadB(const Elem* p);                    // 16 entries at p
//   static Vec LoadB(const Elem* p, __mmask16 lanes);   // those lanes, else 0
//   static Vec Broadcast(Elem a);
//   static __m512 MultiplyAdd(__m512 acc, Vec a, Vec b);  // acc + a · b
// Depth counts P's entries (a bf16 pair is one entry).
#ifndef EMBER_TRAIN_MODEL_REGISTER_TILE_H_
#define EMBER_TRAIN_MODEL_REGISTER_TILE_H_

#include <immintrin.h>

#include <cstdint>

namespace ember::register_tile {

inline constexpr int kLanes = 16;
// The first n of the 16 lanes, n in [0, 16].
inline __mmask16 FirstLanes(int n) { return static_cast<__mmask16>((1u << n) - 1); }
// 6 rows by up to 4 vectors: 24 accumulators and 4 B vectors of the 32
// registers.
inline constexpr int kTileRows = 6;
inline constexpr int kTileVectors = 4;

// C[0, R) × [0, 16·V) of the tile, the last vector's lanes limited by `last`.
template <class P, int R, int V>
inline void Tile(int depth, const typename P::Elem* a, int64_t a_row, int64_t a_depth,
                 const typename P::Elem* b, int64_t ldb, float* c, int64_t ldc, __mmask16 last,
                 bool accumulate) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int t = 0; t < depth; ++t) {
    const typename P::Elem* bt = b + t * ldb;
    typename P::Vec bv[V];
#pragma GCC unroll 8
    for (int v = 0; v + 1 < V; ++v) bv[v] = P::LoadB(bt + v * kLanes);
    bv[V - 1] = P::LoadB(bt + (V - 1) * kLanes, last);
    const typename P::Elem* at = a + t * a_depth;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const typename P::Vec ar = P::Broadcast(at[r * a_row]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = P::MultiplyAdd(acc[r][v], ar, bv[v]);
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
template <class P, int R>
void RowBlock(int cols, int depth, const typename P::Elem* a, int64_t a_row, int64_t a_depth,
              const typename P::Elem* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  constexpr int kBlock = kTileVectors * kLanes;
  int j = 0;
  for (; j + kBlock <= cols; j += kBlock) {
    Tile<P, R, kTileVectors>(depth, a, a_row, a_depth, b + j, ldb, c + j, ldc, 0xffff,
                             accumulate);
  }
  const int rest = cols - j;
  if (rest == 0) return;
  const int vectors = (rest + kLanes - 1) / kLanes;
  const int tail = rest - (vectors - 1) * kLanes;  // 1..16
  const __mmask16 last = FirstLanes(tail);
  const auto* bj = b + j;
  float* cj = c + j;
  switch (vectors) {
    case 1: return Tile<P, R, 1>(depth, a, a_row, a_depth, bj, ldb, cj, ldc, last, accumulate);
    case 2: return Tile<P, R, 2>(depth, a, a_row, a_depth, bj, ldb, cj, ldc, last, accumulate);
    case 3: return Tile<P, R, 3>(depth, a, a_row, a_depth, bj, ldb, cj, ldc, last, accumulate);
    default: return Tile<P, R, 4>(depth, a, a_row, a_depth, bj, ldb, cj, ldc, last, accumulate);
  }
}

// The whole product. REQUIRES: rows, cols, depth >= 0.
template <class P>
void Gemm(int rows, int cols, int depth, const typename P::Elem* a, int64_t a_row,
          int64_t a_depth, const typename P::Elem* b, int64_t ldb, float* c, int64_t ldc,
          bool accumulate) {
  // Blocks of 6 rows, and of 5 where that leaves no remainder below 5 rows:
  // a 1-4 row block loads as many B vectors for fewer multiply-adds (50
  // rows: 5 blocks of 6 and 4 of 5, not 8 of 6 and one of 2).
  const int short_by = (kTileRows - rows % kTileRows) % kTileRows;
  const int fives = rows >= 5 * short_by ? short_by : 0;
  const int sixes_end = rows - 5 * fives;
  int i = 0;
  for (; i + kTileRows <= sixes_end; i += kTileRows) {
    RowBlock<P, kTileRows>(cols, depth, a + i * a_row, a_row, a_depth, b, ldb, c + i * ldc, ldc,
                           accumulate);
  }
  for (; i + 5 <= rows; i += 5) {
    RowBlock<P, 5>(cols, depth, a + i * a_row, a_row, a_depth, b, ldb, c + i * ldc, ldc,
                   accumulate);
  }
  const auto* ai = a + i * a_row;
  float* ci = c + i * ldc;
  switch (rows - i) {
    case 0: return;
    case 1: return RowBlock<P, 1>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
    case 2: return RowBlock<P, 2>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
    case 3: return RowBlock<P, 3>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
    default: return RowBlock<P, 4>(cols, depth, ai, a_row, a_depth, b, ldb, ci, ldc, accumulate);
  }
}

}  // namespace ember::register_tile

#endif  // EMBER_TRAIN_MODEL_REGISTER_TILE_H_
