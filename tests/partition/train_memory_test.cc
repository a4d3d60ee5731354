#include "partition/train_memory.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace ember {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// The largest partition of `nodes` split P ways, as AutoPartitions sizes it.
uint64_t Largest(uint64_t nodes, uint32_t p) {
  const uint64_t even = (nodes + p - 1) / p;
  return even + even / 16;
}

TEST(TrainMemoryTest, SplitAddsUpToTheBudget) {
  for (uint64_t budget : {uint64_t{0}, uint64_t{7}, uint64_t{1} << 20, 6 * kGiB, 6 * kGiB + 3}) {
    const TrainMemoryShares s = SplitTrainBudget(budget);
    EXPECT_EQ(s.rows + s.edges + s.storage, budget);
    EXPECT_EQ(s.edges, budget / 4);
    EXPECT_EQ(s.storage, budget / 8);
  }
  EXPECT_EQ(SplitTrainBudget(8 * kGiB).rows, 5 * kGiB);
}

TEST(TrainMemoryTest, RowBytes) {
  EXPECT_EQ(RowBytesPerNode(64), 260u);
  EXPECT_EQ(RowBytesPerNode(100), 404u);
}

TEST(TrainMemoryTest, OnePartitionWhenEverythingFits) {
  EXPECT_EQ(AutoPartitions(0, 100, 2 * kGiB), 1u);
  EXPECT_EQ(AutoPartitions(1000, 100, 64 << 20), 1u);
  // Exactly the rows share.
  const uint64_t rows = SplitTrainBudget(2 * kGiB).rows;
  EXPECT_EQ(AutoPartitions(rows / RowBytesPerNode(100), 100, 2 * kGiB), 1u);
  EXPECT_GT(AutoPartitions(rows / RowBytesPerNode(100) + 1, 100, 2 * kGiB), 1u);
}

TEST(TrainMemoryTest, SixtyFourMillionNodesAtDim64In6GiB) {
  const uint64_t nodes = 67108864;
  const uint64_t budget = 6 * kGiB;
  const uint32_t p = AutoPartitions(nodes, 64, budget);
  EXPECT_EQ(p, 19u);
  const uint64_t rows = SplitTrainBudget(budget).rows;
  // P partitions keep kAutoBufferPartitions in memory; P - 1 would not.
  EXPECT_LE(Largest(nodes, p) * RowBytesPerNode(64) * kAutoBufferPartitions, rows);
  EXPECT_GT(Largest(nodes, p - 1) * RowBytesPerNode(64) * kAutoBufferPartitions, rows);
}

TEST(TrainMemoryTest, MoreNodesNeverFewerPartitions) {
  for (int dim : {8, 64, 100, 400}) {
    for (uint64_t budget : {uint64_t{64} << 20, 2 * kGiB, 6 * kGiB}) {
      uint32_t last = 1;
      for (uint64_t nodes = 1000; nodes < (uint64_t{1} << 34); nodes = nodes * 5 / 4) {
        const uint32_t p = AutoPartitions(nodes, dim, budget);
        EXPECT_GE(p, last) << nodes << " nodes, dim " << dim << ", budget " << budget;
        EXPECT_LE(p, kMaxAutoPartitions);
        last = p;
      }
    }
  }
}

TEST(TrainMemoryTest, CappedAtMaxPartitions) {
  EXPECT_EQ(AutoPartitions(uint64_t{1} << 40, 400, 64 << 20), kMaxAutoPartitions);
}

}  // namespace
}  // namespace ember
