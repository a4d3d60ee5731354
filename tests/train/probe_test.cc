// Probes (train/probe.h): in memory or on scratch copies, both leaving the
// graph untouched; edge samples, the --lr auto rule, and the lr stored with
// the checkpoint.
#include "train/tune/probe.h"

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

RankMetrics Mrr(double mrr, double ci) {
  RankMetrics m;
  m.mrr = mrr;
  m.mrr_ci95 = ci;
  return m;
}

TEST(PickBeyondIntervalsTest, KeepsTheBaselineWithinTheIntervals) {
  // 0.012 beats 0.010 but not by sqrt(0.002² + 0.002²) = 0.0028.
  const std::vector<RankMetrics> probes = {Mrr(0.012, 0.002), Mrr(0.010, 0.002),
                                           Mrr(0.009, 0.002)};
  EXPECT_EQ(PickBeyondIntervals(probes, 1), 1u);
}

TEST(PickBeyondIntervalsTest, TakesTheBestOfThoseBeyond) {
  const std::vector<RankMetrics> probes = {Mrr(0.030, 0.005), Mrr(0.040, 0.005),
                                           Mrr(0.010, 0.002), Mrr(0.005, 0.001)};
  EXPECT_EQ(PickBeyondIntervals(probes, 2), 1u);
  // A worse candidate never displaces the baseline.
  EXPECT_EQ(PickBeyondIntervals(probes, 1), 1u);
}

TEST(PickBeyondIntervalsTest, SmallerStepsMustWinWidely) {
  // 0.020 vs 0.010: beyond the intervals, but only 2x for a smaller step.
  std::vector<RankMetrics> probes = {Mrr(0.020, 0.003), Mrr(0.010, 0.003)};
  EXPECT_EQ(PickBeyondIntervals(probes, 1), 1u);
  probes[0].mrr = 0.030;  // 3x
  EXPECT_EQ(PickBeyondIntervals(probes, 1), 0u);
  // A larger step needs only to be beyond the intervals.
  probes = {Mrr(0.010, 0.003), Mrr(0.020, 0.003)};
  EXPECT_EQ(PickBeyondIntervals(probes, 0), 1u);
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
  // Another model on the same graph is probed at each of its candidates.
  o.model.op = Operator::kComplexDiagonal;
  o.model.comparator = Comparator::kDot;
  auto complex = ChooseLr(**graph, o);
  ASSERT_TRUE(complex.ok()) << complex.status();
  EXPECT_EQ(complex->probes.size(), LrCandidates(2, o.model).steps.size());
  EXPECT_EQ(complex->baseline, kLrDefault);
}

// Train-edge equivalents of the probes PlanLrProbes sizes: training plus
// evaluation, all probes together.
double PlannedCost(const ProbeCostModel& cost, const ProbeOptions& plan, size_t probes) {
  return probes * ((plan.edge_sample + kProbeReadCost) * plan.epochs * cost.train_edges +
                   cost.EvalEdges(plan.eval_edges));
}

TEST(PlanLrProbesTest, TrainingAndEvaluationTogetherStayWithinTheShare) {
  // gen kg-like (20000 nodes, 285 k edges, 150 columns) and R-MAT-like
  // (65536 nodes, 944 k edges, 100 columns), for short and long runs.
  for (const ProbeCostModel& cost :
       {ProbeCostModel(285000, 20000, 150), ProbeCostModel(944000, 65536, 100)}) {
    for (int epochs : {5, 10, 30}) {
      for (size_t probes : {2u, 4u}) {
        const ProbeOptions plan = PlanLrProbes(cost, epochs, probes);
        SCOPED_TRACE(::testing::Message() << cost.num_nodes << " nodes, " << epochs
                                        << " epochs, " << probes << " probes");
        EXPECT_EQ(plan.epochs, 1);
        EXPECT_GE(plan.edge_sample, kLrProbeSampleMin);
        if (plan.edge_sample > kLrProbeSampleMin) {
          EXPECT_LE(PlannedCost(cost, plan, probes),
                    kLrProbeShare * epochs * cost.train_edges * (1 + 1e-9));
        }
        // The evaluation takes at most half of what reading leaves, unless
        // held at its floor.
        if (plan.eval_edges > kLrProbeEvalEdgesMin) {
          EXPECT_LE(cost.EvalEdges(plan.eval_edges),
                    0.5 * (kLrProbeShare * epochs / probes - kProbeReadCost) *
                        cost.train_edges * (1 + 1e-9));
        }
        EXPECT_LE(plan.eval_edges, kLrProbeEvalEdgesMax);
        EXPECT_GT(plan.edge_sample, 0.0);
      }
    }
  }
}

