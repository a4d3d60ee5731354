// ember recommend GRAPH --relation R --out FILE|- [--k 10]
//                       [--users FILE|-|TYPE | --user NAME[,NAME...]] [--strict]
//                       [--out-format tsv|jsonl|npy] [--exclude-known all|train|none]
//                       [--memory-budget B] [--threads T]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "storage/base/status_macros.h"
#include "storage/graph.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/recommend_output.h"
#include "train/eval/recommender.h"
#include "train/model/checkpoint.h"

ABSL_FLAG(std::string, users, "",
          "recommend: whom to recommend for: a file of node names, one a line ('-': standard "
          "input), or the relation's source type (its name). Empty: every node of the source "
          "type. A path that is neither an existing file nor the source type is an error.");
ABSL_FLAG(std::string, user, "",
          "recommend: whom to recommend for, named on the command line: NAME[,NAME...] "
          "(instead of --users).");
ABSL_FLAG(bool, strict, false,
          "recommend: refuse a user the graph does not know (naming it and its line) instead "
          "of skipping it (a cold-start user; the skipped are counted on stderr).");
ABSL_FLAG(ember::tools::RecommendFormat, out_format, ember::tools::RecommendFormat::kTsv,
          "recommend: tsv (user<TAB>item<TAB>score<TAB>rank lines), jsonl (one "
          "{\"user\", \"items\", \"scores\"} object a user) or npy (OUT.ids.npy int64 and "
          "OUT.scores.npy float32, [users, K], with OUT.users.tsv and OUT.items.tsv naming "
          "their rows and item indexes; docs/recommenders.md).");
ABSL_FLAG(ember::tools::ExcludeKnown, exclude_known, ember::tools::ExcludeKnown::kAll,
          "recommend: leave out what a user already links through the relation: all (every "
          "split: train, valid, test), train (the train split only) or none "
          "(--noexclude-known).");

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

// The sources --users or --user names, in their order, each once (empty:
// every source), and what was left out of them.
struct SourceList {
  bool every = false;  // neither flag, or --users naming the source type
  std::vector<uint64_t> ids;
  uint64_t duplicates = 0;
  uint64_t unknown = 0;
  std::string first_unknown;  // "'name' (where)"
};

// Reads names from --users (a file or '-') or --user (a comma list), each
// with where it came from ("users.txt:3", "stdin:2", "--user #2").
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> UserNames(const Manifest& m,
                                                                           uint32_t relation,
                                                                           bool* every_source) {
  const std::string users = absl::GetFlag(FLAGS_users);
  const std::string user = absl::GetFlag(FLAGS_user);
  std::vector<std::pair<std::string, std::string>> names;
  *every_source = false;
  if (!users.empty() && !user.empty()) {
    return absl::InvalidArgumentError("give --users FILE or --user NAME[,NAME...], not both");
  }
  if (!user.empty()) {
    int n = 0;
    for (absl::string_view name : absl::StrSplit(user, ',')) {
      ++n;
      const std::string trimmed(absl::StripAsciiWhitespace(name));
      if (trimmed.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--user ", user, ": name #", n, " is empty"));
      }
      names.emplace_back(trimmed, absl::StrCat("--user #", n));
    }
    return names;
  }
  if (users.empty()) {
    *every_source = true;
    return names;
  }
  std::ifstream file;
  std::istream* in = &std::cin;
  std::string where = "stdin";
  if (users != "-") {
    file.open(users);
    where = users;
    if (!file) {
      const RelationTypes types = TypesOfRelation(m, relation);
      if (m.typed() && m.node_types[types.src].name == users) {
        *every_source = true;
        return names;
      }
      return absl::NotFoundError(absl::StrCat(
          "--users ", users, ": no such file",
          m.typed() ? absl::StrCat(", nor the source type of relation '", m.relations[relation],
                                   "' (", m.node_types[types.src].name, ")")
                    : ""));
    }
    in = &file;
  }
  std::string line;
  for (int line_no = 1; std::getline(*in, line); ++line_no) {
    const std::string name(absl::StripAsciiWhitespace(line));
    if (name.empty() || name[0] == '#') continue;
    names.emplace_back(name, absl::StrCat(where, ":", line_no));
  }
  if (in->bad()) return absl::DataLossError(absl::StrCat("--users ", where, ": read error"));
  if (names.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": names no node"));
  return names;
}

