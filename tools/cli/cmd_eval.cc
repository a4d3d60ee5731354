// ember eval GRAPH [--split test|valid|train] [--negatives all|N]
//                  [--max-edges N] [--by-relation] [--memory-budget B]
//                  [--seed S] [--threads T] [--json]
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "storage/base/status_macros.h"
#include "storage/graph.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/eval_flags.h"
#include "train/blas/blas_startup.h"
#include "train/eval/evaluator.h"
#include "train/eval/recommend_eval.h"
#include "train/eval/recommender.h"
#include "train/model/checkpoint.h"

ABSL_FLAG(std::string, protocol, "link",
          "eval: link (rank each held-out edge's ends among all nodes: MRR, Hits@k) or "
          "recommend (per source of --relation, its top --k with its links in every other split "
          "left out, against its held-out destinations: Recall@K, capped Recall@K, NDCG@K, hit "
          "rate, beside a popularity baseline).");
ABSL_FLAG(uint64_t, max_sources, 0,
          "eval: with --protocol recommend, a seeded sample of this many sources with held-out "
          "destinations (0: all of them).");

namespace ember::tools {
namespace {

nlohmann::ordered_json MetricsJson(const RankMetrics& m) {
  return {{"mrr", m.mrr},
          {"mrr_ci95", m.mrr_ci95},
          {"mr", m.mr},
          {"hits@1", m.hits1},
          {"hits@1_ci95", m.hits1_ci95},
          {"hits@3", m.hits3},
          {"hits@3_ci95", m.hits3_ci95},
          {"hits@10", m.hits10},
          {"hits@10_ci95", m.hits10_ci95},
          {"auc", m.auc}};
}

nlohmann::ordered_json ResultJson(const EvalResult& r, const Split split,
                                  const Manifest& manifest) {
  nlohmann::ordered_json j = {
      {"split", std::string(SplitName(split))},
      {"protocol", DescribeProtocol(r)},
      {"negatives", r.negatives == 0 ? nlohmann::ordered_json("all")
                                     : nlohmann::ordered_json(r.negatives)},
      {"edges", r.edges},
      {"split_edges", r.split_edges},
      {"queries", r.filtered.count},
      {"seconds", r.seconds},
      {"filtered", MetricsJson(r.filtered)},
      {"raw", MetricsJson(r.raw)}};
  if (!r.by_relation.empty()) {
    nlohmann::ordered_json relations = nlohmann::ordered_json::array();
    for (size_t id = 0; id < r.by_relation.size(); ++id) {
      const RankMetrics& m = r.by_relation[id];
      if (m.edges == 0) continue;
      nlohmann::ordered_json rel = {{"relation", manifest.relations[id]},
                                    {"id", id},
                                    {"edges", m.edges},
                                    {"queries", m.count}};
      rel.update(MetricsJson(m));
      relations.push_back(std::move(rel));
    }
    j["relations"] = std::move(relations);
  }
  return j;
}

// "  0.4000 ± 0.0123" (18 columns), or the value alone padded to as many.
std::string Cell(double value, int digits, const double* ci95) {
  std::string cell = absl::StrFormat("%8.*f", digits, value);
  if (ci95 == nullptr) return cell + std::string(10, ' ');
  return cell + absl::StrFormat(" ± %-7.4f", *ci95);
}

std::string Table(const EvalResult& r) {
  std::string out = absl::StrFormat("%-8s %8s%10s %8s\n", "", "filtered", "", "raw");
  auto row = [&](const char* name, double f, const double* f_ci, double raw,
                 const double* raw_ci, int digits) {
    std::string line =
        absl::StrFormat("%-8s %s %s", name, Cell(f, digits, f_ci), Cell(raw, digits, raw_ci));
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
  };
  const RankMetrics &f = r.filtered, &w = r.raw;
  row("MRR", f.mrr, &f.mrr_ci95, w.mrr, &w.mrr_ci95, 4);
  row("MR", f.mr, nullptr, w.mr, nullptr, 2);
  row("Hits@1", f.hits1, &f.hits1_ci95, w.hits1, &w.hits1_ci95, 4);
  row("Hits@3", f.hits3, &f.hits3_ci95, w.hits3, &w.hits3_ci95, 4);
  row("Hits@10", f.hits10, &f.hits10_ci95, w.hits10, &w.hits10_ci95, 4);
  row("AUC", f.auc, nullptr, w.auc, nullptr, 4);
  absl::StrAppend(&out, "(± is the half-width of a 95 % confidence interval over edges)\n");
  return out;
}

// Filtered metrics of each relation with evaluated edges, by relation id.
std::string RelationTable(const EvalResult& r, const Manifest& manifest) {
  size_t width = 8;
  for (size_t id = 0; id < r.by_relation.size(); ++id) {
    if (r.by_relation[id].edges > 0) width = std::max(width, manifest.relations[id].size());
  }
  const int w = static_cast<int>(width);
  std::string out = absl::StrFormat("\nper relation (filtered):\n%-*s %10s %8s%10s %8s %8s\n",
                                    w, "relation", "edges", "MRR", "", "Hits@1", "Hits@10");
  for (size_t id = 0; id < r.by_relation.size(); ++id) {
    const RankMetrics& m = r.by_relation[id];
    if (m.edges == 0) continue;
    absl::StrAppend(&out, absl::StrFormat("%-*s %10d %s %8.4f %8.4f\n", w,
                                          manifest.relations[id], m.edges,
                                          Cell(m.mrr, 4, &m.mrr_ci95), m.hits1, m.hits10));
  }
  return out;
}

nlohmann::ordered_json RecommendJson(const std::vector<RecommendMetrics>& cuts) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const RecommendMetrics& c : cuts) {
    out[absl::StrCat("recall@", c.k)] = c.recall;
    out[absl::StrCat("recall@", c.k, "_ci95")] = c.recall_ci95;
    out[absl::StrCat("recall_capped@", c.k)] = c.recall_capped;
    out[absl::StrCat("recall_capped@", c.k, "_ci95")] = c.recall_capped_ci95;
    out[absl::StrCat("ndcg@", c.k)] = c.ndcg;
    out[absl::StrCat("ndcg@", c.k, "_ci95")] = c.ndcg_ci95;
    out[absl::StrCat("hit_rate@", c.k)] = c.hit_rate;
    out[absl::StrCat("hit_rate@", c.k, "_ci95")] = c.hit_rate_ci95;
  }
  return out;
}

