// The training loop's class (train_loop.cc), shared with the part of it
// that runs across ranks (train_loop_ranks.cc). Private to train/.
#ifndef EMBER_TRAIN_INTERNAL_TRAIN_LOOP_IMPL_H_
#define EMBER_TRAIN_INTERNAL_TRAIN_LOOP_IMPL_H_

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "partition/train_memory.h"
#include "storage/base/mutex.h"
#include "storage/graph.h"
#include "train/batch/round_batches.h"
#include "train/checkpointer.h"
#include "train/distributed/cluster.h"
#include "train/distributed/cluster_sync.h"
#include "train/distributed/rank_schedule.h"
#include "train/distributed/rank_watchdog.h"
#include "train/eval/evaluator.h"
#include "train/model/checkpoint.h"
#include "train/rank_exchange.h"
#include "train/schedule/bucket_scheduler.h"
#include "train/schedule/io_executor.h"
#include "train/schedule/memory_plan.h"
#include "train/schedule/parameter_sync.h"
#include "train/schedule/partition_buffer.h"
#include "train/stream/batch_pipeline.h"
#include "train/stream/pipeline_observer.h"
#include "train/stream/round_source.h"
#include "train/train_loop.h"
#include "train/trainers/trainer_factory.h"

namespace ember {

// Orchestration only: restores or initialises the model, then for each epoch
// runs the streaming pipeline (batch_pipeline.h) over the rounds of the
// bucket scheduler in stretches, syncs parameters between stretches,
// checkpoints and reports. What varies by device or process layout sits
// behind the seams: bucket_scheduler.h, parameter_sync.h,
// trainer_factory.h, row_residency.h.
class TrainLoop final : public PipelineObserver {
 public:
  using Clock = std::chrono::steady_clock;
  // Rounds scheduled ahead for the buffer's eviction choice.
  static constexpr size_t kLookaheadRounds = 64;
  // Threads of the run's I/O executor at most: enough for every reader of
  // a round and of the next (one per trainer each) and a partition load.
  static constexpr int kIoThreads = 8;

  // `graph` and `cluster` must outlive the loop. `cluster`: the ranks of a
  // run across processes (rank 0 writes the checkpoints; the others open
  // the graph read-only), or null for one process.
  TrainLoop(Graph* graph, const TrainOptions& options, Cluster* cluster = nullptr)
      : graph_(graph),
        options_(options),
        P_(graph_->manifest().num_partitions),
        cluster_(cluster != nullptr && cluster->world_size() > 1 ? cluster : nullptr) {}

  absl::StatusOr<TrainSummary> Run();
  // After Run() with TrainOptions::in_memory: false when the model did not
  // fit in memory at once (or is featurized), and nothing was trained.
  bool fits_in_memory() const { return fits_in_memory_; }
  // Plans memory as Run() does, without training: with
  // TrainOptions::in_memory, whether Run() would train (fits_in_memory()).
  absl::StatusOr<bool> PlanFitsInMemory();

  // PipelineObserver: round events from the pipeline's source stage, trained
  // batches from its done stage (pipeline_observer.h).
  uint32_t RoundStarted(const Round& round, const Round* next) override;
  absl::StatusOr<bool> RoundEmitted(const Round& done, const Round* next) override;
  void BatchTrained(const BatchDone& d) override;

 private:
  absl::Status PlanMemory(const std::vector<DeviceSpec>& devices);
  absl::Status RestoreOrInit();
  absl::Status Checkpoint(int epoch, uint64_t next_round, int epochs_done);
  // Rank 0's part of a checkpoint (`rows_written`: across ranks, the rows
  // are written already), and every rank's (every partition written by
  // rank 0, one at a time, each counting as progress; then its commit,
  // agreed by all).
  absl::Status WriteCheckpoint(int epoch, uint64_t next_round, int epochs_done,
                               bool rows_written = false);
  absl::Status CheckpointAcrossRanks(int epoch, uint64_t next_round, int epochs_done);
  // Across ranks: this epoch's schedule, and the partitions this rank
  // holds at its start loaded (first epoch of the run) or checked.
  absl::Status ScheduleEpochAcrossRanks(int epoch, uint64_t first_round);
  // Across ranks: what every rank must share because it shapes the
  // schedule or the model (CheckRanksAgree compares them at the start).
  std::vector<RankSetting> RankSettings(uint32_t trainers) const;
  // Across ranks: edges and loss summed over every rank, reported.
  absl::Status ReportGlobalProgress();
  // Across ranks, before round `next` trains: the moves due (those started
  // while the round before trained, then the rest), the residency check,
  // the sync keys of the round's buckets, and the start of the next
  // round's moves of partitions idle in this one.
  absl::Status StartRoundAcrossRanks(const Round& next, const RankRoundScheduler& rank_rounds);
  // Across ranks, at an epoch's end: the epoch's measure over every rank,
  // and the model's predictions (the first epoch of the run only).
  absl::Status MeasureEpochAcrossRanks(int epoch, double checkpoint_seconds,
                                       bool predict, EpochStats* stats);
  bool distributed() const { return cluster_ != nullptr; }
  // A typed graph's train edges per bucket, so that the schedule skips the
  // empty buckets between types; empty (every bucket) for untyped graphs.
  std::span<const uint64_t> TypedBucketEdges() const {
    const Manifest& m = graph_->manifest();
    if (!m.typed()) return {};
    return m.train_bucket_edges;
  }
  // Across ranks: this rank made progress (the watchdog's beat).
  void Progress() {
    if (watchdog_ != nullptr) watchdog_->Beat();
  }
  // Bytes of partition p's rows and optimizer state.
  uint64_t PartitionBytes(uint32_t p) const;
  uint32_t world_size() const { return distributed() ? cluster_->world_size() : 1; }
  bool writer() const { return !distributed() || cluster_->rank() == 0; }
  // Trains the rounds of one epoch from `first_round`; sets *stopped when
  // stop_after_buckets fired.
  absl::Status TrainEpoch(int epoch, uint64_t first_round, bool* stopped);
  absl::StatusOr<EvalResult> Validate();
  void ResetBatchStats();
  bool CheckpointDue() const {
    return options_.schedule.checkpoint_every > 0 &&
           buckets_since_checkpoint_ >= options_.schedule.checkpoint_every;
  }
  bool StopDue() const {
    return options_.hooks.stop_after_buckets > 0 &&
           buckets_this_run_ >= options_.hooks.stop_after_buckets;
  }
  // The edge cost batches are planned with: measured, except that measured
  // times must not steer a deterministic run.
  uint32_t PlanningEdgeCost() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(progress_mu_) {
    return options_.pipeline.deterministic ? BatchCostModel::kPriorEdgeCost
                                           : cost_model_.EdgeCost();
  }
  void FillBatchStats(EpochStats* s) const;
  absl::Status AppendMetrics(const EpochStats& s);

