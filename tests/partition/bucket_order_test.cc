#include "partition/bucket_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ember {
namespace {

constexpr BucketOrderKind kAllKinds[] = {BucketOrderKind::kInsideOut, BucketOrderKind::kBeta,
                                         BucketOrderKind::kSequential, BucketOrderKind::kRandom};
constexpr uint32_t kPartitionCounts[] = {1, 2, 3, 4, 5, 8, 16};

std::string Describe(BucketOrderKind kind, uint32_t p, uint32_t c, uint64_t seed) {
  return std::string(BucketOrderName(kind)) + " P=" + std::to_string(p) +
         " C=" + std::to_string(c) + " seed=" + std::to_string(seed);
}

// The capacities the contract covers for P: 2..P, and C = 1 only for P = 1.
std::vector<uint32_t> Capacities(uint32_t p) {
  std::vector<uint32_t> caps;
  if (p == 1) return {1, 2};
  for (uint32_t c = 2; c <= p; ++c) caps.push_back(c);
  caps.push_back(1);  // treated as 2
  return caps;
}

void ExpectEveryBucketOnce(const std::vector<Bucket>& order, uint32_t p) {
  ASSERT_EQ(order.size(), static_cast<size_t>(p) * p);
  std::vector<int> seen(static_cast<size_t>(p) * p, 0);
  for (const Bucket& b : order) {
    ASSERT_LT(b.src, p);
    ASSERT_LT(b.dst, p);
    ++seen[static_cast<size_t>(b.src) * p + b.dst];
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(BucketOrderTest, ParseAndNameRoundTrip) {
  for (BucketOrderKind kind : kAllKinds) {
    auto parsed = ParseBucketOrderKind(BucketOrderName(kind));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_FALSE(ParseBucketOrderKind("inside_out").ok());
  EXPECT_FALSE(ParseBucketOrderKind("").ok());
  EXPECT_FALSE(ParseBucketOrderKind("Beta").ok());
}

TEST(BucketOrderTest, EveryKindVisitsEveryBucketOnce) {
  for (BucketOrderKind kind : kAllKinds) {
    for (uint32_t p : kPartitionCounts) {
      for (uint32_t c : Capacities(p)) {
        for (uint64_t seed : {0, 1, 12345}) {
          SCOPED_TRACE(Describe(kind, p, c, seed));
          ExpectEveryBucketOnce(BucketOrder(kind, p, c, seed), p);
        }
      }
    }
  }
  for (BucketOrderKind kind : kAllKinds) EXPECT_TRUE(BucketOrder(kind, 0, 2, 0).empty());
}

TEST(BucketOrderTest, SequentialIsRowMajor) {
  const std::vector<Bucket> order = BucketOrder(BucketOrderKind::kSequential, 3, 2, 99);
  const std::vector<Bucket> expected = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1},
                                        {1, 2}, {2, 0}, {2, 1}, {2, 2}};
  EXPECT_EQ(order, expected);
}

TEST(BucketOrderTest, DeterministicAndSeedDependent) {
  for (BucketOrderKind kind : kAllKinds) {
    for (uint32_t p : kPartitionCounts) {
      for (uint32_t c : Capacities(p)) {
        SCOPED_TRACE(Describe(kind, p, c, 7));
        EXPECT_EQ(BucketOrder(kind, p, c, 7), BucketOrder(kind, p, c, 7));
        if (p < 3 || kind == BucketOrderKind::kSequential) continue;
        for (uint64_t seed = 0; seed < 4; ++seed) {
          EXPECT_NE(BucketOrder(kind, p, c, seed), BucketOrder(kind, p, c, seed + 1))
              << "seed " << seed;
        }
      }
    }
  }
}

TEST(BucketOrderTest, InsideOutTouchesAVisitedPartition) {
  for (uint32_t p : kPartitionCounts) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      SCOPED_TRACE(Describe(BucketOrderKind::kInsideOut, p, 2, seed));
      const std::vector<Bucket> order = BucketOrder(BucketOrderKind::kInsideOut, p, 2, seed);
      std::set<uint32_t> visited = {order[0].src, order[0].dst};
      for (size_t t = 1; t < order.size(); ++t) {
        EXPECT_TRUE(visited.count(order[t].src) || visited.count(order[t].dst)) << "at " << t;
        visited.insert(order[t].src);
        visited.insert(order[t].dst);
      }
    }
  }
}

