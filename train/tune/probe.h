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

// `--lr auto`: the step sizes considered, smallest first; kLrDefault
// (train_options.h) is kept unless a probe shows another to be better.
inline constexpr float kLrCandidates[] = {0.01f, 0.03f, kLrDefault, 0.3f};
// The probes of `--lr auto` together cost at most this share of the run
// they choose for: their training, their reading and their evaluations,
// counted in the run's trained edges (ProbeCostModel). A run too short to
// afford two probes at the floors below is not probed.
inline constexpr double kLrProbeShare = 0.1;
// Validation edges each `--lr auto` probe ranks: at most the first, at
// least the second. Probes are compared edge by edge on the same edges
// (PairedMrrDifference), which takes far fewer edges than comparing two
// marginal intervals: on the generated skewed graphs the step that won the
// full runs led its probe by 5-8 standard errors on 127-1000 edges.
inline constexpr uint64_t kLrProbeEvalEdgesMax = 1000;
inline constexpr uint64_t kLrProbeEvalEdgesMin = 100;
// The smallest edge sample a probe trains on. On a sample of 5 % a sparse
// graph's probes at small steps rank by popularity (most nodes have no
// sampled edge and the hubs many): on an SBM with hubs (20000 nodes,
// average degree 2, three hubs of degree 11 k; lr_auto_guard_test.cc) the
// 5 % probe at 0.01 beat 0.1's by up to 35x (0.0209 against 0.0006) while
// 0.01's full run lost to 0.1's by 3.8x. On samples of 10-20 % its probes
// rank near chance at both steps, and 0.1 stands. R-MAT's probes favour
// 0.01 at every sample size, as its full runs do.
inline constexpr double kLrProbeSampleMin = 0.1;

// Work of a probe, in train-edge equivalents: ranking one edge against all
// nodes scores 2 · nodes candidates forward only, while training one edge
// does forward and backward GEMMs over 2 · columns candidates (columns per
// side: chunk + uniform negatives, + chunk with endpoint negatives), about
// 6 · columns dot products of dim. Measured here, this predicts the
// evaluation's time in edges within 35 % (gen kg, ComplEx, and R-MAT, dot).
// A probe also reads every train edge to draw its sample, and its ranking
// reads every edge once more to collect the filter sets (evaluator.h): on
// R-MAT scale 17 (dim 64, 1000 edges ranked against 90 k nodes) ranking
// took 1.5-2.0 s where the dot products alone predict 1.0 s and the scan
// adds 0.7 s. Reading an edge costs the same at any dim while training one
// costs in proportion to dim, so each read counts kProbeReadCost of a
// trained edge at dim kProbeReadCostDim, scaled by kProbeReadCostDim / dim
// (within 0.5-2, as only dims 64-100 were measured):
// on R-MAT scale 18 at dim 64 (in memory, 1.9 s epochs) each read took
// 0.17-0.26 of an epoch (0.085 at dim 100 at an earlier commit); counted at
// 0.1 there, four probes planned at 10 % of a 15-epoch run took 15.6 %.
inline constexpr double kProbeReadCost = 0.15;
inline constexpr int kProbeReadCostDim = 100;
// A probe of a model that does not fit in memory at once trains a scratch
// copy: it walks every bucket and swaps partitions as a whole epoch does,
// whatever its sample, writes a checkpoint and reads it back to rank.
// Counted as this share of an epoch on top of its training, reading and
// ranking. Measured beyond those three: 0.22 of an epoch on the
// billion-edge benchmark (R-MAT scale 26, 10 partitions, 6 GB: 307 s per
// probe where they predict 144 s, against a 750 s epoch), where training
// outweighs the swaps; 0.79 and 1.19 on R-MAT scale 18 and 19 under
// --memory-budget 64M (epochs of 4.4 and 6.4 s), where the swaps and the
// checkpoint dominate. Counted at the most measured, so that the probes
// stay within kLrProbeShare out of core: two probes then need a run of
// 34-37 epochs (dim 100-64).
inline constexpr double kScratchProbeCost = 1.25;
struct ProbeCostModel {
  uint64_t train_edges = 0;  // train edges of the graph
  uint64_t num_nodes = 0;
  double columns = 0;        // candidates per chunk side
  bool scratch = false;      // probes train scratch copies (RunProbe)
  int dim = kProbeReadCostDim;  // ModelOptions::dim

  // `graph`'s figures and `train`'s dim; `scratch` when TrainWithoutWriting
  // would not train `train` in memory.
  static absl::StatusOr<ProbeCostModel> Of(Graph& graph, const TrainOptions& train);

  ProbeCostModel(uint64_t train_edges, uint64_t num_nodes, double columns, bool scratch = false,
                 int dim = kProbeReadCostDim)
      : train_edges(train_edges),
        num_nodes(num_nodes),
        columns(columns),
        scratch(scratch),
        dim(dim) {}
  // Train-edge equivalents of reading one train edge (kProbeReadCost,
  // scaled by dim).
  double ReadCost() const;
  // Train-edge equivalents of ranking `edges` validation edges.
  double EvalEdges(uint64_t edges) const;
  // Train-edge equivalents of what a probe costs whatever its sample and
  // evaluation: reading every edge twice (its sample, its filter sets), and
  // on a scratch copy kScratchProbeCost of an epoch.
  double FixedEdges() const;
  // Train-edge equivalents of one probe trained on `edge_sample` of the
  // train edges for one epoch, ranking `eval_edges` edges.
  double ProbeEdges(double edge_sample, uint64_t eval_edges) const;
};

