// Probes (train/tune/probe.h): in memory or on scratch copies, both leaving the
// graph untouched; edge samples, the --lr auto rule, and the lr stored with
// the checkpoint.
#include "train/tune/probe.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/train/stored_model_util.h"
#include "tests/train/train_test_util.h"
#include "train/train_loop.h"
#include "train/tune/auto_lr.h"

namespace ember {
namespace {

using train_test::GraphFactory;
using train_test::ManifestOf;
using train_test::SmallOptions;
using train_test::StandardSbm;
using train_test::TempDir;
using train_test::WriteSbmEdges;

// Per-edge reciprocal ranks of a probe: `base` on every edge, and `lifted`
// edges raised to `rr` (the first ones).
std::vector<float> EdgeRr(size_t edges, float base, size_t lifted = 0, float rr = 0) {
  std::vector<float> v(edges, base);
  for (size_t i = 0; i < lifted && i < edges; ++i) v[i] = rr;
  return v;
}

// Adds a spread that both probes share (edges hard and easy for every
// step), as real evaluations have.
std::vector<float> Shared(std::vector<float> v) {
  for (size_t i = 0; i < v.size(); ++i) v[i] += 0.01f * float(i % 7);
  return v;
}

// What ranking 2000 nodes at random scores.
const double kChance = RandomRankingMrr(2000);

TEST(PickLrTest, TiesKeepTheBaseline) {
  // Every probe at chance but for a few lucky edges: two edges at rank 2
  // are about 1.4 standard errors, not kLrPairedZ.
  const std::vector<std::vector<float>> rr = {EdgeRr(200, 0.001f, 2, 0.5f), EdgeRr(200, 0.001f),
                                              EdgeRr(200, 0.001f, 1, 0.5f)};
  EXPECT_LT(PairedMrrDifference(rr[0], rr[1]).z, kLrPairedZ);
  EXPECT_EQ(PickLr(rr, 1, kChance), 1u);
  // The old rule took such a probe: its MRR was 3.5x the baseline's and
  // beyond both marginal intervals.
}

TEST(PickLrTest, AStepAheadOnManyEdgesWins) {
  // 0.01's probe ahead on 40 of 200 edges: far beyond kLrPairedZ.
  const std::vector<std::vector<float>> rr = {
      Shared(EdgeRr(200, 0.001f, 40, 0.3f)), Shared(EdgeRr(200, 0.001f, 20, 0.3f)),
      Shared(EdgeRr(200, 0.001f)), Shared(EdgeRr(200, 0.0005f))};
  EXPECT_GE(PairedMrrDifference(rr[0], rr[2]).z, kLrPairedZ);
  EXPECT_EQ(PickLr(rr, 2, kChance), 0u);
  // A larger step wins the same way.
  const std::vector<std::vector<float>> larger = {Shared(EdgeRr(200, 0.001f)),
                                                  Shared(EdgeRr(200, 0.001f, 30, 0.4f))};
  EXPECT_EQ(PickLr(larger, 0, kChance), 1u);
  // A worse step never displaces the baseline.
  EXPECT_EQ(PickLr(larger, 1, kChance), 1u);
}

TEST(PickLrTest, AmongStepsThatBeatTheBaselineTheSmallerUnlessClearlyBehind) {
  // 0.01 and 0.03 both beat 0.1; 0.03 is ahead of 0.01 by a few edges
  // only: the smaller step.
  std::vector<std::vector<float>> rr = {EdgeRr(200, 0.001f, 40, 0.3f),
                                        EdgeRr(200, 0.001f, 42, 0.3f), EdgeRr(200, 0.001f)};
  EXPECT_EQ(PickLr(rr, 2, kChance), 0u);
  // 0.03 ahead of 0.01 on many edges: 0.03.
  rr[1] = EdgeRr(200, 0.001f, 90, 0.3f);
  EXPECT_EQ(PickLr(rr, 2, kChance), 1u);
}

TEST(PickLrTest, ASliverAtChanceIsNoReasonToMove) {
  // 0.01's probe ahead of 0.1's on every edge, by little, both at chance:
  // significant, yet nothing learned.
  std::vector<float> a(1000), b(1000);
  for (size_t i = 0; i < a.size(); ++i) {
    b[i] = float(kChance) * (0.5f + 0.001f * float(i % 10));
    a[i] = b[i] * 1.5f;
  }
  ASSERT_GT(PairedMrrDifference(a, b).z, 10);
  const std::vector<std::vector<float>> rr = {a, b};
  EXPECT_EQ(PickLr(rr, 1, kChance), 1u);
  // The same lead where the probes learned something moves it.
  EXPECT_EQ(PickLr(rr, 1, kChance / 100), 0u);
}

TEST(PickLrTest, PairedDifferencesSeeWhatMarginalIntervalsHide) {
  // Two probes that rank the same edges well, one a little better on each:
  // their marginal intervals overlap, their paired difference is clear.
  std::vector<float> a(300), b(300);
  for (size_t i = 0; i < a.size(); ++i) {
    b[i] = i % 5 == 0 ? 0.12f : 0.01f * float(i % 3);
    a[i] = b[i] * 1.2f;
  }
  // MRR 0.0384 ± 0.0061 against 0.0320 ± 0.0051: the intervals overlap,
  // and the difference is within their combined width.
  const PairedDifference d = PairedMrrDifference(a, b);
  const PairedDifference marginal_a = PairedMrrDifference(a, std::vector<float>(a.size()));
  const PairedDifference marginal_b = PairedMrrDifference(b, std::vector<float>(b.size()));
  EXPECT_LT(d.mean, std::hypot(marginal_a.ci95, marginal_b.ci95));
  EXPECT_GT(d.z, 5);
  const std::vector<std::vector<float>> rr = {a, b};
  EXPECT_EQ(PickLr(rr, 1, kChance), 0u);
}

TEST(ProbedStepsTest, TheBaselineAndTheSmallestFirst) {
  const LrCandidateSet set = LrCandidates(1, ModelOptions{});
  EXPECT_EQ(ProbedSteps(set, 2), (std::vector<float>{0.01f, kLrDefault}));
  EXPECT_EQ(ProbedSteps(set, 3), (std::vector<float>{0.01f, 0.03f, kLrDefault}));
  EXPECT_EQ(ProbedSteps(set, 4), set.steps);
}

TEST(LrCandidatesTest, KnowledgeGraphsProbeNoStepBelowTheDefault) {
  const std::vector<float> all(std::begin(kLrCandidates), std::end(kLrCandidates));
  ModelOptions complex;
  complex.op = Operator::kComplexDiagonal;
  for (size_t relations : {0u, 1u}) {
    EXPECT_EQ(LrCandidates(relations, complex).steps, all);
    EXPECT_EQ(LrCandidates(relations, complex).baseline, kLrDefault);
  }
  const LrCandidateSet kg = LrCandidates(30, complex);
  ASSERT_FALSE(kg.steps.empty());
  EXPECT_EQ(kg.steps.front(), kLrDefault);
  EXPECT_EQ(kg.baseline, kLrDefault);
  for (float lr : kg.steps) EXPECT_GE(lr, kLrDefault);
  EXPECT_GT(kg.steps.size(), 1u);  // a larger step is still probed
}

TEST(LrCandidatesTest, TransEOnAKnowledgeGraphTakesItsOneStep) {
  ModelOptions transe;
  transe.op = Operator::kTranslation;
  transe.comparator = Comparator::kL2;
  EXPECT_EQ(LrCandidates(30, transe).steps, std::vector<float>{kLrTransE});
  EXPECT_EQ(LrCandidates(30, transe).baseline, kLrTransE);
  // One relation: probed like every model.
  EXPECT_EQ(LrCandidates(1, transe).steps.size(), std::size(kLrCandidates));
  // Translation under dot is not TransE.
  ModelOptions dot = transe;
  dot.comparator = Comparator::kDot;
  EXPECT_EQ(LrCandidates(30, dot).baseline, kLrDefault);
}

TEST(ChooseLrTest, ASingleCandidateIsTakenWithoutProbing) {
  TempDir dir;
  testing::TinyGraphSpec spec;
  spec.train = "a\tr1\tb\nb\tr2\tc\nc\tr1\td\nd\tr2\ta\na\tr2\tc\n";
  spec.valid = "b\tr1\tc\n";
  const std::string graph_dir = dir.path() + "/g";
  ASSERT_TRUE(testing::ImportTinyGraph(graph_dir, dir.path(), spec).ok());
  auto graph = Graph::Open(graph_dir, GraphOpenOptions{.read_only = false});
  ASSERT_TRUE(graph.ok()) << graph.status();
  TrainOptions o = SmallOptions(3);
  o.model.op = Operator::kTranslation;
  o.model.comparator = Comparator::kL2;
  auto transe = ChooseLr(**graph, o);
  ASSERT_TRUE(transe.ok()) << transe.status();
  EXPECT_EQ(transe->lr, kLrTransE);
  EXPECT_TRUE(transe->probes.empty());
  EXPECT_FALSE(transe->significant);
  // Another model on the same graph is probed at each of its candidates
  // (given a run long enough to afford it).
  o.epochs = 1000;
  o.model.op = Operator::kComplexDiagonal;
  o.model.comparator = Comparator::kDot;
  auto complex = ChooseLr(**graph, o);
  ASSERT_TRUE(complex.ok()) << complex.status();
  EXPECT_EQ(complex->probes.size(), LrCandidates(2, o.model).steps.size());
  EXPECT_EQ(complex->baseline, kLrDefault);
}

TEST(PlanLrProbesTest, ProbesStayWithinTheShare) {
  // gen kg-like (20000 nodes, 285 k edges, 150 columns), R-MAT-like (65536
  // nodes, 944 k edges, 100 columns) and a sparse skewed graph (50000
  // nodes, 167 k edges), in memory and on scratch copies, short and long.
  for (const ProbeCostModel& cost :
       {ProbeCostModel(285000, 20000, 150), ProbeCostModel(944000, 65536, 100),
        ProbeCostModel(167000, 50000, 100), ProbeCostModel(944000, 65536, 100, true)}) {
    for (int epochs : {1, 3, 5, 10, 30, 100}) {
      for (size_t candidates : {2u, 4u}) {
        const LrProbePlan plan = PlanLrProbes(cost, epochs, candidates);
        SCOPED_TRACE(::testing::Message()
                     << cost.num_nodes << " nodes, scratch " << cost.scratch << ", " << epochs
                     << " epochs, " << candidates << " candidates");
        EXPECT_LE(plan.probes, candidates);
        EXPECT_NE(plan.probes, 1u);
        EXPECT_EQ(plan.probe.epochs, 1);
        EXPECT_DOUBLE_EQ(plan.run_edges, double(epochs) * cost.train_edges);
        if (plan.probes == 0) {
          // Not even two probes at the floors fit.
          EXPECT_GT(plan.share(), kLrProbeShare);
          continue;
        }
        EXPECT_LE(plan.share(), kLrProbeShare * (1 + 1e-9));
        EXPECT_NEAR(plan.planned_edges,
                    plan.probes * cost.ProbeEdges(plan.probe.edge_sample, plan.probe.eval_edges),
                    1e-6 * plan.planned_edges);
        EXPECT_GE(plan.probe.edge_sample, kLrProbeSampleMin);
        EXPECT_LE(plan.probe.edge_sample, 1.0);
        EXPECT_GE(plan.probe.eval_edges, kLrProbeEvalEdgesMin);
        EXPECT_LE(plan.probe.eval_edges, kLrProbeEvalEdgesMax);
        // One more probe would not have fitted.
        if (plan.probes < candidates) {
          EXPECT_GT((plan.probes + 1) * cost.ProbeEdges(kLrProbeSampleMin, kLrProbeEvalEdgesMin),
                    kLrProbeShare * plan.run_edges);
        }
      }
    }
  }
}

TEST(PlanLrProbesTest, ARunTooShortIsNotProbed) {
  // One epoch: reading the edges alone costs each probe ReadCost() of
  // it, so two probes cannot stay within kLrProbeShare at any scale.
  for (uint64_t edges : {uint64_t{1000}, uint64_t{1} << 20, uint64_t{16} << 26}) {
    const ProbeCostModel cost(edges, edges / 16, 100);
    EXPECT_EQ(PlanLrProbes(cost, 1, 4).probes, 0u) << edges;
    EXPECT_GT(PlanLrProbes(cost, 1, 4).share(), kLrProbeShare);
  }
  // The billion-edge benchmark's graph (R-MAT scale 26: 1.07 B edges, 67 M
  // nodes, out of core, dim 100): each probe costs at least 2 · 0.15
  // (reading) + 1.25 (the scratch copy) + 0.1 (the sample) of an epoch, and
  // ranking 100 edges against 67 M nodes 0.02 more, so its one epoch is not
  // probed, a run needs 34 epochs to afford two probes and 67 for all four.
  const ProbeCostModel billion(uint64_t{16} << 26, uint64_t{1} << 26, 100, /*scratch=*/true);
  EXPECT_EQ(PlanLrProbes(billion, 1, 4).probes, 0u);
  EXPECT_EQ(PlanLrProbes(billion, 33, 4).probes, 0u);
  EXPECT_EQ(PlanLrProbes(billion, 34, 4).probes, 2u);
  EXPECT_EQ(PlanLrProbes(billion, 50, 4).probes, 2u);
  EXPECT_EQ(PlanLrProbes(billion, 51, 4).probes, 3u);
  EXPECT_EQ(PlanLrProbes(billion, 67, 4).probes, 4u);
  // At dim 64, as billion.sh trains it, reading costs more of an epoch.
  const ProbeCostModel billion64(uint64_t{16} << 26, uint64_t{1} << 26, 100, true, 64);
  EXPECT_GT(billion64.ReadCost(), billion.ReadCost());
  EXPECT_EQ(PlanLrProbes(billion64, 36, 4).probes, 0u);
  EXPECT_EQ(PlanLrProbes(billion64, 37, 4).probes, 2u);
}

TEST(PlanLrProbesTest, LongerRunsAffordMoreProbesAndSmallerOnesFewer) {
  const ProbeCostModel cost(1000000, 50000, 100);
  size_t last = 0;
  for (int epochs : {1, 5, 10, 20, 40}) {
    const size_t probes = PlanLrProbes(cost, epochs, 4).probes;
    EXPECT_GE(probes, last) << epochs;
    last = probes;
  }
  EXPECT_EQ(last, 4u);
  // A scratch copy costs more than training in memory.
  const ProbeCostModel scratch(1000000, 50000, 100, true);
  EXPECT_GT(scratch.FixedEdges(), cost.FixedEdges());
  EXPECT_LE(PlanLrProbes(scratch, 20, 4).probes, PlanLrProbes(cost, 20, 4).probes);
  // More nodes: ranking costs more, so fewer edges are ranked.
  const ProbeOptions few = PlanLrProbes(ProbeCostModel(1000000, 10000, 100), 40, 4).probe;
  const ProbeOptions many = PlanLrProbes(ProbeCostModel(1000000, 200000, 100), 40, 4).probe;
  EXPECT_EQ(few.eval_edges, kLrProbeEvalEdgesMax);
  EXPECT_LT(many.eval_edges, few.eval_edges);
}

class ProbeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string edges = dir_->path() + "/sbm.tsv";
    WriteSbmEdges(StandardSbm(), edges);
    factory_ = new GraphFactory(dir_->path(), {edges});
  }
  static void TearDownTestSuite() {
    delete factory_;
    delete dir_;
  }
  static TempDir* dir_;
  static GraphFactory* factory_;
};
TempDir* ProbeTest::dir_ = nullptr;
GraphFactory* ProbeTest::factory_ = nullptr;

