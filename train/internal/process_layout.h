// The process-layout seam of the training loop (train_loop_impl.h): what
// differs between a run in one process and a run across the ranks of a
// Cluster. The loop picks one layout when it is built and calls its hooks
// without asking which layout it has:
//   SetUp (PlanRun within it), MakeSync         once per run
//   ScheduleEpoch, RoundsOfEpoch                per epoch
//   BeforeRound, Prefetch, BucketsOf            per round
//   BatchTrained                                per batch
//   AfterStretch                                per stretch of rounds
//   Checkpoint                                  at a checkpoint
//   CountEpoch, MeasureEpoch                    at an epoch's end
// One process: MakeOneProcessLayout. Across ranks: MakeRankLayout, whose
// SetUp, BeforeRound, AfterStretch, Checkpoint and MeasureEpoch exchange
// with the other ranks: every rank calls them, in the same order. Private
// to train/.
#ifndef EMBER_TRAIN_INTERNAL_PROCESS_LAYOUT_H_
#define EMBER_TRAIN_INTERNAL_PROCESS_LAYOUT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "train/checkpointer.h"
#include "train/distributed/cluster.h"
#include "train/model/feature_table.h"
#include "train/options/train_options.h"
#include "train/schedule/bucket_scheduler.h"
#include "train/schedule/parameter_sync.h"
#include "train/schedule/partition_buffer.h"
#include "train/train_loop.h"

namespace ember {

// How a run's rounds are shaped, from its memory plan.
struct RunPlan {
  // Partitions the buffer holds (PartitionBufferOptions::capacity).
  uint32_t buffer_partitions = 1;
  // Buckets per round (across ranks: over every rank's trainers).
  uint32_t round_size = 1;
  // What a checkpoint stopped mid-epoch records, and a resume must match.
  RunShape shape;
};

// What the loop measured over one stretch of rounds (one pipeline run and
// the parameter sync after it), with its progress at the stretch's end.
struct StretchEnd {
  double train_seconds = 0;  // the pipeline's wall time
  double sync_seconds = 0;   // summing the relation parameters
  TrainProgress progress;    // this process's, this epoch
  double loss_sum = 0;       // this process's, this epoch, over progress.edges_done
  std::chrono::steady_clock::time_point epoch_start;
};

// One checkpoint to write: the buffer's rows, the relations, the feature
// table (null: not featurized) and the position (Checkpointer::Write).
// Every pointer must stay valid for the call it is passed to.
struct CheckpointRequest {
  Checkpointer* checkpointer = nullptr;
  PartitionBuffer* buffer = nullptr;
  const RelationParams* relations = nullptr;
  const FeatureTable* features = nullptr;
  int epoch = 0;
  uint64_t next_round = 0;  // 0: the next epoch
  int epochs_done = 0;

  // Checkpointer::Write with these contents; `rows_written` as there.
  absl::Status Write(bool rows_written = false) const {
    return checkpointer->Write(buffer, *relations, features, epoch, next_round, epochs_done,
                               rows_written);
  }
};

class ProcessLayout {
 public:
  virtual ~ProcessLayout() = default;

  // Whether this process writes checkpoints, validates and appends the
  // metrics line (one process; across ranks, rank 0).
  virtual bool writer() const = 0;
  // Whether this process writes checkpoints into its graph (one process;
  // across ranks rank 0, or every rank into its own copy).
  virtual bool checkpoint_writer() const = 0;

  // The rounds' shape for a memory plan whose buffer holds
  // `buffer_partitions`, with `trainers` trainers in this process. Called
  // once, by the set-up that SetUp runs.
  virtual RunPlan PlanRun(uint32_t buffer_partitions, uint32_t trainers) = 0;
  // Runs `set_up_here` (the memory plan, the restore, the space check) and
  // returns its status; across ranks, starts the rank watchdog first, and
  // afterwards returns the first rank's error on every rank, or a refusal
  // when the ranks' graphs or settings differ (CheckRanksAgree).
  virtual absl::Status SetUp(const std::function<absl::Status()>& set_up_here) = 0;
  // The parameter sync of this layout's trainers. After PlanRun.
  virtual std::unique_ptr<ParameterSync> MakeSync(FeatureTable* features) = 0;

  // Schedules epoch `epoch` from round `first_round` (a resumed epoch);
  // across ranks, also loads the partitions this rank holds (the run's
  // first epoch) or checks them. The scheduler returned stays valid until
  // the next ScheduleEpoch or the layout's end.
  virtual absl::StatusOr<BucketScheduler*> ScheduleEpoch(int epoch, uint64_t first_round,
                                                         PartitionBuffer& buffer) = 0;
  // Every round of the epoch scheduled last, from round 0, as its buckets
  // (across ranks: every rank's).
  virtual std::vector<std::vector<Bucket>> RoundsOfEpoch() const = 0;

  // Before round `next` trains, with no batch in flight: its partitions
  // resident in `buffer`. `pause_after(b)`: whether a checkpoint or a stop
  // falls due once b more buckets are trained.
  virtual absl::Status BeforeRound(const Round& next, PartitionBuffer& buffer,
                                   const std::function<bool(uint64_t)>& pause_after) = 0;
  // On the pipeline's source stage, as the round before `next` starts:
  // what may load ahead for `next`.
  virtual void Prefetch(const Round& next, PartitionBuffer& buffer) = 0;
  // The buckets round `done` counts toward checkpoints, stops and progress
  // (across ranks: the global round's, so that every rank agrees on when a
  // checkpoint or stop is due).
  virtual uint64_t BucketsOf(const Round& done) const = 0;

  // After each trained batch, on the pipeline's done stage, with the
  // loop's progress so far.
  virtual void BatchTrained(const TrainProgress& progress) = 0;
  // After each stretch, once its parameters are synced.
  virtual absl::Status AfterStretch(const StretchEnd& end) = 0;

  // Writes the checkpoint `request` names and commits it. Across ranks, in
  // two phases agreed by all: every rank writes its share of the
  // partitions durably (into its own copy, or, sharing rank 0's graph,
  // rank 0 into the shards and the others as table files beside them),
  // then rank 0 commits (taking the others' files in first), then, into
  // own copies, the others commit theirs.
  virtual absl::Status Checkpoint(const CheckpointRequest& request) = 0;
  // Whether an epoch-end checkpoint may be copied and written beside the
  // next epoch (Checkpointer::WriteCopied) rather than by Checkpoint: one
  // process, which alone writes the graph.
  virtual bool WritesCheckpointsBesideTraining() const = 0;

  // At an epoch's end: sets stats->edges and stats->loss to the epoch's
  // over the whole run (across ranks: every rank's, as of its last round).
  virtual void CountEpoch(EpochStats* stats) const = 0;
  // After the epoch's checkpoint (its time in stats->checkpoint_seconds): across
  // ranks, the epoch's measure over every rank and, with `predict`, the
  // cost model's predictions (train/distributed/epoch_model.h).
  virtual absl::Status MeasureEpoch(int epoch, bool predict, EpochStats* stats) = 0;
};

// `graph` and `options` must outlive the layout.
std::unique_ptr<ProcessLayout> MakeOneProcessLayout(Graph* graph, const TrainOptions& options);
// REQUIRES: cluster->world_size() > 1. `graph`, `options` and `cluster`
// must outlive the layout.
std::unique_ptr<ProcessLayout> MakeRankLayout(Graph* graph, const TrainOptions& options,
                                              Cluster* cluster);

}  // namespace ember

#endif  // EMBER_TRAIN_INTERNAL_PROCESS_LAYOUT_H_
