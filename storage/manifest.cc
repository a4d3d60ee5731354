#include "storage/manifest.h"

#include <algorithm>

#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "storage/base/file_util.h"
#include "storage/base/json_reader.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

using Json = nlohmann::json;

// The members of MANIFEST.json's `training` object that storage owns.
constexpr const char* kTrainingRecordKeys[] = {"checkpoint_version", "edge_generation",
                                                "state_version"};

// The trainer's members of `training`: InvalidArgument unless t.state is a
// JSON object without storage's members.
absl::StatusOr<Json> ParseTrainerMembers(const TrainingRecord& t) {
  Json state = Json::parse(t.state, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded()) {
    return absl::InvalidArgumentError("TrainingRecord::state is not valid JSON");
  }
  if (!state.is_object()) {
    return absl::InvalidArgumentError("TrainingRecord::state must be a JSON object");
  }
  for (const char* key : kTrainingRecordKeys) {
    if (state.contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("TrainingRecord::state has storage's member '", key, "'"));
    }
  }
  return state;
}

absl::StatusOr<Manifest> FromJson(const Json& j, const std::string& path) {
  // A hand-edited field with a typo is InvalidArgument.
  const JsonReader r(path, absl::StatusCode::kInvalidArgument);
  Manifest m;
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": top level must be a JSON object"));
  }
  uint64_t format_version = 0;
  RETURN_IF_ERROR(r.Required(j, "format_version", "format_version", &format_version));
  if (format_version < Manifest::kFormatVersion || format_version > Manifest::kTypedFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": unsupported format_version ", format_version,
                     " (this ember reads versions ", Manifest::kFormatVersion, " to ",
                     Manifest::kTypedFormatVersion, "; a newer ember wrote it)"));
  }
  m.format_version = static_cast<int>(format_version);
  RETURN_IF_ERROR(r.Optional(j, "edge_weights", "edge_weights", &m.edge_weights));
  // Before version 3 the version alone said whether blocks carry weights.
  if (format_version != Manifest::kTypedFormatVersion &&
      m.edge_weights != (format_version == Manifest::kWeightedFormatVersion)) {
    return r.Error("edge_weights",
                   absl::StrCat("must be ", m.edge_weights ? "absent or false" : "true",
                                " in a graph of format_version ", format_version));
  }
  if (const Json* w = JsonReader::Find(j, "edge_weight_stats"); w != nullptr) {
    RETURN_IF_ERROR(r.Object(*w, "edge_weight_stats"));
    RETURN_IF_ERROR(r.Optional(*w, "min", "edge_weight_stats.min", &m.edge_weight_stats.min));
    RETURN_IF_ERROR(r.Optional(*w, "mean", "edge_weight_stats.mean", &m.edge_weight_stats.mean));
    RETURN_IF_ERROR(r.Optional(*w, "max", "edge_weight_stats.max", &m.edge_weight_stats.max));
  }

  RETURN_IF_ERROR(r.Required(j, "num_nodes", "num_nodes", &m.num_nodes));
  RETURN_IF_ERROR(r.Required(j, "num_partitions", "num_partitions", &m.num_partitions));
  RETURN_IF_ERROR(r.Required(j, "partition_sizes", "partition_sizes", &m.partition_sizes));

  ASSIGN_OR_RETURN(const Json* v, r.Require(j, "relations", "relations"));
  if (!v->is_array()) return r.Error("relations", "must be an array");
  for (size_t i = 0; i < v->size(); ++i) {
    std::string name;
    RETURN_IF_ERROR(r.Read((*v)[i], absl::StrCat("relations[", i, "]"), &name));
    m.relations.push_back(std::move(name));
  }

  ASSIGN_OR_RETURN(v, r.Require(j, "edges", "edges"));
  RETURN_IF_ERROR(r.Object(*v, "edges"));
  for (Split s : kAllSplits) {
    const std::string key(SplitName(s));
    RETURN_IF_ERROR(r.Required(*v, key, absl::StrCat("edges.", key), &m.edges[s]));
  }

  // Optional fields keep their defaults when absent.
  RETURN_IF_ERROR(
      r.Optional(j, "train_bucket_edges", "train_bucket_edges", &m.train_bucket_edges));
  RETURN_IF_ERROR(r.Optional(j, "edge_generation", "edge_generation", &m.edge_generation));
  RETURN_IF_ERROR(r.Optional(j, "previous_partition_sizes", "previous_partition_sizes",
                             &m.previous_partition_sizes));
  RETURN_IF_ERROR(r.Optional(j, "partitioner", "partitioner", &m.partitioner));
  RETURN_IF_ERROR(r.Optional(j, "seed", "seed", &m.seed));
  RETURN_IF_ERROR(r.Optional(j, "integer_ids", "integer_ids", &m.integer_ids));
  RETURN_IF_ERROR(r.Optional(j, "num_features", "num_features", &m.num_features));
  if ((v = JsonReader::Find(j, "degree")) != nullptr) {
    RETURN_IF_ERROR(r.Object(*v, "degree"));
    RETURN_IF_ERROR(r.Optional(*v, "min", "degree.min", &m.degree.min));
    RETURN_IF_ERROR(r.Optional(*v, "max", "degree.max", &m.degree.max));
    RETURN_IF_ERROR(r.Optional(*v, "mean", "degree.mean", &m.degree.mean));
    RETURN_IF_ERROR(r.Optional(*v, "p50", "degree.p50", &m.degree.p50));
    RETURN_IF_ERROR(r.Optional(*v, "p90", "degree.p90", &m.degree.p90));
    RETURN_IF_ERROR(r.Optional(*v, "p99", "degree.p99", &m.degree.p99));
  }
  if ((v = JsonReader::Find(j, "partitions_auto")) != nullptr) {
    // Only import writes this record, so a malformed one is damage
    // (DataLoss), not a typo in a hand-edited field.
    const JsonReader damaged(path, absl::StatusCode::kDataLoss);
    PartitionsAuto a;
    RETURN_IF_ERROR(damaged.Object(*v, "partitions_auto"));
    RETURN_IF_ERROR(damaged.Required(*v, "dim", "partitions_auto.dim", &a.dim));
    RETURN_IF_ERROR(damaged.Required(*v, "memory_budget", "partitions_auto.memory_budget",
                                     &a.memory_budget));
    m.partitions_auto = a;
  }
  if ((v = JsonReader::Find(j, "node_types")) != nullptr) {
    if (!v->is_array()) return r.Error("node_types", "must be an array");
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string where = absl::StrCat("node_types[", i, "]");
      const Json& t = (*v)[i];
      RETURN_IF_ERROR(r.Object(t, where));
      NodeType type;
      RETURN_IF_ERROR(r.Required(t, "name", where + ".name", &type.name));
      RETURN_IF_ERROR(
          r.Required(t, "first_partition", where + ".first_partition", &type.first_partition));
      RETURN_IF_ERROR(r.Required(t, "partitions", where + ".partitions", &type.num_partitions));
      m.node_types.push_back(std::move(type));
    }
  }
  if ((v = JsonReader::Find(j, "relation_types")) != nullptr) {
    if (!v->is_array()) return r.Error("relation_types", "must be an array");
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string where = absl::StrCat("relation_types[", i, "]");
      const Json& t = (*v)[i];
      RETURN_IF_ERROR(r.Object(t, where));
      std::string src, dst;
      RETURN_IF_ERROR(r.Required(t, "src", where + ".src", &src));
      RETURN_IF_ERROR(r.Required(t, "dst", where + ".dst", &dst));
      RelationTypes types;
      for (auto [name, index] : {std::pair(&src, &types.src), std::pair(&dst, &types.dst)}) {
        const absl::StatusOr<uint32_t> found = m.FindType(*name);
        if (!found.ok()) return r.Error(where, std::string(found.status().message()));
        *index = *found;
      }
      m.relation_types.push_back(types);
    }
  }
  if (format_version == Manifest::kTypedFormatVersion && !m.typed()) {
    return r.Error("node_types", "must be present in a graph of format_version 3 (a typed graph)");
  }
  m.training.edge_generation = m.edge_generation;
  if ((v = JsonReader::Find(j, "training")) != nullptr) {
    RETURN_IF_ERROR(r.Object(*v, "training"));
    RETURN_IF_ERROR(r.Optional(*v, "checkpoint_version", "training.checkpoint_version",
                               &m.training.checkpoint_version));
    RETURN_IF_ERROR(r.Optional(*v, "edge_generation", "training.edge_generation",
                               &m.training.edge_generation));
    RETURN_IF_ERROR(
        r.Optional(*v, "state_version", "training.state_version", &m.training.state_version));
    // The rest is the trainer's, kept as it is.
    Json state = *v;
    for (const char* key : kTrainingRecordKeys) state.erase(key);
    m.training.state = state.dump();
  }
  return m;
}

