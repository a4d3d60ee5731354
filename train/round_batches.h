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

// The work of each edge of `task` (EdgeWork of its endpoints' feature
// counts; 1 per edge for partitions without features).
std::vector<uint32_t> EdgeWorks(const BucketTask& task);

// Batches of one bucket (task index `task_index`). kFixed: consecutive runs
// of batch_size edges, lr_scale 1. kVarianceAware: VarianceAwareBatches over
// the edges' work, seeded by `seed`; *edges is reordered so that every
// batch is a contiguous run, and each batch's lr_scale is
// StepScale(work, target, 0.5, 2): steady in the closing window, and no
// outlier batch takes more than twice the normal step.
// REQUIRES: task.edges views *edges.
std::vector<BatchRange> PlanBucketBatches(BatchingKind kind, uint32_t task_index,
                                          const BucketTask& task, std::vector<Edge>* edges,
                                          uint32_t batch_size, uint64_t seed);

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
