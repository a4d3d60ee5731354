// A Trainer runs training steps on one device. The CPU trainer is the
// reference; a CUDA trainer implements the same interface. The scheduler
// (train_loop) gives each trainer buckets whose partitions no other trainer
// touches at the same time, and merges their relation parameters between
// rounds.
#ifndef EMBER_TRAIN_TRAINER_H_
#define EMBER_TRAIN_TRAINER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/types.h"
#include "train/checkpoint.h"
#include "train/train_options.h"

namespace ember {

// One partition's trainable rows, resident in memory.
struct PartitionData {
  uint32_t partition = 0;
  uint64_t rows = 0;
  int dim = 0;
  std::vector<float> embeddings;  // rows x dim, row-major
  std::vector<float> optimizer;   // rows: row-wise Adagrad state
  uint64_t frozen_rows = 0;       // rows below this are never updated
  float* Row(uint64_t r) { return embeddings.data() + r * dim; }
};

struct BucketTask {
  uint32_t src_partition = 0;
  uint32_t dst_partition = 0;
  std::span<const Edge> edges;  // already shuffled
  PartitionData* src = nullptr;  // may equal dst
  PartitionData* dst = nullptr;
  uint64_t seed = 0;  // negatives and batch RNG
};

struct BucketStats {
  double loss_sum = 0;  // summed over edges (both corrupted sides)
  uint64_t edges = 0;
  double seconds = 0;
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  // Trains on the task's edges; updates the partitions' rows in place and
  // this trainer's relation parameters. `on_batch(edges, loss)` is called
  // after each batch, from one thread at a time.
  virtual absl::StatusOr<BucketStats> TrainBucket(
      const BucketTask& task,
      const std::function<void(uint64_t, double)>& on_batch) = 0;
  // This trainer's copy of the relation parameters.
  virtual RelationParams& relations() = 0;
};

// A CPU trainer using `threads` threads (its own oneTBB arena).
absl::StatusOr<std::unique_ptr<Trainer>> MakeCpuTrainer(
    const TrainOptions& options, int threads, const RelationParams& relations);

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINER_H_
