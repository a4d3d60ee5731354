// Elementwise and reduction helpers for the scoring kernels, written with GCC
// vector extensions (8 floats) so that they run as SIMD whatever the
// optimizer's cost model (-O2 leaves most loops of unknown length scalar) and
// without -ffast-math: reductions reassociate explicitly, and Exp/Log are
// branch-free polynomial approximations (Cephes) instead of libm calls.
// Internal to train/.
#ifndef EMBER_TRAIN_MODEL_VEC_MATH_H_
#define EMBER_TRAIN_MODEL_VEC_MATH_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace ember::vec {

using F8 = float __attribute__((vector_size(32)));
using I8 = int32_t __attribute__((vector_size(32)));
inline constexpr int kWidth = 8;

inline F8 Splat(float x) { return F8{} + x; }
inline F8 Load(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
#if defined(__AVX2__)
// All ones in lanes [0, n): the mask of a partial load or store.
inline __m256i FirstLanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif
// Lanes [n, 8) are zero; floats past p + n are not read. REQUIRES: 0 <= n < 8.
// (A masked load where the CPU has one: a memcpy of n floats costs a call.)
inline F8 LoadPartial(const float* p, int n) {
#if defined(__AVX2__)
  return (F8)_mm256_maskload_ps(p, FirstLanes(n));
#else
  F8 v = {};
  std::memcpy(&v, p, sizeof(float) * n);
  return v;
#endif
}
inline void Store(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
// Writes lanes [0, n) only. REQUIRES: 0 <= n < 8.
inline void StorePartial(float* p, F8 v, int n) {
#if defined(__AVX2__)
  _mm256_maskstore_ps(p, FirstLanes(n), (__m256)v);
#else
  std::memcpy(p, &v, sizeof(float) * n);
#endif
}
// Zeroes lanes [n, 8).
inline F8 KeepFirst(F8 v, int n) {
  const I8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  return lane < n ? v : F8{};
}
inline float HorizontalSum(F8 v) {
  float s = 0.0f;
  for (int k = 0; k < kWidth; ++k) s += v[k];
  return s;
}
inline F8 Max(F8 a, F8 b) { return a > b ? a : b; }
inline F8 Min(F8 a, F8 b) { return a < b ? a : b; }
inline F8 Abs(F8 x) { return (F8)((I8)x & 0x7fffffff); }
inline F8 Sqrt(F8 x) {
#if defined(__AVX__)
  return (F8)_mm256_sqrt_ps((__m256)x);
#else
  for (int k = 0; k < kWidth; ++k) x[k] = std::sqrt(x[k]);
  return x;
#endif
}

// Cephes' polynomial for e^r on [-ln 2 / 2, ln 2 / 2], highest power first:
// e^r ≈ 1 + r + r² · p(r), p by Horner from these coefficients.
inline constexpr float kExpCoefficients[] = {1.9875691500e-4f, 1.3981999507e-3f,
                                             8.3334519073e-3f, 4.1665795894e-2f,
                                             1.6666665459e-1f, 5.0000001201e-1f};

// e^x with relative error below 3e-7 for x in [-87, 88]; x is clamped to
// that range (so Exp(-inf) is ~1e-38, not 0, and never NaN for finite x).
inline F8 Exp(F8 x) {
  x = Min(Max(x, Splat(-87.0f)), Splat(88.0f));
  const F8 t = x * 1.44269504088896341f + 0.5f;
  F8 n = __builtin_convertvector(__builtin_convertvector(t, I8), F8);
  n = n > t ? n - 1.0f : n;  // floor(t); truncation rounds toward zero
  F8 r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const F8 z = r * r;
  F8 p = Splat(kExpCoefficients[0]);
  for (size_t k = 1; k < std::size(kExpCoefficients); ++k) p = p * r + kExpCoefficients[k];
  p = p * z + r + 1.0f;
  const I8 bits = (__builtin_convertvector(n, I8) + 127) << 23;
  return p * (F8)bits;
}

#if defined(__AVX512F__)
// e^x on one AVX-512 register, for x <= 88: Exp's polynomial with the range
// reduced by rounding and scalef (half Exp's instructions per lane). x is
// clamped below at -87.3 (NaN too), so the result is never NaN or 0.
inline __m512 Exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(kExpCoefficients[0]);
  for (size_t k = 1; k < std::size(kExpCoefficients); ++k) {
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpCoefficients[k]));
  }
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}
#endif

