// Probes: short training runs of a graph, each scored by filtered
// validation MRR, ranking a seeded sample of validation edges against every
// node. They are what `ember tune` and `ember train --lr auto` measure; the
// user's graph and checkpoint are never written: a probe trains in memory
// (TrainWithoutWriting), or a scratch copy when the model does not fit.
#ifndef EMBER_TRAIN_TUNE_PROBE_H_
#define EMBER_TRAIN_TUNE_PROBE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "train/eval/evaluator.h"
#include "train/options/train_options.h"

namespace ember {

struct ProbeOptions {
  // Share of the train edges a probe trains on (TrainOptions::edge_sample),
  // in (0, 1]. Default: 0.1.
  double edge_sample = 0.1;
  // Epochs per probe. Default: 1.
  int epochs = 1;
  // Validation edges ranked against all nodes (a sample seeded by the train
  // seed; every edge when the split has fewer). Default: 1000.
  uint64_t eval_edges = 1000;
  // Where scratch copies go (models too big to probe in memory): a fresh
  // subdirectory per probe, removed after it. "": beside the graph
  // (GRAPH.probe-PID-N). Default: "".
  std::string scratch_dir;

  absl::Status Validate() const;
};

struct ProbeResult {
  EvalResult valid;  // filtered, against all nodes
  double train_seconds = 0;
  uint64_t train_edges = 0;  // edges trained, over all epochs
  bool in_memory = false;    // trained in memory; false: on a scratch copy
};

// Trains `graph` with `train` (from scratch, with the probe's epochs and
// edge sample, without progress, and with validation as ValidationOptions
// ranks it against all nodes) and evaluates it: in memory, without copying
// or writing the graph, when the model fits in memory at once; otherwise on
// a scratch copy (ProbeOptions::scratch_dir), trained and then evaluated
// from its checkpoint. Both give the same result. FailedPrecondition when
// the graph has no validation edges. REQUIRES: `graph` opened read-write
// (Graph::CopyTo), unless the model fits in memory.
absl::StatusOr<ProbeResult> RunProbe(Graph& graph, TrainOptions train,
                                     const ProbeOptions& probe);

// `--lr auto`: the step sizes probed, smallest first; kLrDefault
// (train_options.h) is kept unless a probe shows another to be better.
inline constexpr float kLrCandidates[] = {0.01f, 0.03f, kLrDefault, 0.3f};
// The probes of `--lr auto` together cost at most this share of the run
// they choose for: their training and their evaluations, counted in the
// run's trained edges (ProbeCostModel).
inline constexpr double kLrProbeShare = 0.1;
// Validation edges each `--lr auto` probe ranks: at most the first, and
// at least the second even where the budget would allow fewer.
inline constexpr uint64_t kLrProbeEvalEdgesMax = 1000;
inline constexpr uint64_t kLrProbeEvalEdgesMin = 200;
// The smallest edge sample a probe trains on: with less, probes of the
// heavy-tailed graphs that need a small step stop telling the steps apart.
inline constexpr double kLrProbeSampleMin = 0.05;

// Work of a probe, in train-edge equivalents: ranking one edge against all
// nodes scores 2 · nodes candidates forward only, while training one edge
// does forward and backward GEMMs over 2 · columns candidates (columns per
// side: chunk + uniform negatives, + chunk with endpoint negatives), about
// 6 · columns dot products of dim. Measured here, this predicts the
// evaluation's time in edges within 35 % (gen kg, ComplEx, and R-MAT, dot).
// A probe also reads every train edge to draw its sample, at about
// kProbeReadCost of a trained edge each (measured: 0.085 on R-MAT scale 18).
inline constexpr double kProbeReadCost = 0.1;
struct ProbeCostModel {
  uint64_t train_edges = 0;  // train edges of the graph
  uint64_t num_nodes = 0;
  double columns = 0;        // candidates per chunk side

