#include "train/tune/probe.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"
#include "train/model/checkpoint.h"
#include "train/train_loop.h"

namespace ember {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A fresh scratch path for one probe.
std::string ScratchPath(const Graph& graph, const ProbeOptions& probe) {
  static std::atomic<uint64_t> counter{0};
  const std::string name = absl::StrCat(".probe-", ::getpid(), "-", counter++);
  if (probe.scratch_dir.empty()) return graph.dir() + name;
  return absl::StrCat(probe.scratch_dir, "/",
                      std::filesystem::path(graph.dir()).filename().string(), name);
}

}  // namespace

absl::Status ProbeOptions::Validate() const {
  if (!(edge_sample > 0 && edge_sample <= 1)) {
    return absl::InvalidArgumentError("probe edge sample must be in (0, 1]");
  }
  if (epochs < 1) return absl::InvalidArgumentError("probe epochs must be >= 1");
  if (eval_edges < 1) return absl::InvalidArgumentError("probe evaluation edges must be >= 1");
  return absl::OkStatus();
}

absl::StatusOr<ProbeResult> RunProbe(Graph& graph, TrainOptions train,
                                     const ProbeOptions& probe) {
  RETURN_IF_ERROR(probe.Validate());
  if (graph.manifest().edges.valid == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        graph.dir(), " has no validation edges to score probes on; import it with "
        "--split (e.g. 0.9,0.05,0.05) or --valid FILE"));
  }
  train.epochs = probe.epochs;
  train.edge_sample = probe.edge_sample;
  train.from_scratch = true;
  train.optimizer.lr_auto = false;
  train.progress = nullptr;
  train.schedule.checkpoint_every = 0;
  train.hooks.stop_after_buckets = 0;
  // The validation, as the in-memory run and `ember eval` rank it.
  train.validation.enabled = true;
  train.validation.negatives = 0;
  train.validation.max_edges = probe.eval_edges;
  train.validation.edge_rr = true;
  ProbeResult result;
  auto add_epochs = [&result](const TrainSummary& summary) {
    for (const EpochStats& e : summary.epochs) {
      result.train_seconds += e.seconds;
      result.train_edges += e.edges;
    }
  };
  ASSIGN_OR_RETURN(const std::optional<TrainSummary> in_memory, TrainWithoutWriting(graph, train));
  if (in_memory.has_value()) {
    if (in_memory->epochs.empty() || !in_memory->epochs.back().valid.has_value()) {
      return absl::InternalError("an in-memory probe trained no epoch or ranked nothing");
    }
    add_epochs(*in_memory);
    result.in_memory = true;
    result.valid = *in_memory->epochs.back().valid;
    return result;
  }
  // Too big to hold at once: train a scratch copy, then rank its checkpoint.
  train.validation.enabled = false;
  const std::string scratch = ScratchPath(graph, probe);
  auto run = [&]() -> absl::Status {
    RETURN_IF_ERROR(graph.CopyTo(scratch));
    ASSIGN_OR_RETURN(TrainSummary summary, TrainGraph(scratch, train));
    add_epochs(summary);
    GraphOpenOptions read;
    read.read_only = true;
    ASSIGN_OR_RETURN(auto copy, Graph::Open(scratch, read));
    ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*copy));
    ASSIGN_OR_RETURN(result.valid, Evaluate(*copy, model, ValidationEvalOptions(train)));
    return absl::OkStatus();
  };
  const absl::Status status = run();
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);
  if (!status.ok()) return status;
  return result;
}

size_t PickLr(std::span<const std::vector<float>> edge_rr, size_t baseline, double chance_mrr) {
  std::vector<double> mrr;
  for (const std::vector<float>& rr : edge_rr) {
    double sum = 0;
    for (float x : rr) sum += x;
    mrr.push_back(rr.empty() ? 0 : sum / double(rr.size()));
  }
  auto better = [&](size_t a, size_t b) {
    return mrr[a] >= kLrLearnedFactor * chance_mrr &&
           PairedMrrDifference(edge_rr[a], edge_rr[b]).z >= kLrPairedZ;
  };
  std::vector<size_t> beat;  // better than the baseline, smallest step first
  for (size_t k = 0; k < edge_rr.size(); ++k) {
    if (k != baseline && better(k, baseline)) beat.push_back(k);
  }
  for (size_t k : beat) {
    if (std::none_of(beat.begin(), beat.end(), [&](size_t j) { return better(j, k); })) return k;
  }
  return baseline;  // none beat it
}

LrCandidateSet LrCandidates(size_t num_relations, const ModelOptions& model) {
  LrCandidateSet set;
  if (num_relations > 1 && model.op == Operator::kTranslation &&
      model.comparator == Comparator::kL2) {
    set.steps = {kLrTransE};
    set.baseline = kLrTransE;
    return set;
  }
  for (float lr : kLrCandidates) {
    if (num_relations <= 1 || lr >= kLrDefault) set.steps.push_back(lr);
  }
  return set;
}