absl::StatusOr<Json> ToJson(const Manifest& m) {
  ASSIGN_OR_RETURN(Json training, ParseTrainerMembers(m.training));
  training["checkpoint_version"] = m.training.checkpoint_version;
  training["edge_generation"] = m.training.edge_generation;
  training["state_version"] = m.training.state_version;
  Json j = Json::object();
  j["format_version"] = m.RequiredFormatVersion();
  if (m.edge_weights) {
    // Unweighted manifests stay as they were: no member for weights.
    j["edge_weights"] = true;
    j["edge_weight_stats"] = {{"min", m.edge_weight_stats.min},
                              {"mean", m.edge_weight_stats.mean},
                              {"max", m.edge_weight_stats.max}};
  }
  j["num_nodes"] = m.num_nodes;
  j["num_partitions"] = m.num_partitions;
  j["partition_sizes"] = m.partition_sizes;
  j["relations"] = m.relations;
  j["edges"] = {{"train", m.edges.train},
                {"valid", m.edges.valid},
                {"test", m.edges.test}};
  j["train_bucket_edges"] = m.train_bucket_edges;
  j["edge_generation"] = m.edge_generation;
  j["previous_partition_sizes"] = m.previous_partition_sizes;
  j["partitioner"] = m.partitioner;
  j["seed"] = m.seed;
  j["integer_ids"] = m.integer_ids;
  j["num_features"] = m.num_features;
  j["degree"] = {{"min", m.degree.min}, {"max", m.degree.max},
                 {"mean", m.degree.mean}, {"p50", m.degree.p50},
                 {"p90", m.degree.p90}, {"p99", m.degree.p99}};
  j["training"] = std::move(training);
  if (m.partitions_auto.has_value()) {
    j["partitions_auto"] = {{"dim", m.partitions_auto->dim},
                            {"memory_budget", m.partitions_auto->memory_budget}};
  }
  if (m.typed()) {
    Json types = Json::array();
    for (const NodeType& t : m.node_types) {
      types.push_back({{"name", t.name},
                       {"first_partition", t.first_partition},
                       {"partitions", t.num_partitions}});
    }
    j["node_types"] = std::move(types);
    Json relation_types = Json::array();
    for (const RelationTypes& t : m.relation_types) {
      relation_types.push_back(
          {{"src", m.node_types[t.src].name}, {"dst", m.node_types[t.dst].name}});
    }
    j["relation_types"] = std::move(relation_types);
  }
  return j;
}

}  // namespace

