#include "storage/graph_run_writers.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/graph.h"
#include "storage/graph_builder.h"
#include "storage/internal/keys.h"
#include "storage/base/node_hash.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using ::ember::testing::TempDir;

Manifest TwoPartitionManifest(const std::vector<uint64_t>& sizes) {
  Manifest m;
  m.num_partitions = 2;
  m.partition_sizes = sizes;
  m.num_nodes = sizes[0] + sizes[1];
  m.train_bucket_edges.assign(4, 0);
  m.relations = {"r"};
  return m;
}

std::vector<Edge> Edges(uint32_t n, uint32_t salt) {
  std::vector<Edge> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(Edge{i % 3, 0, (i * 7 + salt) % 2});
  return out;
}

TEST(GraphRunWritersTest, NodesEdgesAndFeaturesReadBack) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  GraphBuilderOptions bo;
  bo.num_partitions = 2;
  auto builder = GraphBuilder::Create(out, bo);
  ASSERT_TRUE(builder.ok()) << builder.status();
  EXPECT_EQ((*builder)->edge_generation(), 0u);

  // Nodes in ascending key order; partitions interleave.
  std::vector<std::pair<uint64_t, std::string>> nodes;
  for (const char* name : {"a", "b", "c", "d", "e"}) nodes.push_back({StringNodeKey(name), name});
  std::sort(nodes.begin(), nodes.end());
  auto node_writer = (*builder)->NewNodeWriter();
  ASSERT_TRUE(node_writer.ok()) << node_writer.status();
  uint32_t next[2] = {0, 0};
  std::vector<NodeRef> refs;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const uint32_t p = i % 2;
    refs.push_back({p, next[p]++});
    ASSERT_TRUE((*node_writer)->AddNode(nodes[i].first, nodes[i].second, refs.back()).ok());
  }
  EXPECT_EQ((*node_writer)->AddNode(0, "x", NodeRef{2, 0}).code(),
            absl::StatusCode::kInvalidArgument);
  // Sticky: the writer refuses everything after an error.
  EXPECT_FALSE((*node_writer)->Finish().ok());
  node_writer->reset();
  node_writer = (*builder)->NewNodeWriter();
  ASSERT_TRUE(node_writer.ok());
  for (size_t i = 0; i < nodes.size(); ++i) {
    ASSERT_TRUE((*node_writer)->AddNode(nodes[i].first, nodes[i].second, refs[i]).ok());
  }
  ASSERT_TRUE((*node_writer)->Finish().ok());

  // Two runs of partition 0 (consecutive chunks): more edges than fit a
  // block, in two calls for the same bucket.
  const std::vector<Edge> first = Edges(kMaxEdgesPerBlock + 5, 1);
  const std::vector<Edge> second = Edges(3, 2);
  const std::vector<Edge> valid = Edges(4, 3);
  auto run = (*builder)->NewEdgeRun(0);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE((*run)->AddEdges(Split::kTrain, 1, first).ok());
  ASSERT_TRUE((*run)->AddEdges(Split::kTrain, 1, second).ok());
  ASSERT_TRUE((*run)->AddEdges(Split::kValid, 0, {}).ok());
  ASSERT_TRUE((*run)->AddEdges(Split::kValid, 1, valid).ok());
  ASSERT_TRUE((*run)->Finish().ok());
  auto run2 = (*builder)->NewEdgeRun(0);
  ASSERT_TRUE(run2.ok());
  ASSERT_TRUE((*run2)->AddEdges(Split::kTrain, 1, second).ok());
  ASSERT_TRUE((*run2)->Finish().ok());
  EXPECT_EQ((*builder)->NewEdgeRun(2).status().code(), absl::StatusCode::kInvalidArgument);

  auto features = (*builder)->NewFeatureRun(1);
  ASSERT_TRUE(features.ok()) << features.status();
  const std::vector<FeatureEntry> row = {{0, 1.5f}, {2, -1.0f}};
  ASSERT_TRUE((*features)->AddFeatures(1, row).ok());
  ASSERT_TRUE((*features)->Finish().ok());
  ASSERT_TRUE((*builder)->WriteFeatureVocabulary("f0\nf1\nf2\n").ok());

  Manifest m = TwoPartitionManifest({next[0], next[1]});
  m.edges.train = first.size() + 2 * second.size();
  m.edges.valid = valid.size();
  m.train_bucket_edges[1] = m.edges.train;
  m.num_features = 3;
  ASSERT_TRUE((*builder)->Commit(m).ok());

  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto ref = (*graph)->LookupNode(nodes[i].second);
    ASSERT_TRUE(ref.ok()) << ref.status();
    EXPECT_EQ(*ref, refs[i]);
    EXPECT_EQ(*(*graph)->NodeName(refs[i]), nodes[i].second);
  }
  std::vector<Edge> got;
  ASSERT_TRUE((*graph)->ReadBucket(Split::kTrain, 0, 1, &got).ok());
  std::vector<Edge> want = first;
  want.insert(want.end(), second.begin(), second.end());
  want.insert(want.end(), second.begin(), second.end());
  EXPECT_EQ(got, want);
  int blocks = 0;
  ASSERT_TRUE((*graph)
                  ->ForEachEdgeBlock(Split::kTrain, 0, 1,
                                     [&](std::span<const Edge> b) {
                                       EXPECT_LE(b.size(), kMaxEdgesPerBlock);
                                       ++blocks;
                                       return absl::OkStatus();
                                     })
                  .ok());
  EXPECT_EQ(blocks, 4);  // 2 blocks + 1 in the first run, 1 in the second
  got.clear();
  ASSERT_TRUE((*graph)->ReadBucket(Split::kValid, 0, 1, &got).ok());
  EXPECT_EQ(got, valid);
  std::vector<uint64_t> row_start;
  std::vector<FeatureEntry> entries;
  ASSERT_TRUE((*graph)->ReadPartitionFeatures(1, &row_start, &entries).ok());
  EXPECT_EQ(entries, row);
  EXPECT_EQ(row_start[1], 0u);
  EXPECT_EQ(row_start[2], 2u);
  EXPECT_EQ(*(*graph)->ReadBlob(kFeatureVocabBlob), "f0\nf1\nf2\n");
}

