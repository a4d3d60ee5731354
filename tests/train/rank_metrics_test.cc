// RankSums: means over queries, and 95 % intervals over edges.
#include "train/eval/rank_metrics.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

// A query of rank 1 + greater (no ties) among 100 negatives.
QueryRank Rank(double greater) { return QueryRank{greater, 0, 100}; }

TEST(RankSumsTest, MeansOverQueries) {
  RankSums sums;
  sums.AddEdge(Rank(0), Rank(3));   // ranks 1 and 4
  sums.AddEdge(Rank(1), Rank(19));  // ranks 2 and 20
  const RankMetrics m = sums.Metrics();
  EXPECT_EQ(m.edges, 2u);
  EXPECT_EQ(m.count, 4u);
  EXPECT_DOUBLE_EQ(m.mrr, (1 + 0.25 + 0.5 + 0.05) / 4);
  EXPECT_DOUBLE_EQ(m.mr, (1 + 4 + 2 + 20) / 4.0);
  EXPECT_DOUBLE_EQ(m.hits1, 0.25);
  EXPECT_DOUBLE_EQ(m.hits3, 0.5);
  EXPECT_DOUBLE_EQ(m.hits10, 0.75);
  EXPECT_DOUBLE_EQ(m.auc, (1 + 0.97 + 0.99 + 0.81) / 4);
}

TEST(RankSumsTest, IdenticalRanksHaveZeroWidth) {
  RankSums sums;
  for (int e = 0; e < 1000; ++e) sums.AddEdge(QueryRank{1, 3, 50}, QueryRank{1, 3, 50});
  const RankMetrics m = sums.Metrics();
  EXPECT_DOUBLE_EQ(m.mrr, 1 / 3.5);
  EXPECT_EQ(m.mrr_ci95, 0);
  EXPECT_EQ(m.hits1_ci95, 0);
  EXPECT_EQ(m.hits3_ci95, 0);
  EXPECT_EQ(m.hits10_ci95, 0);
}

TEST(RankSumsTest, HalfWidthByHand) {
  // Hits@1 per edge: 1 and 0; mean 0.5, sample variance 0.5, so the
  // half-width is 1.96 · √(0.5 / 2).
  RankSums sums;
  sums.AddEdge(Rank(0), Rank(0));
  sums.AddEdge(Rank(5), Rank(5));
  const RankMetrics m = sums.Metrics();
  EXPECT_DOUBLE_EQ(m.hits1, 0.5);
  EXPECT_NEAR(m.hits1_ci95, 1.959963984540054 * std::sqrt(0.25), 1e-12);
  EXPECT_NEAR(m.mrr_ci95, 1.959963984540054 * std::sqrt((1 - 1 / 6.0) * (1 - 1 / 6.0) / 4),
              1e-12);
  // One edge: no spread to estimate.
  RankSums one;
  one.AddEdge(Rank(0), Rank(5));
  EXPECT_EQ(one.Metrics().mrr_ci95, 0);
}

TEST(RankSumsTest, HalfWidthShrinksWithSampleSize) {
  // The same mix of ranks, 10 and 1000 edges.
  auto half_width = [](int edges) {
    RankSums sums;
    for (int e = 0; e < edges; ++e) sums.AddEdge(Rank(e % 5), Rank((e * 3) % 7));
    return sums.Metrics();
  };
  const RankMetrics small = half_width(10), large = half_width(1000);
  EXPECT_GT(small.mrr_ci95, 0);
  EXPECT_GT(large.mrr_ci95, 0);
  // √(1000 / 10) = 10 times narrower, up to the variance estimates' spread.
  EXPECT_LT(large.mrr_ci95, small.mrr_ci95 / 5);
  EXPECT_LT(large.hits1_ci95, small.hits1_ci95 / 5);
  EXPECT_LT(large.hits3_ci95, small.hits3_ci95 / 5);
}

TEST(RankSumsTest, EdgeIsTheSampledUnit) {
  // Each edge has one query at rank 1 and one far down: every edge's mean is
  // the same, so the interval has zero width although the queries differ.
  RankSums sums;
  for (int e = 0; e < 100; ++e) sums.AddEdge(Rank(0), Rank(50));
  const RankMetrics m = sums.Metrics();
  EXPECT_DOUBLE_EQ(m.hits1, 0.5);
  EXPECT_EQ(m.hits1_ci95, 0);
  EXPECT_EQ(m.mrr_ci95, 0);
}

TEST(PairedMrrDifferenceTest, ByHand) {
  const std::vector<float> a = {0.5f, 0.25f, 1.0f, 0.0f};
  const std::vector<float> b = {0.25f, 0.25f, 0.5f, 0.0f};
  // Differences 0.25, 0, 0.5, 0: mean 0.1875, sample variance
  // (0.0625² + 2 · 0.1875² + 0.3125²) / 3 = 0.0572916..
  const PairedDifference d = PairedMrrDifference(a, b);
  EXPECT_EQ(d.edges, 4u);
  EXPECT_DOUBLE_EQ(d.mean, 0.1875);
  const double se = std::sqrt((0.0625 * 0.0625 + 2 * 0.1875 * 0.1875 + 0.3125 * 0.3125) / 3 / 4);
  EXPECT_NEAR(d.ci95, 1.959963984540054 * se, 1e-12);
  EXPECT_NEAR(d.z, 0.1875 / se, 1e-9);
  // Swapped: the same interval, the opposite sign.
  const PairedDifference back = PairedMrrDifference(b, a);
  EXPECT_DOUBLE_EQ(back.mean, -d.mean);
  EXPECT_DOUBLE_EQ(back.ci95, d.ci95);
}

TEST(PairedMrrDifferenceTest, EqualDifferences) {
  const std::vector<float> a = {0.5f, 0.5f, 0.5f};
  EXPECT_EQ(PairedMrrDifference(a, a).z, 0);
  EXPECT_EQ(PairedMrrDifference(a, a).ci95, 0);
  const std::vector<float> b = {0.25f, 0.25f, 0.25f};
  EXPECT_TRUE(std::isinf(PairedMrrDifference(a, b).z));
  EXPECT_GT(PairedMrrDifference(a, b).z, 0);
}

TEST(RandomRankingMrrTest, HarmonicNumberOverCandidates) {
  EXPECT_DOUBLE_EQ(RandomRankingMrr(1), 1);
  EXPECT_DOUBLE_EQ(RandomRankingMrr(2), 0.75);
  EXPECT_NEAR(RandomRankingMrr(2000), 8.178368103 / 2000, 1e-9);
  // The approximation above 100000 candidates meets the sum.
  EXPECT_NEAR(RandomRankingMrr(100001) / RandomRankingMrr(100000), 1, 1e-4);
}

}  // namespace
}  // namespace ember