TEST(BucketOrderTest, InsideOutFollowsPbgLayers) {
  // PBG: layer i = {(a, b) : min(a, b) == i}, layers from P-1 down to 0, and
  // a bucket and its transpose are adjacent.
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const std::vector<Bucket> order = BucketOrder(BucketOrderKind::kInsideOut, 8, 2, seed);
    for (size_t t = 1; t < order.size(); ++t) {
      EXPECT_GE(std::min(order[t - 1].src, order[t - 1].dst),
                std::min(order[t].src, order[t].dst));
    }
    for (size_t t = 0; t < order.size(); ++t) {
      const Bucket& b = order[t];
      if (b.src == b.dst) continue;
      const Bucket transposed = {b.dst, b.src};
      const bool adjacent = (t > 0 && order[t - 1] == transposed) ||
                            (t + 1 < order.size() && order[t + 1] == transposed);
      EXPECT_TRUE(adjacent) << "seed " << seed << " at " << t;
    }
  }
}

TEST(BucketLoadsTest, TwoPartitionsTwoSlotsLoadEachOnce) {
  // Both partitions fit, so any order loads each exactly once.
  std::vector<Bucket> order = BucketOrder(BucketOrderKind::kSequential, 2, 2, 0);
  EXPECT_EQ(CountPartitionLoads(order, 2, 2), 2u);
  std::reverse(order.begin(), order.end());
  EXPECT_EQ(CountPartitionLoads(order, 2, 2), 2u);
  EXPECT_EQ(CountPartitionLoads(BucketOrder(BucketOrderKind::kRandom, 2, 2, 3), 2, 2), 2u);
}

TEST(BucketLoadsTest, SmallCases) {
  EXPECT_EQ(CountPartitionLoads({}, 4, 2), 0u);
  // One partition: one load, even with capacity 1.
  const std::vector<Bucket> one = {{0, 0}};
  EXPECT_EQ(CountPartitionLoads(one, 1, 1), 1u);
  // P = C: every partition once, whatever the order.
  for (uint64_t seed = 0; seed < 5; ++seed) {
    EXPECT_EQ(CountPartitionLoads(BucketOrder(BucketOrderKind::kRandom, 5, 5, seed), 5, 5), 5u);
  }
  // (0,1) loads 0 and 1; (1,2) must keep 1, so 2 replaces 0; (0,2) must keep
  // 2, so 0 replaces 1: 4 loads.
  const std::vector<Bucket> chain = {{0, 1}, {1, 2}, {0, 2}};
  EXPECT_EQ(CountPartitionLoads(chain, 3, 2), 4u);
}

TEST(BucketLoadsTest, BeladyBeatsFifo) {
  // Two slots. (0,1) loads 0 and 1. (2,2) evicts one of them: 0 is needed at
  // t=2 and 1 only at t=3, so Belady evicts 1. (0,0) hits. (1,1) reloads 1.
  // Belady: 4 loads. FIFO would evict 0 at t=1 and miss on both (0,0) and
  // (1,1): 5 loads. 4 is also optimal: three partitions, and after (2,2) one
  // of 0 and 1 is gone while both are needed again.
  const std::vector<Bucket> order = {{0, 1}, {2, 2}, {0, 0}, {1, 1}};
  EXPECT_EQ(CountPartitionLoads(order, 3, 2), 4u);

  // Three slots, the cyclic pattern 0 1 2 3 0 1 2 3 (diagonal buckets): LRU
  // and FIFO miss on all 8. Belady: 3 cold loads; 3 evicts 2 (used last);
  // 0 and 1 hit; 2 evicts 0 or 1 (never used again); 3 hits: 5 loads.
  std::vector<Bucket> cyclic;
  for (int round = 0; round < 2; ++round) {
    for (uint32_t x = 0; x < 4; ++x) cyclic.push_back({x, x});
  }
  EXPECT_EQ(CountPartitionLoads(cyclic, 4, 3), 5u);
}

