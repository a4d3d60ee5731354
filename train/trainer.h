// A Trainer runs training steps on one device. The CPU trainer is the
// reference; a CUDA trainer implements the same interface. The scheduler
// (train_loop) gives each trainer buckets whose partitions no other trainer
// touches at the same time, and merges their relation parameters between
// rounds.
#ifndef EMBER_TRAIN_TRAINER_H_
#define EMBER_TRAIN_TRAINER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/types.h"
#include "train/checkpoint.h"
#include "train/feature_table.h"
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

// The edges of one bucket of a round, with its partitions' rows.
struct BucketTask {
  uint32_t src_partition = 0;
  uint32_t dst_partition = 0;
  std::span<const Edge> edges;  // already shuffled (and, for variance-aware
                                // batching, ordered by the batch plan)
  PartitionData* src = nullptr;  // may equal dst
  PartitionData* dst = nullptr;
  uint64_t seed = 0;  // with BatchRange::index, seeds a batch's negatives
};

// One training step: a contiguous run of one task's edges.
struct BatchRange {
  uint32_t task = 0;         // index into the tasks of TrainBatches
  uint64_t lo = 0, hi = 0;   // edges [lo, hi) of that task
  uint64_t index = 0;        // batch number within the task (RNG stream)
  uint64_t work = 0;         // Σ EdgeWork of its edges (batch_former.h)
  uint64_t nnz = 0;          // feature non-zeros of its edges' endpoints
  float lr_scale = 1.0f;     // step-size scale (StepScale)
};

// Batches handed out to whichever caller asks first. One queue shared by
// several trainers deals batches dynamically (a fast or lightly loaded
// trainer simply takes more); one queue per trainer is a static split.
// Thread-safe.
class BatchQueue {
 public:
  explicit BatchQueue(std::vector<BatchRange> batches) : batches_(std::move(batches)) {}
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;
  // The next batch, or null when all are taken.
  const BatchRange* Next() {
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    return i < batches_.size() ? &batches_[i] : nullptr;
  }
  size_t size() const { return batches_.size(); }

 private:
  const std::vector<BatchRange> batches_;
  std::atomic<size_t> next_{0};
};

// What one batch took: for the per-batch time and non-zeros spread, and the
// cost model.
struct BatchRecord {
  double seconds = 0;
  uint64_t edges = 0;
  uint64_t nnz = 0;
};

struct TrainerRunStats {
  double loss_sum = 0;  // summed over edges (both corrupted sides)
  uint64_t edges = 0;
  double busy_seconds = 0;  // wall time of the TrainBatches call
  std::vector<BatchRecord> batches;  // in completion order
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  // Trains batches taken from `queue` until it is empty; updates the
  // tasks' partitions' rows in place (and the shared feature table), and
  // this trainer's relation parameters. `on_batch(edges, loss)` is called
  // after each batch, from one thread of this trainer at a time (several
  // trainers may call it concurrently).
  virtual absl::StatusOr<TrainerRunStats> TrainBatches(
      std::span<const BucketTask> tasks, BatchQueue* queue,
      const std::function<void(uint64_t, double)>& on_batch) = 0;
  // This trainer's copy of the relation parameters.
  virtual RelationParams& relations() = 0;
};

// A CPU trainer using `threads` threads (its own oneTBB arena). `features`
// is the feature table shared by all trainers of a featurized model (null
// otherwise); it must outlive the trainer.
absl::StatusOr<std::unique_ptr<Trainer>> MakeCpuTrainer(const TrainOptions& options, int threads,
                                                        const RelationParams& relations,
                                                        FeatureTable* features);

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINER_H_
