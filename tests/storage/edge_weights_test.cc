// Weighted edges in storage: the block layout (an f32 column after the
// triples), the manifest's format version 2 and `edge_weights`, a graph
// round trip, and unweighted graphs left exactly as they were.
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "storage/graph_builder.h"
#include "storage/graph_run_writers.h"
#include "storage/internal/keys.h"
#include "storage/manifest.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using ::ember::testing::TempDir;

std::vector<Edge> RandomEdges(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Edge> edges(n);
  for (Edge& e : edges) {
    e = Edge{static_cast<uint32_t>(rng() % 5), static_cast<uint32_t>(rng() % 2),
             static_cast<uint32_t>(rng() % 4)};
  }
  return edges;
}

TEST(EdgeWeightsTest, WeightedBlockLayoutAndRoundTrip) {
  const Edge e{0x01020304, 5, 6};
  const float w = 2.5f;  // 0x40200000
  const std::string value =
      EncodeEdgeBlock(std::span<const Edge>(&e, 1), std::span<const float>(&w, 1));
  EXPECT_EQ(value, std::string("\x01\0\0\0\x04\x03\x02\x01\x05\0\0\0\x06\0\0\0"
                               "\0\0\x20\x40",
                               20));
  std::vector<Edge> edges = RandomEdges(1000, 3);
  std::vector<float> weights(edges.size());
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.25f * static_cast<float>(i);
  const std::string block = "x" + EncodeEdgeBlock(edges, weights);  // misaligned
  const std::string_view v = std::string_view(block).substr(1);
  EXPECT_EQ(v.size(), 4 + 16 * edges.size());
  absl::StatusOr<EdgeBlockView> view = ParseEdgeBlock(v, /*weighted=*/true);
  ASSERT_TRUE(view.ok()) << view.status();
  ASSERT_TRUE(view->weighted());
  std::vector<Edge> out_edges(edges.size());
  std::vector<float> out_weights(edges.size());
  view->CopyTo(0, edges.size(), out_edges.data());
  view->CopyWeightsTo(0, edges.size(), out_weights.data());
  EXPECT_EQ(out_edges, edges);
  EXPECT_EQ(out_weights, weights);
  float run[3] = {-1, -1, -1};
  view->CopyWeightsTo(10, 2, run + 1);
  EXPECT_EQ(run[0], -1.0f);
  EXPECT_EQ(run[1], 2.5f);
  EXPECT_EQ(run[2], 2.75f);
  // The two layouts never read as each other.
  EXPECT_EQ(ParseEdgeBlock(v, /*weighted=*/false).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseEdgeBlock(EncodeEdgeBlock(edges), /*weighted=*/true).status().code(),
            absl::StatusCode::kDataLoss);
  // An unweighted block's view gives weight 1.
  absl::StatusOr<EdgeBlockView> plain = ParseEdgeBlock(EncodeEdgeBlock(edges));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->weighted());
  plain->CopyWeightsTo(0, 2, run);
  EXPECT_EQ(run[0], 1.0f);
  EXPECT_EQ(run[1], 1.0f);
  std::vector<Edge> decoded;
  std::vector<float> decoded_weights;
  ASSERT_TRUE(DecodeEdgeBlock(v, &decoded, &decoded_weights).ok());
  EXPECT_EQ(decoded, edges);
  EXPECT_EQ(decoded_weights, weights);
}

Manifest OnePartition(uint64_t nodes, uint64_t train) {
  Manifest m;
  m.num_partitions = 1;
  m.partition_sizes = {nodes};
  m.num_nodes = nodes;
  m.relations = {"r", "s"};
  m.edges.train = train;
  m.train_bucket_edges = {train};
  return m;
}

