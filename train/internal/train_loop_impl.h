// The training loop's class (train_loop.cc). Private to train/.
#ifndef EMBER_TRAIN_INTERNAL_TRAIN_LOOP_IMPL_H_
#define EMBER_TRAIN_INTERNAL_TRAIN_LOOP_IMPL_H_

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "partition/train_memory.h"
#include "storage/base/mutex.h"
#include "storage/graph.h"
#include "train/batch/round_batches.h"
#include "train/checkpointer.h"
#include "train/distributed/cluster.h"
#include "train/eval/evaluator.h"
#include "train/internal/process_layout.h"
#include "train/model/checkpoint.h"
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
// behind the seams: process_layout.h (one process or ranks),
// bucket_scheduler.h, parameter_sync.h, trainer_factory.h, row_residency.h.
class TrainLoop final : public PipelineObserver {
 public:
  using Clock = std::chrono::steady_clock;
  // Threads of the run's I/O executor at most: enough for every reader of
  // a round and of the next (one per trainer each) and a partition load.
  static constexpr int kIoThreads = 8;

  // `graph` and `cluster` must outlive the loop. `cluster`: the ranks of a
  // run across processes (rank 0 writes the checkpoints; the others open
  // the graph read-only), or null (or one rank) for one process.
  TrainLoop(Graph* graph, const TrainOptions& options, Cluster* cluster = nullptr)
      : graph_(graph),
        options_(options),
        P_(graph_->manifest().num_partitions),
        layout_(cluster != nullptr && cluster->world_size() > 1
                    ? MakeRankLayout(graph, options_, cluster)
                    : MakeOneProcessLayout(graph, options_)) {}

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
  // Writes and commits a checkpoint of the model as it is: epoch `epoch`,
  // resuming at round `next_round` (0: the next epoch), `epochs_done`.
  // Waits for a checkpoint being written beside training first.
  absl::Status Checkpoint(int epoch, uint64_t next_round, int epochs_done);
  // Whether the checkpoint at this epoch's end may be written beside the
  // next epoch: the layout allows it, the model has no features, every
  // partition is resident, and the rows' share of the budget holds a
  // second copy of them.
  absl::StatusOr<bool> CheckpointBesideTraining();
  // Copies the model (Checkpointer::Copy) and starts writing it as the
  // checkpoint after `epochs_done` epochs, on the I/O executor.
  absl::Status StartCheckpointBeside(int epochs_done);
  // Waits for the checkpoint being written beside training, if any; then
  // the buffer names its tables and its epoch's metrics line is appended.
  absl::Status FinishCheckpointBeside();
  // Trains the rounds `scheduler` gives of epoch `epoch`; sets *stopped
  // when stop_after_buckets fired.
  absl::Status TrainEpoch(int epoch, BucketScheduler* scheduler, bool* stopped);
  // FailedPrecondition naming the graph, the epoch and the checkpoint kept
  // when `loss_sum` (this epoch's so far) is NaN or infinite: a diverged
  // model stops the run before any checkpoint of it.
  absl::Status CheckLossFinite(int epoch, double loss_sum) const;
  absl::StatusOr<EvalResult> Validate();
  void ResetBatchStats();
  // Whether a checkpoint, or a stop (stop_after_buckets), is due once
  // `more` buckets than those counted so far are trained.
  bool CheckpointDue(uint64_t more = 0) const {
    return options_.schedule.checkpoint_every > 0 &&
           buckets_since_checkpoint_ + more >= options_.schedule.checkpoint_every;
  }
  bool StopDue(uint64_t more = 0) const {
    return options_.hooks.stop_after_buckets > 0 &&
           buckets_this_run_ + more >= options_.hooks.stop_after_buckets;
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
  TrainMemoryPlan memory_;
  // The buffer's capacity and what a mid-epoch checkpoint records (the
  // layout's RunPlan).
  uint32_t capacity_ = 1;
  RunShape shape_;
  size_t tokens_ = 1;
  bool one_device_kind_ = true;  // every trainer of one kind (static splits)
  bool rows_off_host_ = false;   // some trainer keeps rows off the host (not cpu)
  RelationParams relations_;
  // Restores and writes checkpoints; set by RestoreOrInit.
  std::unique_ptr<Checkpointer> checkpointer_;
  // The last checkpoint copied to be written beside training, kept for the
  // next (StartCheckpointBeside); outlives io_, which writes it.
  std::unique_ptr<CopiedCheckpoint> checkpoint_copy_;
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
  // A checkpoint being written beside training (StartCheckpointBeside), on
  // io_, and its epoch's stats, appended to metrics.jsonl once it commits.
  std::future<absl::Status> checkpoint_beside_;
  std::optional<EpochStats> metrics_after_checkpoint_;
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
  Clock::time_point epoch_start_;
  // One process or ranks (process_layout.h), picked at construction.
  // Declared last, so destroyed first: across ranks its watchdog stops
  // before the loop's teardown, which is not watched, and the partition
  // moves it has under way end before the buffer does.
  const std::unique_ptr<ProcessLayout> layout_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_INTERNAL_TRAIN_LOOP_IMPL_H_