// What `--lr auto` probes for a run: how many step sizes, each how.
struct LrProbePlan {
  // Step sizes probed: 0 when the run cannot afford two probes at the
  // floors (kLrProbeSampleMin, kLrProbeEvalEdgesMin), otherwise from 2 up
  // to every candidate.
  size_t probes = 0;
  ProbeOptions probe;        // each probe's sample and evaluation
  double planned_edges = 0;  // train-edge equivalents of all probes
  double run_edges = 0;      // the run's: epochs · train edges
  // planned_edges / run_edges; with probes == 0, what two probes at the
  // floors would have cost.
  double share() const { return run_edges > 0 ? planned_edges / run_edges : 0; }
};

// The most step sizes, up to `candidates`, that a run of `epochs` epochs
// affords to probe within kLrProbeShare (ProbeCostModel), and how: after
// the fixed part of each probe, the evaluation takes at most half of what
// is left (and leaves the training at least kLrProbeSampleMin), with as
// many edges as that allows in [kLrProbeEvalEdgesMin,
// kLrProbeEvalEdgesMax], and the training sample the rest, at most all
// train edges. ProbeOptions::scratch_dir is left empty.
// REQUIRES: candidates >= 2, epochs >= 1.
LrProbePlan PlanLrProbes(const ProbeCostModel& cost, int epochs, size_t candidates);

// TransE's step on a graph of several relations (LrCandidates).
inline constexpr float kLrTransE = 1.0f;

// The step sizes `--lr auto` considers, smallest first, and the baseline
// among them that stands unless a probe beats it (PickLr).
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
//    to 3.5x.
// (docs/knowledge-graphs.md, "--lr auto".)
LrCandidateSet LrCandidates(size_t num_relations, const ModelOptions& model);

// The `count` steps of `set` probed when a run affords only that many,
// smallest first: the baseline, then the others from the smallest up
// (a small step is what a heavy-tailed graph needs, and what the baseline
// is tested against first).
// REQUIRES: 1 <= count <= set.steps.size().
std::vector<float> ProbedSteps(const LrCandidateSet& set, size_t count);

struct LrChoice {
  float lr = 0;
  bool significant = false;         // a probe beat the baseline; false: the baseline
  std::vector<float> candidates;    // the steps probed, smallest first
  std::vector<float> unprobed;      // the steps the run could not afford to probe
  float baseline = kLrDefault;      // what stands unless a probe beats it
  std::vector<ProbeResult> probes;  // one per candidate; none for one candidate
  // Per probe, its MRR minus the baseline probe's, paired edge by edge.
  std::vector<PairedDifference> vs_baseline;
  double edge_sample = 0;     // share of the train edges per probe
  uint64_t eval_edges = 0;    // validation edges each probe ranks
  double planned_share = 0;   // LrProbePlan::share()
  bool unaffordable = false;  // the run is too short to probe: the baseline
  double seconds = 0;         // probes and evaluation, wall time
};

// Probes the steps of LrCandidates that PlanLrProbes affords for
// `train.epochs`, with `train`'s other settings; each trains one epoch on
// an edge sample and ranks the same validation edges. A single candidate
// is taken without probing, and so is the baseline when the run cannot
// afford two probes (LrChoice::unaffordable).
// Returns the step PickLr picks from the probes.
// FailedPrecondition when the graph has no validation edges.
absl::StatusOr<LrChoice> ChooseLr(Graph& graph, const TrainOptions& train);

// How far, in standard errors of their paired difference, a probe must be
// ahead of another for ChooseLr to call it better. Probes that learned
// little differ on a handful of edges (one edge at rank 2 moves a
// 200-edge MRR by 0.0025): k edges give about sqrt(k) standard errors, so
// 3 asks for about ten edges' worth of evidence where the old rule, 1.96
// over marginal intervals, was moved by two or three. The steps that won
// the full runs of the generated skewed graphs led their probes by 5-8.
inline constexpr double kLrPairedZ = 3.0;

// A probe better than another must also rank at least this many times
// better than at random (RandomRankingMrr of the graph's nodes): where
// every probe learned nothing, a consistent sliver (0.0003 against 0.0002
// on 20000 nodes, 2.6 standard errors) is no reason to leave the baseline,
// and more evaluated edges would make it "significant".
inline constexpr double kLrLearnedFactor = 5;

// ChooseLr's rule. `edge_rr[k]`: probe k's per-edge reciprocal ranks
// (EvalResult::edge_rr), all on the same edges in the same order, probes
// ordered by step, smallest first; `chance_mrr`: what a ranking at random
// scores. A probe is better than another when its paired difference
// (PairedMrrDifference) is at least kLrPairedZ standard errors and its
// MRR at least kLrLearnedFactor · chance_mrr. Returns `baseline` unless
// some probes are better than it; then the smallest of those that none of
// them is better than. So ties go to the baseline (where the probes cannot
// tell, the step measured on most graphs: on the recommender example's
// user-item graph and on SBMs with hubs 0.01 lost 74-87 % to it), and
// among steps that beat it to the smaller: wherever two steps beat 0.1 in
// the probes measured, the smaller won the full runs (0.01 over 0.03 by
// 15-28x on R-MAT with hubs; 0.126 against 0.109 on the issue's
// dependency graph).
// REQUIRES: baseline < edge_rr.size(); every edge_rr[k] the same size.
size_t PickLr(std::span<const std::vector<float>> edge_rr, size_t baseline, double chance_mrr);

}  // namespace ember

#endif  // EMBER_TRAIN_TUNE_PROBE_H_