// Natural log for normal x > 0; absolute error below 2e-7 on [1, 2].
inline F8 Log(F8 x) {
  const I8 bits = (I8)x;
  F8 e = __builtin_convertvector(((bits >> 23) & 0xff) - 126, F8);
  F8 m = (F8)((bits & 0x007fffff) | 0x3f000000);  // mantissa in [0.5, 1)
  const I8 small = m < 0.707106781186547524f;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const F8 z = m * m;
  F8 y = Splat(7.0376836292e-2f);
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += e * -2.12194440e-4f;
  y -= 0.5f * z;
  return m + y + e * 0.693359375f;
}

// out[k] = f(in[k]...) for k < n, where f maps F8s to an F8 lane-wise.
// `out` may equal any `in` (each block is read before it is written).
template <typename F, typename... In>
inline void Map(int n, float* out, F f, const In*... in) {
  int i = 0;
  for (; i + kWidth <= n; i += kWidth) Store(out + i, f(Load(in + i)...));
  if (i < n) StorePartial(out + i, f(LoadPartial(in + i, n - i)...), n - i);
}

// As Map, and returns Σ_k out[k].
template <typename F, typename... In>
inline float MapSum(int n, float* out, F f, const In*... in) {
  F8 acc = {};
  int i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    const F8 v = f(Load(in + i)...);
    Store(out + i, v);
    acc += v;
  }
  if (i < n) {
    const F8 v = KeepFirst(f(LoadPartial(in + i, n - i)...), n - i);
    StorePartial(out + i, v, n - i);
    acc += v;
  }
  return HorizontalSum(acc);
}

// Σ_k f(in[k]...).
template <typename F, typename... In>
inline float Reduce(int n, F f, const In*... in) {
  F8 acc0 = {}, acc1 = {};
  int i = 0;
  for (; i + 2 * kWidth <= n; i += 2 * kWidth) {
    acc0 += f(Load(in + i)...);
    acc1 += f(Load(in + i + kWidth)...);
  }
  for (; i + kWidth <= n; i += kWidth) acc0 += f(Load(in + i)...);
  if (i < n) acc1 += KeepFirst(f(LoadPartial(in + i, n - i)...), n - i);
  return HorizontalSum(acc0 + acc1);
}

inline float Sum(const float* x, int n) {
  return Reduce(
      n, [](F8 v) { return v; }, x);
}
inline float Dot(const float* a, const float* b, int n) {
  return Reduce(
      n, [](F8 u, F8 v) { return u * v; }, a, b);
}
// Σ (a_k - b_k)^2.
inline float SquaredDistance(const float* a, const float* b, int n) {
  return Reduce(
      n, [](F8 u, F8 v) { return (u - v) * (u - v); }, a, b);
}

// REQUIRES: n >= 1.
inline float Max(const float* x, int n) {
  F8 acc = Splat(x[0]);
  int i = 0;
  for (; i + kWidth <= n; i += kWidth) acc = Max(acc, Load(x + i));
  float m = x[0];
  for (; i < n; ++i) m = std::max(m, x[i]);
  for (int k = 0; k < kWidth; ++k) m = std::max(m, acc[k]);
  return m;
}

// y[k] += x[k].
inline void Add(const float* x, int n, float* y) {
  Map(
      n, y, [](F8 a, F8 b) { return a + b; }, y, x);
}

// l2 scores are -sqrt(max(d^2, kMinSquaredDistance)), as in PBG.
inline constexpr float kMinSquaredDistance = 1e-30f;
// cos: |x| is clamped below at this value (torch.nn.functional.normalize);
// the chunk and candidate scorers share it.
inline constexpr float kMinNorm = 1e-12f;

// Turns a rows x cols matrix of dot products s[i][j] = <x_i, y_j> into l2
// scores -|x_i - y_j| via |x|^2 + |y|^2 - 2<x, y>, given row_sq[i] = |x_i|^2
// and col_sq[j] = |y_j|^2.
inline void DotsToNegativeDistances(float* s, int rows, int cols,
                                    const float* row_sq, const float* col_sq) {
  for (int i = 0; i < rows; ++i) {
    float* si = s + int64_t{i} * cols;
    const float ri = row_sq[i];
    Map(
        cols, si,
        [ri](F8 dot, F8 cj) {
          const F8 d2 = ri + cj - 2.0f * dot;
          return -Sqrt(Max(d2, Splat(kMinSquaredDistance)));
        },
        si, col_sq);
  }
}

}  // namespace ember::vec

#endif  // EMBER_TRAIN_MODEL_VEC_MATH_H_
