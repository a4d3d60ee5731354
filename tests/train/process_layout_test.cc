// The one-process layout (train/internal/process_layout.h): the rounds'
// shape follows the buffer, and an epoch resumed at round k trains exactly
// the rounds from k on of those RoundsOfEpoch names, which the loop counts
// the rounds before k from.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"
#include "tests/train/train_test_util.h"
#include "train/internal/process_layout.h"
#include "train/schedule/io_executor.h"
#include "train/schedule/partition_buffer.h"

namespace ember {
namespace {

using testing::TempDir;

// Every round `scheduler` gives, as its index and buckets.
std::vector<std::pair<uint64_t, std::vector<Bucket>>> Drain(BucketScheduler& scheduler) {
  std::vector<std::pair<uint64_t, std::vector<Bucket>>> rounds;
  while (std::optional<Round> r = scheduler.Next()) {
    rounds.emplace_back(r->index, std::move(r->buckets));
  }
  return rounds;
}

// A graph of 6 partitions, opened read-write.
class OneProcessLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string edges = tmp_.Sub("sbm.tsv");
    train_test::WriteSbmEdges(train_test::StandardSbm(), edges);
    const std::string dir = tmp_.Sub("g6");
    ASSERT_TRUE(train_test::ImportEdges(dir, {edges}, 6).ok());
    GraphOpenOptions rw;
    rw.read_only = false;
    auto g = Graph::Open(dir, rw);
    ASSERT_TRUE(g.ok()) << g.status();
    graph_ = std::move(*g);
  }

  TempDir tmp_;
  std::unique_ptr<Graph> graph_;
};

TEST_F(OneProcessLayoutTest, PlansRoundsThatFitTheBuffer) {
  const TrainOptions options = train_test::SmallOptions(1);
  const std::unique_ptr<ProcessLayout> layout = MakeOneProcessLayout(graph_.get(), options);
  EXPECT_TRUE(layout->writer());
  // The buffer holds every partition: one bucket per trainer.
  RunPlan all = layout->PlanRun(/*buffer_partitions=*/6, /*trainers=*/3);
  EXPECT_EQ(all.buffer_partitions, 6u);
  EXPECT_EQ(all.round_size, 3u);
  EXPECT_EQ(all.shape.buffer_partitions, 6u);
  EXPECT_EQ(all.shape.round_size, 3u);
  EXPECT_EQ(all.shape.world_size, 1u);
  // A buffer of 4: rounds of 2 buckets (up to 4 partitions), whatever the
  // trainers beyond them.
  RunPlan part = layout->PlanRun(/*buffer_partitions=*/4, /*trainers=*/3);
  EXPECT_EQ(part.buffer_partitions, 4u);
  EXPECT_EQ(part.round_size, 2u);
  EXPECT_EQ(part.shape.buffer_partitions, 4u);
  EXPECT_EQ(part.shape.round_size, 2u);
}

TEST_F(OneProcessLayoutTest, ResumedEpochTrainsTheRoundsAfterThoseItCounts) {
  const TrainOptions options = train_test::SmallOptions(1, /*seed=*/11);
  const std::unique_ptr<ProcessLayout> layout = MakeOneProcessLayout(graph_.get(), options);
  layout->PlanRun(/*buffer_partitions=*/4, /*trainers=*/2);
  PartitionBufferOptions bo;
  bo.capacity = 4;
  bo.dim = 4;
  IoExecutor io(1);
  auto buffer = PartitionBuffer::Make(graph_.get(), bo, std::vector<uint64_t>(6, 0), 1, &io);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  for (int epoch : {0, 3}) {
    SCOPED_TRACE(epoch);
    auto whole = layout->ScheduleEpoch(epoch, /*first_round=*/0, **buffer);
    ASSERT_TRUE(whole.ok()) << whole.status();
    const auto trained = Drain(**whole);
    const std::vector<std::vector<Bucket>> counted = layout->RoundsOfEpoch();
    ASSERT_EQ(trained.size(), counted.size());
    ASSERT_GT(counted.size(), 3u);
    for (size_t r = 0; r < counted.size(); ++r) {
      EXPECT_EQ(trained[r].first, r);
      EXPECT_EQ(trained[r].second, counted[r]);
    }
    const uint64_t k = 3;
    auto resumed = layout->ScheduleEpoch(epoch, k, **buffer);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    const auto rest = Drain(**resumed);
    EXPECT_EQ(layout->RoundsOfEpoch(), counted);
    ASSERT_EQ(rest.size(), counted.size() - k);
    for (size_t i = 0; i < rest.size(); ++i) {
      EXPECT_EQ(rest[i].first, k + i);
      EXPECT_EQ(rest[i].second, counted[k + i]);
    }
  }
}

}  // namespace
}  // namespace ember
