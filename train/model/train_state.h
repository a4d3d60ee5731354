// TrainState: what a checkpoint records of training, beside the model's
// rows and blobs (checkpoint.h), and its encoding in MANIFEST.json.
//
// Storage keeps the encoded state opaque (Manifest::training: a JSON object
// and its format version, storage.state_version); this file alone reads and
// writes its inside. In the manifest it is the members of `training` beside
// storage's own (checkpoint_version, edge_generation, state_version):
//   "epochs_done": epochs trained,
//   "state": {"model": ModelOptions as JSON (operator, comparator, loss,
//                       margin, dim, featurized, reciprocal, regularizer,
//                       reg_weight; the last three absent before they
//                       existed, read as false, none and the default),
//             "partition_versions": [table version of each partition],
//             "trainer": {"epoch", "next_round", "lr", "seed",
//                         "bucket_order", "buffer_partitions",
//                         "round_size", "world_size", "round_lookahead",
//                         "weights" (absent before it was recorded)},
//             "copies": {"rank", "partition_ranks"}}
// `copies` is present only in a graph copy written by ranks that each
// checkpoint into their own copy (TrainOptions::rank_copies).
// Version 1 (manifests written before the state had a version) has the
// same members plus `training.dim`, a copy of state.model.dim; it is read
// as version 2, the copy ignored. Version 3 is version 2 with `copies`.
// Versions are read, never rewritten: the next checkpoint writes version 3
// where it has `copies`, else 2.
#ifndef EMBER_TRAIN_MODEL_TRAIN_STATE_H_
#define EMBER_TRAIN_MODEL_TRAIN_STATE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/bucket_order.h"
#include "storage/graph.h"
#include "storage/manifest.h"
#include "train/model/model_options.h"

namespace ember {

// Where the epoch after the checkpoint starts, and what a run must match to
// resume an epoch stopped in the middle (next_round > 0).
struct TrainPosition {
  uint32_t epoch = 0;        // the epoch the checkpoint was written in or after
  uint64_t next_round = 0;   // 0: at an epoch boundary
  double lr = 0;             // the step trained with (0: not recorded)
  uint64_t seed = 0;
  std::string bucket_order;  // BucketOrderName
  uint32_t buffer_partitions = 0;
  uint32_t round_size = 0;
  uint32_t world_size = 1;   // ranks of the run that wrote it
  // FormRounds' look-ahead (absent before it varied: 64).
  uint32_t round_lookahead = kOutOfCoreLookahead;
  // What the run did with a weighted graph's edge weights (`--weights`:
  // EdgeWeightModeName); "" where the state predates it.
  std::string edge_weights;
};

struct TrainState {
  // 1: written before the state had a version (it had training.dim).
  // 3: a rank's own copy (`copies`): readers of versions up to 2 refuse it
  // instead of loading rows the copy does not hold. A state without
  // `copies` is written as kPlainVersion, which those readers read right.
  static constexpr uint32_t kPlainVersion = 2;
  static constexpr uint32_t kVersion = 3;

  uint32_t epochs_done = 0;
  ModelOptions model;
  // Table version holding each partition's rows (num_partitions entries).
  std::vector<uint64_t> partition_versions;
  TrainPosition position;  // zeros and "" where a state lacks `trainer`
  // Where the rows are when ranks checkpoint into their own copies of the
  // graph: partition p's tables are in the copy of rank partition_ranks[p],
  // and this copy is rank copy_rank's. Empty: every partition's rows are in
  // this copy (one process, ranks writing through rank 0, or a gathered
  // copy).
  std::vector<uint32_t> partition_ranks;
  uint32_t copy_rank = 0;

  // Whether partition p's committed rows are in this copy.
  bool RowsHere(uint32_t p) const {
    return partition_ranks.empty() || partition_ranks[p] == copy_rank;
  }
};

// `state` as the manifest's training record of checkpoint `checkpoint_version`
// for the graph as `m` describes it now (its edge generation).
void StoreTrainState(const TrainState& state, uint64_t checkpoint_version, Manifest* m);

// The state of m's checkpoint. When edges were appended since it was
// written (m.edge_generation differs from the record's), a new epoch count
// starts: epochs_done and position.next_round read 0, the rest as stored.
// FailedPrecondition when m has no checkpoint or the state's version is
// newer than kVersion; DataLoss naming `manifest_path` and the field when
// a member is missing or of the wrong type, or partition_versions does not
// have m.num_partitions entries.
absl::StatusOr<TrainState> ReadTrainState(const Manifest& m, const std::string& manifest_path);
absl::StatusOr<TrainState> ReadTrainState(const Graph& graph);

std::string ModelOptionsToJson(const ModelOptions& m);
// DataLoss naming "model options" and the field.
absl::StatusOr<ModelOptions> ModelOptionsFromJson(std::string_view json);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_TRAIN_STATE_H_