TEST(BucketLoadBoundTest, HandComputedValues) {
  // P <= C: each partition once.
  EXPECT_EQ(PartitionLoadLowerBound(1, 1), 1u);
  EXPECT_EQ(PartitionLoadLowerBound(4, 4), 4u);
  EXPECT_EQ(PartitionLoadLowerBound(3, 8), 3u);
  // C = 2: the first 2 loads meet 1 pair, each later load at most 1 more, so
  // P(P-1)/2 + 1.
  EXPECT_EQ(PartitionLoadLowerBound(8, 2), 8u * 7 / 2 + 1);
  EXPECT_EQ(PartitionLoadLowerBound(16, 2), 16u * 15 / 2 + 1);
  // P=16, C=4: 120 pairs, 6 met by the first 4 loads, 3 per later load:
  // 4 + ceil(114 / 3) = 42. P=8, C=3: 28 - 3 = 25 pairs, 2 per load: 3 + 13.
  EXPECT_EQ(PartitionLoadLowerBound(16, 4), 42u);
  EXPECT_EQ(PartitionLoadLowerBound(8, 3), 16u);
}

TEST(BucketOrderTest, LoadsNeverBelowLowerBound) {
  for (BucketOrderKind kind : kAllKinds) {
    for (uint32_t p : kPartitionCounts) {
      for (uint32_t c : Capacities(p)) {
        SCOPED_TRACE(Describe(kind, p, c, 3));
        EXPECT_GE(CountPartitionLoads(BucketOrder(kind, p, c, 3), p, c),
                  PartitionLoadLowerBound(p, c));
      }
    }
  }
}

TEST(BetaOrderTest, FewerLoadsThanInsideOutAndRandom) {
  for (uint32_t p : {8u, 16u}) {
    for (uint32_t c : {2u, 3u, 4u}) {
      for (uint64_t seed = 0; seed < 5; ++seed) {
        SCOPED_TRACE(Describe(BucketOrderKind::kBeta, p, c, seed));
        const uint64_t beta = CountPartitionLoads(BucketOrder(BucketOrderKind::kBeta, p, c, seed), p, c);
        const uint64_t inside_out =
            CountPartitionLoads(BucketOrder(BucketOrderKind::kInsideOut, p, c, seed), p, c);
        const uint64_t random =
            CountPartitionLoads(BucketOrder(BucketOrderKind::kRandom, p, c, seed), p, c);
        EXPECT_LE(beta, inside_out);
        EXPECT_LE(beta, random);
      }
    }
  }
}

TEST(BetaOrderTest, CloseToLowerBound) {
  // Measured: C = 2 meets the bound exactly (P(P-1)/2 + 1); for P in {8, 16}
  // and C in {3, 4, 5, 8} the worst ratio is 1.136 (P=16, C=8: 25 vs 22);
  // over all P <= 16 and 2 <= C <= P it is 1.190 (P=15, C=7).
  for (uint32_t p : {8u, 16u}) {
    for (uint32_t c : {2u, 3u, 4u, 5u, 8u}) {
      for (uint64_t seed = 0; seed < 3; ++seed) {
        SCOPED_TRACE(Describe(BucketOrderKind::kBeta, p, c, seed));
        const uint64_t loads =
            CountPartitionLoads(BucketOrder(BucketOrderKind::kBeta, p, c, seed), p, c);
        const uint64_t bound = PartitionLoadLowerBound(p, c);
        if (c == 2) {
          EXPECT_EQ(loads, bound);
        }
        EXPECT_LE(static_cast<double>(loads), 1.15 * static_cast<double>(bound));
      }
    }
  }
  for (uint32_t p = 2; p <= 16; ++p) {
    for (uint32_t c = 2; c <= p; ++c) {
      SCOPED_TRACE(Describe(BucketOrderKind::kBeta, p, c, 11));
      const uint64_t loads = CountPartitionLoads(BucketOrder(BucketOrderKind::kBeta, p, c, 11), p, c);
      EXPECT_LE(static_cast<double>(loads), 1.2 * static_cast<double>(PartitionLoadLowerBound(p, c)));
    }
  }
}

TEST(BetaOrderTest, FullBufferLoadsEachPartitionOnce) {
  for (uint32_t p : kPartitionCounts) {
    for (uint64_t seed = 0; seed < 3; ++seed) {
      EXPECT_EQ(CountPartitionLoads(BucketOrder(BucketOrderKind::kBeta, p, p, seed), p, p), p);
    }
  }
}

