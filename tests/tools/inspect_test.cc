#include "tools/export/inspect.h"

#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"

namespace ember::tools {
namespace {

using ::ember::testing::BuildTestGraph;
using ::ember::testing::ExpectedGraph;
using ::ember::testing::TempDir;
using ::ember::testing::TestGraphOptions;

TEST(InspectTest, JsonHasKeysAndCounts) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  ExpectedGraph e = BuildTestGraph(out);
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::string> text = InspectJson(**graph);
  ASSERT_TRUE(text.ok()) << text.status();
  nlohmann::json j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["nodes"], 12);
  EXPECT_EQ(j["edges"]["train"], e.manifest.edges.train);
  EXPECT_EQ(j["edges"]["valid"], e.manifest.edges.valid);
  EXPECT_EQ(j["edges"]["test"], e.manifest.edges.test);
  EXPECT_EQ(j["relations"], nlohmann::json({"follows", "likes"}));
  EXPECT_EQ(j["partitions"], 3);
  EXPECT_EQ(j["partition_sizes"], nlohmann::json({4, 3, 5}));
  ASSERT_EQ(j["buckets"].size(), 3u);
  uint64_t bucket_total = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_EQ(j["buckets"][i].size(), 3u);
    for (uint32_t k = 0; k < 3; ++k) {
      EXPECT_EQ(j["buckets"][i][k], e.manifest.train_bucket_edges[i * 3 + k]);
      bucket_total += j["buckets"][i][k].get<uint64_t>();
    }
  }
  EXPECT_EQ(bucket_total, e.manifest.edges.train);
  EXPECT_EQ(j["degree"]["max"], 20);
  ASSERT_EQ(j["bytes_on_disk"].size(), 3u);
  for (const auto& b : j["bytes_on_disk"]) EXPECT_GT(b.get<uint64_t>(), 0u);
  EXPECT_EQ(j["training"]["checkpoint_version"], 0);
  EXPECT_EQ(j["training"]["state"]["lr"], 0.1);
}

TEST(InspectTest, TextForPeople) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  BuildTestGraph(out);
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string text = InspectText(**graph);
  EXPECT_NE(text.find("nodes          12"), std::string::npos) << text;
  EXPECT_NE(text.find("follows, likes"), std::string::npos) << text;
  EXPECT_NE(text.find("train edges per bucket"), std::string::npos) << text;
  EXPECT_NE(text.find("shard-2"), std::string::npos) << text;
}

TEST(InspectTest, ManyPartitionsAreSummarised) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  TestGraphOptions o;
  o.partition_sizes.assign(17, 1);
  BuildTestGraph(out, o);
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string text = InspectText(**graph);
  EXPECT_NE(text.find("289 buckets, edges per bucket: min"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("shard-16"), std::string::npos) << text;
  auto json = InspectJson(**graph);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(nlohmann::json::parse(*json)["buckets"].size(), 17u);
}

}  // namespace
}  // namespace ember::tools
