// Test helpers: import a tiny edge list and store a hand-made checkpoint in
// it (embeddings set per node name, relation parameters per relation name),
// exactly as the trainer's checkpoint contract (train/model/checkpoint.h) lays it
// out, so that evaluation, export and resume can be tested without training.
#ifndef EMBER_TESTS_TRAIN_STORED_MODEL_UTIL_H_
#define EMBER_TESTS_TRAIN_STORED_MODEL_UTIL_H_

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "partition/importer.h"
#include "storage/graph.h"
#include "storage/base/status_macros.h"
#include "tests/storage/test_graph.h"
#include "train/model/checkpoint.h"
#include "train/model/model_options.h"

namespace ember::testing {

// Edge lists as text ("src rel dst" or "src dst" lines, tab-separated).
struct TinyGraphSpec {
  std::string train;
  std::string valid;  // "": no valid file
  std::string test;   // "": no test file
  uint32_t partitions = 1;
  uint64_t seed = 0;
  std::string schema;  // ImportOptions::schema ("": untyped)
  std::vector<std::pair<std::string, uint32_t>> type_partitions;
};

// Imports `spec` into `out`, writing its files under `scratch`. Valid/test
// edges with a node not seen in train are moved to train by the importer,
// so give every node a train edge.
inline absl::Status ImportTinyGraph(const std::string& out,
                                    const std::string& scratch,
                                    const TinyGraphSpec& spec) {
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = scratch + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  };
  ImportOptions o;
  o.out = out;
  o.files = {write("train.tsv", spec.train)};
  if (!spec.valid.empty()) o.valid_files = {write("valid.tsv", spec.valid)};
  if (!spec.test.empty()) o.test_files = {write("test.tsv", spec.test)};
  o.num_partitions = spec.partitions;
  o.seed = spec.seed;
  o.schema = spec.schema;
  o.type_partitions = spec.type_partitions;
  o.threads = 2;
  o.delimiter = '\t';
  return ImportGraph(o).status();
}

// Fills `row` (model.dim floats) with the embedding of node `name`.
using NodeRowFn = std::function<void(std::string_view name, float* row)>;
// Fills `params` (RelationRecordSize floats: w_r, then w_{r⁻¹} for a
// reciprocal model) for relation `name`.
using RelationFn = std::function<void(std::string_view name, float* params)>;

// Stores checkpoint `version` of `model` in the graph at `dir`: every
// partition's embeddings from `row_of`, relation parameters from `rel_of`
// (null: InitRelationRecord, the identity), and a manifest naming it.
inline absl::Status WriteStoredModel(const std::string& dir,
                                     const ModelOptions& model,
                                     const NodeRowFn& row_of,
                                     const RelationFn& rel_of = nullptr,
                                     uint64_t version = 1) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph,
                   Graph::Open(dir, {.read_only = false}));
  Manifest m = graph->manifest();
  const int dim = model.dim;
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    std::vector<float> rows(m.partition_sizes[p] * dim, 0.0f);
    RETURN_IF_ERROR(graph->ForEachNodeName(
        p, [&](uint32_t offset, std::string_view name) {
          row_of(name, rows.data() + uint64_t{offset} * dim);
          return absl::OkStatus();
        }));
    RETURN_IF_ERROR(graph->WriteTable(Table::kEmbeddings, p, version,
                                      rows.data(), m.partition_sizes[p], dim));
  }
  RelationParams rel;
  rel.num_relations = static_cast<uint32_t>(m.relations.size());
  rel.param_size = RelationRecordSize(model);
  rel.params.assign(size_t{rel.num_relations} * rel.param_size, 0.0f);
  for (uint32_t r = 0; r < rel.num_relations; ++r) {
    if (rel_of) {
      rel_of(m.relations[r], rel.Of(r));
    } else {
      InitRelationRecord(model, rel.Of(r));
    }
  }
  RETURN_IF_ERROR(
      graph->WriteBlob(RelationBlobName(version), EncodeRelationBlob(rel)));
  RETURN_IF_ERROR(graph->SyncTables());
  TrainState state;
  state.model = model;
  state.partition_versions.assign(m.num_partitions, version);
  StoreTrainState(state, version, &m);
  return graph->CommitManifest(m);
}

}  // namespace ember::testing

#endif  // EMBER_TESTS_TRAIN_STORED_MODEL_UTIL_H_
