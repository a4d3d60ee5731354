#include "train/model/train_state.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "storage/base/json_reader.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

using Json = nlohmann::json;

Json ModelJson(const ModelOptions& m) {
  return {{"operator", std::string(OperatorName(m.op))},
          {"comparator", std::string(ComparatorName(m.comparator))},
          {"loss", std::string(LossName(m.loss))},
          {"margin", m.margin},
          {"dim", m.dim},
          {"featurized", std::string(FeaturizedModeName(m.featurized))},
          {"reciprocal", m.reciprocal},
          {"regularizer", std::string(RegularizerName(m.regularizer))},
          {"reg_weight", m.reg_weight}};
}

// The model options stored at `field` of a document read through `r`; every
// error, a name that does not parse or options that do not validate
// included, has r's code and names r's file and the field.
absl::StatusOr<ModelOptions> ReadModelOptions(const Json& j, const JsonReader& r,
                                              const std::string& field) {
  RETURN_IF_ERROR(r.Object(j, field));
  std::string op, comparator, loss;
  // Checkpoints written before featurized models (or reciprocal relations,
  // or regularizers) existed have no field.
  std::string featurized = "off";
  std::string regularizer = "none";
  ModelOptions m;
  RETURN_IF_ERROR(r.Required(j, "operator", field + ".operator", &op));
  RETURN_IF_ERROR(r.Required(j, "comparator", field + ".comparator", &comparator));
  RETURN_IF_ERROR(r.Required(j, "loss", field + ".loss", &loss));
  RETURN_IF_ERROR(r.Required(j, "margin", field + ".margin", &m.margin));
  RETURN_IF_ERROR(r.Required(j, "dim", field + ".dim", &m.dim));
  RETURN_IF_ERROR(r.Optional(j, "featurized", field + ".featurized", &featurized));
  RETURN_IF_ERROR(r.Optional(j, "reciprocal", field + ".reciprocal", &m.reciprocal));
  RETURN_IF_ERROR(r.Optional(j, "regularizer", field + ".regularizer", &regularizer));
  RETURN_IF_ERROR(r.Optional(j, "reg_weight", field + ".reg_weight", &m.reg_weight));
  absl::Status s = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(m.op, ParseOperator(op));
    ASSIGN_OR_RETURN(m.comparator, ParseComparator(comparator));
    ASSIGN_OR_RETURN(m.loss, ParseLoss(loss));
    ASSIGN_OR_RETURN(m.featurized, ParseFeaturizedMode(featurized));
    ASSIGN_OR_RETURN(m.regularizer, ParseRegularizer(regularizer));
    return m.Validate();
  }();
  if (!s.ok()) return r.Error(field, std::string(s.message()));
  return m;
}

// The `trainer` member of the state (absent: zeros).
absl::Status ReadPosition(const Json& state, const JsonReader& r, TrainPosition* out) {
  const Json* t = JsonReader::Find(state, "trainer");
  if (t == nullptr) return absl::OkStatus();
  const std::string field = "training.state.trainer";
  RETURN_IF_ERROR(r.Object(*t, field));
  RETURN_IF_ERROR(r.Optional(*t, "epoch", field + ".epoch", &out->epoch));
  RETURN_IF_ERROR(r.Optional(*t, "next_round", field + ".next_round", &out->next_round));
  RETURN_IF_ERROR(r.Optional(*t, "seed", field + ".seed", &out->seed));
  RETURN_IF_ERROR(r.Optional(*t, "bucket_order", field + ".bucket_order", &out->bucket_order));
  RETURN_IF_ERROR(r.Optional(*t, "buffer_partitions", field + ".buffer_partitions",
                             &out->buffer_partitions));
  RETURN_IF_ERROR(r.Optional(*t, "round_size", field + ".round_size", &out->round_size));
  RETURN_IF_ERROR(r.Optional(*t, "lr", field + ".lr", &out->lr));
  RETURN_IF_ERROR(r.Optional(*t, "world_size", field + ".world_size", &out->world_size));
  RETURN_IF_ERROR(
      r.Optional(*t, "round_lookahead", field + ".round_lookahead", &out->round_lookahead));
  RETURN_IF_ERROR(r.Optional(*t, "weights", field + ".weights", &out->edge_weights));
  return absl::OkStatus();
}

