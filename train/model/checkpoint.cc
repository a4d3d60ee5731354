#include "train/model/checkpoint.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "storage/base/json_reader.h"
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

std::string ModelOptionsToJson(const ModelOptions& m) {
  nlohmann::json j = {{"operator", std::string(OperatorName(m.op))},
                      {"comparator", std::string(ComparatorName(m.comparator))},
                      {"loss", std::string(LossName(m.loss))},
                      {"margin", m.margin},
                      {"dim", m.dim},
                      {"featurized", std::string(FeaturizedModeName(m.featurized))}};
  return j.dump();
}

namespace {

// The model options stored at `field` of a document read through `r`; every
// error, a name that does not parse or options that do not validate
// included, has r's code and names r's file and the field.
absl::StatusOr<ModelOptions> ReadModelOptions(const nlohmann::json& j, const JsonReader& r,
                                              const std::string& field) {
  RETURN_IF_ERROR(r.Object(j, field));
  std::string op, comparator, loss;
  // Checkpoints written before featurized models existed have no field.
  std::string featurized = "off";
  ModelOptions m;
  RETURN_IF_ERROR(r.Required(j, "operator", field + ".operator", &op));
  RETURN_IF_ERROR(r.Required(j, "comparator", field + ".comparator", &comparator));
  RETURN_IF_ERROR(r.Required(j, "loss", field + ".loss", &loss));
  RETURN_IF_ERROR(r.Required(j, "margin", field + ".margin", &m.margin));
  RETURN_IF_ERROR(r.Required(j, "dim", field + ".dim", &m.dim));
  RETURN_IF_ERROR(r.Optional(j, "featurized", field + ".featurized", &featurized));
  absl::Status s = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(m.op, ParseOperator(op));
    ASSIGN_OR_RETURN(m.comparator, ParseComparator(comparator));
    ASSIGN_OR_RETURN(m.loss, ParseLoss(loss));
    ASSIGN_OR_RETURN(m.featurized, ParseFeaturizedMode(featurized));
    return m.Validate();
  }();
  if (!s.ok()) return r.Error(field, std::string(s.message()));
  return m;
}

}  // namespace

absl::StatusOr<ModelOptions> ModelOptionsFromJson(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return ReadModelOptions(j, JsonReader("model options", absl::StatusCode::kDataLoss), "model");
}

absl::StatusOr<StoredModel> LoadStoredModel(const Graph& graph) {
  const TrainingState& t = graph.manifest().training;
  if (t.checkpoint_version == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        graph.dir(), " has no trained embeddings yet; run `ember train ", graph.dir(), "` first"));
  }
  const JsonReader r(graph.dir() + "/MANIFEST.json", absl::StatusCode::kDataLoss);
  const nlohmann::json state = nlohmann::json::parse(t.state_json, nullptr, false);
  StoredModel out;
  out.version = t.checkpoint_version;
  ASSIGN_OR_RETURN(const nlohmann::json* model, r.Require(state, "model", "training.state.model"));
  ASSIGN_OR_RETURN(out.model, ReadModelOptions(*model, r, "training.state.model"));
  const uint32_t P = graph.manifest().num_partitions;
  RETURN_IF_ERROR(r.Required(state, "partition_versions", "training.state.partition_versions",
                             &out.partition_versions));
  if (out.partition_versions.size() != P) {
    return r.Error("training.state.partition_versions", absl::StrCat("must have ", P, " entries"));
  }
  ASSIGN_OR_RETURN(std::string blob, graph.ReadBlob(RelationBlobName(out.version)));
  ASSIGN_OR_RETURN(out.relations, DecodeRelationBlob(blob));
  // An append may have added relations since (the trainer extends them).
  if (out.relations.num_relations > graph.manifest().relations.size() ||
      out.relations.param_size != RelationParamSize(out.model.op, out.model.dim)) {
    return absl::DataLossError(absl::StrCat(graph.dir(), ": relation parameters of checkpoint ",
                                            out.version, " do not match the model"));
  }
  // Relations appended since the checkpoint get their initial parameters.
  const int size = out.relations.param_size;
  while (out.relations.num_relations < graph.manifest().relations.size()) {
    out.relations.params.resize(out.relations.params.size() + size);
    if (!out.relations.state.empty()) out.relations.state.resize(out.relations.params.size(), 0.0f);
    InitRelationParams(out.model.op, out.model.dim, out.relations.Of(out.relations.num_relations++));
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