  ProbeCostModel(const Graph& graph, const TrainOptions& train);
  ProbeCostModel(uint64_t train_edges, uint64_t num_nodes, double columns)
      : train_edges(train_edges), num_nodes(num_nodes), columns(columns) {}
  // Train-edge equivalents of ranking `edges` validation edges.
  double EvalEdges(uint64_t edges) const;
};

// How each of `probes` probes is sized for a run of `epochs` epochs so that
// together they cost at most kLrProbeShare of it (ProbeCostModel): after
// reading the edges, the evaluation takes at most half of what is left of
// a probe's share, with as many edges as that allows in
// [kLrProbeEvalEdgesMin, kLrProbeEvalEdgesMax], and the training sample the
// rest, but at least kLrProbeSampleMin of the train edges (below these
// floors a probe costs more than its share). ProbeOptions::scratch_dir is
// left empty.
// REQUIRES: probes >= 1, epochs >= 1.
ProbeOptions PlanLrProbes(const ProbeCostModel& cost, int epochs, size_t probes);

struct LrChoice {
  float lr = 0;
  bool significant = false;  // a probe beat the default; false: the default
  std::vector<float> candidates;
  float baseline = kLrDefault;      // what stands unless a probe beats it
  std::vector<ProbeResult> probes;  // one per candidate; none for one candidate
  double edge_sample = 0;           // share of the train edges per probe
  uint64_t eval_edges = 0;          // validation edges each probe ranks
  double seconds = 0;               // probes and evaluation, wall time
};

// TransE's step on a graph of several relations (LrCandidates).
inline constexpr float kLrTransE = 1.0f;

// The step sizes `--lr auto` considers, smallest first, and the baseline
// among them that stands unless a probe beats it (PickBeyondIntervals).
struct LrCandidateSet {
  std::vector<float> steps;
  float baseline = kLrDefault;
};

// The candidates for `model` on a graph of `num_relations` relations:
//  - one relation: every kLrCandidates, baseline kLrDefault;
//  - several, TransE (translation with l2): kLrTransE alone, not probed.
//    On every generated knowledge graph measured (5 of them, dims 100 and
//    200, 5 and 10 epochs) 1.0 beat 0.3 and 0.3 beat 0.1 in full runs (1.0
//    over 0.1 by 1.5-3x), while one-epoch probes ranked 0.1 above 0.3 by
//    3x: probes cannot find its step;
//  - several, other models: kLrDefault and larger, baseline kLrDefault. On
//    every knowledge graph measured, steps below kLrDefault lost the full
//    runs by 1.5-6x, yet on sparse ones (about 5 edges per entity) their
//    one-epoch probes, which rank little more than popularity, won by up
//    to 3.5x, beyond kSmallStepFactor.
// (README, "--lr auto".)
LrCandidateSet LrCandidates(size_t num_relations, const ModelOptions& model);

// Probes every LrCandidates step size with `train`'s other settings. Each
// probe trains one epoch on an edge sample and ranks validation edges, as
// PlanLrProbes sizes them for `train.epochs`. A single candidate is taken
// without probing.
// Returns the baseline unless some candidates beat it (PickBeyondIntervals);
// then the best of those. Short probes of a graph that needs long training
// (e.g. a knowledge graph) look alike, and then the default stands; probes
// that separate (e.g. a graph where large steps overfit at once) decide.
// FailedPrecondition when the graph has no validation edges.
absl::StatusOr<LrChoice> ChooseLr(Graph& graph, const TrainOptions& train);

// ChooseLr's rule: the index of the probe with the highest MRR among those
// that beat probe `baseline` by more than sqrt(ci² + ci_baseline²) and,
// for probes before `baseline` (smaller steps), also by a factor of
// kSmallStepFactor; `baseline` when none does. Short probes favour small
// steps on every graph (a barely trained model ranks by popularity, which
// scores well early), so a small step must win by a wide margin: on the
// generated graphs measured, small steps that won the full runs won their
// probes by 4.8-15x, and those that lost the full runs won their probes by
// up to 1.9x (README, "--lr auto").
// REQUIRES: baseline < probes.size().
inline constexpr double kSmallStepFactor = 2.5;
size_t PickBeyondIntervals(std::span<const RankMetrics> probes, size_t baseline);

}  // namespace ember

#endif  // EMBER_TRAIN_TUNE_PROBE_H_
