// The one way the streaming pipeline reports to whoever runs it (the
// training loop): round events from its source stage, trained batches from
// its done stage, and the two answers it needs back.
//
// Threading: RoundStarted and RoundEmitted are called from the pipeline's
// source stage (RoundBatchSource::Next), BatchTrained from its done stage
// (BatchPipeline::Run). Each stage calls one method at a time, but the two
// stages run at the same time: what both reach must be locked.
#ifndef EMBER_TRAIN_STREAM_PIPELINE_OBSERVER_H_
#define EMBER_TRAIN_STREAM_PIPELINE_OBSERVER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "train/schedule/bucket_scheduler.h"

namespace ember {

struct BatchDone;

class PipelineObserver {
 public:
  virtual ~PipelineObserver() = default;

  // Source stage: `round` starts. Its partitions are pinned in the buffer
  // until its last batch is trained; `next` is the round after it, if any
  // (to prefetch). Returns the edge cost (round_batches.h) that the round's
  // windows are planned with.
  virtual uint32_t RoundStarted(const Round& round, const Round* next) = 0;

  // Source stage: every batch of `done` has been handed out. `next` is the
  // round after it, null at the epoch's end. Returns whether `next` follows
  // inside the same pipeline run (ignored when null); if not, the run ends
  // once its batches in flight are trained, and the next run starts with
  // `next`.
  virtual absl::StatusOr<bool> RoundEmitted(const Round& done, const Round* next) = 0;

  // Done stage: `batch` is trained.
  virtual void BatchTrained(const BatchDone& batch) = 0;
};

}  // namespace ember

#endif  // EMBER_TRAIN_STREAM_PIPELINE_OBSERVER_H_
