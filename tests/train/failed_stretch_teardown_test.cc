// A training stretch that fails while a prefetch is evicting: the loop's
// partition buffer waits for the prefetch before the trainers it calls are
// destroyed (train/internal/train_loop_impl.h declares the buffer after
// them). With the buffer declared before the trainers, the prefetch's
// eviction calls a destroyed trainer: AddressSanitizer reports a
// heap-use-after-free here (tools/build.sh sanitize train_test).
#include <memory>
#include <span>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/train/train_test_util.h"
#include "train/train_loop.h"
#include "train/trainers/trainer_factory.h"

namespace ember {
namespace {

// What the test and its trainer share; outlives both.
struct Stall {
  absl::Notification evicting;   // a prefetch began evicting a partition
  absl::Notification destroyed;  // the trainer was destroyed
};

// Forwards to the trainer it wraps, except that the first eviction by the
// prefetch thread (a SyncToHost off the thread that made the trainer)
// waits for the trainer's destruction (at most kWait), and every batch
// after that eviction began fails: the stretch fails with the prefetch
// pending, and the prefetch goes on once the loop is being torn down.
class StallingTrainer final : public Trainer {
 public:
  static constexpr absl::Duration kWait = absl::Seconds(2);

  StallingTrainer(std::unique_ptr<Trainer> inner, Stall* stall)
      : inner_(std::move(inner)), stall_(stall), owner_(std::this_thread::get_id()) {}
  ~StallingTrainer() override { stall_->destroyed.Notify(); }

  std::string device() const override { return inner_->device(); }
  int slots() const override { return inner_->slots(); }
  absl::StatusOr<double> TrainBatch(const BucketTask& task, const BatchRange& batch,
                                    std::span<const Edge> edges) override {
    if (stall_->evicting.HasBeenNotified()) {
      return absl::AbortedError("the test fails this stretch while a prefetch evicts");
    }
    return inner_->TrainBatch(task, batch, edges);
  }
  RelationParams& relations() override { return inner_->relations(); }
  absl::Status MergeFeatures(FeatureTable* table) override { return inner_->MergeFeatures(table); }
  absl::Status RefreshFeatures(const FeatureTable& table) override {
    return inner_->RefreshFeatures(table);
  }
  size_t device_peak_bytes() const override { return inner_->device_peak_bytes(); }
  RowHome Home(uint32_t partition) const override { return inner_->Home(partition); }
  absl::Status SyncToHost(PartitionData* host) override {
    if (std::this_thread::get_id() != owner_ && !stall_->evicting.HasBeenNotified()) {
      Stall* stall = stall_;  // `this` may be destroyed during the wait
      stall->evicting.Notify();
      if (stall->destroyed.WaitForNotificationWithTimeout(kWait)) return absl::OkStatus();
    }
    return inner_->SyncToHost(host);
  }
  void Release(uint32_t partition) override { inner_->Release(partition); }

 private:
  std::unique_ptr<Trainer> inner_;
  Stall* const stall_;
  const std::thread::id owner_;
};

// 8 partitions, a buffer of 4, one bucket per round in sequential order,
// one batch in flight (deterministic) and small batches: from round (0,3)
// on, the prefetch of the next round's partitions evicts one that neither
// this round nor the last uses, while many batches of the round are still
// to come. The run fails with the trainer's error, and tearing the loop
// down touches no destroyed trainer.
TEST(FailedStretchTeardownTest, PrefetchPendingWhenAStretchFailsCallsNoDestroyedTrainer) {
  train_test::TempDir tmp;
  const std::string edges = tmp.Sub("sbm.tsv");
  train_test::WriteSbmEdges(train_test::StandardSbm(), edges);
  auto imported = train_test::ImportEdges(tmp.Sub("g"), {edges}, 8);
  ASSERT_TRUE(imported.ok()) << imported.status();

  Stall stall;
  TrainOptions o = train_test::SmallOptions(1);
  o.bench.wrap_trainer = [&](size_t, size_t, std::unique_ptr<Trainer> t)
      -> absl::StatusOr<std::unique_ptr<Trainer>> {
    return std::make_unique<StallingTrainer>(std::move(t), &stall);
  };
  o.model.dim = 16;
  o.pipeline.batch_size = 50;
  o.schedule.buffer_partitions = 4;
  o.schedule.bucket_order = BucketOrderKind::kSequential;
  o.pipeline.deterministic = true;
  auto s = TrainGraph(tmp.Sub("g"), o);
  EXPECT_TRUE(stall.evicting.HasBeenNotified()) << "no prefetch evicted during the run";
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAborted) << s.status();
}

}  // namespace
}  // namespace ember
