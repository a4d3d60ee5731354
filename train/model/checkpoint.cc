#include "train/model/checkpoint.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {

std::string RelationBlobName(uint64_t version) {
  return absl::StrCat(kRelationBlobPrefix, version);
}

// Layout: [num_relations u32][param_size u32][has_state u32]
//         [params f32 x n*size][state f32 x n*size if has_state]
std::string EncodeRelationBlob(const RelationParams& r) {
  const uint32_t header[3] = {r.num_relations, static_cast<uint32_t>(r.param_size),
                              r.state.empty() ? 0u : 1u};
  std::string out(reinterpret_cast<const char*>(header), sizeof(header));
  if (!r.params.empty()) {
    out.append(reinterpret_cast<const char*>(r.params.data()), r.params.size() * sizeof(float));
  }
  if (!r.state.empty()) {
    out.append(reinterpret_cast<const char*>(r.state.data()), r.state.size() * sizeof(float));
  }
  return out;
}

absl::StatusOr<RelationParams> DecodeRelationBlob(std::string_view bytes) {
  uint32_t header[3];
  if (bytes.size() < sizeof(header)) return absl::DataLossError("relation blob too short");
  std::memcpy(header, bytes.data(), sizeof(header));
  RelationParams r;
  r.num_relations = header[0];
  r.param_size = static_cast<int>(header[1]);
  const size_t n = size_t{r.num_relations} * r.param_size;
  const size_t want = sizeof(header) + n * sizeof(float) * (header[2] ? 2 : 1);
  if (bytes.size() != want) {
    return absl::DataLossError(absl::StrCat("relation blob has ", bytes.size(),
                                            " bytes, expected ", want));
  }
  r.params.resize(n);
  if (n > 0) {
    std::memcpy(r.params.data(), bytes.data() + sizeof(header), n * sizeof(float));
  }
  if (header[2]) {
    r.state.resize(n);
    if (n > 0) {
      std::memcpy(r.state.data(), bytes.data() + sizeof(header) + n * sizeof(float),
                  n * sizeof(float));
    }
  }
  return r;
}

absl::StatusOr<StoredModel> LoadStoredModel(const Graph& graph, RowsElsewhere elsewhere) {
  if (graph.manifest().training.checkpoint_version == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        graph.dir(), " has no trained embeddings yet; run `ember train ", graph.dir(), "` first"));
  }
  ASSIGN_OR_RETURN(TrainState state, ReadTrainState(graph));
  StoredModel out;
  out.version = graph.manifest().training.checkpoint_version;
  out.model = state.model;
  out.partition_versions = std::move(state.partition_versions);
  out.epochs_done = state.epochs_done;
  out.position = std::move(state.position);
  if (elsewhere == RowsElsewhere::kRefuse) {
    for (uint32_t p = 0; p < state.partition_ranks.size(); ++p) {
      if (state.RowsHere(p)) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          graph.dir(), " is rank ", state.copy_rank, "'s copy of a graph trained across ranks ",
          "that checkpoint into their own copies, and partition ", p, "'s rows are in rank ",
          state.partition_ranks[p], "'s copy; bring them here with `ember gather ", graph.dir(),
          " COPY...` (naming the other ranks' copies) first"));
    }
  }
  out.partition_ranks = std::move(state.partition_ranks);
  out.copy_rank = state.copy_rank;
  ASSIGN_OR_RETURN(std::string blob, graph.ReadBlob(RelationBlobName(out.version)));
  ASSIGN_OR_RETURN(out.relations, DecodeRelationBlob(blob));
  // An append may have added relations since (the trainer extends them).
  if (out.relations.num_relations > graph.manifest().relations.size() ||
      out.relations.param_size != RelationRecordSize(out.model)) {
    return absl::DataLossError(absl::StrCat(graph.dir(), ": relation parameters of checkpoint ",
                                            out.version, " do not match the model"));
  }
  // Relations appended since the checkpoint get their initial parameters.
  const int size = out.relations.param_size;
  while (out.relations.num_relations < graph.manifest().relations.size()) {
    out.relations.params.resize(out.relations.params.size() + size);
    if (!out.relations.state.empty()) out.relations.state.resize(out.relations.params.size(), 0.0f);
    InitRelationRecord(out.model, out.relations.Of(out.relations.num_relations++));
  }
  if (out.model.featurized != FeaturizedMode::kOff) {
    ASSIGN_OR_RETURN(out.features,
                     ReadFeatureTable(graph, out.version,
                                      static_cast<uint32_t>(graph.manifest().num_features),
                                      out.model.dim));
  }
  return out;
}

absl::Status RemoveUncommittedCheckpoints(Graph& graph, uint64_t committed_version,
                                          const std::vector<uint64_t>& committed_locations) {
  for (uint32_t p = 0; p < committed_locations.size(); ++p) {
    for (Table t : {Table::kEmbeddings, Table::kOptimizer}) {
      RETURN_IF_ERROR(graph.DeleteTableVersionsExcept(t, p, committed_locations[p]));
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::string> blobs, graph.ListBlobs());
  const std::string keep[] = {RelationBlobName(committed_version),
                              FeatureTableBlobName(committed_version)};
  for (const std::string& name : blobs) {
    const bool checkpoint_blob = absl::StartsWith(name, kRelationBlobPrefix) ||
                                 absl::StartsWith(name, kFeatureTableBlobPrefix);
    if (checkpoint_blob && name != keep[0] && name != keep[1]) {
      RETURN_IF_ERROR(graph.DeleteBlob(name));
    }
  }
  return absl::OkStatus();
}

namespace {

// The id rows of partition p (all of its nodes) into out (rows x dim).
absl::Status ReadIdRows(const Graph& graph, const StoredModel& model, uint32_t p, float* out) {
  const uint64_t rows = graph.manifest().partition_sizes[p];
  ASSIGN_OR_RETURN(uint64_t stored,
                   graph.TableRows(Table::kEmbeddings, p, model.partition_versions[p]));
  if (stored != rows) {
    return absl::FailedPreconditionError(absl::StrCat(
        graph.dir(), ": partition ", p, " has ", rows, " nodes but its checkpoint holds ",
        stored, " rows (nodes were appended); run `ember train` to embed the new nodes"));
  }
  return graph.ReadTable(Table::kEmbeddings, p, model.partition_versions[p], out, rows,
                         model.model.dim);
}

}  // namespace

absl::StatusOr<std::vector<float>> LoadPartitionEmbeddings(const Graph& graph,
                                                           const StoredModel& model,
                                                           uint32_t p) {
  if (p >= model.partition_versions.size()) {
    return absl::OutOfRangeError(absl::StrCat("partition ", p, " out of range"));
  }
  const uint64_t rows = graph.manifest().partition_sizes[p];
  const int dim = model.model.dim;
  const FeaturizedMode mode = model.model.featurized;
  std::vector<float> out(rows * dim);
  if (HasIdRows(mode)) RETURN_IF_ERROR(ReadIdRows(graph, model, p, out.data()));
  if (mode != FeaturizedMode::kOff) {
    std::vector<uint64_t> row_start;
    std::vector<FeatureEntry> entries;
    RETURN_IF_ERROR(graph.ReadPartitionFeatures(p, &row_start, &entries));
    ComposePartition(mode, model.features, rows, row_start, entries, out.data(), out.data());
  }
  return out;
}

}  // namespace ember
