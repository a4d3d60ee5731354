#include "train/model/vec_math.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace ember::vec {
namespace {

TEST(VecMathTest, ExpIsAccurateOverItsRange) {
  std::vector<float> x, y(0);
  for (float v = -87.0f; v <= 88.0f; v += 0.0137f) x.push_back(v);
  y.resize(x.size());
  Map(
      static_cast<int>(x.size()), y.data(), [](F8 v) { return Exp(v); },
      x.data());
  for (size_t k = 0; k < x.size(); ++k) {
    const double want = std::exp(double{x[k]});
    EXPECT_NEAR(y[k], want, 3e-7 * want) << x[k];
  }
  // Clamped, finite, never NaN.
  const float big[] = {-1e30f, -200.0f, 200.0f};
  float out[3];
  Map(
      3, out, [](F8 v) { return Exp(v); }, big);
  EXPECT_GE(out[0], 0.0f);
  EXPECT_LT(out[1], 1e-37f);
  EXPECT_TRUE(std::isfinite(out[2]));
}

TEST(VecMathTest, LogIsAccurate) {
  std::vector<float> x, y;
  for (float v = 1.0f; v <= 2.0f; v += 0.00097f) x.push_back(v);
  for (float v = 1e-6f; v <= 1e6f; v *= 1.37f) x.push_back(v);
  y.resize(x.size());
  Map(
      static_cast<int>(x.size()), y.data(), [](F8 v) { return Log(v); },
      x.data());
  for (size_t k = 0; k < x.size(); ++k) {
    const double want = std::log(double{x[k]});
    EXPECT_NEAR(y[k], want, 2e-7 + 2e-7 * std::fabs(want)) << x[k];
  }
}

TEST(VecMathTest, ReductionsHandleTails) {
  for (int n = 1; n <= 37; ++n) {
    std::vector<float> a(n), b(n);
    double dot = 0, sum = 0;
    float max = -1e9f;
    for (int k = 0; k < n; ++k) {
      a[k] = 0.5f * k - 3.0f;
      b[k] = 1.0f - 0.25f * k;
      dot += double{a[k]} * b[k];
      sum += a[k];
      max = std::max(max, b[k] * b[k]);
    }
    EXPECT_NEAR(Dot(a.data(), b.data(), n), dot, 1e-4) << n;
    EXPECT_NEAR(Sum(a.data(), n), sum, 1e-4) << n;
    std::vector<float> sq(n);
    const float sq_sum = MapSum(
        n, sq.data(), [](F8 v) { return v * v; }, b.data());
    EXPECT_EQ(Max(sq.data(), n), max) << n;
    double want_sq = 0;
    for (float v : b) want_sq += double{v} * v;
    EXPECT_NEAR(sq_sum, want_sq, 1e-3) << n;
  }
}

TEST(VecMathTest, PartialLoadsAndStoresKeepToTheirLanes) {
  float src[8], dst[8];
  for (int n = 0; n < kWidth; ++n) {
    for (int k = 0; k < 8; ++k) {
      src[k] = 1.0f + k;
      dst[k] = -1.0f;
    }
    const F8 v = LoadPartial(src, n);
    for (int k = 0; k < kWidth; ++k) EXPECT_EQ(v[k], k < n ? src[k] : 0.0f) << n << " " << k;
    StorePartial(dst, Splat(7.0f), n);
    for (int k = 0; k < 8; ++k) EXPECT_EQ(dst[k], k < n ? 7.0f : -1.0f) << n << " " << k;
  }
}

}  // namespace
}  // namespace ember::vec
