// The training loop in one process (process_layout.h): rounds cut from the
// bucket order, partitions loaded from disk ahead of their rounds within
// the buffer, relations merged in memory, progress reported per batch.
#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "storage/base/status_macros.h"
#include "train/internal/process_layout.h"

namespace ember {
namespace {

class OneProcessLayout final : public ProcessLayout {
 public:
  // Rounds scheduled ahead for the buffer's eviction choice.
  static constexpr size_t kLookaheadRounds = 64;

  OneProcessLayout(Graph* graph, const TrainOptions& options)
      : graph_(graph), options_(options), P_(graph->manifest().num_partitions) {}

  bool writer() const override { return true; }
  bool checkpoint_writer() const override { return true; }

  RunPlan PlanRun(uint32_t buffer_partitions, uint32_t trainers) override {
    capacity_ = buffer_partitions;
    // A bucket touches two partitions at most: a round of capacity / 2
    // buckets fits in the buffer.
    round_size_ =
        capacity_ >= P_ ? trainers : std::max<uint32_t>(1, std::min(trainers, capacity_ / 2));
    trainers_ = trainers;
    lookahead_ = RoundLookahead(P_, /*all_resident=*/capacity_ >= P_);
    return RunPlan{capacity_, round_size_, RunShape{capacity_, round_size_, 1, lookahead_}};
  }

  absl::Status SetUp(const std::function<absl::Status()>& set_up_here) override {
    return set_up_here();
  }

  std::unique_ptr<ParameterSync> MakeSync(FeatureTable* /*features*/) override {
    return MakeInProcessSync(trainers_);
  }

  absl::StatusOr<BucketScheduler*> ScheduleEpoch(int epoch, uint64_t first_round,
                                                 PartitionBuffer& /*buffer*/) override {
    epoch_ = epoch;
    scheduler_ = Schedule(epoch, first_round);
    return scheduler_.get();
  }

  std::vector<std::vector<Bucket>> RoundsOfEpoch() const override {
    std::vector<std::vector<Bucket>> rounds;
    const std::unique_ptr<BucketScheduler> counter = Schedule(epoch_, 0);
    while (std::optional<Round> r = counter->Next()) rounds.push_back(std::move(r->buckets));
    return rounds;
  }

  absl::Status BeforeRound(const Round& next, PartitionBuffer& buffer,
                           const std::function<bool(uint64_t)>& /*pause_after*/) override {
    return buffer.Acquire(next.partitions, scheduler_->Upcoming(kLookaheadRounds));
  }

  void Prefetch(const Round& next, PartitionBuffer& buffer) override {
    buffer.Prefetch(next.partitions, scheduler_->Upcoming(kLookaheadRounds));
  }

  uint64_t BucketsOf(const Round& done) const override { return done.buckets.size(); }

  void BatchTrained(const TrainProgress& progress) override {
    if (options_.progress) options_.progress(progress);
  }

  absl::Status AfterStretch(const StretchEnd& /*end*/) override { return absl::OkStatus(); }

  absl::Status Checkpoint(const CheckpointRequest& request) override { return request.Write(); }
  bool WritesCheckpointsBesideTraining() const override { return true; }

  void CountEpoch(EpochStats* /*stats*/) const override {}  // this process's, as they are

  absl::Status MeasureEpoch(int /*epoch*/, bool /*predict*/, EpochStats* /*stats*/) override {
    return absl::OkStatus();
  }

 private:
  // Epoch `epoch`'s rounds from `first_round`.
  std::unique_ptr<BucketScheduler> Schedule(int epoch, uint64_t first_round) const {
    return MakeRoundScheduler(options_.schedule.bucket_order, P_, capacity_, round_size_,
                              options_.seed + epoch, first_round, TypedBucketEdges(), lookahead_);
  }
  // A typed graph's train edges per bucket, so that the schedule skips the
  // empty buckets between types; empty (every bucket) for untyped graphs.
  std::span<const uint64_t> TypedBucketEdges() const {
    const Manifest& m = graph_->manifest();
    if (!m.typed()) return {};
    return m.train_bucket_edges;
  }

  Graph* const graph_;
  const TrainOptions& options_;
  const uint32_t P_;
  uint32_t capacity_ = 1;
  uint32_t round_size_ = 1;
  uint32_t lookahead_ = kOutOfCoreLookahead;
  uint32_t trainers_ = 1;
  int epoch_ = 0;  // the epoch scheduled last
  std::unique_ptr<BucketScheduler> scheduler_;
};

}  // namespace

std::unique_ptr<ProcessLayout> MakeOneProcessLayout(Graph* graph, const TrainOptions& options) {
  return std::make_unique<OneProcessLayout>(graph, options);
}

}  // namespace ember
