// The epoch cost model across ranks (train/distributed/epoch_model.h).
#include "train/distributed/epoch_model.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ember {
namespace {

// `rounds` rounds of `ranks` ranks, each rank training one bucket of 10
// edges in every round; `moves` before the first.
RankSchedule Schedule(uint32_t ranks, uint64_t rounds, std::vector<Transfer> moves) {
  RankSchedule s;
  s.world_size = ranks;
  s.num_partitions = 4;
  s.rounds.resize(rounds);
  for (uint64_t g = 0; g < rounds; ++g) {
    s.rounds[g].index = g;
    for (uint32_t r = 0; r < ranks; ++r) s.rounds[g].buckets.push_back({{r, r}, r, 0, 10});
  }
  if (!s.rounds.empty()) s.rounds[0].transfers = std::move(moves);
  return s;
}

// 2 ranks, 1 M edges at 100 k edges/s per rank, two move steps of 50 MB
// partitions a rank waited 1 s for (100 MB/s a link), 0.05 s a round's sum, and a
// checkpoint into own copies of 2 s: 0.5 s of hand-offs, 1 s writing the
// largest share of 2 partitions, 0.5 s the rest.
EpochMeasure Measured() {
  EpochMeasure m;
  m.ranks = 2;
  m.rounds = 10;
  m.train_edges = 1'000'000;
  m.train_seconds = 5;
  m.bytes_at_boundary = 200'000'000;
  m.transfer_seconds = 1;
  m.sync_seconds = 0.5;
  m.checkpoint_seconds = 2;
  m.partition_bytes = 50'000'000;
  m.checkpoint_per_rank = true;
  m.checkpoint_handoff_seconds = 0.5;
  m.checkpoint_write_seconds = 1;
  m.schedule.move_steps = 2;
  m.schedule.largest_share = 2;
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

TEST(EpochModelTest, CostsCountMoveStepsTheCriticalShareAndTheHandOffs) {
  RankSchedule s = Schedule(2, 2, {{0, 0, 1, false}, {1, 1, 0, false}});
  s.rounds[0].buckets[0].edges = 30;  // rank 0 is the round's busiest
  s.rounds[1].transfers = {{2, 0, 1, false}, {3, 0, 1, false}, {0, 1, 0, true}};
  s.final_holders = {0, 0, 0, 1};
  const ScheduleCosts c = CostsOf(s);
  EXPECT_EQ(c.rounds, 2u);
  // Round 0: each rank sends one and receives one, at once; round 1: rank
  // 0 sends two and rank 1 receives them (the hidden move is not waited
  // for).
  EXPECT_DOUBLE_EQ(c.move_steps, 1 + 2);
  EXPECT_EQ(c.moves_busiest_rank, 4u);
  EXPECT_DOUBLE_EQ(c.critical_share, (30.0 + 10.0) / (30 + 10 + 10 + 10));
  // Rank 0 holds 3 of 4 partitions: it hands one to rank 1, each writes 2.
  EXPECT_EQ(c.handoff_moves, 1u);
  EXPECT_EQ(c.largest_share, 2u);
}

TEST(EpochModelTest, EachTermFollowsItsInput) {
  const EpochMeasure m = Measured();
  RankSchedule two_ranks = Schedule(2, 10, {{0, 0, 1, false}});
  two_ranks.final_holders = {0, 0, 1, 1};
  const EpochPrediction two = PredictEpoch(m, two_ranks);
  EXPECT_DOUBLE_EQ(two.train_seconds, 5);                // half the edges on each rank's path
  EXPECT_DOUBLE_EQ(two.transfer_seconds, 50e6 / 100e6);  // one step of 50 MB at 100 MB/s
  EXPECT_DOUBLE_EQ(two.sync_seconds, 0.5);
  EXPECT_DOUBLE_EQ(two.checkpoint_seconds, 0 + 1 + 0.5);  // no hand-off, 2 partitions each

  RankSchedule four_ranks = Schedule(4, 20, {{0, 0, 1, false}, {1, 0, 2, false}, {2, 2, 3, false}});
  four_ranks.final_holders = {0, 0, 0, 0};  // three hand-offs from rank 0
  const EpochPrediction four = PredictEpoch(m, four_ranks);
  EXPECT_DOUBLE_EQ(four.train_seconds, 2.5);  // a quarter of the edges on the path
  // The mean rank's steps: rank 0 sends two, ranks 1 to 3 one each way.
  EXPECT_DOUBLE_EQ(four.transfer_seconds, (2 + 1 + 1 + 1) / 4.0 * 0.5);
  EXPECT_DOUBLE_EQ(four.sync_seconds, 1.0);                        // twice the rounds
  EXPECT_DOUBLE_EQ(four.checkpoint_seconds, 3 * 0.5 + 0.5 + 0.5);  // 1 partition each
  EXPECT_DOUBLE_EQ(four.total(), 2.5 + 0.625 + 1.0 + 2.5);

  // Rounds the schedule cannot fill: one rank trains while three wait.
  RankSchedule starved = Schedule(4, 20, {});
  for (GlobalRound& g : starved.rounds) g.buckets.resize(1);
  EXPECT_DOUBLE_EQ(PredictEpoch(m, starved).train_seconds, 10);

  // Hand-offs measured: at their own rate (0.25 s each), not B's.
  EpochMeasure handed = m;
  handed.schedule.handoff_moves = 2;
  EXPECT_DOUBLE_EQ(PredictEpoch(handed, four_ranks).checkpoint_seconds, 3 * 0.25 + 0.5 + 0.5);

  // Through rank 0 the checkpoint does not shrink.
  EpochMeasure funnel = m;
  funnel.checkpoint_per_rank = false;
  EXPECT_DOUBLE_EQ(PredictEpoch(funnel, four_ranks).checkpoint_seconds, 2);
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
