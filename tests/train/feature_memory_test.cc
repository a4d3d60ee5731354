// The memory plan of a featurized run counts each partition's feature
// entries (the CSR the partition buffer holds beside the rows), counted from
// the shards, so a budget that holds the rows but not the entries is
// refused instead of exceeded.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "storage/graph.h"
#include "storage/manifest.h"
#include "tests/train/train_test_util.h"
#include "train/schedule/memory_plan.h"
#include "train/train_loop.h"

namespace ember {
namespace {

using train_test::TempDir;

TEST(FeatureMemoryPlanTest, PartitionBytesCountFeatureEntries) {
  TrainMemoryInput in;
  in.graph_dir = "g";
  in.budget = uint64_t{1} << 30;
  in.partition_sizes = {1000, 1200};
  in.num_nodes = 2200;
  in.dim = 31;  // 128 bytes per node
  in.features = true;
  // Partition 0 has fewer nodes but far more entries: it is the largest.
  in.partition_feature_entries = {50000, 1200};
  auto plan = PlanTrainMemory(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->partition_bytes, 1000u * 128 + 1001 * 8 + 50000 * sizeof(FeatureEntry));
}

// 4 partitions of 500 nodes, each node with 40 features of a vocabulary of
// 100: the entries (8 bytes each, 160 KB per partition) outweigh the rows
// at dim 8 (18 KB) and the CSR offsets (4 KB) several times over.
class FeatureMemoryTest : public ::testing::Test {
 protected:
  static constexpr int kNodes = 2000, kFeaturesPerNode = 40, kDim = 8;

  std::string Import() {
    std::string edges, features;
    for (int n = 0; n < kNodes; ++n) {
      absl::StrAppend(&edges, n, "\t", (n * 7 + 1) % kNodes, "\n", n, "\t", (n * 13 + 5) % kNodes,
                      "\n");
      absl::StrAppend(&features, n, "\t");
      for (int f = 0; f < kFeaturesPerNode; ++f) {
        absl::StrAppend(&features, f == 0 ? "" : " ", "f", (n + f * 3) % 100);
      }
      absl::StrAppend(&features, "\n");
    }
    train_test::WriteWholeFile(tmp_.Sub("edges.tsv"), edges);
    train_test::WriteWholeFile(tmp_.Sub("features.tsv"), features);
    ImportOptions o;
    o.out = tmp_.Sub("g");
    o.files = {tmp_.Sub("edges.tsv")};
    o.node_feature_files = {tmp_.Sub("features.tsv")};
    o.num_partitions = 4;
    o.threads = 1;
    o.delimiter = '\t';
    auto summary = ImportGraph(o);
    EXPECT_TRUE(summary.ok()) << summary.status();
    return o.out;
  }

  TempDir tmp_;
};

// The counts the plan reads are the entries stored: every node's features.
TEST_F(FeatureMemoryTest, CountsEveryPartitionsStoredEntries) {
  const std::string dir = Import();
  auto graph = Graph::Open(dir);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto entries = PartitionFeatureEntries(**graph);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 4u);
  uint64_t total = 0;
  for (uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ((*entries)[p], (*graph)->manifest().partition_sizes[p] * kFeaturesPerNode);
    total += (*entries)[p];
  }
  EXPECT_EQ(total, uint64_t{kNodes} * kFeaturesPerNode);
}

// A budget whose rows share holds two partitions' rows and CSR offsets
// beside the feature table, but not their entries, is refused; one that
// holds the entries too trains.
TEST_F(FeatureMemoryTest, BudgetThatHoldsRowsButNotEntriesIsRefused) {
  const std::string dir = Import();
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  const uint64_t largest = m->LargestPartition();
  // Every node has kFeaturesPerNode entries: the largest partition has most.
  const uint64_t most_entries = largest * kFeaturesPerNode;
  const uint64_t table = m->num_features * RowBytesPerNode(kDim);
  const uint64_t without_entries = largest * RowBytesPerNode(kDim) + (largest + 1) * 8;
  const uint64_t with_entries = without_entries + most_entries * sizeof(FeatureEntry);
  ASSERT_GT(with_entries, 3 * without_entries);

  TrainOptions o = train_test::SmallOptions(1);
  o.model.dim = kDim;
  o.model.featurized = FeaturizedMode::kIdPlusFeatures;
  o.schedule.buffer_partitions = 2;
  // The rows share is 5/8 of the budget.
  o.schedule.memory_budget = (table + 2 * without_entries + 1024) * 8 / 5;
  auto refused = TrainGraph(dir, o);
  ASSERT_FALSE(refused.ok()) << "a budget without room for the feature entries was accepted";
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();

  o.schedule.memory_budget = (table + 2 * with_entries + 1024) * 8 / 5;
  auto trained = TrainGraph(dir, o);
  EXPECT_TRUE(trained.ok()) << trained.status();
}

}  // namespace
}  // namespace ember
