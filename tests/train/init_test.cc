#include "train/model/init.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

TEST(InitTest, NormalHasPbgScale) {
  const int rows = 1000, dim = 100;
  std::vector<float> x(rows * dim);
  InitEmbeddings(InitDistribution::kNormal, kDefaultInitScale, 42, 0, rows, dim,
                 x.data());
  double sum = 0, sum_sq = 0;
  for (float v : x) {
    sum += v;
    sum_sq += double{v} * v;
  }
  const double n = x.size();
  const double mean = sum / n;
  const double stddev = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 5 * kDefaultInitScale / std::sqrt(n));
  EXPECT_NEAR(stddev, kDefaultInitScale, 0.02 * kDefaultInitScale);
}

TEST(InitTest, UniformStaysInRange) {
  std::vector<float> x(500 * 7);
  InitEmbeddings(InitDistribution::kUniform, 0.5f, 1, 0, 500, 7, x.data());
  double sum = 0;
  for (float v : x) {
    EXPECT_LE(std::fabs(v), 0.5f);
    sum += v;
  }
  EXPECT_NEAR(sum / x.size(), 0.0, 0.02);
}

TEST(InitTest, RowsDependOnlyOnSeedAndIndex) {
  const int dim = 9;  // odd: the last Box-Muller pair is cut
  std::vector<float> whole(20 * dim), tail(5 * dim), other_seed(20 * dim);
  InitEmbeddings(InitDistribution::kNormal, 1.0f, 7, 0, 20, dim, whole.data());
  InitEmbeddings(InitDistribution::kNormal, 1.0f, 7, 15, 5, dim, tail.data());
  InitEmbeddings(InitDistribution::kNormal, 1.0f, 8, 0, 20, dim,
                 other_seed.data());
  for (int k = 0; k < 5 * dim; ++k) EXPECT_EQ(tail[k], whole[15 * dim + k]);
  EXPECT_NE(whole, other_seed);
  // Distinct rows differ.
  EXPECT_NE(std::vector<float>(whole.begin(), whole.begin() + dim),
            std::vector<float>(whole.begin() + dim, whole.begin() + 2 * dim));
}

}  // namespace
}  // namespace ember
