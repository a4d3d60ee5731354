// Cutting a round's buckets into batches for the trainers
// (`--batching fixed|variance-aware`), and dealing them out.
#ifndef EMBER_TRAIN_ROUND_BATCHES_H_
#define EMBER_TRAIN_ROUND_BATCHES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "storage/types.h"
#include "train/batch_former.h"
#include "train/trainer.h"

namespace ember {

// The work of each edge of `task`: EdgeWork of its endpoints' feature
// counts (0 for partitions without features) and `edge_cost`.
std::vector<uint32_t> EdgeWorks(const BucketTask& task, uint32_t edge_cost);

// The cost of one edge in units of one feature non-zero, measured: a
// least-squares fit of batch time = a·edges + b·nnz over the batches trained
// so far gives edge_cost = a / b. Batches whose work counts both then take
// nearly equal time, whether features are light (edge costs dominate and
// batches keep nearly batch_size edges) or heavy (non-zeros dominate).
// Not thread-safe.
class BatchCostModel {
 public:
  // Used until the fit is determined. Measured values on this project's
  // machines were 10-60 (dim 64, chunk 50, 50 negatives).
  static constexpr uint32_t kPriorEdgeCost = 32;
  void Add(const BatchRecord& r);
  // The fitted a / b rounded and clamped to [1, 100000]; kPriorEdgeCost
  // while fewer than 16 batches with non-zeros were seen, or when the fit is
  // degenerate (edges and non-zeros collinear, or b <= 0).
  uint32_t EdgeCost() const;

 private:
  uint64_t batches_ = 0;
  double ee_ = 0, en_ = 0, nn_ = 0, te_ = 0, tn_ = 0;  // normal equations
};

// Batches of one bucket (task index `task_index`), with edge work
// EdgeWorks(task, edge_cost). kFixed: consecutive runs of batch_size edges,
// lr_scale 1. kVarianceAware: VarianceAwareBatches over the edges' work,
// seeded by `seed`; *edges is reordered so that every batch is a contiguous
// run, and each batch's lr_scale is StepScale(work, target, 0.5, 2): steady
// in the closing window, and no outlier batch takes more than twice the
// normal step.
// REQUIRES: task.edges views *edges.
std::vector<BatchRange> PlanBucketBatches(BatchingKind kind, uint32_t task_index,
                                          const BucketTask& task, std::vector<Edge>* edges,
                                          uint32_t batch_size, uint64_t seed,
                                          uint32_t edge_cost = 1);

// Queues for `trainers` trainers over the round's per-bucket batches
// (result[t] is trainer t's queue; several entries may share one).
// kFixed: trainer t takes bucket t mod k and, when trainers outnumber
// buckets, an equal share of its batches (a static split). kVarianceAware:
// one queue shared by all, the buckets' batches interleaved, so whichever
// trainer is free takes the next batch (dynamic dealing).
struct RoundQueues {
  std::vector<std::unique_ptr<BatchQueue>> owned;
  std::vector<BatchQueue*> of_trainer;
};
RoundQueues DealRoundBatches(BatchingKind kind,
                             const std::vector<std::vector<BatchRange>>& per_bucket,
                             size_t trainers);

}  // namespace ember

#endif  // EMBER_TRAIN_ROUND_BATCHES_H_
