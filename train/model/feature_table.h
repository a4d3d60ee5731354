// The trainable feature embeddings of a featurized model
// (train/model/featurized.h): one row per feature of the graph's vocabulary plus
// its row-wise Adagrad state, shared by every partition and trainer (see the
// design note in featurized.h for why lock-free sharing converges).
//
// In a checkpoint of version V the table is the blob "feature-table-V"
// (FeatureTableBlobParts), written before the manifest names V.
#ifndef EMBER_TRAIN_MODEL_FEATURE_TABLE_H_
#define EMBER_TRAIN_MODEL_FEATURE_TABLE_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "train/model/featurized.h"

namespace ember {

struct FeatureTable {
  uint32_t rows = 0;  // vocabulary size V
  int dim = 0;
  std::vector<float> embeddings;  // rows x dim, row-major
  std::vector<float> optimizer;   // rows: row-wise Adagrad state
  float* Row(uint32_t f) { return embeddings.data() + size_t{f} * dim; }
};

// A fresh table: rows drawn like id rows (normal, init_scale), from a seed
// stream distinct from the partitions'.
FeatureTable InitFeatureTable(uint32_t rows, int dim, float init_scale, uint64_t seed);

inline constexpr char kFeatureTableBlobPrefix[] = "feature-table-";
std::string FeatureTableBlobName(uint64_t version);  // kFeatureTableBlobPrefix + version
// The blob's bytes as three views: [rows u32][dim u32] (into *header), then
// the embeddings (rows*dim f32) and the optimizer state (rows f32) of `t`,
// so that the table is written without a copy. Valid while both live.
std::array<std::string_view, 3> FeatureTableBlobParts(const FeatureTable& t,
                                                      std::array<uint32_t, 2>* header);
// Reads checkpoint `version`'s table straight into a rows x dim table
// (no copy of the blob in memory). DataLoss naming the graph unless the
// blob holds exactly that shape.
absl::StatusOr<FeatureTable> ReadFeatureTable(const Graph& graph, uint64_t version,
                                              uint32_t rows, int dim);

// Composed embeddings of all `rows` nodes of one partition into out
// (rows x dim): `id_rows` (rows x dim; ignored for kFeatures, may be null)
// plus the weighted mean of each node's feature rows, from the partition's
// feature CSR (Graph::ReadPartitionFeatures). out may equal id_rows.
// REQUIRES: mode != kOff; row_start has rows + 1 entries.
void ComposePartition(FeaturizedMode mode, const FeatureTable& table, uint64_t rows,
                      const std::vector<uint64_t>& row_start,
                      const std::vector<FeatureEntry>& entries, const float* id_rows,
                      float* out);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_FEATURE_TABLE_H_