// What a directory holds: every file's path and bytes, except RocksDB's
// info logs (LOG*), which opening and closing a database appends to.
std::map<std::string, std::string> DirectoryContents(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().filename().string().starts_with("LOG")) {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    files[entry.path().lexically_relative(dir).string()] =
        std::string(std::istreambuf_iterator<char>(in), {});
  }
  return files;
}

void ExpectNoScratchCopies(const std::string& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".probe-"), std::string::npos)
        << entry.path();
  }
}

TEST_F(ProbeTest, TrainsAnEdgeSampleInMemoryAndLeavesTheGraphAndItsCheckpointAlone) {
  const std::string graph_dir = factory_->New(2);
  const uint64_t train_edges = factory_->summary(2).edges.train;
  // A checkpoint the probe must not touch.
  ASSERT_TRUE(TrainGraph(graph_dir, SmallOptions(1)).ok());
  auto graph = Graph::Open(graph_dir, GraphOpenOptions{.read_only = false});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const uint64_t checkpoint = (*graph)->manifest().training.checkpoint_version;
  ASSERT_GT(checkpoint, 0u);
  const auto before = DirectoryContents(graph_dir + "/..");
  ProbeOptions probe;
  probe.edge_sample = 0.5;
  probe.epochs = 2;
  probe.eval_edges = 300;
  auto result = RunProbe(**graph, SmallOptions(10), probe);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->in_memory);
  // About half the train edges, each epoch (a hash sample: binomial spread).
  EXPECT_NEAR(double(result->train_edges) / (2 * train_edges), 0.5, 0.03);
  EXPECT_EQ(result->valid.edges, 300u);
  EXPECT_EQ(result->valid.negatives, 0u);  // against every node
  // Measured 0.0466; chance (2000 nodes) 0.0041: a probe that trains
  // nothing stays near chance.
  EXPECT_GT(result->valid.filtered.mrr, 4 * train_test::ChanceMrr(StandardSbm().nodes));
  EXPECT_EQ((*graph)->manifest().training.checkpoint_version, checkpoint);
  graph->reset();
  // Not a byte of the graph (checkpoint, metrics, tables) changed, and no
  // copy was made beside it.
  EXPECT_EQ(DirectoryContents(graph_dir + "/.."), before);
}

