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

size_t PickBeyondIntervals(std::span<const RankMetrics> probes, size_t baseline) {
  const RankMetrics& base = probes[baseline];
  size_t pick = baseline;
  for (size_t k = 0; k < probes.size(); ++k) {
    const RankMetrics& m = probes[k];
    const bool beyond = m.mrr - base.mrr > std::hypot(m.mrr_ci95, base.mrr_ci95);
    const bool wide = k > baseline || m.mrr > kSmallStepFactor * base.mrr;
    if (beyond && wide && m.mrr > probes[pick].mrr) {
      pick = k;
    }
  }
  return pick;
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

ProbeCostModel::ProbeCostModel(const Graph& graph, const TrainOptions& train)
    : train_edges(graph.manifest().edges.train), num_nodes(graph.manifest().num_nodes) {
  const bool endpoints = UsesEndpointNegatives(train, graph.manifest().relations.size());
  columns = train.pipeline.chunk_size + train.pipeline.num_uniform_negs +
            (endpoints ? train.pipeline.chunk_size : 0);
}

double ProbeCostModel::EvalEdges(uint64_t edges) const {
  return double(edges) * 2 * double(num_nodes) / (6 * std::max(columns, 1.0));
}

ProbeOptions PlanLrProbes(const ProbeCostModel& cost, int epochs, size_t probes) {
  const double edges = std::max<double>(cost.train_edges, 1);
  const double per_probe = kLrProbeShare * epochs * edges / double(probes);
  const double after_reading = std::max(per_probe - kProbeReadCost * edges, 0.0);
  const double per_eval_edge = cost.EvalEdges(1);
  ProbeOptions plan;
  plan.epochs = 1;
  const double affordable = per_eval_edge > 0 ? 0.5 * after_reading / per_eval_edge : 1e18;
  plan.eval_edges = std::clamp<uint64_t>(static_cast<uint64_t>(affordable),
                                         kLrProbeEvalEdgesMin, kLrProbeEvalEdgesMax);
  const double training = after_reading - cost.EvalEdges(plan.eval_edges);
  plan.edge_sample = std::clamp(training / edges, kLrProbeSampleMin, 1.0);
  return plan;
}

absl::StatusOr<LrChoice> ChooseLr(Graph& graph, const TrainOptions& train) {
  const auto start = std::chrono::steady_clock::now();
  LrChoice choice;
  const LrCandidateSet set = LrCandidates(graph.manifest().relations.size(), train.model);
  choice.candidates = set.steps;
  choice.baseline = set.baseline;
  if (set.steps.size() == 1) {
    choice.lr = set.steps[0];
    return choice;
  }
  const ProbeOptions probe = PlanLrProbes(ProbeCostModel(graph, train),
                                         std::max(train.epochs, 1), choice.candidates.size());
  choice.edge_sample = probe.edge_sample;
  choice.eval_edges = probe.eval_edges;
  std::vector<RankMetrics> metrics;
  size_t baseline = 0;
  for (float lr : choice.candidates) {
    if (lr == set.baseline) baseline = metrics.size();
    TrainOptions t = train;
    t.optimizer.lr = lr;
    ASSIGN_OR_RETURN(ProbeResult r, RunProbe(graph, t, probe));
    metrics.push_back(r.valid.filtered);
    choice.probes.push_back(std::move(r));
  }
  // What the probes ranked: the split may hold fewer edges than planned.
  choice.eval_edges = choice.probes.front().valid.edges;
  const size_t pick = PickBeyondIntervals(metrics, baseline);
  choice.lr = choice.candidates[pick];
  choice.significant = pick != baseline;
  choice.seconds = SecondsSince(start);
  return choice;
}

}  // namespace ember
