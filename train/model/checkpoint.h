// The trained model as kept in a graph directory, and how to read it back.
//
// A checkpoint version V (Manifest::training.checkpoint_version, > 0) is
//  - Table::kEmbeddings / kOptimizer rows of every partition under V
//    (partition_size x dim floats; optimizer: partition_size x 1 floats,
//    the row-wise Adagrad state);
//  - blob "relations-V": relation parameters and their Adagrad state
//    (EncodeRelationBlob);
//  - featurized models: blob "feature-table-V" (train/model/feature_table.h);
//    models without id rows (--featurized features) write no tables;
//  - the manifest's training record: V and the TrainState (train_state.h:
//    model options, table version of each partition, position).
// The manifest names V only after all of the above is durable.
#ifndef EMBER_TRAIN_MODEL_CHECKPOINT_H_
#define EMBER_TRAIN_MODEL_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "train/model/feature_table.h"
#include "train/model/model_options.h"
#include "train/model/train_state.h"

namespace ember {

struct RelationParams {
  uint32_t num_relations = 0;
  // Floats per relation (RelationRecordSize): its operator parameters and,
  // for a reciprocal model, its inverse's after them.
  int param_size = 0;
  std::vector<float> params;  // num_relations x param_size
  std::vector<float> state;   // Adagrad state, same shape (may be empty)
  const float* Of(uint32_t r) const { return params.data() + size_t{r} * param_size; }
  float* Of(uint32_t r) { return params.data() + size_t{r} * param_size; }
};

struct StoredModel {
  uint64_t version = 0;  // the checkpoint (relation blob) version
  ModelOptions model;
  RelationParams relations;
  // Table version holding each partition's rows (a checkpoint may reuse an
  // older version for a partition it did not rewrite).
  std::vector<uint64_t> partition_versions;
  // Featurized models: the feature embeddings (rows 0 otherwise).
  FeatureTable features;
  uint32_t epochs_done = 0;  // TrainState::epochs_done
  TrainPosition position;    // TrainState::position: where training stands
  // TrainState's: where the rows are when ranks checkpoint into their own
  // copies (empty: all in this graph).
  std::vector<uint32_t> partition_ranks;
  uint32_t copy_rank = 0;
};

// Whether LoadStoredModel accepts a copy that lacks some partitions' rows
// (a rank's own copy: TrainOptions::rank_copies).
enum class RowsElsewhere { kRefuse, kAllow };

inline constexpr char kRelationBlobPrefix[] = "relations-";
std::string RelationBlobName(uint64_t version);  // kRelationBlobPrefix + version
std::string EncodeRelationBlob(const RelationParams& r);
absl::StatusOr<RelationParams> DecodeRelationBlob(std::string_view bytes);

// The model of the graph's current checkpoint. FailedPrecondition naming
// the graph when it has none ("run ember train first") and, unless
// `elsewhere` allows it, when some partition's rows were checkpointed into
// another rank's copy of the graph (naming the partition, the rank and
// `ember gather`); ReadTrainState's errors for a damaged state.
absl::StatusOr<StoredModel> LoadStoredModel(const Graph& graph,
                                            RowsElsewhere elsewhere = RowsElsewhere::kRefuse);

// Removes what interrupted checkpoints left behind: every table version of a
// partition other than the committed one (committed_locations[p]; 0: none)
// and checkpoint blobs of other versions than `committed_version`. A kill
// between a manifest flip and the deletions that follow it, or before the
// flip, leaves such data; nothing reads it, but it holds disk. (Half-written
// files go when the graph is opened for writing: Graph::Open.)
// REQUIRES: graph open read-write (so no other writer runs).
absl::Status RemoveUncommittedCheckpoints(Graph& graph, uint64_t committed_version,
                                          const std::vector<uint64_t>& committed_locations);

// Embedding rows of partition p of the stored model: size x dim floats.
// For a featurized model these are the composed rows (id row and/or the
// weighted mean of the node's feature rows), what training scored.
absl::StatusOr<std::vector<float>> LoadPartitionEmbeddings(const Graph& graph,
                                                           const StoredModel& model,
                                                           uint32_t p);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_CHECKPOINT_H_