TEST_F(ProbeTest, InMemoryProbesScoreWhatTrainingACopyAndEvaluatingItScores) {
  const std::string graph_dir = factory_->New(2);
  TrainOptions o = SmallOptions(1);
  o.pipeline.deterministic = true;  // one thread, one batch in flight: bit-identical
  ProbeOptions probe;
  probe.edge_sample = 0.5;
  probe.eval_edges = 300;
  auto graph = Graph::Open(graph_dir, GraphOpenOptions{.read_only = false});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto result = RunProbe(**graph, o, probe);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->in_memory);
  graph->reset();
  // The same run written to disk, and its checkpoint evaluated.
  o.edge_sample = probe.edge_sample;
  ASSERT_TRUE(TrainGraph(graph_dir, o).ok());
  auto trained = Graph::Open(graph_dir);
  ASSERT_TRUE(trained.ok());
  auto model = LoadStoredModel(**trained);
  ASSERT_TRUE(model.ok());
  o.validation.max_edges = probe.eval_edges;
  auto eval = Evaluate(**trained, *model, ValidationEvalOptions(o));
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_EQ(result->valid.edges, eval->edges);
  EXPECT_EQ(result->valid.filtered.mrr, eval->filtered.mrr);
  EXPECT_EQ(result->valid.raw.hits10, eval->raw.hits10);
}

