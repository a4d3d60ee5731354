// The pipeline keeps trainer.h's contract: at most slots() concurrent
// TrainBatch calls per trainer, whether batches are dealt or statically
// assigned.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "train/stream/batch_pipeline.h"
#include "train/trainers/trainer.h"

namespace ember {
namespace {

// Counts its concurrent TrainBatch calls; each takes a few milliseconds so
// that calls beyond slots() would overlap.
class CountingTrainer final : public Trainer {
 public:
  explicit CountingTrainer(int slots) : slots_(slots) {}
  std::string device() const override { return "counting"; }
  int slots() const override { return slots_; }
  absl::StatusOr<double> TrainBatch(const BucketTask&, const BatchRange&,
                                    std::span<const Edge>) override {
    const int now = ++running_;
    int seen = max_running.load();
    while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    --running_;
    ++calls;
    return 0.0;
  }
  RelationParams& relations() override { return relations_; }
  RowHome Home(uint32_t) const override { return RowHome::kHost; }
  absl::Status SyncToHost(PartitionData*) override { return absl::OkStatus(); }
  void Release(uint32_t) override {}

  std::atomic<int> max_running{0};
  std::atomic<int> calls{0};

 private:
  const int slots_;
  std::atomic<int> running_{0};
  RelationParams relations_;
};

// `n` one-edge batches, each for trainer `trainer` (-1: any).
class FixedSource final : public BatchSource {
 public:
  FixedSource(int n, int trainer) : left_(n), trainer_(trainer) {
    window_->edges.resize(1);
  }
  absl::StatusOr<bool> Next(PipelineBatch* out) override {
    if (left_ == 0) return false;
    --left_;
    out->window = window_;
    out->task = task_;
    out->range.lo = 0;
    out->range.hi = 1;
    out->trainer = trainer_;
    return true;
  }

 private:
  int left_;
  const int trainer_;
  std::shared_ptr<EdgeWindow> window_ = std::make_shared<EdgeWindow>();
  std::shared_ptr<const BucketTask> task_ = std::make_shared<BucketTask>();
};

TEST(BatchPipelineTest, StaticSplitKeepsATrainersSlots) {
  CountingTrainer one(1), three(3);
  BatchPipeline pipeline({&one, &three}, 4);
  FixedSource source(40, /*trainer=*/0);
  ASSERT_TRUE(pipeline.Run(&source, 8, nullptr).ok());
  EXPECT_EQ(one.calls.load(), 40);
  EXPECT_EQ(one.max_running.load(), 1);
  EXPECT_EQ(three.calls.load(), 0);
}

TEST(BatchPipelineTest, DealingKeepsEveryTrainersSlots) {
  CountingTrainer one(1), two(2);
  BatchPipeline pipeline({&one, &two}, 3);
  FixedSource source(60, /*trainer=*/-1);
  ASSERT_TRUE(pipeline.Run(&source, 8, nullptr).ok());  // more tokens than slots
  EXPECT_EQ(one.calls.load() + two.calls.load(), 60);
  EXPECT_LE(one.max_running.load(), 1);
  EXPECT_LE(two.max_running.load(), 2);
}

}  // namespace
}  // namespace ember
