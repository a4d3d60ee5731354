// The pipeline's source for one epoch: pulls rounds from the bucket
// scheduler, streams each bucket of the round in shuffled windows
// (BucketWindowReader), plans each window's batches (PlanWindowBatches) and
// hands them out interleaved across the round's buckets, so that every
// trainer of the round has work from the start.
//
// A round's buckets hold pins on their partitions (partition_buffer.h) from
// the round's start until the last batch of each bucket is trained. While a
// round is emitted, the edge windows of the next round are already being
// read (its readers start with the round), and
// PipelineObserver::RoundStarted lets the observer prefetch its partitions
// and names the edge cost to plan the round with. At a round's end the
// source asks PipelineObserver::RoundEmitted whether the next round can
// follow inside the same pipeline run (its partitions resident, no sync or
// checkpoint due); if not, Next returns false and the next call of Next
// starts that round.
#ifndef EMBER_TRAIN_STREAM_ROUND_SOURCE_H_
#define EMBER_TRAIN_STREAM_ROUND_SOURCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "storage/graph.h"
#include "train/batch/batch_former.h"
#include "train/schedule/bucket_scheduler.h"
#include "train/schedule/io_executor.h"
#include "train/stream/batch_pipeline.h"
#include "train/stream/edge_window.h"
#include "train/stream/pipeline_observer.h"

namespace ember {

class PartitionBuffer;

// Each field's default is the value shown.
struct RoundSourceOptions {
  BatchingKind batching = BatchingKind::kFixed;
  uint32_t batch_size = 1000;       // >= 1
  uint64_t window_edges = 1 << 20;  // edges per shuffled window; >= 1
  int reader_depth = 1;             // windows read ahead per bucket; >= 1
  uint64_t seed = 0;
  int epoch = 0;
  uint32_t min_generation = 0;
  double edge_sample = 1.0;  // BucketReadSpec::sample; in (0, 1]
  bool group_by_relation = false;
  // Read each edge's weight with it (BucketReadSpec::weights), for the
  // trainers' loss (BatchRange::weights). Only for weighted graphs.
  bool read_weights = false;
  // > 0: draw each edge at a rate proportional to its weight, this being
  // the mean weight (BucketReadSpec::weight_sample_mean). Only for weighted
  // graphs. 0: every edge once.
  double weight_sample_mean = 0;
  size_t trainers = 1;  // >= 1
  // Fixed batching with several trainers: each batch goes to the trainer a
  // static split names when true (trainers of one kind, equal speed), to
  // whichever is free when false (kinds of unequal speed, e.g. a GPU
  // beside the CPU, where a static split would idle the faster one).
  bool static_split = true;
  // Every batch of the round's i-th bucket goes to trainer i (a round has
  // at most `trainers` buckets), whatever the batching: each trainer's
  // relation copy then sees one bucket's batches in order, which a run
  // split across ranks can repeat exactly (deterministic runs).
  bool trainer_per_bucket = false;

  // InvalidArgument naming the first field out of range.
  absl::Status Validate() const;
};

class RoundBatchSource final : public BatchSource {
 public:
  // Edges are read on `io`. All pointers must outlive the source.
  // InvalidArgument when `options` are not valid (checked first).
  static absl::StatusOr<std::unique_ptr<RoundBatchSource>> Make(
      const Graph* graph, PartitionBuffer* buffer, IoExecutor* io, BucketScheduler* scheduler,
      PipelineObserver* observer, const RoundSourceOptions& options);
  ~RoundBatchSource() override;

  absl::StatusOr<bool> Next(PipelineBatch* out) override;
  // The round the next call of Next starts with (when none is under way):
  // taken from the scheduler now if needed, its edges starting to read.
  // Null when the epoch has no more rounds.
  const Round* PeekNext();

 private:
  RoundBatchSource(const Graph* graph, PartitionBuffer* buffer, IoExecutor* io,
                   BucketScheduler* scheduler, PipelineObserver* observer,
                   const RoundSourceOptions& options);

  struct Slot;  // one bucket of the current round
  struct Active;
  absl::StatusOr<bool> StartRound();
  std::vector<std::unique_ptr<BucketWindowReader>> OpenReaders(const Round& round);
  absl::StatusOr<bool> Refill(Slot* slot);

  const Graph* const graph_;
  PartitionBuffer* const buffer_;
  IoExecutor* const io_;
  BucketScheduler* const scheduler_;
  PipelineObserver* const observer_;
  const RoundSourceOptions options_;
  std::unique_ptr<Active> current_;
  std::optional<Round> next_round_;  // peeked, its readers already reading
  std::vector<std::unique_ptr<BucketWindowReader>> next_readers_;
  bool done_ = false;
};

// The seed of bucket b's batches in an epoch (negatives; with the window
// number, its shuffles).
uint64_t BucketSeed(uint64_t seed, int epoch, const Bucket& b, uint32_t P);

}  // namespace ember

#endif  // EMBER_TRAIN_STREAM_ROUND_SOURCE_H_
