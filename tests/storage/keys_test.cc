#include "storage/internal/keys.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

TEST(KeysTest, EdgeBlockKeyLayoutIsBigEndian) {
  const std::string key = EdgeBlockKey(Split::kValid, 0x01020304, 0x0a0b);
  ASSERT_EQ(key.size(), 13u);
  EXPECT_EQ(key, std::string("\x01\x01\x02\x03\x04\0\0\0\0\0\0\x0a\x0b", 13));
  EXPECT_EQ(key.substr(0, 5), EdgeBucketPrefix(Split::kValid, 0x01020304));
}

TEST(KeysTest, EdgeKeysSortBySplitThenPartitionThenSeq) {
  std::vector<std::string> keys;
  for (Split s : kAllSplits) {
    for (uint32_t p : {0u, 1u, 255u, 256u, 70000u, 0xffffffffu}) {
      for (uint64_t seq : {0ull, 1ull, 255ull, 256ull, 1ull << 40}) {
        keys.push_back(EdgeBlockKey(s, p, seq));
      }
    }
  }
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
}

TEST(KeysTest, OtherKeysSortNumerically) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> values(200);
  for (uint64_t& v : values) v = rng() >> (rng() % 64);
  std::sort(values.begin(), values.end());
  std::vector<std::string> ids, offsets, chunks;
  for (uint64_t v : values) {
    ids.push_back(DictIdKey(v));
    offsets.push_back(NodeOffsetKey(static_cast<uint32_t>(v >> 32)));
    chunks.push_back(TableChunkKey(v, static_cast<uint32_t>(v)));
  }
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end()));
  EXPECT_TRUE(std::is_sorted(chunks.begin(), chunks.end()));
  EXPECT_EQ(NodeOffsetKey(0x01020304), std::string("\x01\x02\x03\x04"));
  EXPECT_EQ(DictIdKey(1), std::string("\0\0\0\0\0\0\0\x01", 8));
}

TEST(KeysTest, TableKeysShareTheVersionPrefix) {
  const std::string prefix = TableVersionPrefix(9);
  EXPECT_EQ(prefix.size(), 8u);
  for (uint32_t c : {0u, 1u, 1000u, kTableMetaChunk}) {
    std::string key = TableChunkKey(9, c);
    EXPECT_EQ(key.size(), 12u);
    EXPECT_EQ(key.substr(0, 8), prefix);
  }
  EXPECT_LT(TableChunkKey(9, 1000), TableChunkKey(9, kTableMetaChunk));
  EXPECT_LT(TableChunkKey(9, kTableMetaChunk), TableChunkKey(10, 0));
}

TEST(KeysTest, DictNameKeyIsNodeKeyThenName) {
  const std::string key = DictNameKey(0x0102030405060708ull, "abc");
  EXPECT_EQ(key, std::string("\x01\x02\x03\x04\x05\x06\x07\x08" "abc"));
}

TEST(KeysTest, U64RoundTripLittleEndian) {
  EXPECT_EQ(EncodeU64(0x0102030405060708ull),
            std::string("\x08\x07\x06\x05\x04\x03\x02\x01"));
  for (uint64_t v : {0ull, 1ull, 0xffffffffffffffffull, 123456789ull}) {
    uint64_t out = 0;
    ASSERT_TRUE(DecodeU64(EncodeU64(v), &out).ok());
    EXPECT_EQ(out, v);
  }
  uint64_t out = 0;
  EXPECT_EQ(DecodeU64("short", &out).code(), absl::StatusCode::kDataLoss);
}

TEST(KeysTest, EdgeBlockRoundTrip) {
  std::mt19937 rng(3);
  std::vector<Edge> edges(1000);
  for (Edge& e : edges) e = Edge{static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()),
                                 static_cast<uint32_t>(rng())};
  const std::string value = EncodeEdgeBlock(edges);
  EXPECT_EQ(value.size(), 4 + 12 * edges.size());
  std::vector<Edge> out = {Edge{1, 2, 3}};  // decode appends
  ASSERT_TRUE(DecodeEdgeBlock(value, &out).ok());
  ASSERT_EQ(out.size(), edges.size() + 1);
  EXPECT_EQ(out[0], (Edge{1, 2, 3}));
  EXPECT_TRUE(std::equal(edges.begin(), edges.end(), out.begin() + 1));
}

// The view of an encoded block copies any run of its edges out as they were
// encoded, and checks the block as DecodeEdgeBlock does.
TEST(KeysTest, EdgeBlockViewCopiesRunsOfTheEncodedEdges) {
  std::mt19937 rng(5);
  std::vector<Edge> edges(300);
  for (Edge& e : edges) e = Edge{static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()),
                                 static_cast<uint32_t>(rng())};
  // Misaligned on purpose: stored values sit anywhere in a RocksDB block.
  const std::string value = "x" + EncodeEdgeBlock(edges);
  absl::StatusOr<EdgeBlockView> view = ParseEdgeBlock(std::string_view(value).substr(1));
  ASSERT_TRUE(view.ok()) << view.status();
  ASSERT_EQ(view->size(), edges.size());
  EXPECT_EQ((*view)[0], edges[0]);
  EXPECT_EQ((*view)[299], edges[299]);
  std::vector<Edge> run(100, Edge{7, 7, 7});
  view->CopyTo(150, 98, run.data() + 1);
  EXPECT_EQ(run[0], (Edge{7, 7, 7}));
  EXPECT_TRUE(std::equal(edges.begin() + 150, edges.begin() + 248, run.begin() + 1));
  EXPECT_EQ(run[99], (Edge{7, 7, 7}));
  EXPECT_EQ(ParseEdgeBlock(std::string_view(value).substr(2)).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseEdgeBlock("ab").status().code(), absl::StatusCode::kDataLoss);
}

TEST(KeysTest, EdgeBlockLittleEndianLayout) {
  const Edge e{0x01020304, 5, 6};
  const std::string value = EncodeEdgeBlock(std::span<const Edge>(&e, 1));
  EXPECT_EQ(value, std::string("\x01\0\0\0\x04\x03\x02\x01\x05\0\0\0\x06\0\0\0",
                               16));
}

TEST(KeysTest, EmptyEdgeBlock) {
  std::vector<Edge> out;
  ASSERT_TRUE(DecodeEdgeBlock(EncodeEdgeBlock({}), &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(KeysTest, CorruptEdgeBlocksAreRejected) {
  std::vector<Edge> edges = {{1, 2, 3}, {4, 5, 6}};
  const std::string good = EncodeEdgeBlock(edges);
  std::vector<Edge> out;
  EXPECT_EQ(DecodeEdgeBlock(good.substr(0, good.size() - 1), &out).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeEdgeBlock(good + "x", &out).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeEdgeBlock("ab", &out).code(), absl::StatusCode::kDataLoss);
  std::string wrong_count = good;
  wrong_count[0] = 3;
  absl::Status s = DecodeEdgeBlock(wrong_count, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("3 edges"), std::string::npos) << s;
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace ember
