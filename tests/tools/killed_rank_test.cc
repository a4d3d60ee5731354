// The tests-only rank kill at a checkpoint step (tools/bench/hooks/
// killed_rank.h, `ember train --test-kill-at`).
#include "tools/bench/hooks/killed_rank.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ember {
namespace {

TEST(KilledRankTest, ParsesRankStepAndNth) {
  auto k = ParseRankKill("2:rank0-committed:3");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->rank, 2u);
  EXPECT_EQ(k->step, CheckpointStep::kRankZeroCommitted);
  EXPECT_EQ(k->nth, 3u);
  k = ParseRankKill("0:written");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->step, CheckpointStep::kShareWritten);
  EXPECT_EQ(k->nth, 1u);
  EXPECT_EQ(ParseRankKill("1:committed")->step, CheckpointStep::kCommitted);
  for (const char* bad : {"", "1", "x:written", "1:wrote", "1:written:0", "1:written:2:3",
                          "-1:written", "1:written:x"}) {
    const absl::Status s = ParseRankKill(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), ::testing::HasSubstr("--test-kill-at")) << bad;
  }
}

TEST(KilledRankTest, DiesOnlyAtItsRanksNthStep) {
  int deaths = 0;
  auto hook = KillRankHook({1, CheckpointStep::kCommitted, 2}, [&] { ++deaths; });
  EXPECT_TRUE(hook(0, CheckpointStep::kCommitted).ok());     // another rank
  EXPECT_TRUE(hook(1, CheckpointStep::kShareWritten).ok());  // another step
  EXPECT_TRUE(hook(1, CheckpointStep::kCommitted).ok());     // the first checkpoint
  EXPECT_EQ(deaths, 0);
  EXPECT_TRUE(hook(1, CheckpointStep::kCommitted).ok());  // the second
  EXPECT_EQ(deaths, 1);
  EXPECT_TRUE(hook(1, CheckpointStep::kCommitted).ok());
  EXPECT_EQ(deaths, 1);
}

}  // namespace
}  // namespace ember