TEST(GraphRunWritersTest, AppendWritesTheNextGeneration) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  {
    GraphBuilderOptions bo;
    bo.num_partitions = 2;
    auto builder = GraphBuilder::Create(out, bo);
    ASSERT_TRUE(builder.ok());
    ASSERT_TRUE((*builder)->Commit(TwoPartitionManifest({0, 0})).ok());
  }
  GraphOpenOptions open;
  open.read_only = false;
  auto graph = Graph::Open(out, open);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto builder = GraphBuilder::CreateAppend(graph->get());
  ASSERT_TRUE(builder.ok()) << builder.status();
  EXPECT_EQ((*builder)->edge_generation(), 1u);
  auto nodes = (*builder)->NewNodeWriter();
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_TRUE((*nodes)->AddNode(StringNodeKey("n"), "n", NodeRef{1, 0}).ok());
  ASSERT_TRUE((*nodes)->Finish().ok());
  auto run = (*builder)->NewEdgeRun(1);
  ASSERT_TRUE(run.ok());
  const std::vector<Edge> edges = {{0, 0, 0}};
  ASSERT_TRUE((*run)->AddEdges(Split::kTrain, 1, edges).ok());
  ASSERT_TRUE((*run)->Finish().ok());
  Manifest m = (*graph)->manifest();
  m.partition_sizes = {0, 1};
  m.num_nodes = 1;
  m.edges.train = 1;
  m.train_bucket_edges[3] = 1;
  m.edge_generation = (*builder)->edge_generation();
  ASSERT_TRUE((*builder)->Commit(m).ok());
  EXPECT_EQ(*(*graph)->LookupNode("n"), (NodeRef{1, 0}));
  // The blocks are of generation 1: visible from min_generation 1, not 2.
  std::vector<Edge> got;
  ASSERT_TRUE((*graph)->ReadBucket(Split::kTrain, 1, 1, &got, 1).ok());
  EXPECT_EQ(got, edges);
  got.clear();
  ASSERT_TRUE((*graph)->ReadBucket(Split::kTrain, 1, 1, &got, 2).ok());
  EXPECT_TRUE(got.empty());
}

}  // namespace
}  // namespace ember
