// The trainer seam: the Trainer interface that every device kind implements.
// The rows it updates and the work it is handed are train/batch/batch_types.h.
#ifndef EMBER_TRAIN_TRAINERS_TRAINER_H_
#define EMBER_TRAIN_TRAINERS_TRAINER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/types.h"
#include "train/model/checkpoint.h"
#include "train/model/feature_table.h"
#include "train/batch/batch_types.h"
#include "train/trainers/row_residency.h"
#include "train/options/train_options.h"

namespace ember {

// Where a device trainer's steps spent their time, summed over the steps
// since it was made (seconds): planning the batch on the host (gathering,
// packing the upload), submitting the copies and kernels, the device's
// time for the step and the copy of its results (timed on the device), the
// host waiting for them, and finishing (the loss, the relation update). Wall times are
// per calling thread; steps of concurrent slots overlap.
struct StepTimes {
  uint64_t steps = 0;
  double plan = 0, submit = 0, device = 0, wait = 0, finish = 0;
};

// A trainer runs training steps on one device. The CPU trainer is the
// reference; other kinds (trainer_factory.h) implement the same interface.
// The streaming pipeline (batch_pipeline.h) deals batches to trainers; the
// bucket scheduler guarantees that no two trainers hold batches of buckets
// sharing a partition unless both train rows in host memory.
class Trainer : public RowResidency {
 public:
  // "cpu", "cuda:0", ...
  virtual std::string device() const = 0;
  // Batches this trainer trains at once: TrainBatch may be called from up
  // to this many threads concurrently (CPU: its threads).
  virtual int slots() const = 0;
  // Trains one batch of `task`: `edges` (grouped by relation), updating the
  // task's partitions' rows (and the feature table of featurized models)
  // and this trainer's relation parameters. Returns the batch's summed
  // loss. Thread-safe for up to slots() concurrent calls.
  virtual absl::StatusOr<double> TrainBatch(const BucketTask& task, const BatchRange& batch,
                                            std::span<const Edge> edges) = 0;
  // This trainer's copy of the relation parameters (parameter_sync.h reads
  // and replaces it between stretches, never during TrainBatch).
  virtual RelationParams& relations() = 0;
  // Featurized models, between stretches (parameter_sync.h): adds the
  // changes this trainer made to its own copy of the feature table since
  // the last RefreshFeatures into *table; then RefreshFeatures makes that
  // copy equal *table. Trainers that update the shared host table in place
  // (the CPU trainer) keep no copy: both are no-ops.
  virtual absl::Status MergeFeatures(FeatureTable* table) { return absl::OkStatus(); }
  virtual absl::Status RefreshFeatures(const FeatureTable& table) { return absl::OkStatus(); }
  // Device memory this trainer has held at most (its rows and buffers);
  // 0 for trainers that train in host memory.
  virtual size_t device_peak_bytes() const { return 0; }
  // Device trainers: where their steps' time went; zero for the others.
  virtual StepTimes step_times() const { return {}; }
};

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINERS_TRAINER_H_
