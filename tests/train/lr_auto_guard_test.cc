// The `--lr auto` guard (issue 34, item 1): on generated single-relation
// graphs with a dependency graph's degree skew (three nodes of degree above
// 10 000, most nodes below 5), the step ChooseLr picks, for every one of
// several probe seeds, trains a model within kGuardShare of the best fixed
// step's test MRR. Two graphs, because a rule can fail either way:
//  - R-MAT with hubs: 0.01 is best by 30-50x (larger steps lose what a
//    barely trained model ranks well: the hubs), and its probes say so;
//  - an SBM with hubs: 0.1 and 0.3 are best, 0.01 loses 4x, yet 5 %
//    probes at 0.01 rank the hubs and can beat 0.1's by far.
// The rule before it (OldRuleChoice below, as ChooseLr was at ea664da)
// runs beside it on the same graphs and seeds, and the SBM with hubs must
// catch it: there it chose 0.01 on seeds 2 and 3 (0.23 of the best fixed
// step's MRR) and 0.03 on seeds 4 and 5 (0.59).
// Training is deterministic (one thread, one batch in flight), so the
// figures below are this build's, bit for bit; about 30 s on 2 cores
// (not run under the sanitizers, tools/test.sh).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/train/train_test_util.h"
#include "tools/gen/rmat_generator.h"
#include "train/tune/probe.h"

