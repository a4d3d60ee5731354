#include "train/model/bf16_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "train/model/avx512_transpose.h"

// Compiled for AVX-512F, BW and BF16 whatever the build's -march, and run
// only where the CPU has them (Bf16GemmAvailable), so that one binary serves
// every CPU. (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized on
// their own undefined-vector argument, a known false positive.)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512bf16,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Its templates are compiled for the target above (register_tile.h).
#include "train/model/register_tile.h"

namespace ember {
namespace {

constexpr int kLanes = register_tile::kLanes;
using register_tile::FirstLanes;

// 16 pairs from 32 floats (x[0, n) of them, the rest zero): bf16 in order,
// so that entry k holds x[2k] low and x[2k + 1] high.
inline __m512i PairsOf(const float* x, int n) {
  const __m512 lo = _mm512_maskz_loadu_ps(FirstLanes(std::min(n, kLanes)), x);
  const __m512 hi =
      n > kLanes ? _mm512_maskz_loadu_ps(FirstLanes(std::min(n - kLanes, kLanes)), x + kLanes)
                 : _mm512_setzero_ps();
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

// Pair entries: one VDPBF16PS (32 multiply-adds) per 16 lanes.
struct PairPolicy {
  using Elem = uint32_t;
  using Vec = __m512bh;
  static Vec LoadB(const uint32_t* p) { return (__m512bh)_mm512_loadu_si512(p); }
  static Vec LoadB(const uint32_t* p, __mmask16 lanes) {
    return (__m512bh)_mm512_maskz_loadu_epi32(lanes, p);
  }
  static Vec Broadcast(uint32_t a) { return (__m512bh)_mm512_set1_epi32(static_cast<int>(a)); }
  static __m512 MultiplyAdd(__m512 acc, Vec a, Vec b) { return _mm512_dpbf16_ps(acc, a, b); }
};

}  // namespace

// The packings and the product, compiled for the target above like the
// helpers they inline.
void PackPairsAlongRows(int rows, int depth, const float* x, int64_t ldx, uint32_t* out,
                        int64_t ldo) {
  // Each row: blocks of 32 floats (16 pairs), then a tail of `rest` floats
  // under masks computed once.
  const int full = depth / (2 * kLanes) * (2 * kLanes);
  const int rest = depth - full;
  const __mmask16 lo_mask = FirstLanes(std::min(rest, kLanes));
  const __mmask16 hi_mask = FirstLanes(std::max(rest - kLanes, 0));
  const __mmask16 out_mask = FirstLanes(PairCount(rest));
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    uint32_t* o = out + r * ldo;
    for (int t = 0; t < full; t += 2 * kLanes) {
      const __m512bh pairs =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xr + t + kLanes), _mm512_loadu_ps(xr + t));
      _mm512_storeu_si512(o + t / 2, (__m512i)pairs);
    }
    if (rest > 0) {
      const __m512bh pairs = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi_mask, xr + full + kLanes),
                                                 _mm512_maskz_loadu_ps(lo_mask, xr + full));
      _mm512_mask_storeu_epi32(o + full / 2, out_mask, (__m512i)pairs);
    }
  }
}

void PackPairsAcrossRows(int depth, int cols, const float* x, int64_t ldx, uint32_t* out,
                         int64_t ldo) {
  // 16-bit lane 2k takes the even row's k-th value, 2k + 1 the odd row's
  // (lanes k and 16 + k of their joint conversion).
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i interleave = _mm512_load_si512(kInterleave);
  auto pairs = [&](__m512 even, __m512 odd) {
    return _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(odd, even));
  };
  const int full = cols / kLanes * kLanes;
  const __mmask16 tail = FirstLanes(cols - full);
  for (int p = 0; p < PairCount(depth); ++p) {
    const float* even = x + 2 * p * ldx;
    // An odd depth's last pair has no odd row: its loads are masked off,
    // which gives the zero high half the layout requires.
    const __mmask16 odd_lanes = 2 * p + 1 < depth ? 0xffff : 0;
    const float* odd = even + ldx;
    uint32_t* o = out + p * ldo;
    for (int j = 0; j < full; j += kLanes) {
      const __m512 hi = _mm512_maskz_loadu_ps(odd_lanes, odd + j);
      _mm512_storeu_si512(o + j, pairs(_mm512_loadu_ps(even + j), hi));
    }
    if (tail != 0) {
      const __m512 hi = _mm512_maskz_loadu_ps(odd_lanes & tail, odd + full);
      const __m512 lo = _mm512_maskz_loadu_ps(tail, even + full);
      _mm512_mask_storeu_epi32(o + full, tail, pairs(lo, hi));
    }
  }
}

// Blocks of 16 rows of x by 16 pairs: each row's pairs into a register,
// transposed in registers, stored as 16 pair rows.
void PackPairsTransposed(int cols, int depth, const float* x, int64_t ldx, uint32_t* out,
                         int64_t ldo) {
  const int pairs = PairCount(depth);
  for (int j = 0; j < cols; j += kLanes) {
    const int block_cols = std::min(kLanes, cols - j);
    for (int p = 0; p < pairs; p += kLanes) {
      const int block_pairs = std::min(kLanes, pairs - p);
      __m512 r[kLanes];
      for (int i = 0; i < kLanes; ++i) {
        r[i] = i < block_cols
                   ? _mm512_castsi512_ps(PairsOf(x + (j + i) * ldx + 2 * p, depth - 2 * p))
                   : _mm512_setzero_ps();
      }
      Transpose16x16(r);
      const __mmask16 m = FirstLanes(block_cols);
      for (int k = 0; k < block_pairs; ++k) {
        _mm512_mask_storeu_epi32(out + (p + k) * ldo + j, m, _mm512_castps_si512(r[k]));
      }
    }
  }
}

void Bf16Gemm(int rows, int cols, int pairs, const uint32_t* a, int64_t a_row, int64_t a_depth,
              const uint32_t* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  if (rows == 0 || cols == 0) return;
  register_tile::Gemm<PairPolicy>(rows, cols, pairs, a, a_row, a_depth, b, ldb, c, ldc,
                                  accumulate);
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

bool Bf16GemmAvailable() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("fma");
  return has;
}

uint16_t ToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace ember
