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
  // Normal, not merely scaled: 68.27 % within one sigma, 95.45 % within two.
  int within_one = 0, within_two = 0;
  for (float v : x) {
    within_one += std::fabs(v) < kDefaultInitScale;
    within_two += std::fabs(v) < 2 * kDefaultInitScale;
  }
  EXPECT_NEAR(within_one / n, 0.6827, 0.01);
  EXPECT_NEAR(within_two / n, 0.9545, 0.005);
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
  const int dim = 9;  // odd: the last pair of normals is cut
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

TEST(InitTest, ParallelFillEqualsRowRangesFilledOneByOne) {
  // 5000 rows: the whole table is filled by parallel tasks, each range of
  // 100 rows on the calling thread alone; the values must not depend on it.
  const int rows = 5000, dim = 17, range = 100;
  std::vector<float> whole(rows * dim), pieces(rows * dim);
  InitEmbeddings(InitDistribution::kNormal, 1.0f, 3, 0, rows, dim, whole.data());
  for (int first = 0; first < rows; first += range) {
    InitEmbeddings(InitDistribution::kNormal, 1.0f, 3, first, range, dim,
                   pieces.data() + first * dim);
  }
  EXPECT_EQ(whole, pieces);
}

}  // namespace
}  // namespace ember
