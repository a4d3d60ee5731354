#include "train/feature_table.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace ember {
namespace {

std::string Encode(const FeatureTable& t) {
  std::array<uint32_t, 2> header;
  std::string out;
  for (std::string_view part : FeatureTableBlobParts(t, &header)) out.append(part);
  return out;
}

TEST(FeatureTableTest, BlobRoundTrips) {
  FeatureTable t = InitFeatureTable(37, 5, 0.1f, 3);
  for (uint32_t f = 0; f < t.rows; ++f) t.optimizer[f] = 0.5f * f;
  const std::string blob = Encode(t);
  EXPECT_EQ(blob.size(), 8 + (37 * 5 + 37) * sizeof(float));
  auto back = DecodeFeatureTable(blob);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rows, t.rows);
  EXPECT_EQ(back->dim, t.dim);
  EXPECT_EQ(back->embeddings, t.embeddings);
  EXPECT_EQ(back->optimizer, t.optimizer);
}

TEST(FeatureTableTest, InitIsSeededAndScaled) {
  const FeatureTable a = InitFeatureTable(1000, 8, 0.1f, 1);
  EXPECT_EQ(a.embeddings, InitFeatureTable(1000, 8, 0.1f, 1).embeddings);
  EXPECT_NE(a.embeddings, InitFeatureTable(1000, 8, 0.1f, 2).embeddings);
  double sq = 0;
  for (float x : a.embeddings) sq += double(x) * x;
  EXPECT_NEAR(std::sqrt(sq / a.embeddings.size()), 0.1, 0.01);
  for (float s : a.optimizer) EXPECT_EQ(s, 0.0f);
}

TEST(FeatureTableTest, CorruptBlobsAreDataLoss) {
  const std::string blob = Encode(InitFeatureTable(4, 3, 0.1f, 0));
  for (size_t size : {size_t{0}, size_t{7}, blob.size() - 1}) {
    auto r = DecodeFeatureTable(std::string_view(blob).substr(0, size));
    ASSERT_FALSE(r.ok()) << size;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  }
  std::string zero_dim = blob;
  zero_dim[4] = zero_dim[5] = zero_dim[6] = zero_dim[7] = 0;
  EXPECT_EQ(DecodeFeatureTable(zero_dim).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ember