void ExpectValidRounds(const std::vector<std::vector<Bucket>>& rounds,
                       const std::vector<Bucket>& order, uint32_t trainers) {
  std::vector<Bucket> flat;
  for (const auto& round : rounds) {
    ASSERT_GE(round.size(), 1u);
    ASSERT_LE(round.size(), trainers);
    std::set<uint32_t> used;
    for (const Bucket& b : round) {
      EXPECT_FALSE(used.count(b.src)) << "partition " << b.src << " twice in a round";
      EXPECT_FALSE(b.dst != b.src && used.count(b.dst))
          << "partition " << b.dst << " twice in a round";
      used.insert(b.src);
      used.insert(b.dst);
      flat.push_back(b);
    }
  }
  // Every bucket exactly once: the same multiset as `order`.
  auto key = [](const Bucket& b) { return std::make_pair(b.src, b.dst); };
  auto less = [&](const Bucket& a, const Bucket& b) { return key(a) < key(b); };
  std::vector<Bucket> sorted_order = order;
  std::sort(flat.begin(), flat.end(), less);
  std::sort(sorted_order.begin(), sorted_order.end(), less);
  EXPECT_EQ(flat, sorted_order);
}

TEST(FormRoundsTest, RoundsAreDisjointAndCoverTheOrder) {
  for (BucketOrderKind kind : kAllKinds) {
    for (uint32_t p : {4u, 8u}) {
      for (uint32_t trainers : {1u, 2u, 3u}) {
        SCOPED_TRACE(Describe(kind, p, 3, 5) + " trainers=" + std::to_string(trainers));
        const std::vector<Bucket> order = BucketOrder(kind, p, 3, 5);
        const auto rounds = FormRounds(order, trainers);
        ExpectValidRounds(rounds, order, trainers);
        if (trainers == 1) {
          ASSERT_EQ(rounds.size(), order.size());
          for (size_t t = 0; t < order.size(); ++t) EXPECT_EQ(rounds[t][0], order[t]);
        }
      }
    }
  }
}

TEST(FormRoundsTest, MostRoundsFullWithTwoTrainers) {
  constexpr uint32_t kP = 8;
  std::vector<std::pair<std::string, std::vector<Bucket>>> orders;
  for (BucketOrderKind kind : kAllKinds) {
    for (uint32_t c : {2u, 3u, 4u}) {
      orders.emplace_back(Describe(kind, kP, c, 1), BucketOrder(kind, kP, c, 1));
    }
  }
  for (const auto& [name, order] : orders) {
    SCOPED_TRACE(name);
    const auto rounds = FormRounds(order, 2);
    ExpectValidRounds(rounds, order, 2);
    const size_t full = std::count_if(rounds.begin(), rounds.end(),
                                      [](const auto& r) { return r.size() == 2; });
    EXPECT_GE(full * 5, rounds.size() * 4) << full << " of " << rounds.size() << " full";
  }
}

TEST(FormRoundsTest, LookaheadBoundsReordering) {
  const std::vector<Bucket> order = BucketOrder(BucketOrderKind::kRandom, 8, 2, 4);
  // A window of one bucket can only ever take the earliest: one per round.
  const auto single = FormRounds(order, 3, 1);
  ASSERT_EQ(single.size(), order.size());
  for (size_t t = 0; t < order.size(); ++t) EXPECT_EQ(single[t][0], order[t]);
  // Each round opens with the earliest remaining bucket.
  const auto rounds = FormRounds(order, 3, 4);
  ExpectValidRounds(rounds, order, 3);
  std::vector<bool> done(order.size(), false);
  size_t first_open = 0;
  for (const auto& round : rounds) {
    while (done[first_open]) ++first_open;
    EXPECT_EQ(round[0], order[first_open]);
    for (const Bucket& b : round) {
      const size_t t = std::find(order.begin(), order.end(), b) - order.begin();
      EXPECT_FALSE(done[t]);
      done[t] = true;
    }
  }
  // Zero trainers or zero look-ahead behave as one.
  EXPECT_EQ(FormRounds(order, 0).size(), order.size());
  EXPECT_EQ(FormRounds(order, 2, 0).size(), order.size());
  EXPECT_TRUE(FormRounds({}, 2).empty());
}

}  // namespace
}  // namespace ember