// The `copies` member of the state (absent: every row in this copy).
absl::Status ReadCopies(const Json& state, const JsonReader& r, uint32_t partitions,
                        TrainState* out) {
  const Json* c = JsonReader::Find(state, "copies");
  if (c == nullptr) return absl::OkStatus();
  const std::string field = "training.state.copies";
  RETURN_IF_ERROR(r.Object(*c, field));
  RETURN_IF_ERROR(r.Required(*c, "rank", field + ".rank", &out->copy_rank));
  RETURN_IF_ERROR(
      r.Required(*c, "partition_ranks", field + ".partition_ranks", &out->partition_ranks));
  if (out->partition_ranks.size() != partitions) {
    return r.Error(field + ".partition_ranks", absl::StrCat("must have ", partitions, " entries"));
  }
  return absl::OkStatus();
}

}  // namespace

void StoreTrainState(const TrainState& s, uint64_t checkpoint_version, Manifest* m) {
  const TrainPosition& p = s.position;
  Json trainer = {{"epoch", p.epoch},
                  {"next_round", p.next_round},
                  {"lr", p.lr},
                  {"seed", p.seed},
                  {"bucket_order", p.bucket_order},
                  {"buffer_partitions", p.buffer_partitions},
                  {"round_size", p.round_size},
                  {"world_size", p.world_size},
                  {"round_lookahead", p.round_lookahead}};
  if (!p.edge_weights.empty()) trainer["weights"] = p.edge_weights;
  Json state = {{"model", ModelJson(s.model)},
                {"partition_versions", s.partition_versions},
                {"trainer", trainer}};
  if (!s.partition_ranks.empty()) {
    state["copies"] = {{"rank", s.copy_rank}, {"partition_ranks", s.partition_ranks}};
  }
  const Json members = {{"epochs_done", s.epochs_done}, {"state", std::move(state)}};
  m->training.checkpoint_version = checkpoint_version;
  m->training.edge_generation = m->edge_generation;
  m->training.state_version =
      s.partition_ranks.empty() ? TrainState::kPlainVersion : TrainState::kVersion;
  m->training.state = members.dump();
}

absl::StatusOr<TrainState> ReadTrainState(const Manifest& m, const std::string& manifest_path) {
  const TrainingRecord& t = m.training;
  if (t.checkpoint_version == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(manifest_path, ": no checkpoint, so no training state"));
  }
  if (t.state_version > TrainState::kVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        manifest_path, ": unsupported training.state_version ", t.state_version,
        " (this ember reads versions up to ", TrainState::kVersion, ")"));
  }
  const JsonReader r(manifest_path, absl::StatusCode::kDataLoss);
  // Storage checks that the members parse as an object.
  const Json members = Json::parse(t.state, nullptr, /*allow_exceptions=*/false);
  TrainState out;
  RETURN_IF_ERROR(r.Optional(members, "epochs_done", "training.epochs_done", &out.epochs_done));
  ASSIGN_OR_RETURN(const Json* state, r.Require(members, "state", "training.state"));
  RETURN_IF_ERROR(r.Object(*state, "training.state"));
  ASSIGN_OR_RETURN(const Json* model, r.Require(*state, "model", "training.state.model"));
  ASSIGN_OR_RETURN(out.model, ReadModelOptions(*model, r, "training.state.model"));
  RETURN_IF_ERROR(r.Required(*state, "partition_versions", "training.state.partition_versions",
                             &out.partition_versions));
  if (out.partition_versions.size() != m.num_partitions) {
    return r.Error("training.state.partition_versions",
                   absl::StrCat("must have ", m.num_partitions, " entries"));
  }
  RETURN_IF_ERROR(ReadPosition(*state, r, &out.position));
  RETURN_IF_ERROR(ReadCopies(*state, r, m.num_partitions, &out));
  if (t.edge_generation != m.edge_generation) {
    // Edges were appended since: the saved bucket rounds no longer match
    // the graph, so the grown graph's epochs count from 0.
    out.epochs_done = 0;
    out.position.next_round = 0;
  }
  return out;
}

absl::StatusOr<TrainState> ReadTrainState(const Graph& graph) {
  return ReadTrainState(graph.manifest(), graph.dir() + "/MANIFEST.json");
}

std::string ModelOptionsToJson(const ModelOptions& m) { return ModelJson(m).dump(); }

absl::StatusOr<ModelOptions> ModelOptionsFromJson(std::string_view text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return ReadModelOptions(j, JsonReader("model options", absl::StatusCode::kDataLoss), "model");
}

}  // namespace ember