uint64_t& SplitCounts::operator[](Split s) {
  switch (s) {
    case Split::kTrain:
      return train;
    case Split::kValid:
      return valid;
    case Split::kTest:
      return test;
  }
  EMBER_CHECK(false && "bad Split");
  return train;
}

uint64_t SplitCounts::operator[](Split s) const {
  return const_cast<SplitCounts&>(*this)[s];
}

uint64_t Manifest::LargestPartition() const {
  uint64_t largest = 0;
  for (uint64_t rows : partition_sizes) largest = std::max(largest, rows);
  return largest;
}

uint64_t Manifest::PartitionBase(uint32_t p) const {
  EMBER_CHECK(p <= partition_sizes.size());
  uint64_t base = 0;
  for (uint32_t i = 0; i < p; ++i) base += partition_sizes[i];
  return base;
}

uint32_t Manifest::TypeOfPartition(uint32_t p) const {
  for (uint32_t t = 0; t < node_types.size(); ++t) {
    if (p < node_types[t].first_partition + node_types[t].num_partitions) return t;
  }
  return 0;
}

uint32_t Manifest::FirstPartitionOf(uint32_t type) const {
  return typed() ? node_types[type].first_partition : 0;
}

uint32_t Manifest::PartitionsOf(uint32_t type) const {
  return typed() ? node_types[type].num_partitions : num_partitions;
}

uint64_t Manifest::NodesOf(uint32_t type) const {
  uint64_t n = 0;
  for (uint32_t p = FirstPartitionOf(type); p < EndPartitionOf(type); ++p) n += partition_sizes[p];
  return n;
}

absl::StatusOr<uint32_t> Manifest::FindType(std::string_view name) const {
  std::vector<std::string> names;
  for (uint32_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].name == name) return t;
    names.push_back(node_types[t].name);
  }
  if (names.empty()) {
    return absl::NotFoundError(absl::StrCat("no node type '", std::string(name),
                                            "': the graph has no types (import it with --schema)"));
  }
  return absl::NotFoundError(absl::StrCat("no node type '", std::string(name),
                                          "' (the graph's types: ", absl::StrJoin(names, ", "),
                                          ")"));
}

