#include "train/batch/round_batches.h"

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
  const uint32_t edge_cost = 7;
  const std::vector<BatchRange> batches =
      PlanWindowBatches(GetParam(), task, std::span<Edge>(edges), 256, 9, edge_cost,
                        /*group_by_relation=*/false, /*first_index=*/40);
  EXPECT_EQ(Keys(edges), before);
  const std::vector<uint32_t> work = EdgeWorks(task, edges, edge_cost);
  uint64_t next = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    EXPECT_EQ(batches[b].index, 40 + b);
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

// Weights (weighted graphs) move with their edges through the batch
// plan's permutation, its per-batch shuffles and the relation sort, and the
// edges end in the order they take without weights.
TEST_P(PlanTest, WeightsStayBesideTheirEdges) {
  const PartitionData part = FeaturedPartition(HeavyTailedNnz(5000, 1));
  std::vector<Edge> edges = RandomEdges(20000, 5000, 2);
  for (size_t i = 0; i < edges.size(); ++i) edges[i].rel = i % 3;
  // A weight that names its edge; edges repeat, and so do their weights.
  auto weight_of = [](const Edge& e) { return float(e.src) + float(e.dst % 7) / 8 + e.rel; };
  std::vector<float> weights(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) weights[i] = weight_of(edges[i]);
  std::vector<Edge> unweighted = edges;
  BucketTask task;
  task.src = const_cast<PartitionData*>(&part);
  task.dst = task.src;
  const std::vector<BatchRange> with =
      PlanWindowBatches(GetParam(), task, std::span<Edge>(edges), 256, 9, 7,
                        /*group_by_relation=*/true, 0, std::span<float>(weights));
  const std::vector<BatchRange> without =
      PlanWindowBatches(GetParam(), task, std::span<Edge>(unweighted), 256, 9, 7,
                        /*group_by_relation=*/true, 0);
  EXPECT_EQ(edges, unweighted);
  ASSERT_EQ(with.size(), without.size());
  size_t wrong = 0;
  for (size_t i = 0; i < edges.size(); ++i) wrong += weights[i] != weight_of(edges[i]);
  EXPECT_EQ(wrong, 0u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, PlanTest,
                         ::testing::Values(BatchingKind::kFixed, BatchingKind::kVarianceAware),
                         [](const auto& info) {
                           return info.param == BatchingKind::kFixed ? "Fixed" : "VarianceAware";
                         });

// On heavy-tailed work the variance-aware batches' work spread is far below
// fixed batching's: regular batches lie in [T, 1.1 T] (batch_former.h).
TEST(PlanWindowBatchesTest, VarianceAwareEvensOutWork) {
  const PartitionData part = FeaturedPartition(HeavyTailedNnz(20000, 3));
  std::vector<Edge> fixed_edges = RandomEdges(100000, 20000, 4);
  std::vector<Edge> va_edges = fixed_edges;
  auto spread = [&](BatchingKind kind, std::vector<Edge>* edges) {
    BucketTask task;
    task.src = const_cast<PartitionData*>(&part);
    task.dst = task.src;
    std::vector<double> work;
    for (const BatchRange& b :
         PlanWindowBatches(kind, task, std::span<Edge>(*edges), 256, 5, 1, false, 0)) {
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
TEST(PlanWindowBatchesTest, UniformWorkGivesEqualBatches) {
  PartitionData part;
  part.rows = 1000;
  std::vector<Edge> edges = RandomEdges(10000, 1000, 6);
  BucketTask task;
  task.src = &part;
  task.dst = &part;
  const auto batches = PlanWindowBatches(BatchingKind::kVarianceAware, task,
                                         std::span<Edge>(edges), 100, 7, 1, false, 0);
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

// Each batch's edges are grouped by relation, and the grouping keeps the
// batch's edges.
TEST(PlanWindowBatchesTest, GroupsEachBatchByRelation) {
  PartitionData part;
  part.rows = 100;
  std::vector<Edge> edges = RandomEdges(1000, 100, 9);
  for (size_t i = 0; i < edges.size(); ++i) edges[i].rel = static_cast<uint32_t>(i * 7 % 5);
  const std::vector<Edge> before = edges;
  BucketTask task;
  task.src = &part;
  task.dst = &part;
  const auto batches = PlanWindowBatches(BatchingKind::kFixed, task, std::span<Edge>(edges), 64,
                                         1, 1, /*group_by_relation=*/true, 0);
  for (const BatchRange& b : batches) {
    const std::span<const Edge> got(edges.data() + b.lo, b.hi - b.lo);
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end(),
                               [](const Edge& x, const Edge& y) { return x.rel < y.rel; }));
    EXPECT_EQ(Keys(got), Keys(std::span<const Edge>(before.data() + b.lo, b.hi - b.lo)));
  }
}

// Position i takes the edge at order[i], for a random permutation with
// cycles of every length.
TEST(PermuteInPlaceTest, AppliesThePermutation) {
  std::vector<Edge> edges = RandomEdges(5000, 1 << 30, 10);
  std::vector<uint32_t> order(edges.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(11));
  const std::vector<Edge> before = edges;
  PermuteInPlace(std::span<Edge>(edges), order);
  for (size_t i = 0; i < edges.size(); ++i) ASSERT_EQ(edges[i], before[order[i]]) << i;
}

// Fixed dealing: trainer t takes bucket t mod k; trainers sharing a bucket
// take its batches in turn; every trainer gets work.
TEST(FixedTrainerOfTest, IsAStaticSplit) {
  // One bucket, two trainers: batches alternate.
  EXPECT_EQ(FixedTrainerOf(0, 1, 0, 2), 0u);
  EXPECT_EQ(FixedTrainerOf(0, 1, 1, 2), 1u);
  EXPECT_EQ(FixedTrainerOf(0, 1, 2, 2), 0u);
  // Two buckets, two trainers: each bucket its own trainer.
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(FixedTrainerOf(0, 2, i, 2), 0u);
    EXPECT_EQ(FixedTrainerOf(1, 2, i, 2), 1u);
  }
  // Two buckets, three trainers: bucket 0 shared by trainers 0 and 2.
  std::set<size_t> of_bucket0;
  for (uint64_t i = 0; i < 6; ++i) of_bucket0.insert(FixedTrainerOf(0, 2, i, 3));
  EXPECT_EQ(of_bucket0, (std::set<size_t>{0, 2}));
  EXPECT_EQ(FixedTrainerOf(1, 2, 7, 3), 1u);
}

}  // namespace
}  // namespace ember
