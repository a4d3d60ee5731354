// Small elementwise and reduction helpers for the scoring kernels, written so
// that GCC vectorizes them without -ffast-math: reductions keep kLanes partial
// sums (an explicit reassociation), and Exp/Log are branch-free polynomial
// approximations (Cephes) instead of libm calls. Internal to train/.
#ifndef EMBER_TRAIN_VEC_MATH_H_
#define EMBER_TRAIN_VEC_MATH_H_

#include <algorithm>
#include <bit>
#include <cstdint>

namespace ember::vec {

inline constexpr int kLanes = 16;

// e^x with relative error below 3e-7 for x in [-87, 88]; x is clamped to
// that range (so Exp(-inf) is ~1e-38, not 0, and never NaN for finite x).
inline float Exp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float n = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

// Natural log for normal x > 0, absolute error below 2e-7 on [1, 2].
inline float Log(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  float e = static_cast<float>(((bits >> 23) & 0xff) - 126);
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);  // [.5,1)
  const bool small = m < 0.707106781186547524f;
  e = small ? e - 1.0f : e;
  m = small ? m + m - 1.0f : m - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
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

inline float Sum(const float* x, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) acc[k] += x[i + k];
  }
  float s = 0.0f;
  for (; i < n; ++i) s += x[i];
  for (int k = 0; k < kLanes; ++k) s += acc[k];
  return s;
}

// REQUIRES: n >= 1.
inline float Max(const float* x, int n) {
  float acc[kLanes];
  for (int k = 0; k < kLanes; ++k) acc[k] = x[0];
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) acc[k] = std::max(acc[k], x[i + k]);
  }
  float m = x[0];
  for (; i < n; ++i) m = std::max(m, x[i]);
  for (int k = 0; k < kLanes; ++k) m = std::max(m, acc[k]);
  return m;
}

inline float Dot(const float* a, const float* b, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) acc[k] += a[i + k] * b[i + k];
  }
  float s = 0.0f;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int k = 0; k < kLanes; ++k) s += acc[k];
  return s;
}

// Σ (a_k - b_k)^2.
inline float SquaredDistance(const float* a, const float* b, int n) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      const float t = a[i + k] - b[i + k];
      acc[k] += t * t;
    }
  }
  float s = 0.0f;
  for (; i < n; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  for (int k = 0; k < kLanes; ++k) s += acc[k];
  return s;
}

// y[k] += x[k].
inline void Add(const float* x, int n, float* y) {
  for (int k = 0; k < n; ++k) y[k] += x[k];
}

}  // namespace ember::vec

#endif  // EMBER_TRAIN_VEC_MATH_H_
