// ember eval GRAPH [--split test|valid|train] [--negatives all|auto|N]
//                  [--max-edges N] [--seed S] [--threads T] [--json]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "storage/status_macros.h"
#include "tools/cli.h"
#include "tools/common_flags.h"
#include "train/checkpoint.h"
#include "train/evaluator.h"

// Defined by `ember import` (split fractions there); here it names the split
// to evaluate. Its import default "1" is not a split name and means "test".
ABSL_DECLARE_FLAG(std::string, split);

ABSL_FLAG(std::string, negatives, "auto",
          "eval: candidates per query: all (every node of the graph), N (N "
          "uniformly sampled nodes shared per batch of edges, plus the true "
          "one), or auto (all when the graph has at most 100000 nodes, else "
          "1000).");
ABSL_FLAG(uint64_t, max_edges, 0,
          "eval: evaluate a deterministic sample (--seed) of this many edges "
          "of the split; 0 = all of them.");

namespace ember::tools {
namespace {

// --negatives auto: every node up to this many nodes, else kAutoSampled.
constexpr uint64_t kAutoAllNodes = 100000;
constexpr uint64_t kAutoSampled = 1000;

absl::StatusOr<Split> SplitFromFlag() {
  const std::string s = absl::GetFlag(FLAGS_split);
  if (s == "test" || s == "1" || s.empty()) return Split::kTest;
  if (s == "valid") return Split::kValid;
  if (s == "train") return Split::kTrain;
  return absl::InvalidArgumentError(
      absl::StrCat("--split takes test, valid or train, got \"", s, "\""));
}

absl::StatusOr<uint64_t> NegativesFromFlag(const Manifest& m) {
  const std::string s = absl::GetFlag(FLAGS_negatives);
  if (s == "all") return 0;
  if (s == "auto") return m.num_nodes <= kAutoAllNodes ? 0 : kAutoSampled;
  uint64_t n = 0;
  if (!absl::SimpleAtoi(s, &n) || n == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--negatives takes all, auto or a positive number, got \"", s, "\""));
  }
  return n;
}

nlohmann::ordered_json MetricsJson(const RankMetrics& m) {
  return {{"mrr", m.mrr},       {"mr", m.mr},         {"hits@1", m.hits1},
          {"hits@3", m.hits3},  {"hits@10", m.hits10}, {"auc", m.auc}};
}

std::string Table(const EvalResult& r) {
  std::string out = absl::StrFormat("%-8s %10s %10s\n", "", "filtered", "raw");
  auto row = [&](const char* name, double f, double raw, int digits) {
    absl::StrAppend(&out, absl::StrFormat("%-8s %10.*f %10.*f\n", name,
                                          digits, f, digits, raw));
  };
  row("MRR", r.filtered.mrr, r.raw.mrr, 4);
  row("MR", r.filtered.mr, r.raw.mr, 2);
  row("Hits@1", r.filtered.hits1, r.raw.hits1, 4);
  row("Hits@3", r.filtered.hits3, r.raw.hits3, 4);
  row("Hits@10", r.filtered.hits10, r.raw.hits10, 4);
  row("AUC", r.filtered.auc, r.raw.auc, 4);
  return out;
}

absl::Status Run(const std::string& dir) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Open(dir));
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*graph));
  EvalOptions options;
  ASSIGN_OR_RETURN(options.split, SplitFromFlag());
  ASSIGN_OR_RETURN(options.negatives, NegativesFromFlag(graph->manifest()));
  options.max_edges = absl::GetFlag(FLAGS_max_edges);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.threads = ThreadCount();
  ASSIGN_OR_RETURN(EvalResult r, Evaluate(*graph, model, options));
  const std::string split(SplitName(options.split));
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::ordered_json j = {
        {"filtered", MetricsJson(r.filtered)},
        {"raw", MetricsJson(r.raw)},
        {"edges", r.edges},
        {"split", split},
        {"negatives", options.negatives == 0 ? nlohmann::ordered_json("all")
                                             : nlohmann::ordered_json(options.negatives)}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    const std::string against =
        options.negatives == 0
            ? absl::StrCat("all ", graph->manifest().num_nodes, " nodes")
            : absl::StrCat(options.negatives, " sampled nodes");
    std::printf(
        "%s split: %llu edges, each ranked as tail and as head against %s, "
        "%.2f s\n%s",
        split.c_str(), static_cast<unsigned long long>(r.edges),
        against.c_str(), r.seconds, Table(r).c_str());
  }
  return absl::OkStatus();
}

}  // namespace

// ember eval GRAPH: link-prediction metrics of the graph's current
// checkpoint on one split (filtered and raw; see train/evaluator.h).
int EvalMain(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return ReportStatus(
        "eval", absl::InvalidArgumentError(
                    "usage: ember eval GRAPH [--split test|valid] "
                    "[--negatives all|auto|N] [--max-edges N] [--json]"));
  }
  return ReportStatus("eval", Run(args[0]));
}

}  // namespace ember::tools
