// Graph::CopyTo: an independent, complete copy (RocksDB checkpoints).
#include <filesystem>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using ::ember::testing::BuildTestGraph;
using ::ember::testing::ExpectedGraph;
using ::ember::testing::TempDir;

TEST(GraphCopyTest, CopyHoldsTheGraphAndIsIndependent) {
  TempDir tmp;
  const ExpectedGraph expected = BuildTestGraph(tmp.Sub("g"));
  auto g = Graph::Open(tmp.Sub("g"), {.read_only = false});
  ASSERT_TRUE(g.ok()) << g.status();
  const float rows[4] = {1, 2, 3, 4};
  ASSERT_TRUE((*g)->WriteTable(Table::kEmbeddings, 0, 1, rows, 2, 2).ok());
  ASSERT_TRUE((*g)->WriteBlob("b", "original").ok());
  ASSERT_TRUE((*g)->CopyTo(tmp.Sub("copy")).ok());

  auto c = Graph::Open(tmp.Sub("copy"), {.read_only = false});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->manifest().num_nodes, expected.manifest.num_nodes);
  EXPECT_EQ((*c)->manifest().edges.train, expected.manifest.edges.train);
  for (const auto& [key, edges] : expected.buckets) {
    const auto [split, src, dst] = key;
    std::vector<Edge> read;
    ASSERT_TRUE((*c)->ForEachEdgeBlock(static_cast<Split>(split), src, dst,
                                       [&](std::span<const Edge> block) {
                                         read.insert(read.end(), block.begin(), block.end());
                                         return absl::OkStatus();
                                       })
                    .ok());
    EXPECT_EQ(read, edges) << split << " " << src << " " << dst;
  }
  float back[4];
  ASSERT_TRUE((*c)->ReadTable(Table::kEmbeddings, 0, 1, back, 2, 2).ok());
  EXPECT_EQ(back[3], 4.0f);
  EXPECT_EQ(*(*c)->ReadBlob("b"), "original");

  // Writes to the copy do not reach the original.
  const float other[4] = {9, 9, 9, 9};
  ASSERT_TRUE((*c)->WriteTable(Table::kEmbeddings, 0, 1, other, 2, 2).ok());
  ASSERT_TRUE((*c)->WriteBlob("b", "changed").ok());
  ASSERT_TRUE((*g)->ReadTable(Table::kEmbeddings, 0, 1, back, 2, 2).ok());
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(*(*g)->ReadBlob("b"), "original");
}

TEST(GraphCopyTest, RefusesAnExistingTargetAndAReadOnlyGraph) {
  TempDir tmp;
  BuildTestGraph(tmp.Sub("g"));
  std::filesystem::create_directories(tmp.Sub("taken"));
  {
    auto g = Graph::Open(tmp.Sub("g"), {.read_only = false});
    ASSERT_TRUE(g.ok());
    EXPECT_EQ((*g)->CopyTo(tmp.Sub("taken")).code(), absl::StatusCode::kAlreadyExists);
    EXPECT_TRUE(std::filesystem::exists(tmp.Sub("taken")));  // left as it was
  }
  auto ro = Graph::Open(tmp.Sub("g"));
  ASSERT_TRUE(ro.ok());
  EXPECT_EQ((*ro)->CopyTo(tmp.Sub("copy")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("copy")));
}

}  // namespace
}  // namespace ember
