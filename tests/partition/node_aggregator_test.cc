#include "partition/node_aggregator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "storage/base/node_hash.h"

namespace ember {
namespace {

struct Expected {
  uint64_t degree = 0;
  bool in_train = false;
  std::string name;
};

// Feeds the same occurrences with and without spilling and in two orders;
// the merged stream must be identical and match a std::map reference.
TEST(NodeAggregatorTest, MergedResultIndependentOfSpillingAndOrder) {
  std::mt19937_64 rng(11);
  std::vector<std::string> names;
  for (int i = 0; i < 20000; ++i) names.push_back("node-" + std::to_string(rng() % 30000));
  std::vector<NodeOccurrence> occ;
  std::map<uint64_t, Expected> expected;
  for (size_t i = 0; i < names.size(); ++i) {
    const bool train = i % 3 != 0;
    const uint64_t key = StringNodeKey(names[i]);
    occ.push_back({key, names[i], train});
    auto& e = expected[key];
    ++e.degree;
    e.in_train |= train;
    e.name = names[i];
  }
  auto run = [&](uint64_t memory, bool reverse, uint64_t* runs) {
    const std::string dir = ::testing::TempDir() + "/agg_" + std::to_string(memory) +
                            (reverse ? "_r" : "_f");
    std::filesystem::create_directories(dir);
    NodeAggregatorOptions o;
    o.memory_bytes = memory;
    o.spill_dir = dir;
    const std::unique_ptr<NodeAggregator> made = NodeAggregator::Make(o).value();
    NodeAggregator& agg = *made;
    std::vector<NodeOccurrence> order = occ;
    if (reverse) std::reverse(order.begin(), order.end());
    for (size_t i = 0; i < order.size(); i += 500) {
      EXPECT_TRUE(agg.Add(std::span(order).subspan(i, std::min<size_t>(500, order.size() - i))).ok());
    }
    *runs = agg.runs_spilled();
    // Counting reads the runs without consuming them; twice gives the same.
    for (int twice = 0; twice < 2; ++twice) {
      absl::StatusOr<uint64_t> count = agg.CountDistinct();
      EXPECT_TRUE(count.ok()) << count.status();
      if (count.ok()) EXPECT_EQ(*count, expected.size());
    }
    std::vector<std::tuple<uint64_t, uint64_t, bool, std::string>> out;
    EXPECT_TRUE(agg.ForEachMerged([&](const MergedNode& n) {
                     out.emplace_back(n.key, n.degree, n.in_train, std::string(n.name));
                     return absl::OkStatus();
                   }).ok());
    return out;
  };
  uint64_t runs_big, runs_small;
  auto big = run(1 << 30, false, &runs_big);
  auto small = run(1, true, &runs_small);  // spills on every Add
  EXPECT_EQ(runs_big, 0u);
  EXPECT_GT(runs_small, 0u);
  EXPECT_EQ(big, small);
  ASSERT_EQ(big.size(), expected.size());
  auto it = expected.begin();
  for (const auto& [key, degree, in_train, name] : big) {
    EXPECT_EQ(key, it->first);
    EXPECT_EQ(degree, it->second.degree);
    EXPECT_EQ(in_train, it->second.in_train);
    EXPECT_EQ(name, it->second.name);
    ++it;
  }
}

TEST(NodeAggregatorTest, MakeRefusesInvalidOptions) {
  NodeAggregatorOptions no_dir;
  EXPECT_EQ(NodeAggregator::Make(no_dir).status().code(), absl::StatusCode::kInvalidArgument);
  NodeAggregatorOptions no_memory;
  no_memory.spill_dir = ::testing::TempDir();
  no_memory.memory_bytes = 0;
  EXPECT_EQ(NodeAggregator::Make(no_memory).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NodeAggregatorTest, DetectsKeyCollision) {
  NodeAggregatorOptions o;
  o.spill_dir = ::testing::TempDir();
  auto made = NodeAggregator::Make(o);
  ASSERT_TRUE(made.ok()) << made.status();
  NodeAggregator& agg = **made;
  std::vector<NodeOccurrence> occ = {{42, "alpha", true}, {42, "beta", true}};
  absl::Status s = agg.Add(occ);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("alpha"), std::string::npos);
  EXPECT_NE(s.message().find("beta"), std::string::npos);
}

}  // namespace
}  // namespace ember
