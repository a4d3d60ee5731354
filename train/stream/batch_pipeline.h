// The streaming training pipeline: one oneTBB parallel_pipeline that every
// trainer of a run joins.
//
//   source (serial, in order): batches from the bucket scheduler's rounds,
//       each a run of a shuffled edge window (round_source.h)
//   → train (parallel): dealt to a trainer with a free slot, or to the
//       trainer a static split names; Trainer::TrainBatch
//   → done (serial, out of order): PipelineObserver::BatchTrained (stats,
//       cost model, progress)
//
// At most `tokens` batches are in flight, so the edges held by the pipeline
// are bounded by tokens windows (a batch keeps its window alive).
#ifndef EMBER_TRAIN_STREAM_BATCH_PIPELINE_H_
#define EMBER_TRAIN_STREAM_BATCH_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/stream/edge_window.h"
#include "train/stream/pipeline_observer.h"
#include "train/trainers/trainer.h"

namespace ember {

struct PipelineBatch {
  std::shared_ptr<EdgeWindow> window;      // owns the edges
  std::shared_ptr<const BucketTask> task;  // the bucket's partitions and seed
  BatchRange range;                        // edges [lo, hi) of the window
  int trainer = -1;  // the trainer that must take it (static split); -1: any
  std::span<const Edge> edges() const {
    return std::span<const Edge>(window->edges).subspan(range.lo, range.hi - range.lo);
  }
  // The range with its edges' weights (BatchRange::weights), as trainers
  // take it.
  BatchRange weighted_range() const {
    BatchRange r = range;
    r.weights = window->weights.empty() ? nullptr : window->weights.data() + range.lo;
    return r;
  }
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next batch, or false when this stretch of training is over. Called
  // from one thread at a time.
  virtual absl::StatusOr<bool> Next(PipelineBatch* out) = 0;
};

struct BatchDone {
  const PipelineBatch* batch = nullptr;
  size_t trainer = 0;  // index into the pipeline's trainers
  double loss = 0;
  BatchRecord record;
};

class BatchPipeline {
 public:
  // `threads`: the oneTBB arena's size (CPU trainers' threads, plus one per
  // slot of trainers that wait on a device). REQUIRES: trainers non-empty
  // and outliving the pipeline.
  BatchPipeline(std::vector<Trainer*> trainers, int threads);
  ~BatchPipeline();
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // Runs `source` dry with at most `tokens` batches in flight; each trained
  // batch goes to observer->BatchTrained (unless `observer` is null) from
  // one thread at a time. Returns the first error of the source or a
  // trainer (the rest of the stretch is then skipped).
  absl::Status Run(BatchSource* source, size_t tokens, PipelineObserver* observer);

  // Slots of all trainers: the batches that can train at once.
  size_t total_slots() const;

 private:
  size_t Acquire(int required);
  void Release(size_t trainer);

  struct Rep;
  std::unique_ptr<Rep> rep_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_STREAM_BATCH_PIPELINE_H_
