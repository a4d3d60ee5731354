#include "partition/partitioner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "partition/node_slots.h"
#include "storage/base/node_hash.h"

namespace ember {
namespace {

TEST(PartitionerTest, HashPartitionIsUniform) {
  constexpr uint32_t kP = 8;
  std::vector<int> counts(kP, 0);
  for (uint64_t i = 0; i < 80000; ++i) ++counts[HashPartition(IntegerNodeKey(i), kP)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
}

TEST(PartitionerTest, DegreeBalancerEvensLoads) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> degrees(10000);
  for (auto& d : degrees) d = 1 + static_cast<uint64_t>(std::pow(rng() % 1000 + 1, 1.5)) % 5000;
  DegreeBalancer balancer(4);
  for (uint64_t d : degrees) balancer.Assign(d);
  const auto& loads = balancer.loads();
  const uint64_t max_degree = *std::max_element(degrees.begin(), degrees.end());
  auto [lo, hi] = std::minmax_element(loads.begin(), loads.end());
  EXPECT_LE(*hi - *lo, max_degree);
}

TEST(PartitionerTest, SplitFractionsParseAndValidate) {
  auto f = ParseSplitFractions("0.9,0.05,0.05");
  ASSERT_TRUE(f.ok());
  EXPECT_DOUBLE_EQ(f->fraction[1], 0.05);
  EXPECT_FALSE(ParseSplitFractions("0.9,0.2").ok());
  EXPECT_FALSE(ParseSplitFractions("x").ok());
  EXPECT_FALSE(ParseSplitFractions("1.5,-0.5").ok());
}

TEST(PartitionerTest, SplitOfEdgeFollowsFractionsAndSeed) {
  SplitFractions f = *ParseSplitFractions("0.8,0.1,0.1");
  int counts[3] = {0, 0, 0};
  int differ = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    Split s = SplitOfEdge(f, 1, IntegerNodeKey(i), 0, IntegerNodeKey(i + 1));
    ++counts[static_cast<int>(s)];
    // The same edge always gets the same split; another seed reshuffles.
    EXPECT_EQ(s, SplitOfEdge(f, 1, IntegerNodeKey(i), 0, IntegerNodeKey(i + 1)));
    differ += s != SplitOfEdge(f, 2, IntegerNodeKey(i), 0, IntegerNodeKey(i + 1));
  }
  EXPECT_NEAR(counts[0], 80000, 800);
  EXPECT_NEAR(counts[1], 10000, 500);
  EXPECT_NEAR(counts[2], 10000, 500);
  EXPECT_GT(differ, 20000);
}

TEST(NodeHashTest, IntegerKeysRoundTrip) {
  for (uint64_t v : {0ull, 1ull, 42ull, 1ull << 40, ~0ull}) {
    EXPECT_EQ(IntegerFromNodeKey(IntegerNodeKey(v)), v);
  }
  EXPECT_NE(StringNodeKey("a"), StringNodeKey("b"));
}

TEST(NodeSlotsTest, FindsEveryKeyAndNoOthers) {
  std::mt19937_64 rng(3);
  std::vector<uint64_t> keys(5000);
  for (auto& k : keys) k = rng();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  NodeSlotTable table;
  for (size_t i = 0; i < keys.size(); ++i) table.Append(keys[i], PackSlot(i % 7, i, i % 2));
  table.Seal();
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t* s = table.Find(keys[i]);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(SlotPartition(*s), i % 7);
    EXPECT_EQ(SlotOffset(*s), i);
    EXPECT_EQ(SlotInTrain(*s), i % 2 == 1);
  }
  int found = 0;
  for (int i = 0; i < 5000; ++i) found += table.Find(rng()) != nullptr;
  EXPECT_EQ(found, 0);
}

}  // namespace
}  // namespace ember
