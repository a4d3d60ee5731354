// The 16 × 16 register transpose that SmallGemm's Transpose and the bf16
// packing share. For translation units compiled for AVX-512F, or inside a
// `#pragma GCC target("avx512f")` region.
#ifndef EMBER_TRAIN_MODEL_AVX512_TRANSPOSE_H_
#define EMBER_TRAIN_MODEL_AVX512_TRANSPOSE_H_

#include <immintrin.h>

namespace ember {

#pragma GCC push_options
#pragma GCC target("avx512f")

// Transposes the 16 × 16 matrix of 32-bit lanes held in r[0, 16) (row i in
// r[i]) in place: lane k of r[i] ends as lane i of r[k]. Moves bits only, so
// it serves any 32-bit lanes.
inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16];
  // Pairs of rows interleaved, then pairs of pairs, then 128-bit lanes
  // gathered in two steps: lane k of every row ends in row k.
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  for (int i = 0; i < 16; i += 8) {
    for (int k = 0; k < 4; ++k) {
      t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88);
      t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xdd);
    }
  }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
  }
}

#pragma GCC pop_options

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_AVX512_TRANSPOSE_H_