// `--protocol recommend`.
absl::Status RunRecommend(const std::string& dir, const EvalOptions& link) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Open(dir));
  const Manifest& m = graph->manifest();
  RecommendEvalOptions options;
  const std::string relation = absl::GetFlag(FLAGS_relation);
  if (relation.empty() && m.relations.size() != 1) {
    return absl::InvalidArgumentError(
        "--protocol recommend needs --relation: the graph has several relations");
  }
  options.relation = static_cast<uint32_t>(
      std::find(m.relations.begin(), m.relations.end(), relation) - m.relations.begin());
  if (relation.empty()) options.relation = 0;
  if (options.relation >= m.relations.size()) {
    return UnknownRelation(relation, dir, m.relations);
  }
  if (FlagWasSet("k")) options.ks = absl::GetFlag(FLAGS_k).values;
  if (link.split == Split::kTrain) {
    return absl::InvalidArgumentError(
        "--protocol recommend evaluates valid or test: the train split is what it leaves out");
  }
  options.split = link.split;
  options.max_sources = absl::GetFlag(FLAGS_max_sources);
  options.seed = link.seed;
  options.threads = link.threads;
  options.memory_budget = link.memory_budget;
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*graph));
  ProgressPrinter progress = ProgressFromFlags();
  options.progress = [&](uint64_t done, uint64_t total) {
    progress.Update("recommend", done, total, "sources");
  };
  absl::StatusOr<RecommendEvalResult> evaluated = EvaluateRecommendations(*graph, model, options);
  progress.Finish();
  ASSIGN_OR_RETURN(RecommendEvalResult r, std::move(evaluated));
  const RelationTypes types = TypesOfRelation(m, options.relation);
  const std::string candidates =
      m.typed() ? absl::StrCat(r.candidates, " ", m.node_types[types.dst].name, " nodes")
                : absl::StrCat(r.candidates, " nodes");
  std::vector<std::string> left_out;
  for (Split s : r.left_out) left_out.emplace_back(SplitName(s));
  const std::string protocol = absl::StrCat(
      "top-K of ", candidates, " per source of '", m.relations[options.relation], "', its ",
      absl::StrJoin(left_out, " and "), " links left out, against its held-out ",
      std::string(SplitName(options.split)), " links (", r.sources, " of ", r.sources_held_out,
      " sources, ", r.held_out, " held-out edges; ", r.held_out_known,
      " held-out edges also in another split dropped)");
  const std::string denominator =
      absl::StrCat("Recall@K divides a source's hits by its held-out edges (", r.held_out,
                   " in all), capped "
                   "Recall@K by min(K, held-out edges); each is averaged over sources");
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::ordered_json j = {{"protocol", "recommend"},
                                {"description", protocol},
                                {"relation", m.relations[options.relation]},
                                {"split", std::string(SplitName(options.split))},
                                {"sources", r.sources},
                                {"sources_with_held_out", r.sources_held_out},
                                {"held_out", r.held_out},
                                {"held_out_known", r.held_out_known},
                                {"left_out", left_out},
                                {"recall_denominator", "held_out"},
                                {"recall_capped_denominator", "min(k, held_out)"},
                                {"candidates", r.candidates},
                                {"seconds", r.seconds},
                                {"model", RecommendJson(r.model)},
                                {"popularity", RecommendJson(r.popularity)}};
    std::printf("%s\n", j.dump().c_str());
    return absl::OkStatus();
  }
  std::printf("%s, %.2f s\n%s\n", protocol.c_str(), r.seconds, denominator.c_str());
  std::string header = absl::StrFormat("%-11s", "");
  for (const RecommendMetrics& c : r.model) {
    for (const char* name : {"Recall", "RecallCap", "NDCG", "HitRate"}) {
      absl::StrAppend(&header, absl::StrFormat(" %-17s", absl::StrCat(name, "@", c.k)));
    }
  }
  std::printf("%s\n", std::string(absl::StripTrailingAsciiWhitespace(header)).c_str());
  for (const auto& [name, cuts] :
       {std::pair("model", &r.model), std::pair("popularity", &r.popularity)}) {
    std::string line = absl::StrFormat("%-11s", name);
    for (const RecommendMetrics& c : *cuts) {
      for (auto [v, ci] :
           {std::pair(c.recall, c.recall_ci95), std::pair(c.recall_capped, c.recall_capped_ci95),
            std::pair(c.ndcg, c.ndcg_ci95), std::pair(c.hit_rate, c.hit_rate_ci95)}) {
        absl::StrAppend(&line, absl::StrFormat(" %.4f ± %-8.4f", v, ci));
      }
    }
    std::printf("%s\n", std::string(absl::StripTrailingAsciiWhitespace(line)).c_str());
  }
  std::printf("(± is the half-width of a 95 %% confidence interval over sources)\n");
  return absl::OkStatus();
}

