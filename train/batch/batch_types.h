// What a trainer is handed: the rows it updates (PartitionData), the bucket
// being trained (BucketTask) and one step's run of its edges (BatchRange).
// Plain data, no I/O.
#ifndef EMBER_TRAIN_BATCH_BATCH_TYPES_H_
#define EMBER_TRAIN_BATCH_BATCH_TYPES_H_

#include <cstdint>
#include <vector>

#include "storage/types.h"

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
  // The two partitions hold nodes of one type (always, untyped): a chunk's
  // sources may serve as candidate destinations and its destinations as
  // candidate sources (endpoint negatives). False in a bucket of a typed
  // graph joining two types (users to items), where they would be
  // negatives of the wrong type.
  bool same_type = true;
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

}  // namespace ember

#endif  // EMBER_TRAIN_BATCH_BATCH_TYPES_H_
