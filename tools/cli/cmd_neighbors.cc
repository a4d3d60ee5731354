// ember neighbors GRAPH --node NAME | --queries FILE [--relation R [--exclude-known]]
//     [--type T] [--k 10] [--index flat|ivf|hnsw] [--save-index PATH] [--json]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "storage/graph.h"
#include "storage/base/status_macros.h"
#include "nlohmann/json.hpp"
#include "tools/cli/cli.h"
#include "train/blas/blas_startup.h"
#include "tools/cli/common_flags.h"
#include "tools/export/neighbors.h"
#include "storage/base/progress.h"

ABSL_FLAG(std::string, node, "", "neighbors: the query node's name.");
ABSL_FLAG(std::string, queries, "",
          "neighbors: file of query node names, one a line (with or instead of --node).");
ABSL_FLAG(ember::tools::IndexKind, index, ember::tools::IndexKind::kFlat,
          "neighbors: FAISS index: flat (exact), ivf (IndexIVFFlat) or hnsw "
          "(IndexHNSWFlat). The index holds ALL embeddings in memory "
          "(n x dim floats), unlike export and train.");
ABSL_FLAG(
    int, nlist, 0,
    "neighbors: IVF lists (0: 4 sqrt(n), at most n/39 so that k-means has the points it needs).");
ABSL_FLAG(int, nprobe, 0, "neighbors: IVF lists probed per query (0: max(8, nlist/8)).");
ABSL_FLAG(int, ef_search, 0, "neighbors: HNSW search beam (0: 256).");
ABSL_FLAG(std::string, save_index, "",
          "neighbors: write the FAISS index here (faiss::write_index; row = global id) "
          "with PATH.names.tsv (row -> name) and PATH.meta.json.");

namespace ember::tools {

int NeighborsMain(const std::vector<std::string>& args) {
  const std::string usage =
      "usage: ember neighbors GRAPH --node NAME | --queries FILE [--relation R "
      "[--exclude-known]] [--type T] [--k 10] [--index flat|ivf|hnsw] [--save-index PATH] "
      "[--json]";
  if (args.size() != 1) return ReportStatus("neighbors", absl::InvalidArgumentError(usage));
  std::vector<std::string> queries;
  if (!absl::GetFlag(FLAGS_node).empty()) queries.push_back(absl::GetFlag(FLAGS_node));
  if (!absl::GetFlag(FLAGS_queries).empty()) {
    auto file = ReadQueryFile(absl::GetFlag(FLAGS_queries));
    if (!file.ok()) return ReportStatus("neighbors", file.status());
    queries.insert(queries.end(), file->begin(), file->end());
  }
  const std::string save_path = absl::GetFlag(FLAGS_save_index);
  if (queries.empty() && save_path.empty()) {
    return ReportStatus("neighbors", absl::InvalidArgumentError(usage));
  }
  if (absl::GetFlag(FLAGS_k).values.size() != 1) {
    return ReportStatus("neighbors",
                        absl::InvalidArgumentError("--k takes one number of neighbours"));
  }
  const int k = static_cast<int>(absl::GetFlag(FLAGS_k).values.front());
  if (k < 1) return ReportStatus("neighbors", absl::InvalidArgumentError("--k must be >= 1"));
  // recommend's flag, on by default there; here off unless given, and any
  // value but none leaves out the train split's links (NeighborIndex::Search).
  const bool exclude_known =
      FlagWasSet("exclude_known") && absl::GetFlag(FLAGS_exclude_known) != ExcludeKnown::kNone;
  if (exclude_known && absl::GetFlag(FLAGS_relation).empty()) {
    return ReportStatus("neighbors", absl::InvalidArgumentError(
                                         "--exclude-known needs --relation: it leaves out what "
                                         "the query already links to through that relation"));
  }

  NeighborIndexOptions options;
  options.kind = absl::GetFlag(FLAGS_index);
  options.nlist = absl::GetFlag(FLAGS_nlist);
  options.nprobe = absl::GetFlag(FLAGS_nprobe);
  options.ef_search = absl::GetFlag(FLAGS_ef_search);
  options.type = absl::GetFlag(FLAGS_type);
  options.threads = absl::GetFlag(FLAGS_threads);  // 0: OpenMP's default
  if (absl::GetFlag(FLAGS_seed) != 0) options.seed = absl::GetFlag(FLAGS_seed);
  auto budget = MemoryBudget();
  if (!budget.ok()) return ReportStatus("neighbors", budget.status());
  options.memory_budget = *budget;
  const bool quiet = absl::GetFlag(FLAGS_quiet);
  PrintGemmStart();
  ProgressPrinter progress = ProgressFromFlags();
  options.progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    progress.Update(std::string(phase), done, total, "partitions");
  };