TEST(PlanLrProbesTest, MoreNodesMeanFewerEvaluatedEdgesAndASmallerSample) {
  const ProbeOptions few = PlanLrProbes(ProbeCostModel(1000000, 10000, 100), 10, 4);
  const ProbeOptions many = PlanLrProbes(ProbeCostModel(1000000, 200000, 100), 10, 4);
  EXPECT_EQ(few.eval_edges, kLrProbeEvalEdgesMax);
  EXPECT_LT(many.eval_edges, few.eval_edges);
  EXPECT_LT(many.edge_sample, few.edge_sample);
  // A tiny graph's probes train on all of it at most.
  EXPECT_LE(PlanLrProbes(ProbeCostModel(100, 10, 100), 1000, 1).edge_sample, 1.0);
  // Past the floors a probe costs more than its share rather than nothing.
  const ProbeOptions floor = PlanLrProbes(ProbeCostModel(1000, 1000000, 100), 1, 4);
  EXPECT_EQ(floor.eval_edges, kLrProbeEvalEdgesMin);
  EXPECT_DOUBLE_EQ(floor.edge_sample, kLrProbeSampleMin);
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
  TrainOptions o = SmallOptions(2);
  o.optimizer.lr_auto = true;
  auto first = TrainGraphAutoLr(graph_dir, o);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->lr_choice.has_value());
  const LrChoice& choice = *first->lr_choice;
  ASSERT_EQ(choice.probes.size(), LrCandidates(1, o.model).steps.size());
  EXPECT_EQ(first->lr, choice.lr);
  EXPECT_NE(std::find(std::begin(kLrCandidates), std::end(kLrCandidates), choice.lr),
            std::end(kLrCandidates));
  // The step taken is the one ChooseLr's rule picks from these probes.
  const LrCandidateSet set = LrCandidates(1, o.model);
  ASSERT_EQ(choice.candidates, set.steps);
  std::vector<RankMetrics> metrics;
  size_t baseline = set.steps.size();
  for (size_t i = 0; i < choice.probes.size(); ++i) {
    metrics.push_back(choice.probes[i].valid.filtered);
    if (set.steps[i] == set.baseline) baseline = i;
  }
  ASSERT_LT(baseline, set.steps.size());
  const size_t pick = PickBeyondIntervals(metrics, baseline);
  EXPECT_EQ(choice.lr, set.steps[pick]);
  EXPECT_EQ(choice.significant, pick != baseline);
  // All probes together train at most kLrProbeShare of the run's edges.
  uint64_t probe_edges = 0, run_edges = 0;
  for (const ProbeResult& p : choice.probes) probe_edges += p.train_edges;
  for (const EpochStats& e : first->epochs) run_edges += e.edges;
  EXPECT_LE(probe_edges, kLrProbeShare * run_edges * 1.1);
  for (const ProbeResult& p : choice.probes) {
    EXPECT_GT(p.valid.edges, 0u);
    EXPECT_LE(p.valid.edges, choice.eval_edges);
  }
  EXPECT_GT(probe_edges, 0u);

  // A resumed run does not probe again and trains with the stored lr, even
  // if the stored one differs from what a probe would choose now.
  o.epochs = 3;
  o.optimizer.lr = 123.0f;  // ignored with lr_auto on resume
  auto resumed = TrainGraphAutoLr(graph_dir, o);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->resumed);
  EXPECT_FALSE(resumed->lr_choice.has_value());
  EXPECT_EQ(resumed->lr, choice.lr);
}

}  // namespace
}  // namespace ember
