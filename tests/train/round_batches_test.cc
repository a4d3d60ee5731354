#include "train/round_batches.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

// A partition of `rows` nodes whose node r has nnz[r] features (feature ids
// are irrelevant to batching).
PartitionData FeaturedPartition(const std::vector<uint32_t>& nnz) {
  PartitionData p;
  p.rows = nnz.size();
  p.dim = 4;
  p.feature_row_start.push_back(0);
  for (uint32_t n : nnz) {
    for (uint32_t k = 0; k < n; ++k) p.feature_entries.push_back({k, 1.0f});
    p.feature_row_start.push_back(p.feature_entries.size());
  }
  return p;
}

// Heavy-tailed non-zeros: discrete Pareto alpha 1.2 in [1, 4096].
std::vector<uint32_t> HeavyTailedNnz(size_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1e-12, 1.0);
  std::vector<uint32_t> nnz(rows);
  for (uint32_t& n : nnz) n = std::min<uint32_t>(4096, uint32_t(std::pow(u(rng), -1 / 1.2)));
  return nnz;
}

std::vector<Edge> RandomEdges(size_t n, uint32_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Edge> edges(n);
  for (Edge& e : edges) e = Edge{uint32_t(rng() % rows), 0, uint32_t(rng() % rows)};
  return edges;
}

using EdgeKey = std::tuple<uint32_t, uint32_t, uint32_t>;
std::multiset<EdgeKey> Keys(std::span<const Edge> edges) {
  std::multiset<EdgeKey> out;
  for (const Edge& e : edges) out.insert({e.src, e.rel, e.dst});
  return out;
}

class PlanTest : public ::testing::TestWithParam<BatchingKind> {};

// Every edge lies in exactly one batch; batches tile [0, n) in order; the
// recorded work is the edges' work.
TEST_P(PlanTest, BatchesTileTheBucketAndKeepEveryEdgeOnce) {
  const PartitionData part = FeaturedPartition(HeavyTailedNnz(5000, 1));
  std::vector<Edge> edges = RandomEdges(20000, 5000, 2);
  const auto before = Keys(edges);
  BucketTask task;
  task.src = const_cast<PartitionData*>(&part);
  task.dst = task.src;
  task.edges = edges;
  const uint32_t edge_cost = 7;
  const std::vector<BatchRange> batches =
      PlanBucketBatches(GetParam(), 3, task, &edges, 256, 9, edge_cost);
  EXPECT_EQ(Keys(edges), before);
  const std::vector<uint32_t> work = EdgeWorks(task, edge_cost);
  uint64_t next = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    EXPECT_EQ(batches[b].task, 3u);
    EXPECT_EQ(batches[b].index, b);
    EXPECT_EQ(batches[b].lo, next);
    EXPECT_GT(batches[b].hi, batches[b].lo);
    uint64_t w = 0, nnz = 0;
    for (uint64_t i = batches[b].lo; i < batches[b].hi; ++i) {
      w += work[i];
      nnz += part.FeatureCount(edges[i].src) + part.FeatureCount(edges[i].dst);
    }
    EXPECT_EQ(batches[b].work, w) << "batch " << b;
    EXPECT_EQ(batches[b].nnz, nnz) << "batch " << b;
    EXPECT_GE(batches[b].lr_scale, 0.5f);
    EXPECT_LE(batches[b].lr_scale, 2.0f);
    next = batches[b].hi;
  }
  EXPECT_EQ(next, edges.size());
}

INSTANTIATE_TEST_SUITE_P(Kinds, PlanTest,
                         ::testing::Values(BatchingKind::kFixed, BatchingKind::kVarianceAware),
                         [](const auto& info) {
                           return info.param == BatchingKind::kFixed ? "Fixed" : "VarianceAware";
                         });

// On heavy-tailed work the variance-aware batches' work spread is far below
// fixed batching's: regular batches lie in [T, 1.1 T] (batch_former.h).
TEST(PlanBucketBatchesTest, VarianceAwareEvensOutWork) {
  const PartitionData part = FeaturedPartition(HeavyTailedNnz(20000, 3));
  std::vector<Edge> fixed_edges = RandomEdges(100000, 20000, 4);
  std::vector<Edge> va_edges = fixed_edges;
  auto spread = [&](BatchingKind kind, std::vector<Edge>* edges) {
    BucketTask task;
    task.src = const_cast<PartitionData*>(&part);
    task.dst = task.src;
    task.edges = *edges;
    std::vector<double> work;
    for (const BatchRange& b : PlanBucketBatches(kind, 0, task, edges, 256, 5)) {
      work.push_back(double(b.work));
    }
    work.pop_back();  // the last batch is short in both
    return Spread(work);
  };
  const SpreadStats fixed = spread(BatchingKind::kFixed, &fixed_edges);
  const SpreadStats va = spread(BatchingKind::kVarianceAware, &va_edges);
  EXPECT_GT(fixed.max_over_mean, 1.5);
  EXPECT_LT(va.cv, fixed.cv / 3);
}

