// ember recommend GRAPH --relation R --out FILE [--k 10] [--users TYPE|FILE]
//                       [--exclude-known] [--memory-budget B] [--threads T]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "storage/base/atomic_file.h"
#include "storage/base/status_macros.h"
#include "storage/graph.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "train/eval/recommender.h"
#include "train/model/checkpoint.h"

ABSL_FLAG(std::string, users, "",
          "recommend: whom to recommend for: the relation's source type (its name), or a file "
          "of node names, one a line. Empty: every node of the source type.");
ABSL_FLAG(bool, exclude_known, true,
          "recommend: leave out what the train split already links (a user's items); "
          "--noexclude-known keeps them.");

namespace ember::tools {
namespace {

absl::StatusOr<uint32_t> RelationId(const Manifest& m, const std::string& name) {
  if (name.empty() && m.relations.size() == 1) return 0;
  for (uint32_t r = 0; r < m.relations.size(); ++r) {
    if (m.relations[r] == name) return r;
  }
  if (name.empty()) {
    return absl::InvalidArgumentError("--relation is required: the graph has several relations");
  }
  return UnknownRelation(name, "the graph", m.relations);
}

// The sources --users names, ascending global ids (empty: every source).
absl::StatusOr<std::vector<uint64_t>> Sources(const Graph& graph, uint32_t relation,
                                              const std::string& users) {
  const Manifest& m = graph.manifest();
  const RelationTypes types = TypesOfRelation(m, relation);
  std::vector<uint64_t> out;
  if (users.empty()) return out;
  std::ifstream in(users);
  if (!in) {
    if (!m.typed() || m.node_types[types.src].name == users) return out;
    return absl::InvalidArgumentError(absl::StrCat(
        "--users ", users, ": neither a file nor the source type of relation '",
        m.relations[relation], "' (", m.typed() ? m.node_types[types.src].name : "untyped", ")"));
  }
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const std::string name(absl::StripAsciiWhitespace(line));
    if (name.empty() || name[0] == '#') continue;
    absl::StatusOr<NodeRef> node = graph.LookupNode(name);
    if (!node.ok()) {
      return absl::Status(node.status().code(),
                          absl::StrCat(users, ":", line_no, ": ", node.status().message()));
    }
    if (m.TypeOfPartition(node->partition) != types.src) {
      return absl::InvalidArgumentError(absl::StrCat(
          users, ":", line_no, ": '", name, "' is of type ",
          m.node_types[m.TypeOfPartition(node->partition)].name, ", not ",
          m.node_types[types.src].name, " (the source type of '", m.relations[relation], "')"));
    }
    out.push_back(graph.GlobalId(*node));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(users, ": names no node"));
  return out;
}

// Names of partition p's nodes, by offset.
absl::StatusOr<std::vector<std::string>> PartitionNames(const Graph& graph, uint32_t p) {
  std::vector<std::string> names(graph.manifest().partition_sizes[p]);
  RETURN_IF_ERROR(graph.ForEachNodeName(p, [&](uint32_t off, std::string_view name) {
    names[off] = std::string(name);
    return absl::OkStatus();
  }));
  return names;
}

absl::Status Run(const std::string& dir) {
  const std::string out_path = absl::GetFlag(FLAGS_out);
  if (out_path.empty()) {
    return absl::InvalidArgumentError("--out FILE is required (user<TAB>item<TAB>score<TAB>rank)");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Open(dir));
  const Manifest& m = graph->manifest();
  RecommendOptions options;
  ASSIGN_OR_RETURN(options.relation, RelationId(m, absl::GetFlag(FLAGS_relation)));
  const int k = absl::GetFlag(FLAGS_k).values.front();
  if (absl::GetFlag(FLAGS_k).values.size() != 1 || k < 1) {
    return absl::InvalidArgumentError("--k takes one number of recommendations, at least 1");
  }
  options.k = static_cast<uint32_t>(k);
  options.exclude_known = absl::GetFlag(FLAGS_exclude_known);
  options.threads = ThreadCount();
  ASSIGN_OR_RETURN(options.memory_budget, MemoryBudget());
  ASSIGN_OR_RETURN(options.sources, Sources(*graph, options.relation, absl::GetFlag(FLAGS_users)));
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*graph));
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicOutputFile> out,
                   AtomicOutputFile::Create(out_path, absl::GetFlag(FLAGS_overwrite)));

  // Candidates' names, all of them; sources' names a partition at a time.
  const RelationTypes types = TypesOfRelation(m, options.relation);
  const uint32_t dst_first = m.FirstPartitionOf(types.dst);
  std::vector<std::vector<std::string>> candidate_names;
  std::vector<uint64_t> candidate_bases;
  for (uint32_t q = dst_first; q < m.EndPartitionOf(types.dst); ++q) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, PartitionNames(*graph, q));
    candidate_names.push_back(std::move(names));
    candidate_bases.push_back(m.PartitionBase(q));
  }
  auto candidate_name = [&](uint64_t id) -> const std::string& {
    size_t i = std::upper_bound(candidate_bases.begin(), candidate_bases.end(), id) -
               candidate_bases.begin() - 1;
    return candidate_names[i][id - candidate_bases[i]];
  };
  int64_t source_partition = -1;
  uint64_t source_base = 0;
  std::vector<std::string> source_names;

  ProgressPrinter progress = ProgressFromFlags();
  options.progress = [&](uint64_t done, uint64_t total) {
    progress.Update("recommend", done, total, "sources");
  };
  PrintGemmStart();
  const auto start = std::chrono::steady_clock::now();
  uint64_t sources = 0, rows = 0;
  std::string buffer;
  absl::Status written = Recommend(
      *graph, model, options, [&](uint64_t source, std::span<const Scored> top) -> absl::Status {
        ASSIGN_OR_RETURN(const NodeRef ref, graph->NodeFromGlobalId(source));
        if (int64_t{ref.partition} != source_partition) {
          ASSIGN_OR_RETURN(source_names, PartitionNames(*graph, ref.partition));
          source_partition = ref.partition;
          source_base = m.PartitionBase(ref.partition);
        }
        const std::string& user = source_names[source - source_base];
        for (size_t i = 0; i < top.size(); ++i) {
          absl::StrAppendFormat(&buffer, "%s\t%s\t%.6g\t%d\n", user, candidate_name(top[i].id),
                                top[i].score, i + 1);
        }
        ++sources;
        rows += top.size();
        if (buffer.size() >= (1 << 20)) {
          RETURN_IF_ERROR(out->Append(buffer));
          buffer.clear();
        }
        return absl::OkStatus();
      });
  progress.Finish();
  RETURN_IF_ERROR(written);
  RETURN_IF_ERROR(out->Append(buffer));
  RETURN_IF_ERROR(out->Commit());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::ordered_json j = {
        {"out", out_path},    {"relation", m.relations[options.relation]},
        {"sources", sources}, {"k", options.k},
        {"rows", rows},       {"exclude_known", options.exclude_known},
        {"seconds", seconds}, {"sources_per_second", seconds > 0 ? sources / seconds : 0}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("recommended %s x %u for %llu sources to %s in %.2f s (%s sources/s)\n",
                m.typed() ? m.node_types[types.dst].name.c_str() : "nodes", options.k,
                static_cast<unsigned long long>(sources), out_path.c_str(), seconds,
                HumanCount(seconds > 0 ? sources / seconds : 0).c_str());
  }
  return absl::OkStatus();
}

}  // namespace

int RecommendMain(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return ReportStatus(
        "recommend",
        absl::InvalidArgumentError("usage: ember recommend GRAPH --relation R --out FILE [--k 10] "
                                   "[--users TYPE|FILE] [--noexclude-known]"));
  }
  return ReportStatus("recommend", Run(args[0]));
}

}  // namespace ember::tools
