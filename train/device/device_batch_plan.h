// The host's half of a device step: from a batch's edges, the index arrays
// that the step's kernels read (kernel_bodies.h, StepArgs) and the batch's
// distinct rows and relations.
//
// The batch is cut into chunks of `chunk` edges in order (mixed relations;
// the last chunk padded). Per chunk and side, `negs` uniform negatives are
// drawn as the CPU trainer draws them: from a generator seeded by
// (task seed, batch index), a window of consecutive rows at a uniform start
// when the partition has at least 4·negs rows, else rows with replacement;
// per chunk the source side's first. Every row the step touches is
// numbered once (its distinct row): rows of one partition, or of two when the
// bucket's partitions differ, so that a row's gradients from all the chunks of
// the batch are summed before its one Adagrad step.
#ifndef EMBER_TRAIN_DEVICE_DEVICE_BATCH_PLAN_H_
#define EMBER_TRAIN_DEVICE_DEVICE_BATCH_PLAN_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "storage/types.h"
#include "train/device/kernel_bodies.h"

namespace ember {

struct DeviceBatchInput {
  int chunk = 50;
  int negs = 50;
  bool endpoints = false;
  bool same_partition = true;  // the bucket's src and dst partitions are one
  uint64_t src_rows = 0, dst_rows = 0;
  uint64_t seed = 0;  // Mix64(task seed, batch index)
  // Featurized models (StepShape::featurized != 0): each table's feature CSR
  // (PartitionData::feature_row_start and feature_entries; table 1 unused
  // when same_partition).
  int featurized = 0;
  const uint64_t* feature_row_start[2] = {nullptr, nullptr};
  const FeatureEntry* feature_entries[2] = {nullptr, nullptr};
};

struct DeviceBatchPlan {
  int chunks = 0, last_valid = 0;
  std::vector<int32_t> q_row, k_row, q_slot;  // as in StepArgs
  std::vector<uint8_t> u_table;               // per distinct row
  std::vector<uint32_t> u_node;
  std::vector<uint32_t> slot_relation;  // the relation of each slot
  // Featurized models, as in StepArgs: each distinct row's features (their
  // weights divided by the row's weight sum; none when that sum is 0 or
  // its inverse is not finite) and each distinct feature's table row.
  std::vector<int64_t> u_feat_start;  // distinct rows + 1
  std::vector<int32_t> u_feat;
  std::vector<float> u_weight;
  std::vector<uint32_t> f_id;
};

// Reusable planner (keeps its buffers' capacity). Not thread-safe.
class DeviceBatchPlanner {
 public:
  // REQUIRES: edges non-empty; rows >= 1 on both sides; chunk >= 1;
  // negs >= 0.
  const DeviceBatchPlan& Plan(std::span<const Edge> edges, const DeviceBatchInput& in);

 private:
  int32_t Distinct(int table, uint32_t node);
  void AddFeatures(int table, uint32_t node);

  DeviceBatchInput in_;
  DeviceBatchPlan plan_;
  absl::flat_hash_map<uint64_t, int32_t> distinct_;
  absl::flat_hash_map<uint32_t, int32_t> slots_;
  absl::flat_hash_map<uint32_t, int32_t> features_;
  std::vector<uint32_t> src_negs_, dst_negs_;
};

// The shape that `plan` fills, for `options`-like fields (StepShape's:
// rel_size the floats of a relation record, RelationRecordSize; n3 the
// weight of N3, 0 for none).
device::StepShape ShapeOf(const DeviceBatchPlan& plan, const DeviceBatchInput& in, int dim, int op,
                          int cmp, int loss, float margin, int rel_size, bool reciprocal, float n3);

}  // namespace ember

#endif  // EMBER_TRAIN_DEVICE_DEVICE_BATCH_PLAN_H_
