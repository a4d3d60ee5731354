// The epoch cost model across ranks (train/distributed/epoch_model.h).
#include "train/distributed/epoch_model.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ember {
namespace {

RankSchedule Schedule(uint32_t ranks, uint64_t rounds, std::vector<Transfer> moves) {
  RankSchedule s;
  s.world_size = ranks;
  s.num_partitions = 4;
  s.rounds.resize(rounds);
  if (!s.rounds.empty()) s.rounds[0].transfers = std::move(moves);
  return s;
}

EpochMeasure Measured() {
  EpochMeasure m;
  m.ranks = 2;
  m.rounds = 10;
  m.train_edges = 1'000'000;
  m.train_seconds = 5;         // 100 k edges/s per rank
  m.bytes_at_boundary = 200'000'000;  // 100 MB a rank
  m.transfer_seconds = 1;      // 100 MB/s a rank
  m.sync_seconds = 0.5;        // 0.05 s a round
  m.checkpoint_seconds = 2;
  m.partition_bytes = 50'000'000;
  return m;
}

TEST(EpochModelTest, BusiestRankCountsItsSendsAndReceives) {
  const RankSchedule s = Schedule(3, 2, {{0, 0, 1, false}, {1, 0, 2, true}, {2, 1, 2, false}});
  EXPECT_EQ(BusiestRankMoves(s), 2u);  // ranks 0 and 2 take part in two moves each
  EXPECT_EQ(BusiestRankMoves(Schedule(2, 1, {})), 0u);
  // After the first round, a move of a partition idle in the round before
  // travels while that round trains: not at a boundary.
  RankSchedule later = Schedule(3, 2, {{0, 0, 1, false}});
  later.rounds[1].index = 1;
  later.rounds[1].transfers = {{1, 0, 2, true}, {2, 0, 1, false}};
  EXPECT_EQ(BusiestRankMoves(later), 2u);  // rank 0: two at boundaries; rank 1 two

}

TEST(EpochModelTest, EachTermFollowsItsInput) {
  const EpochMeasure m = Measured();
  const EpochPrediction two = PredictEpoch(m, Schedule(2, 10, {{0, 0, 1, false}}));
  EXPECT_DOUBLE_EQ(two.train_seconds, 5);
  EXPECT_DOUBLE_EQ(two.transfer_seconds, 50e6 / 100e6);  // one move of 50 MB at 100 MB/s
  EXPECT_DOUBLE_EQ(two.sync_seconds, 0.5);
  EXPECT_DOUBLE_EQ(two.checkpoint_seconds, 2);
  const EpochPrediction four =
      PredictEpoch(m, Schedule(4, 20, {{0, 0, 1, false}, {1, 0, 2, false}, {2, 0, 3, false}}));
  EXPECT_DOUBLE_EQ(four.train_seconds, 2.5);       // twice the ranks, half the time
  EXPECT_DOUBLE_EQ(four.transfer_seconds, 3 * 0.5);  // rank 0 takes part in 3 moves
  EXPECT_DOUBLE_EQ(four.sync_seconds, 1.0);        // twice the rounds
  EXPECT_DOUBLE_EQ(four.total(), 2.5 + 1.5 + 1.0 + 2);
}

TEST(EpochModelTest, WarnsWhenDoublingRanksBuysLittle) {
  const EpochMeasure m = Measured();
  const EpochPrediction two = PredictEpoch(m, Schedule(2, 10, {}));
  EpochPrediction four = PredictEpoch(m, Schedule(4, 20, {}));
  EXPECT_THAT(DescribePrediction(m, two, four), ::testing::Not(::testing::HasSubstr("warning")));
  four.checkpoint_seconds = 100;
  EXPECT_THAT(DescribePrediction(m, two, four), ::testing::HasSubstr("warning: 4 ranks"));
}

}  // namespace
}  // namespace ember