std::vector<float> ProbedSteps(const LrCandidateSet& set, size_t count) {
  std::vector<float> steps = {set.baseline};
  for (float lr : set.steps) {
    if (steps.size() < count && lr != set.baseline) steps.push_back(lr);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

absl::StatusOr<ProbeCostModel> ProbeCostModel::Of(Graph& graph, const TrainOptions& train) {
  const bool endpoints = UsesEndpointNegatives(train, graph.manifest().relations.size());
  ProbeCostModel cost(graph.manifest().edges.train, graph.manifest().num_nodes,
                      train.pipeline.chunk_size + train.pipeline.num_uniform_negs +
                          (endpoints ? train.pipeline.chunk_size : 0));
  cost.dim = train.model.dim;
  TrainOptions t = train;
  t.from_scratch = true;
  t.optimizer.lr_auto = false;
  t.schedule.checkpoint_every = 0;
  t.hooks.stop_after_buckets = 0;
  ASSIGN_OR_RETURN(const bool in_memory, TrainsWithoutWritingInMemory(graph, t));
  cost.scratch = !in_memory;
  return cost;
}

double ProbeCostModel::EvalEdges(uint64_t edges) const {
  return double(edges) * 2 * double(num_nodes) / (6 * std::max(columns, 1.0));
}

double ProbeCostModel::ReadCost() const {
  // Measured at dims 64-100 only: at most 2x either way.
  return kProbeReadCost * std::clamp(double(kProbeReadCostDim) / std::max(dim, 1), 0.5, 2.0);
}

double ProbeCostModel::FixedEdges() const {
  return (2 * ReadCost() + (scratch ? kScratchProbeCost : 0.0)) * double(train_edges);
}

double ProbeCostModel::ProbeEdges(double edge_sample, uint64_t eval_edges) const {
  return FixedEdges() + edge_sample * double(train_edges) + EvalEdges(eval_edges);
}

LrProbePlan PlanLrProbes(const ProbeCostModel& cost, int epochs, size_t candidates) {
  const double edges = std::max<double>(cost.train_edges, 1);
  LrProbePlan plan;
  plan.run_edges = double(epochs) * edges;
  plan.probe.epochs = 1;
  const double per_eval_edge = cost.EvalEdges(1);
  for (size_t n = candidates; n >= 2; --n) {
    const double left = kLrProbeShare * plan.run_edges / double(n) - cost.FixedEdges();
    const double floor = kLrProbeSampleMin * edges + cost.EvalEdges(kLrProbeEvalEdgesMin);
    if (left < floor) continue;
    const double for_eval = std::min(0.5 * left, left - kLrProbeSampleMin * edges);
    const double affordable = per_eval_edge > 0 ? for_eval / per_eval_edge : 1e18;
    plan.probe.eval_edges = std::clamp<uint64_t>(static_cast<uint64_t>(affordable),
                                                 kLrProbeEvalEdgesMin, kLrProbeEvalEdgesMax);
    plan.probe.edge_sample =
        std::clamp((left - cost.EvalEdges(plan.probe.eval_edges)) / edges, kLrProbeSampleMin, 1.0);
    plan.probes = n;
    plan.planned_edges = double(n) * cost.ProbeEdges(plan.probe.edge_sample, plan.probe.eval_edges);
    return plan;
  }
  // Too short a run: what the cheapest two probes would have cost.
  plan.probe.eval_edges = kLrProbeEvalEdgesMin;
  plan.probe.edge_sample = kLrProbeSampleMin;
  plan.planned_edges = 2 * cost.ProbeEdges(kLrProbeSampleMin, kLrProbeEvalEdgesMin);
  return plan;
}

absl::StatusOr<LrChoice> ChooseLr(Graph& graph, const TrainOptions& train) {
  const auto start = std::chrono::steady_clock::now();
  LrChoice choice;
  const LrCandidateSet set = LrCandidates(graph.manifest().relations.size(), train.model);
  choice.baseline = set.baseline;
  if (set.steps.size() == 1) {
    choice.candidates = set.steps;
    choice.lr = set.steps[0];
    return choice;
  }
  if (graph.manifest().edges.valid == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(graph.dir(),
                     " has no validation edges to score probes on; import it with "
                     "--split (e.g. 0.9,0.05,0.05) or --valid FILE"));
  }
  ASSIGN_OR_RETURN(const ProbeCostModel cost, ProbeCostModel::Of(graph, train));
  const LrProbePlan plan = PlanLrProbes(cost, std::max(train.epochs, 1), set.steps.size());
  choice.planned_share = plan.share();
  choice.edge_sample = plan.probe.edge_sample;
  choice.eval_edges = plan.probe.eval_edges;
  if (plan.probes == 0) {
    choice.unaffordable = true;
    choice.unprobed = set.steps;
    choice.lr = set.baseline;
    choice.seconds = SecondsSince(start);
    return choice;
  }
  choice.candidates = ProbedSteps(set, plan.probes);
  for (float lr : set.steps) {
    if (std::find(choice.candidates.begin(), choice.candidates.end(), lr) ==
        choice.candidates.end()) {
      choice.unprobed.push_back(lr);
    }
  }
  size_t baseline = 0;
  std::vector<std::vector<float>> edge_rr;
  for (float lr : choice.candidates) {
    if (lr == set.baseline) baseline = edge_rr.size();
    TrainOptions t = train;
    t.optimizer.lr = lr;
    ASSIGN_OR_RETURN(ProbeResult r, RunProbe(graph, t, plan.probe));
    edge_rr.push_back(r.valid.edge_rr);
    choice.probes.push_back(std::move(r));
  }
  for (const std::vector<float>& rr : edge_rr) {
    if (rr.size() != edge_rr[baseline].size()) {
      return absl::InternalError("lr probes ranked different validation edges");
    }
  }
  for (const std::vector<float>& rr : edge_rr) {
    choice.vs_baseline.push_back(PairedMrrDifference(rr, edge_rr[baseline]));
  }
  // What the probes ranked: the split may hold fewer edges than planned.
  choice.eval_edges = choice.probes.front().valid.edges;
  const size_t pick = PickLr(edge_rr, baseline, RandomRankingMrr(graph.manifest().num_nodes));
  choice.lr = choice.candidates[pick];
  choice.significant = pick != baseline;
  choice.seconds = SecondsSince(start);
  return choice;
}

}  // namespace ember
