// Cutting a window of a bucket's edges into batches for the trainers
// (`--batching fixed|variance-aware`), and which trainer takes a batch.
#ifndef EMBER_TRAIN_BATCH_ROUND_BATCHES_H_
#define EMBER_TRAIN_BATCH_ROUND_BATCHES_H_

#include <cstdint>
#include <span>
#include <vector>

#include "storage/types.h"
#include "train/batch/batch_former.h"
#include "train/batch/batch_types.h"

namespace ember {

// The work of each of `edges` (of bucket `task`): EdgeWork of its
// endpoints' feature counts (0 for partitions without features) and
// `edge_cost`.
std::vector<uint32_t> EdgeWorks(const BucketTask& task, std::span<const Edge> edges,
                                uint32_t edge_cost);

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

// Batches over `edges` (a window of bucket `task`, already shuffled), with
// edge work EdgeWorks(task, edges, edge_cost). kFixed: consecutive runs of
// batch_size edges, lr_scale 1. kVarianceAware: VarianceAwareBatches over
// the edges' work, seeded by `seed`; `edges` is permuted in place (each edge
// moved once) so that every batch is a contiguous run, then each batch is
// shuffled, and its lr_scale is StepScale(work, target, 0.5, 2): steady in
// the closing window, and no outlier batch takes more than twice the normal
// step. With `group_by_relation`, each batch's edges are then stably sorted
// by relation (the trainer cuts chunks at relation changes). Batch indices
// count from `first_index`. `weights` (empty, or one per edge) is
// reordered with the edges. REQUIRES: edges.size() < 2^32.
std::vector<BatchRange> PlanWindowBatches(BatchingKind kind, const BucketTask& task,
                                          std::span<Edge> edges, uint32_t batch_size, uint64_t seed,
                                          uint32_t edge_cost, bool group_by_relation,
                                          uint64_t first_index, std::span<float> weights = {});

// Moves edges[order[i]] to position i for every i, in place: `order` is a
// permutation of [0, edges.size()). `weights` (empty, or one per edge)
// moves the same way.
void PermuteInPlace(std::span<Edge> edges, std::span<const uint32_t> order,
                    std::span<float> weights = {});

// Fixed dealing (a static split): the trainer that takes batch `index` of
// the round's bucket `bucket` (of `buckets`) among `trainers` >= buckets
// trainers. The trainers t with t mod buckets == bucket share that bucket's
// batches in turn.
size_t FixedTrainerOf(size_t bucket, size_t buckets, uint64_t index, size_t trainers);

}  // namespace ember

#endif  // EMBER_TRAIN_BATCH_ROUND_BATCHES_H_