  Graph* const graph_;
  TrainOptions options_;
  const uint32_t P_;
  Cluster* const cluster_;  // null: one process
  // Across ranks: the capacity the bucket order reads (--bucket-order
  // beta: this rank's buffer as one process would plan it, which the ranks
  // agree on at the start; P for orders that read none), the epoch's
  // schedule and the holders the next epoch starts from.
  uint32_t order_capacity_ = 1;
  std::unique_ptr<RankSchedule> rank_schedule_;
  std::vector<uint32_t> next_holders_;
  ClusterSync* cluster_sync_ = nullptr;
  const absl::Duration rank_timeout_ = absl::Seconds(options_.rank_timeout_seconds);
  TrainMemoryPlan memory_;
  uint32_t capacity_ = 1;
  uint32_t round_size_ = 1;
  size_t tokens_ = 1;
  bool one_device_kind_ = true;  // every trainer of one kind (static splits)
  bool rows_off_host_ = false;   // some trainer keeps rows off the host (not cpu)
  RelationParams relations_;
  // Restores and writes checkpoints; set by RestoreOrInit.
  std::unique_ptr<Checkpointer> checkpointer_;
  std::vector<std::unique_ptr<Trainer>> trainers_;
  std::vector<Trainer*> trainer_ptrs_;
  std::unique_ptr<BatchPipeline> pipeline_;
  std::unique_ptr<ParameterSync> sync_;
  std::unique_ptr<FeatureTable> features_;  // featurized models only
  // Blocking I/O of the whole run: edge windows and partition prefetches.
  IoExecutor io_{kIoThreads};
  // Declared after the trainers, the features and the I/O executor, so
  // destroyed before them: ~PartitionBuffer waits for a pending prefetch,
  // which runs on io_ and whose evictions call SyncToHost on the trainers
  // (an error path can leave one pending).
  std::unique_ptr<PartitionBuffer> buffer_;
  std::unique_ptr<BucketScheduler> scheduler_;  // the epoch's
  uint64_t buckets_this_run_ = 0;
  uint64_t buckets_since_checkpoint_ = 0;
  // This epoch's per-batch time and non-zeros, and trainer time (busy and
  // available). Written by the pipeline's done stage only.
  SpreadAccumulator batch_seconds_, batch_nnz_;
  std::vector<uint64_t> batches_per_trainer_;  // this epoch, by trainer
  std::vector<Clock::time_point> last_done_;  // per trainer, this stretch
  double trainer_busy_seconds_ = 0;
  double trainer_available_seconds_ = 0;
  int start_epoch_ = 0;
  uint64_t start_round_ = 0;
  bool resumed_ = false;
  bool fits_in_memory_ = true;

  // Shared by the pipeline's done stage (which writes it) and its source
  // stage.
  mutable Mutex progress_mu_;
  TrainProgress progress_ ABSL_GUARDED_BY(progress_mu_);
  BatchCostModel cost_model_ ABSL_GUARDED_BY(progress_mu_);  // over this run's batches
  double epoch_loss_ ABSL_GUARDED_BY(progress_mu_) = 0;
  // Across ranks: the epoch's edges and mean loss over every rank, as of
  // the last ReportGlobalProgress.
  uint64_t global_edges_ = 0;
  double global_loss_ = 0;
  // Across ranks, this epoch on this rank: seconds training, moving
  // partitions and summing parameters, and the partition bytes it sent.
  double train_seconds_ = 0;
  double transfer_seconds_ = 0;
  double sync_seconds_ = 0;
  uint64_t bytes_at_boundary_ = 0;  // sent at round boundaries
  uint64_t bytes_overlapped_ = 0;   // sent while the round before trained
  // Moves of round early_round_ of this epoch, started while the round
  // before it trained; kNoEarlyRound when none are under way. Set when
  // they start, cleared when that round takes them and at each epoch's
  // start.
  static constexpr uint64_t kNoEarlyRound = ~uint64_t{0};
  PendingMoves early_moves_;
  uint64_t early_round_ = kNoEarlyRound;
  Clock::time_point epoch_start_;
  // Across ranks: ends the job (Cluster::Abort) when this rank makes no
  // progress for options.rank_timeout_seconds. Declared last, so destroyed
  // first: the loop's teardown is not watched.
  std::unique_ptr<RankWatchdog> watchdog_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_INTERNAL_TRAIN_LOOP_IMPL_H_