absl::Status Run(const std::string& dir) {
  ASSIGN_OR_RETURN(EvalOptions options, EvalOptionsFromFlags());
  const std::string protocol = absl::GetFlag(FLAGS_protocol);
  if (protocol == "recommend") return RunRecommend(dir, options);
  if (protocol != "link") {
    return absl::InvalidArgumentError(
        absl::StrCat("--protocol takes link or recommend, got \"", protocol, "\""));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Open(dir));
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*graph));
  ProgressPrinter progress = ProgressFromFlags();
  options.progress = [&](uint64_t done, uint64_t total) {
    progress.Update("ranking", done, total, "pairs");
  };
  absl::StatusOr<EvalResult> evaluated = Evaluate(*graph, model, options);
  progress.Finish();
  ASSIGN_OR_RETURN(EvalResult r, std::move(evaluated));
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::ordered_json j = ResultJson(r, options.split, graph->manifest());
    j["gemm"] = {{"backend", BlasBackend()}, {"kernel", BlasKernel()}};
    std::printf("%s\n", j.dump().c_str());
    return absl::OkStatus();
  }
  std::printf("%s split: %s, %.2f s\n%s", std::string(SplitName(options.split)).c_str(),
              DescribeProtocol(r).c_str(), r.seconds, Table(r).c_str());
  if (!r.by_relation.empty()) {
    std::printf("%s", RelationTable(r, graph->manifest()).c_str());
  }
  return absl::OkStatus();
}

}  // namespace

// ember eval GRAPH: link-prediction metrics of the graph's current
// checkpoint on one split (filtered and raw; see train/eval/evaluator.h).
int EvalMain(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return ReportStatus(
        "eval", absl::InvalidArgumentError(
                    "usage: ember eval GRAPH [--split test|valid|train] "
                    "[--negatives all|N] [--max-edges N] [--by-relation] [--memory-budget B] "
                    "[--json]"));
  }
  PrintGemmStart();
  return ReportStatus("eval", Run(args[0]));
}

}  // namespace ember::tools
