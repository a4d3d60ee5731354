#include "tools/export/inspect.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "storage/base/json_reader.h"
#include "storage/base/progress.h"
#include "train/model/train_state.h"

namespace ember::tools {
namespace {

using Json = nlohmann::json;

// Up to this many partitions, matrices and lists are printed in full.
constexpr uint32_t kFullDetailPartitions = 16;
constexpr size_t kRelationsShown = 8;

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B")
                : absl::StrFormat("%.1f %s", v, units[u]);
}

std::string Summary(const std::vector<uint64_t>& v) {
  if (v.empty()) return "none";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const double mean =
      static_cast<double>(std::accumulate(v.begin(), v.end(), uint64_t{0})) /
      static_cast<double>(v.size());
  return absl::StrFormat("min %d, max %d, mean %.1f", *lo, *hi, mean);
}

std::vector<uint64_t> ShardBytes(const Graph& graph) {
  std::vector<uint64_t> bytes;
  for (uint32_t p = 0; p < graph.manifest().num_partitions; ++p) {
    bytes.push_back(graph.ShardBytesOnDisk(p));
  }
  return bytes;
}

// What inspect shows of training: epochs done and the model's dim as the
// trainer reads them (0 without a checkpoint or when its state does not
// read), and the stored `state` member as it is (empty without one), so
// that a damaged state is shown rather than refused.
struct TrainingSummary {
  uint32_t epochs_done = 0;
  uint32_t dim = 0;
  Json state = Json::object();
};

TrainingSummary SummarizeTraining(const Graph& graph) {
  TrainingSummary out;
  const Json members = Json::parse(graph.manifest().training.state, nullptr,
                                   /*allow_exceptions=*/false);
  if (const Json* state = JsonReader::Find(members, "state"); state != nullptr) {
    out.state = *state;
  }
  if (graph.manifest().training.checkpoint_version > 0) {
    const absl::StatusOr<TrainState> s = ReadTrainState(graph);
    if (s.ok()) {
      out.epochs_done = s->epochs_done;
      out.dim = static_cast<uint32_t>(s->model.dim);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> InspectJson(const Graph& graph) {
  const Manifest& m = graph.manifest();
  const uint32_t num_p = m.num_partitions;
  try {
    Json j = Json::object();
    j["dir"] = graph.dir();
    j["format_version"] = m.format_version;
    j["nodes"] = m.num_nodes;
    j["integer_ids"] = m.integer_ids;
    j["edges"] = {{"train", m.edges.train},
                  {"valid", m.edges.valid},
                  {"test", m.edges.test},
                  {"total", m.edges.total()}};
    j["relations"] = m.relations;
    j["num_relations"] = m.relations.size();
    j["partitions"] = num_p;
    j["partitions_auto"] =
        m.partitions_auto.has_value()
            ? Json{{"dim", m.partitions_auto->dim},
                   {"memory_budget", m.partitions_auto->memory_budget}}
            : Json(nullptr);
    j["partitioner"] = m.partitioner;
    j["seed"] = m.seed;
    j["partition_sizes"] = m.partition_sizes;
    if (m.train_bucket_edges.size() == uint64_t{num_p} * num_p) {
      Json buckets = Json::array();
      for (uint32_t i = 0; i < num_p; ++i) {
        buckets.push_back(std::vector<uint64_t>(
            m.train_bucket_edges.begin() + uint64_t{i} * num_p,
            m.train_bucket_edges.begin() + uint64_t{i + 1} * num_p));
      }
      j["buckets"] = std::move(buckets);
    } else {
      j["buckets"] = nullptr;
    }
    j["num_features"] = m.num_features;
    // {"user": {"nodes", "partitions", "first_partition"}, ...}; null untyped.
    Json types = m.typed() ? Json::object() : Json(nullptr);
    for (uint32_t t = 0; t < m.node_types.size(); ++t) {
      types[m.node_types[t].name] = {{"nodes", m.NodesOf(t)},
                                     {"partitions", m.node_types[t].num_partitions},
                                     {"first_partition", m.node_types[t].first_partition}};
    }
    j["node_types"] = std::move(types);
    Json schema = m.typed() ? Json::object() : Json(nullptr);
    for (size_t r = 0; r < m.relation_types.size(); ++r) {
      schema[m.relations[r]] = {{"src", m.node_types[m.relation_types[r].src].name},
                                {"dst", m.node_types[m.relation_types[r].dst].name}};
    }
    j["schema"] = std::move(schema);
    j["degree"] = {{"min", m.degree.min}, {"max", m.degree.max},
                   {"mean", m.degree.mean}, {"p50", m.degree.p50},
                   {"p90", m.degree.p90}, {"p99", m.degree.p99}};
    const std::vector<uint64_t> bytes = ShardBytes(graph);
    j["bytes_on_disk"] = bytes;
    j["bytes_on_disk_total"] =
        std::accumulate(bytes.begin(), bytes.end(), uint64_t{0});
    const TrainingSummary t = SummarizeTraining(graph);
    j["training"] = {{"checkpoint_version", m.training.checkpoint_version},
                     {"epochs_done", t.epochs_done},
                     {"dim", t.dim},
                     {"state", t.state}};
    return j.dump(2) + "\n";
  } catch (const Json::exception& e) {  // e.g. a relation name not UTF-8
    return absl::InternalError(absl::StrCat("cannot describe ", graph.dir(),
                                            " as JSON: ", e.what()));
  }
}

std::string InspectText(const Graph& graph) {
  const Manifest& m = graph.manifest();
  const uint32_t num_p = m.num_partitions;
  std::string out;
  absl::StrAppend(&out, "graph          ", graph.dir(), "\n");
  absl::StrAppend(&out, "format         version ", m.format_version, "\n");
  absl::StrAppend(&out, "nodes          ", m.num_nodes,
                  m.integer_ids ? " (integer ids)" : " (string ids)", "\n");
  absl::StrAppend(&out, "edges          ", m.edges.total(), " (train ",
                  m.edges.train, ", valid ", m.edges.valid, ", test ",
                  m.edges.test, ")\n");
  std::vector<std::string> shown(
      m.relations.begin(),
      m.relations.begin() + std::min(m.relations.size(), kRelationsShown));
  absl::StrAppend(&out, "relations      ", m.relations.size());
  if (!shown.empty()) {
    absl::StrAppend(&out, ": ", absl::StrJoin(shown, ", "),
                    m.relations.size() > shown.size() ? ", ..." : "");
  }
  absl::StrAppend(&out, "\n");
  if (m.typed()) {
    for (uint32_t t = 0; t < m.node_types.size(); ++t) {
      const NodeType& type = m.node_types[t];
      absl::StrAppend(&out, t == 0 ? "node types     " : "               ", type.name, ": ",
                      m.NodesOf(t), " nodes in ", type.num_partitions,
                      type.num_partitions == 1 ? " partition" : " partitions", " (",
                      type.first_partition, type.num_partitions == 1 ? "" : "-",
                      type.num_partitions == 1
                          ? std::string()
                          : absl::StrCat(type.first_partition + type.num_partitions - 1),
                      ")\n");
    }
    for (size_t r = 0; r < m.relation_types.size() && r < kRelationsShown; ++r) {
      absl::StrAppend(&out, r == 0 ? "schema         " : "               ", m.relations[r], ": ",
                      m.node_types[m.relation_types[r].src].name, " -> ",
                      m.node_types[m.relation_types[r].dst].name, "\n");
    }
  }
  absl::StrAppend(&out, "features       ",
                  m.num_features == 0 ? std::string("none")
                                      : absl::StrCat(m.num_features),
                  "\n");
  absl::StrAppend(&out, "partitions     ", num_p, " (");
  if (m.partitions_auto.has_value()) {
    absl::StrAppend(&out, "auto: --dim ", m.partitions_auto->dim,
                    ", --memory-budget ",
                    ByteSizeText(m.partitions_auto->memory_budget), "; ");
  }
  absl::StrAppend(&out, m.partitioner, ", seed ", m.seed, ")\n");
  if (num_p <= kFullDetailPartitions) {
    absl::StrAppend(&out, "partition sizes ",
                    absl::StrJoin(m.partition_sizes, " "), "\n");
  } else {
    absl::StrAppend(&out, "partition sizes ", Summary(m.partition_sizes),
                    "\n");
  }

  if (m.train_bucket_edges.size() != uint64_t{num_p} * num_p) {
    absl::StrAppend(&out, "train buckets  unknown (not in the manifest)\n");
  } else if (num_p <= kFullDetailPartitions) {
    absl::StrAppend(&out,
                    "train edges per bucket (row: source partition, "
                    "column: destination partition):\n");
    size_t w = 3;
    for (uint64_t n : m.train_bucket_edges) {
      w = std::max(w, absl::StrCat(n).size());
    }
    absl::StrAppend(&out, absl::StrFormat("  %4s", ""));
    for (uint32_t jj = 0; jj < num_p; ++jj) {
      absl::StrAppend(&out, absl::StrFormat(" %*d", w, jj));
    }
    absl::StrAppend(&out, "\n");
    for (uint32_t i = 0; i < num_p; ++i) {
      absl::StrAppend(&out, absl::StrFormat("  %4d", i));
      for (uint32_t jj = 0; jj < num_p; ++jj) {
        absl::StrAppend(&out, absl::StrFormat(
                                  " %*d", w,
                                  m.train_bucket_edges[uint64_t{i} * num_p +
                                                       jj]));
      }
      absl::StrAppend(&out, "\n");
    }
  } else {
    absl::StrAppend(&out, "train buckets  ", uint64_t{num_p} * num_p,
                    " buckets, edges per bucket: ",
                    Summary(m.train_bucket_edges), "\n");
  }

  absl::StrAppend(
      &out,
      absl::StrFormat("degree         min %d, max %d, mean %.2f, p50 %d, "
                      "p90 %d, p99 %d\n",
                      m.degree.min, m.degree.max, m.degree.mean, m.degree.p50,
                      m.degree.p90, m.degree.p99));

  const std::vector<uint64_t> bytes = ShardBytes(graph);
  const uint64_t total =
      std::accumulate(bytes.begin(), bytes.end(), uint64_t{0});
  absl::StrAppend(&out, "bytes on disk  ", HumanBytes(total),
                  " in shards\n");
  if (num_p <= kFullDetailPartitions) {
    for (uint32_t p = 0; p < num_p; ++p) {
      absl::StrAppend(&out, "  shard-", p, "  ", HumanBytes(bytes[p]), "\n");
    }
  } else {
    const auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
    absl::StrAppend(&out, "  per shard: min ", HumanBytes(*lo), ", max ",
                    HumanBytes(*hi), ", mean ",
                    HumanBytes(total / std::max<uint64_t>(1, num_p)), "\n");
  }

  const TrainingSummary t = SummarizeTraining(graph);
  if (m.training.checkpoint_version == 0) {
    absl::StrAppend(&out, "training       not trained yet\n");
  } else {
    absl::StrAppend(&out, "training       checkpoint version ",
                    m.training.checkpoint_version, ", epochs done ", t.epochs_done,
                    ", dim ", t.dim, "\n");
  }
  if (!t.state.empty()) {
    absl::StrAppend(&out, "  state ", t.state.dump(), "\n");
  }
  return out;
}

}  // namespace ember::tools