absl::StatusOr<SourceList> Sources(const Graph& graph, uint32_t relation) {
  const Manifest& m = graph.manifest();
  const RelationTypes types = TypesOfRelation(m, relation);
  bool every_source = false;
  ASSIGN_OR_RETURN(const auto names, UserNames(m, relation, &every_source));
  SourceList out;
  out.every = every_source;
  if (every_source) return out;
  absl::flat_hash_set<uint64_t> seen;
  for (const auto& [name, where] : names) {
    absl::StatusOr<NodeRef> node = graph.LookupNode(name);
    if (absl::IsNotFound(node.status()) && !absl::GetFlag(FLAGS_strict)) {
      if (out.unknown++ == 0) out.first_unknown = absl::StrCat("'", name, "' (", where, ")");
      continue;
    }
    if (!node.ok()) {
      return absl::Status(node.status().code(),
                          absl::StrCat(where, ": ", node.status().message(),
                                       absl::IsNotFound(node.status())
                                           ? " (--strict refuses users the graph does not know)"
                                           : ""));
    }
    if (m.TypeOfPartition(node->partition) != types.src) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": '", name, "' is of type ",
          m.node_types[m.TypeOfPartition(node->partition)].name, ", not ",
          m.node_types[types.src].name, " (the source type of '", m.relations[relation], "')"));
    }
    const uint64_t id = graph.GlobalId(*node);
    if (!seen.insert(id).second) {
      ++out.duplicates;
      continue;
    }
    out.ids.push_back(id);
  }
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
  const RecommendFormat format = absl::GetFlag(FLAGS_out_format);
  if (out_path.empty()) {
    return absl::InvalidArgumentError(
        "--out FILE is required (user<TAB>item<TAB>score<TAB>rank lines; '-': standard output)");
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
  options.exclude_known = ExcludedSplits(absl::GetFlag(FLAGS_exclude_known));
  options.threads = ThreadCount();
  ASSIGN_OR_RETURN(options.memory_budget, MemoryBudget());
  ASSIGN_OR_RETURN(SourceList sources, Sources(*graph, options.relation));
  if (!sources.every && sources.ids.empty()) {
    return absl::NotFoundError(
        absl::StrCat("none of the ", sources.unknown,
                     " users asked for is in the graph (first: ", sources.first_unknown, ")"));
  }
  options.sources = sources.ids;
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*graph));
  ASSIGN_OR_RETURN(const RecommendMemory plan, PlanRecommendMemory(m, model.model.dim, options));

  // Candidates' names, all of them; sources' names a partition at a time.
  const RelationTypes types = TypesOfRelation(m, options.relation);
  const uint32_t dst_first = m.FirstPartitionOf(types.dst);
  std::vector<std::string> item_names;
  for (uint32_t q = dst_first; q < m.EndPartitionOf(types.dst); ++q) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, PartitionNames(*graph, q));
    for (std::string& n : names) item_names.push_back(std::move(n));
  }
  const uint64_t rows =
      options.sources.empty() ? m.NodesOf(types.src) : uint64_t{options.sources.size()};
  RecommendOutputOptions output_options;
  output_options.path = out_path;
  output_options.format = format;
  output_options.overwrite = absl::GetFlag(FLAGS_overwrite);
  output_options.rows = rows;
  output_options.width = plan.heap_k;
  output_options.first_item = m.PartitionBase(dst_first);
  output_options.item_names = &item_names;
  ASSIGN_OR_RETURN(std::unique_ptr<RecommendOutput> out, RecommendOutput::Create(output_options));

  int64_t source_partition = -1;
  uint64_t source_base = 0;
  std::vector<std::string> source_names;
  ProgressPrinter progress = ProgressFromFlags();
  options.progress = [&](uint64_t done, uint64_t total) {
    progress.Update("recommend", done, total, "sources");
  };
  PrintGemmStart();
  const auto start = std::chrono::steady_clock::now();
  uint64_t done = 0, written = 0;
  absl::Status status = Recommend(
      *graph, model, options, [&](uint64_t source, std::span<const Scored> top) -> absl::Status {
        ASSIGN_OR_RETURN(const NodeRef ref, graph->NodeFromGlobalId(source));
        if (int64_t{ref.partition} != source_partition) {
          ASSIGN_OR_RETURN(source_names, PartitionNames(*graph, ref.partition));
          source_partition = ref.partition;
          source_base = m.PartitionBase(ref.partition);
        }
        ++done;
        written += top.size();
        return out->Add(source_names[source - source_base], top);
      });
  progress.Finish();
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(out->Commit());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Skipped and repeated users, for people: stderr, whatever the output.
  if (sources.unknown > 0) {
    std::fprintf(stderr,
                 "recommend: skipped %llu user%s the graph does not know (cold start; first: "
                 "%s); --strict refuses them\n",
                 static_cast<unsigned long long>(sources.unknown), sources.unknown == 1 ? "" : "s",
                 sources.first_unknown.c_str());
  }
  if (sources.duplicates > 0) {
    std::fprintf(stderr, "recommend: %llu repeated user%s recommended for once\n",
                 static_cast<unsigned long long>(sources.duplicates),
                 sources.duplicates == 1 ? "" : "s");
  }
  // The summary goes to stderr when the recommendations take stdout.
  FILE* summary = out_path == "-" ? stderr : stdout;
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::ordered_json j = {
        {"out", out_path},
        {"format", std::string(EnumToName(format))},
        {"relation", m.relations[options.relation]},
        {"sources", done},
        {"k", options.k},
        {"rows", written},
        {"skipped_unknown", sources.unknown},
        {"duplicates", sources.duplicates},
        {"exclude_known", std::string(EnumToName(absl::GetFlag(FLAGS_exclude_known)))},
        {"memory_planned_bytes", plan.peak_bytes},
        {"seconds", seconds},
        {"sources_per_second", seconds > 0 ? done / seconds : 0}};
    std::fprintf(summary, "%s\n", j.dump().c_str());
  } else {
    std::fprintf(summary, "recommended %s x %u for %llu sources to %s in %.2f s (%s sources/s)\n",
                 m.typed() ? m.node_types[types.dst].name.c_str() : "nodes", options.k,
                 static_cast<unsigned long long>(done), out_path.c_str(), seconds,
                 HumanCount(seconds > 0 ? done / seconds : 0).c_str());
  }
  return absl::OkStatus();
}

}  // namespace

int RecommendMain(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return ReportStatus("recommend",
                        absl::InvalidArgumentError(
                            "usage: ember recommend GRAPH --relation R --out FILE|- [--k 10] "
                            "[--users FILE|-|TYPE | --user NAME[,NAME...]] [--noexclude-known]"));
  }
  return ReportStatus("recommend", Run(args[0]));
}

}  // namespace ember::tools
