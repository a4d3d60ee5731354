#include "train/model/feature_table.h"

#include <cmath>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using ::ember::testing::BuildTestGraph;
using ::ember::testing::TempDir;

class FeatureTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BuildTestGraph(tmp_.Sub("g"));
    auto g = Graph::Open(tmp_.Sub("g"), {.read_only = false});
    ASSERT_TRUE(g.ok()) << g.status();
    graph_ = std::move(*g);
  }

  absl::Status Write(const FeatureTable& t, uint64_t version) {
    std::array<uint32_t, 2> header;
    const auto parts = FeatureTableBlobParts(t, &header);
    return graph_->WriteBlob(FeatureTableBlobName(version), parts);
  }

  TempDir tmp_;
  std::unique_ptr<Graph> graph_;
};

TEST_F(FeatureTableTest, BlobRoundTrips) {
  FeatureTable t = InitFeatureTable(37, 5, 0.1f, 3);
  for (uint32_t f = 0; f < t.rows; ++f) t.optimizer[f] = 0.5f * f;
  ASSERT_TRUE(Write(t, 4).ok());
  auto blob = graph_->ReadBlob(FeatureTableBlobName(4));
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(blob->size(), 8 + (37 * 5 + 37) * sizeof(float));
  auto back = ReadFeatureTable(*graph_, 4, 37, 5);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rows, t.rows);
  EXPECT_EQ(back->dim, t.dim);
  EXPECT_EQ(back->embeddings, t.embeddings);
  EXPECT_EQ(back->optimizer, t.optimizer);
}

TEST_F(FeatureTableTest, InitIsSeededAndScaled) {
  const FeatureTable a = InitFeatureTable(1000, 8, 0.1f, 1);
  EXPECT_EQ(a.embeddings, InitFeatureTable(1000, 8, 0.1f, 1).embeddings);
  EXPECT_NE(a.embeddings, InitFeatureTable(1000, 8, 0.1f, 2).embeddings);
  double sq = 0;
  for (float x : a.embeddings) sq += double(x) * x;
  EXPECT_NEAR(std::sqrt(sq / a.embeddings.size()), 0.1, 0.01);
  for (float s : a.optimizer) EXPECT_EQ(s, 0.0f);
}

// A missing blob is NotFound; one of another shape, or truncated, is
// DataLoss naming the graph.
TEST_F(FeatureTableTest, WrongOrCorruptBlobsFailClearly) {
  EXPECT_EQ(ReadFeatureTable(*graph_, 9, 4, 3).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(Write(InitFeatureTable(4, 3, 0.1f, 0), 1).ok());
  for (auto [rows, dim] : {std::pair<uint32_t, int>{5, 3}, {4, 2}, {3, 4}}) {
    auto r = ReadFeatureTable(*graph_, 1, rows, dim);
    ASSERT_FALSE(r.ok()) << rows << "x" << dim;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find(graph_->dir()), std::string::npos) << r.status();
  }
  auto blob = graph_->ReadBlob(FeatureTableBlobName(1));
  ASSERT_TRUE(blob.ok());
  ASSERT_TRUE(graph_->WriteBlob(FeatureTableBlobName(2), blob->substr(0, blob->size() - 1)).ok());
  EXPECT_EQ(ReadFeatureTable(*graph_, 2, 4, 3).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ember
