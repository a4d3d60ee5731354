// The trainer seam: the rows a trainer updates (PartitionData), the unit of
// work it is handed (a batch of a bucket), and the Trainer interface that
// every device kind implements.
#ifndef EMBER_TRAIN_TRAINER_H_
#define EMBER_TRAIN_TRAINER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/types.h"
#include "train/checkpoint.h"
#include "train/feature_table.h"
#include "train/row_residency.h"
#include "train/train_options.h"

namespace ember {

// One partition's trainable rows, resident in memory.
struct PartitionData {
  uint32_t partition = 0;
  uint64_t rows = 0;
  int dim = 0;
  // Id rows; empty when the model has none (FeaturizedMode::kFeatures).
  std::vector<float> embeddings;  // rows x dim, row-major
  std::vector<float> optimizer;   // rows: row-wise Adagrad state
  uint64_t frozen_rows = 0;       // rows below this are never updated
  // Featurized models only: the nodes' sparse features in CSR form
  // (Graph::ReadPartitionFeatures); empty otherwise.
  std::vector<uint64_t> feature_row_start;
  std::vector<FeatureEntry> feature_entries;
  float* Row(uint64_t r) { return embeddings.data() + r * dim; }
  // Feature entries of node r (0 without features).
  uint32_t FeatureCount(uint64_t r) const {
    return feature_row_start.empty()
               ? 0
               : static_cast<uint32_t>(feature_row_start[r + 1] - feature_row_start[r]);
  }
};

// A bucket being trained: its partitions' rows, resident (and pinned by
// the partition buffer) while any batch of it is in flight.
struct BucketTask {
  uint32_t src_partition = 0;
  uint32_t dst_partition = 0;
  PartitionData* src = nullptr;  // may equal dst
  PartitionData* dst = nullptr;
  uint64_t seed = 0;  // with BatchRange::index, seeds a batch's negatives
};

// One training step: a contiguous run of the edges a bucket's batches were
// planned over (round_batches.h), grouped by relation.
struct BatchRange {
  uint64_t lo = 0, hi = 0;  // edges [lo, hi) of the planned span
  uint64_t index = 0;       // batch number within its bucket (RNG stream)
  uint64_t work = 0;        // sum of EdgeWork of its edges (batch_former.h)
  uint64_t nnz = 0;         // feature non-zeros of its edges' endpoints
  float lr_scale = 1.0f;    // step-size scale (StepScale)
};

// What one batch took: for the per-batch time and non-zeros spread, and the
// cost model.
struct BatchRecord {
  double seconds = 0;
  uint64_t edges = 0;
  uint64_t nnz = 0;
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
};

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINER_H_