// Without features every edge weighs 1, and variance-aware batches have
// batch_size edges (within the closing window).
TEST(PlanBucketBatchesTest, UniformWorkGivesEqualBatches) {
  PartitionData part;
  part.rows = 1000;
  std::vector<Edge> edges = RandomEdges(10000, 1000, 6);
  BucketTask task;
  task.src = &part;
  task.dst = &part;
  task.edges = edges;
  const auto batches = PlanBucketBatches(BatchingKind::kVarianceAware, 0, task, &edges, 100, 7);
  ASSERT_GE(batches.size(), 90u);
  for (size_t b = 0; b + 1 < batches.size(); ++b) {
    EXPECT_GE(batches[b].hi - batches[b].lo, 100u);
    EXPECT_LE(batches[b].hi - batches[b].lo, 110u);
  }
}

// The fit recovers a known cost: batch time = 3e-6 s per edge + 1e-7 s per
// non-zero, i.e. an edge costs 30 non-zeros.
TEST(BatchCostModelTest, FitsEdgeCostFromBatchTimes) {
  BatchCostModel model;
  EXPECT_EQ(model.EdgeCost(), BatchCostModel::kPriorEdgeCost);
  std::mt19937_64 rng(8);
  for (int i = 0; i < 200; ++i) {
    BatchRecord r;
    r.edges = 500 + rng() % 1000;
    r.nnz = rng() % 50000;
    r.seconds = 3e-6 * r.edges + 1e-7 * r.nnz;
    model.Add(r);
    if (i < 14) {
      EXPECT_EQ(model.EdgeCost(), BatchCostModel::kPriorEdgeCost);
    }
  }
  EXPECT_EQ(model.EdgeCost(), 30u);
}

// Without features the fit is undetermined, and the prior stays.
TEST(BatchCostModelTest, NoFeaturesKeepsThePrior) {
  BatchCostModel model;
  for (int i = 0; i < 100; ++i) model.Add(BatchRecord{0.01, 1000, 0});
  EXPECT_EQ(model.EdgeCost(), BatchCostModel::kPriorEdgeCost);
}

std::vector<BatchRange> BatchesOf(uint32_t task, size_t n) {
  std::vector<BatchRange> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].task = task;
    out[i].index = i;
  }
  return out;
}

std::vector<BatchRange> Drain(BatchQueue* q) {
  std::vector<BatchRange> out;
  while (const BatchRange* b = q->Next()) out.push_back(*b);
  return out;
}

// Fixed: trainer t takes bucket t mod k; trainers sharing a bucket split its
// batches. Every batch is dealt exactly once.
TEST(DealRoundBatchesTest, FixedIsAStaticSplit) {
  const std::vector<std::vector<BatchRange>> per_bucket = {BatchesOf(0, 7)};
  RoundQueues q = DealRoundBatches(BatchingKind::kFixed, per_bucket, 2);
  ASSERT_EQ(q.of_trainer.size(), 2u);
  EXPECT_NE(q.of_trainer[0], q.of_trainer[1]);
  const auto a = Drain(q.of_trainer[0]);
  const auto b = Drain(q.of_trainer[1]);
  EXPECT_EQ(a.size() + b.size(), 7u);
  EXPECT_EQ(a.size(), 3u);
  for (const auto& r : a) EXPECT_LT(r.index, 3u);
  for (const auto& r : b) EXPECT_GE(r.index, 3u);

  const std::vector<std::vector<BatchRange>> two = {BatchesOf(0, 4), BatchesOf(1, 5)};
  q = DealRoundBatches(BatchingKind::kFixed, two, 2);
  for (const auto& r : Drain(q.of_trainer[0])) EXPECT_EQ(r.task, 0u);
  const auto second = Drain(q.of_trainer[1]);
  EXPECT_EQ(second.size(), 5u);
  for (const auto& r : second) EXPECT_EQ(r.task, 1u);
}

// Variance-aware: one queue for all, buckets interleaved, each batch once.
TEST(DealRoundBatchesTest, VarianceAwareSharesOneInterleavedQueue) {
  const std::vector<std::vector<BatchRange>> two = {BatchesOf(0, 2), BatchesOf(1, 4)};
  RoundQueues q = DealRoundBatches(BatchingKind::kVarianceAware, two, 2);
  ASSERT_EQ(q.of_trainer.size(), 2u);
  EXPECT_EQ(q.of_trainer[0], q.of_trainer[1]);
  const auto all = Drain(q.of_trainer[0]);
  ASSERT_EQ(all.size(), 6u);
  const std::vector<std::pair<uint32_t, uint64_t>> want = {{0, 0}, {1, 0}, {0, 1},
                                                           {1, 1}, {1, 2}, {1, 3}};
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].task, want[i].first) << i;
    EXPECT_EQ(all[i].index, want[i].second) << i;
  }
  EXPECT_EQ(q.of_trainer[1]->Next(), nullptr);
}

}  // namespace
}  // namespace ember