TEST_F(ProbeTest, AModelTooBigForMemoryIsProbedOnAScratchCopy) {
  const std::string graph_dir = factory_->New(4);
  auto graph = Graph::Open(graph_dir, GraphOpenOptions{.read_only = false});
  ASSERT_TRUE(graph.ok()) << graph.status();
  TrainOptions o = SmallOptions(1);
  o.schedule.buffer_partitions = 2;  // of 4: the model never is in memory at once
  ProbeOptions probe;
  probe.eval_edges = 300;
  const auto before = DirectoryContents(graph_dir);
  auto result = RunProbe(**graph, o, probe);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->in_memory);
  EXPECT_EQ(result->valid.edges, 300u);
  EXPECT_GT(result->valid.filtered.mrr, 0);
  EXPECT_GT(result->train_edges, 0u);
  graph->reset();
  EXPECT_EQ(DirectoryContents(graph_dir), before);
  ExpectNoScratchCopies(dir_->path());
}

TEST_F(ProbeTest, NeedsValidationEdges) {
  TempDir dir;
  const std::string edges = dir.path() + "/sbm.tsv";
  WriteSbmEdges(StandardSbm(), edges);
  GraphFactory no_splits(dir.path(), {edges}, /*with_splits=*/false);
  const std::string graph_dir = no_splits.New(1);
  auto graph = Graph::Open(graph_dir, GraphOpenOptions{.read_only = false});
  ASSERT_TRUE(graph.ok());
  auto result = RunProbe(**graph, SmallOptions(1), ProbeOptions{});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  // --lr auto then trains with the given lr instead of failing.
  graph->reset();
  TrainOptions o = SmallOptions(1);
  o.optimizer.lr_auto = true;
  o.optimizer.lr = 0.05f;
  auto summary = TrainGraphAutoLr(graph_dir, o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_FALSE(summary->lr_choice.has_value());
  EXPECT_FLOAT_EQ(summary->lr, 0.05f);
}

TEST_F(ProbeTest, AutoLrIsChosenOnceAndKeptOnResume) {
  const std::string graph_dir = factory_->New(1);
  // Long enough a run for every candidate: probes cost their share of it.
  TrainOptions o = SmallOptions(40);
  o.optimizer.lr_auto = true;
  auto first = TrainGraphAutoLr(graph_dir, o);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->lr_choice.has_value());
  const LrChoice& choice = *first->lr_choice;
  EXPECT_EQ(first->lr, choice.lr);
  const LrCandidateSet set = LrCandidates(1, o.model);
  ASSERT_EQ(choice.candidates, set.steps);
  ASSERT_EQ(choice.probes.size(), set.steps.size());
  EXPECT_TRUE(choice.unprobed.empty());
  EXPECT_FALSE(choice.unaffordable);
  EXPECT_LE(choice.planned_share, kLrProbeShare * (1 + 1e-9));
  // The step taken is the one PickLr picks from these probes, which all
  // ranked the same edges.
  std::vector<std::vector<float>> edge_rr;
  size_t baseline = set.steps.size();
  for (size_t i = 0; i < choice.probes.size(); ++i) {
    ASSERT_EQ(choice.probes[i].valid.edge_rr.size(), choice.probes[i].valid.edges);
    ASSERT_EQ(choice.probes[i].valid.edges, choice.eval_edges);
    edge_rr.push_back(choice.probes[i].valid.edge_rr);
    if (set.steps[i] == set.baseline) baseline = i;
  }
  ASSERT_LT(baseline, set.steps.size());
  const size_t pick = PickLr(edge_rr, baseline, RandomRankingMrr(factory_->summary(1).nodes));
  EXPECT_EQ(choice.lr, set.steps[pick]);
  EXPECT_EQ(choice.significant, pick != baseline);
  ASSERT_EQ(choice.vs_baseline.size(), choice.probes.size());
  EXPECT_EQ(choice.vs_baseline[baseline].mean, 0);
  for (size_t i = 0; i < choice.probes.size(); ++i) {
    EXPECT_NEAR(choice.vs_baseline[i].mean,
                choice.probes[i].valid.filtered.mrr - choice.probes[baseline].valid.filtered.mrr,
                1e-6);
  }
  // All probes together train at most kLrProbeShare of the run's edges.
  uint64_t probe_edges = 0;
  for (const ProbeResult& p : choice.probes) probe_edges += p.train_edges;
  EXPECT_GT(probe_edges, 0u);
  EXPECT_LE(probe_edges, kLrProbeShare * o.epochs * factory_->summary(1).edges.train * 1.1);

  // A resumed run does not probe again and trains with the stored lr, even
  // if the stored one differs from what a probe would choose now.
  o.epochs = 41;
  o.optimizer.lr = 123.0f;  // ignored with lr_auto on resume
  auto resumed = TrainGraphAutoLr(graph_dir, o);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->resumed);
  EXPECT_FALSE(resumed->lr_choice.has_value());
  EXPECT_EQ(resumed->lr, first->lr);
}

TEST_F(ProbeTest, ARunTooShortForItsProbesTakesTheBaselineUnprobed) {
  const std::string graph_dir = factory_->New(1);
  TrainOptions o = SmallOptions(1);
  o.optimizer.lr_auto = true;
  auto summary = TrainGraphAutoLr(graph_dir, o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_TRUE(summary->lr_choice.has_value());
  const LrChoice& choice = *summary->lr_choice;
  EXPECT_TRUE(choice.unaffordable);
  EXPECT_TRUE(choice.probes.empty());
  EXPECT_EQ(choice.unprobed, LrCandidates(1, o.model).steps);
  EXPECT_GT(choice.planned_share, kLrProbeShare);
  EXPECT_EQ(summary->lr, kLrDefault);
}

}  // namespace
}  // namespace ember