  auto graph = Graph::Open(args[0]);
  if (!graph.ok()) return ReportStatus("neighbors", graph.status());
  // Fail on unknown nodes and an existing --save-index before the (long)
  // build.
  for (const std::string& q : queries) {
    absl::Status s = (*graph)->LookupNode(q).status();
    if (absl::IsNotFound(s)) {
      return ReportStatus("neighbors", absl::NotFoundError("unknown node '" + q +
                                                           "' in graph " + args[0]));
    }
    if (!s.ok()) return ReportStatus("neighbors", s);
  }
  if (!save_path.empty() && !absl::GetFlag(FLAGS_overwrite) &&
      std::filesystem::exists(save_path)) {
    return ReportStatus("neighbors",
                        absl::AlreadyExistsError(save_path + " exists (pass --overwrite)"));
  }
  auto index = NeighborIndex::Build(**graph, options);
  progress.Finish();
  if (!index.ok()) return ReportStatus("neighbors", index.status());

  const auto start = std::chrono::steady_clock::now();
  auto results = (*index)->Search(queries, absl::GetFlag(FLAGS_relation), k, exclude_known);
  const double search_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!results.ok()) return ReportStatus("neighbors", results.status());

  if (!save_path.empty()) {
    absl::Status s = (*index)->Save(save_path, absl::GetFlag(FLAGS_overwrite));
    if (!s.ok()) return ReportStatus("neighbors", s);
  }

  const bool json = absl::GetFlag(FLAGS_json);
  std::string out;
  for (const NeighborList& list : *results) {
    if (json) {
      // Each line names the GEMM backend and kernel the scores came from.
      nlohmann::ordered_json line = nlohmann::ordered_json::parse(NeighborListJson(list));
      line["gemm"] = {{"backend", BlasBackend()}, {"kernel", BlasKernel()}};
      out += line.dump();
      out += '\n';
    } else {
      out += absl::StrFormat("%s\n", list.node);
      for (size_t i = 0; i < list.neighbors.size(); ++i) {
        out += absl::StrFormat("  %2d  %-24s %.6g\n", i + 1, list.neighbors[i].node,
                               list.neighbors[i].score);
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!quiet) {
    std::string params;
    if ((*index)->nlist() > 0) {
      params = absl::StrFormat(" nlist %d nprobe %d,", (*index)->nlist(), (*index)->nprobe());
    }
    if ((*index)->ef_search() > 0) params = absl::StrFormat(" efSearch %d,", (*index)->ef_search());
    std::fprintf(stderr,
                 "ember neighbors: %s index (%s,%s %llu x %d) built in %.3f s; %zu queries in "
                 "%.3f s (%.0f queries/s)\n",
                 std::string(IndexKindName(options.kind)).c_str(),
                 std::string((*index)->metric()).c_str(), params.c_str(),
                 (unsigned long long)(*index)->size(), (*index)->dim(),
                 (*index)->build_seconds(), queries.size(), search_seconds,
                 search_seconds > 0 ? queries.size() / search_seconds : 0.0);
  }
  return 0;
}

}  // namespace ember::tools