namespace ember {
namespace {

using train_test::GraphFactory;
using train_test::TempDir;
using train_test::WriteWholeFile;

// The chosen step's test MRR is at least this share of the best fixed
// step's: a run may lose a quarter, not the half the issue saw one run in
// five lose.
constexpr double kGuardShare = 0.75;
// Probe seeds tried (TrainOptions::seed: the edge sample, the validation
// sample, the initial rows).
constexpr int kSeeds = 6;

// `hubs` hub lines "node<TAB>hub": hub h (node id h) linked from a seeded
// `fraction` of the `nodes` nodes, as packages depend on a popular one.
std::string HubLines(uint64_t nodes, int hubs, double fraction, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::string text;
  for (int h = 0; h < hubs; ++h) {
    for (uint64_t i = 0; i < nodes; ++i) {
      if (i != uint64_t(h) && u(rng) < fraction) absl::StrAppend(&text, i, "\t", h, "\n");
    }
  }
  return text;
}

// R-MAT scale 14, 2 edges per node, and 3 hubs linked to 65 % of the
// nodes: 16019 nodes, 64718 edges, degree median 3, 77 % below 5, the
// hubs 10650-10653.
std::string RmatWithHubs() {
  tools::gen::RmatOptions r;
  r.scale = 14;
  r.edge_factor = 2;
  r.hubs = 3;
  r.hub_fraction = 0.65;
  r.seed = 1;
  std::string text;
  for (uint64_t c = 0; c < r.num_chunks(); ++c) tools::gen::AppendRmatChunkText(r, c, &text);
  return text;
}

// An SBM of 20000 nodes in 400 blocks, average degree 2, and 3 hubs
// linked from 55 % of the nodes (degree about 11000).
std::string SbmWithHubs() {
  tools::gen::SbmOptions s;
  s.nodes = 20000;
  s.blocks = 400;
  s.avg_degree = 2;
  s.mixing = 0.1;
  s.seed = 1;
  std::string text;
  for (uint64_t c = 0; c < s.num_chunks(); ++c) tools::gen::AppendSbmChunkText(s, c, &text);
  return text + HubLines(s.nodes, 3, 0.55, 7);
}

// The rule `--lr auto` had before issue 34, kept here to show that the
// guard tells it from ChooseLr's: the index of the probe with the highest
// MRR among those that beat probe `baseline` by more than
// sqrt(ci² + ci_baseline²) and, for smaller steps, by 2.5x as well;
// `baseline` when none does.
size_t PickBeyondIntervals(const std::vector<RankMetrics>& probes, size_t baseline) {
  const RankMetrics& base = probes[baseline];
  size_t pick = baseline;
  for (size_t k = 0; k < probes.size(); ++k) {
    const RankMetrics& m = probes[k];
    const bool beyond = m.mrr - base.mrr > std::hypot(m.mrr_ci95, base.mrr_ci95);
    const bool wide = k > baseline || m.mrr > 2.5 * base.mrr;
    if (beyond && wide && m.mrr > probes[pick].mrr) pick = k;
  }
  return pick;
}

// What that rule chose for `o`: every kLrCandidates step probed for one
// epoch, sized as its plan sized them (the four probes together 10 % of the
// run after each read the edges at 0.1 of a trained edge; half of what is left
// ranks at least 200 edges, the rest trains at least a 5 % sample).
float OldRuleChoice(Graph& graph, const TrainOptions& o) {
  const absl::StatusOr<ProbeCostModel> cost = ProbeCostModel::Of(graph, o);
  EXPECT_TRUE(cost.ok()) << cost.status();
  if (!cost.ok()) return 0;
  const size_t n = std::size(kLrCandidates);
  const double edges = double(cost->train_edges);
  const double after_reading =
      std::max(kLrProbeShare * o.epochs * edges / double(n) - 0.1 * edges, 0.0);
  ProbeOptions probe;
  probe.epochs = 1;
  probe.eval_edges = std::clamp<uint64_t>(
      static_cast<uint64_t>(0.5 * after_reading / cost->EvalEdges(1)), 200, 1000);
  probe.edge_sample =
      std::clamp((after_reading - cost->EvalEdges(probe.eval_edges)) / edges, 0.05, 1.0);
  std::vector<RankMetrics> metrics;
  size_t baseline = 0;
  for (float lr : kLrCandidates) {
    if (lr == kLrDefault) baseline = metrics.size();
    TrainOptions t = o;
    t.optimizer.lr = lr;
    t.optimizer.lr_auto = false;
    const absl::StatusOr<ProbeResult> r = RunProbe(graph, t, probe);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return 0;
    metrics.push_back(r->valid.filtered);
  }
  return kLrCandidates[PickBeyondIntervals(metrics, baseline)];
}

// Trains every kLrCandidates step for 12 epochs (dim 100, the dot
// model; 12 affords ChooseLr two probes), then asks ChooseLr with kSeeds seeds; each choice must
// reach kGuardShare of the best fixed step's test MRR. The rule before (OldRuleChoice) chooses with
// the same seeds beside it; with `old_rule_fails`, at least one of its choices must fall short.
void ExpectChoicesNearTheBestStep(const std::string& edges_text, bool old_rule_fails) {
  TempDir dir;
  const std::string edges = dir.path() + "/edges.tsv";
  WriteWholeFile(edges, edges_text);
  GraphFactory factory(dir.path(), {edges});
  const std::string probed = factory.New(1);
  TrainOptions o;
  o.model.dim = 100;
  o.epochs = 12;
  o.devices.threads = 1;
  o.pipeline.deterministic = true;
  std::map<float, double> mrr;
  double best = 0, worst = 1;
  for (float lr : kLrCandidates) {
    TrainOptions fixed = o;
    fixed.optimizer.lr = lr;
    const train_test::TrainedRun run = train_test::TrainAndEvaluate(factory.New(1), fixed);
    mrr[lr] = run.mrr();
    best = std::max(best, run.mrr());
    worst = std::min(worst, run.mrr());
    std::printf("  lr %-5g test MRR %.4f\n", lr, run.mrr());
  }
  // The premise: a wrong step costs more than the guard allows.
  ASSERT_LT(worst, 0.5 * best);
  auto graph = Graph::Open(probed, GraphOpenOptions{.read_only = false});
  ASSERT_TRUE(graph.ok()) << graph.status();
  int old_short = 0;  // seeds where the rule before fell short of the guard
  for (int seed = 1; seed <= kSeeds; ++seed) {
    TrainOptions auto_lr = o;
    auto_lr.seed = seed;
    auto_lr.optimizer.lr_auto = true;
    const absl::StatusOr<LrChoice> choice = ChooseLr(**graph, auto_lr);
    ASSERT_TRUE(choice.ok()) << choice.status();
    ASSERT_FALSE(choice->unaffordable);
    std::string probes;
    for (size_t k = 0; k < choice->probes.size(); ++k) {
      absl::StrAppend(&probes, " ", choice->candidates[k], ": ",
                      absl::StrFormat("%.4f", choice->probes[k].valid.filtered.mrr));
    }
    std::printf("  seed %d: chose %g (%.2f of the best), probes of %.1f%% ranking %llu edges:%s\n",
                seed, choice->lr, mrr[choice->lr] / best, 100 * choice->edge_sample,
                static_cast<unsigned long long>(choice->eval_edges), probes.c_str());
    EXPECT_GE(mrr[choice->lr], kGuardShare * best)
        << "seed " << seed << " chose lr " << choice->lr << ": test MRR " << mrr[choice->lr]
        << ", the best fixed step's " << best;
    const float old_lr = OldRuleChoice(**graph, auto_lr);
    std::printf("          the rule before chose %g (%.2f of the best)\n", old_lr,
                mrr[old_lr] / best);
    if (mrr[old_lr] < kGuardShare * best) ++old_short;
  }
  if (old_rule_fails) {
    EXPECT_GT(old_short, 0) << "the guard no longer catches the rule before";
  }
}

TEST(LrAutoGuardTest, RmatWithHubsTakesTheSmallStep) {
  ExpectChoicesNearTheBestStep(RmatWithHubs(), /*old_rule_fails=*/false);
}

TEST(LrAutoGuardTest, SbmWithHubsIsNotFooledByItsProbesFavouringSmallSteps) {
  ExpectChoicesNearTheBestStep(SbmWithHubs(), /*old_rule_fails=*/true);
}

}  // namespace
}  // namespace ember