// Writes a one-partition graph at `out` with `edges` (and weights, when
// given) in the train split; returns the committed manifest.
void BuildGraph(const std::string& out, const std::vector<Edge>& edges,
                const std::vector<float>* weights) {
  GraphBuilderOptions bo;
  bo.num_partitions = 1;
  auto builder = GraphBuilder::Create(out, bo);
  ASSERT_TRUE(builder.ok()) << builder.status();
  auto run = (*builder)->NewEdgeRun(0);
  ASSERT_TRUE(run.ok()) << run.status();
  if (weights != nullptr) {
    ASSERT_TRUE((*run)->AddWeightedEdges(Split::kTrain, 0, edges, *weights).ok());
  } else {
    ASSERT_TRUE((*run)->AddEdges(Split::kTrain, 0, edges).ok());
  }
  ASSERT_TRUE((*run)->Finish().ok());
  Manifest m = OnePartition(5, edges.size());
  if (weights != nullptr) {
    m.SetEdgeWeights(true);
    m.edge_weight_stats = {0.5, 1.5, 3.0};
  }
  ASSERT_TRUE((*builder)->Commit(m).ok());
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(EdgeWeightsTest, WeightedGraphRoundTrip) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  // More than one block: weights cross the block boundary in step.
  const std::vector<Edge> edges = RandomEdges(kMaxEdgesPerBlock + 10, 7);
  std::vector<float> weights(edges.size());
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 7) + 0.5f;
  ASSERT_NO_FATAL_FAILURE(BuildGraph(out, edges, &weights));
  const nlohmann::json manifest = nlohmann::json::parse(ReadText(out + "/MANIFEST.json"));
  EXPECT_EQ(manifest["format_version"], 2) << manifest;
  EXPECT_EQ(manifest["edge_weights"], true) << manifest;
  EXPECT_EQ(manifest["edge_weight_stats"]["mean"], 1.5) << manifest;
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE((*graph)->manifest().edge_weights);
  EXPECT_EQ((*graph)->manifest().format_version, Manifest::kWeightedFormatVersion);
  EXPECT_EQ((*graph)->manifest().edge_weight_stats.max, 3.0);
  auto cursor = (*graph)->OpenEdgeBlocks(Split::kTrain, 0, 0);
  ASSERT_TRUE(cursor.ok()) << cursor.status();
  std::vector<Edge> got;
  std::vector<float> got_weights;
  while (true) {
    absl::StatusOr<bool> more = (*cursor)->Next();
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    const EdgeBlockView block = (*cursor)->block();
    ASSERT_TRUE(block.weighted());
    const size_t at = got.size();
    got.resize(at + block.size());
    got_weights.resize(at + block.size());
    block.CopyTo(0, block.size(), got.data() + at);
    block.CopyWeightsTo(0, block.size(), got_weights.data() + at);
  }
  EXPECT_EQ(got, edges);
  EXPECT_EQ(got_weights, weights);
  // Readers that want only the edges still get them.
  std::vector<Edge> bucket;
  ASSERT_TRUE((*graph)->ReadBucket(Split::kTrain, 0, 0, &bucket).ok());
  EXPECT_EQ(bucket, edges);
}

// An unweighted graph is written exactly as before weights existed: format
// version 1, no weight members in its manifest, 12 bytes an edge.
TEST(EdgeWeightsTest, UnweightedGraphKeepsVersionOneLayout) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  const std::vector<Edge> edges = RandomEdges(100, 9);
  ASSERT_NO_FATAL_FAILURE(BuildGraph(out, edges, nullptr));
  const std::string text = ReadText(out + "/MANIFEST.json");
  const nlohmann::json manifest = nlohmann::json::parse(text);
  EXPECT_EQ(manifest["format_version"], 1) << text;
  EXPECT_EQ(text.find("edge_weight"), std::string::npos) << text;
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_FALSE((*graph)->manifest().edge_weights);
  auto cursor = (*graph)->OpenEdgeBlocks(Split::kTrain, 0, 0);
  ASSERT_TRUE(cursor.ok());
  ASSERT_TRUE(*(*cursor)->Next());
  EXPECT_FALSE((*cursor)->block().weighted());
  EXPECT_EQ((*cursor)->block().size(), edges.size());
}

TEST(EdgeWeightsTest, ManifestVersionAndWeightsMustAgree) {
  TempDir tmp;
  const std::string path = tmp.Sub("m.json");
  const std::string rest = R"("num_nodes":3,"num_partitions":1,"partition_sizes":[3],
      "relations":["r"],"edges":{"train":2,"valid":0,"test":0}})";
  struct Case {
    std::string head;
    bool ok;
    bool weighted;
  } cases[] = {
      {R"({"format_version":1,)", true, false},
      {R"({"format_version":1,"edge_weights":false,)", true, false},
      {R"({"format_version":2,"edge_weights":true,)", true, true},
      {R"({"format_version":2,)", false, false},
      {R"({"format_version":1,"edge_weights":true,)", false, false},
      {R"({"format_version":3,"edge_weights":true,)", false, false},
  };
  for (const Case& c : cases) {
    std::ofstream(path) << c.head << rest;
    absl::StatusOr<Manifest> m = ReadManifest(path);
    EXPECT_EQ(m.ok(), c.ok) << c.head << ": " << m.status();
    if (m.ok()) {
      EXPECT_EQ(m->edge_weights, c.weighted) << c.head;
    } else {
      EXPECT_NE(m.status().message().find(path), std::string::npos) << m.status();
    }
  }
  Manifest m = OnePartition(3, 0);
  m.edge_weights = true;  // without the version
  EXPECT_FALSE(m.Validate().ok());
  m.SetEdgeWeights(true);
  EXPECT_TRUE(m.Validate().ok()) << m.Validate();
}

}  // namespace
}  // namespace ember