absl::Status Manifest::Validate() const {
  // Version 3 names a typed graph; 1 and 2 say whether blocks carry
  // weights (a typed graph read as 1 or 2 was written before version 3).
  if (format_version == kTypedFormatVersion
          ? !typed()
          : format_version != (edge_weights ? kWeightedFormatVersion : kFormatVersion)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported format_version ", format_version, " for a", typed() ? " typed" : "n untyped",
        edge_weights ? ", weighted" : ", unweighted", " graph"));
  }
  if (num_partitions == 0) {
    return absl::InvalidArgumentError("num_partitions must be at least 1");
  }
  if (partition_sizes.size() != num_partitions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partition_sizes has ", partition_sizes.size(),
        " entries, num_partitions is ", num_partitions));
  }
  uint64_t sum = 0;
  for (uint32_t p = 0; p < num_partitions; ++p) {
    if (partition_sizes[p] > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "partition_sizes[", p, "] = ", partition_sizes[p],
          " exceeds 2^32 - 1 (offsets are 32-bit)"));
    }
    sum += partition_sizes[p];
  }
  if (sum != num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("partition_sizes sum to ", sum, ", num_nodes is ",
                     num_nodes));
  }
  const uint64_t buckets = static_cast<uint64_t>(num_partitions) *
                           num_partitions;
  if (!train_bucket_edges.empty()) {
    if (train_bucket_edges.size() != buckets) {
      return absl::InvalidArgumentError(absl::StrCat(
          "train_bucket_edges has ", train_bucket_edges.size(),
          " entries, expected P*P = ", buckets, " (or none)"));
    }
    uint64_t total = 0;
    for (uint64_t n : train_bucket_edges) total += n;
    if (total != edges.train) {
      return absl::InvalidArgumentError(
          absl::StrCat("train_bucket_edges sum to ", total,
                       ", edges.train is ", edges.train));
    }
  }
  if (partitioner.empty()) {
    return absl::InvalidArgumentError("partitioner is empty");
  }
  if (num_nodes > 0 && degree.min > degree.max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "degree.min ", degree.min, " > degree.max ", degree.max));
  }
  if (partitions_auto.has_value() &&
      (partitions_auto->dim == 0 || partitions_auto->memory_budget == 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partitions_auto has dim ", partitions_auto->dim, " and memory_budget ",
        partitions_auto->memory_budget, "; both must be positive"));
  }
  if (typed()) {
    uint32_t next = 0;
    for (size_t t = 0; t < node_types.size(); ++t) {
      const NodeType& type = node_types[t];
      if (type.name.empty()) return absl::InvalidArgumentError("a node type has no name");
      for (size_t u = 0; u < t; ++u) {
        if (node_types[u].name == type.name) {
          return absl::InvalidArgumentError(
              absl::StrCat("node type '", type.name, "' is declared twice"));
        }
      }
      if (type.first_partition != next || type.num_partitions == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("node type '", type.name, "' has partitions [", type.first_partition, ", ",
                         type.first_partition + type.num_partitions,
                         "); the types' partitions must "
                         "follow each other from 0, at least one each"));
      }
      next += type.num_partitions;
    }
    if (next != num_partitions) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the node types cover ", next, " partitions, num_partitions is ", num_partitions));
    }
    if (relation_types.size() != relations.size()) {
      return absl::InvalidArgumentError(absl::StrCat("relation_types has ", relation_types.size(),
                                                     " entries, the graph has ", relations.size(),
                                                     " relations"));
    }
    for (const RelationTypes& t : relation_types) {
      if (t.src >= node_types.size() || t.dst >= node_types.size()) {
        return absl::InvalidArgumentError("relation_types names a type that does not exist");
      }
    }
  } else if (!relation_types.empty()) {
    return absl::InvalidArgumentError("relation_types without node_types");
  }
  return ParseTrainerMembers(training).status();
}

absl::StatusOr<Manifest> ReadManifest(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, internal::ReadFile(path));
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": bad JSON: ", e.what()));
  }
  absl::StatusOr<Manifest> m;
  try {
    m = FromJson(j, path);
  } catch (const Json::exception& e) {  // not expected: types are checked
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": bad manifest: ", e.what()));
  }
  if (!m.ok()) return m.status();
  absl::Status valid = m->Validate();
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": inconsistent manifest: ", valid.message()));
  }
  return m;
}

absl::Status WriteManifestAtomic(const std::string& path, const Manifest& m) {
  absl::Status valid = m.Validate();
  if (!valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refusing to write an inconsistent manifest to ", path, ": ",
        valid.message()));
  }
  std::string text;
  try {
    ASSIGN_OR_RETURN(Json j, ToJson(m));
    text = j.dump(2);
  } catch (const Json::exception& e) {
    return absl::InternalError(
        absl::StrCat("cannot serialize manifest for ", path, ": ", e.what()));
  }
  text.push_back('\n');
  return internal::WriteFileAtomic(path, text);
}

}  // namespace ember
