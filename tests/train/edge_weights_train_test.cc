// Training on weighted graphs (import --weight-column): a weight of 1 on
// every edge trains bit for bit as no weights; `--weights ignore` trains as
// the unweighted graph; the weight changes the ranking (a heavy edge beats a
// light one) under `--weights loss` and `--weights sample`; the bucket
// reader carries weights beside their edges, or draws edges by weight;
// device trainers refuse weighted losses instead of ignoring them.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "storage/base/splitmix.h"
#include "storage/graph.h"
#include "tests/train/train_test_util.h"
#include "train/schedule/io_executor.h"
#include "train/stream/edge_window.h"
#include "train/train_loop.h"

namespace ember::train_test {
namespace {

// `text`'s "src\tdst" lines with a weight column appended: `weight` for
// every line.
std::string WithWeightColumn(const std::string& text, const std::string& weight) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&out, line, "\t", weight, "\n");
  }
  return out;
}

absl::StatusOr<ImportSummary> Import(const std::string& out, const std::string& file, bool weighted,
                                     uint32_t partitions) {
  ImportOptions o;
  o.out = out;
  o.files = {file};
  o.num_partitions = partitions;
  o.split.fraction = {0.9, 0.05, 0.05};
  o.seed = 7;
  o.threads = 2;
  o.delimiter = '\t';
  if (weighted) o.weight_column = 2;
  return ImportGraph(o);
}

class EdgeWeightsTrainTest : public ::testing::Test {
 protected:
  // The standard SBM twice: unweighted at plain_, and with weight `weight`
  // on every edge at weighted_.
  void ImportBoth(const std::string& weight, uint32_t partitions) {
    const std::string edges = tmp_.Sub("sbm.tsv");
    ASSERT_NO_FATAL_FAILURE(WriteSbmEdges(StandardSbm(), edges));
    const std::string weighted = tmp_.Sub("sbm-weighted.tsv");
    WriteWholeFile(weighted, WithWeightColumn(ReadWholeFile(edges), weight));
    auto a = Import(plain_, edges, false, partitions);
    ASSERT_TRUE(a.ok()) << a.status();
    auto b = Import(weighted_, weighted, true, partitions);
    ASSERT_TRUE(b.ok()) << b.status();
    auto m = ManifestOf(weighted_);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(m->edge_weights);
  }

  void ExpectSameTraining(TrainOptions o, EdgeWeightMode mode) {
    o.pipeline.deterministic = true;
    o.devices.threads = 1;
    o.from_scratch = true;
    o.edge_weights = mode;
    auto a = TrainGraph(plain_, o);
    ASSERT_TRUE(a.ok()) << a.status();
    auto b = TrainGraph(weighted_, o);
    ASSERT_TRUE(b.ok()) << b.status();
    auto sa = LoadSnapshot(plain_);
    ASSERT_TRUE(sa.ok()) << sa.status();
    auto sb = LoadSnapshot(weighted_);
    ASSERT_TRUE(sb.ok()) << sb.status();
    ExpectBitIdentical(*sa, *sb);
    EXPECT_EQ(a->epochs.back().loss, b->epochs.back().loss);
  }

  TempDir tmp_;
  const std::string plain_ = tmp_.Sub("plain");
  const std::string weighted_ = tmp_.Sub("weighted");
};

TEST_F(EdgeWeightsTrainTest, WeightOneEverywhereTrainsBitIdenticallyToNoWeights) {
  ASSERT_NO_FATAL_FAILURE(ImportBoth("1", 2));
  // The default model (softmax), and the loops of the other losses, with
  // variance-aware batching (which permutes the windows' edges, weights
  // alongside).
  ExpectSameTraining(SmallOptions(3), EdgeWeightMode::kLoss);
  TrainOptions o = SmallOptions(2);
  o.model.loss = Loss::kLogistic;
  o.pipeline.batching = BatchingKind::kVarianceAware;
  ExpectSameTraining(o, EdgeWeightMode::kLoss);
  o.model.loss = Loss::kRanking;
  o.model.comparator = Comparator::kCos;
  ExpectSameTraining(o, EdgeWeightMode::kLoss);
}

// Weights other than 1 are read but unused under --weights ignore.
TEST_F(EdgeWeightsTrainTest, IgnoredWeightsTrainAsNoWeights) {
  ASSERT_NO_FATAL_FAILURE(ImportBoth("3.5", 2));
  ExpectSameTraining(SmallOptions(2), EdgeWeightMode::kIgnore);
}

// A weight that is not 1 changes training (the test above can fail).
TEST_F(EdgeWeightsTrainTest, WeightsOtherThanOneChangeTraining) {
  ASSERT_NO_FATAL_FAILURE(ImportBoth("3.5", 1));
  TrainOptions o = SmallOptions(1);
  o.pipeline.deterministic = true;
  ASSERT_TRUE(TrainGraph(plain_, o).ok());
  ASSERT_TRUE(TrainGraph(weighted_, o).ok());
  auto sa = LoadSnapshot(plain_);
  auto sb = LoadSnapshot(weighted_);
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_NE(sa->partitions[0], sb->partitions[0]);
}

// The checkpoint records --weights: resuming under another mode is
// refused, naming both (the CLI takes the checkpoint's when the flag is
// not given: ResumeTakesTheCheckpointsWeights in tests/tools).
TEST_F(EdgeWeightsTrainTest, ResumeUnderAnotherWeightsModeIsRefused) {
  ASSERT_NO_FATAL_FAILURE(ImportBoth("2", 1));
  TrainOptions o = SmallOptions(1);
  o.edge_weights = EdgeWeightMode::kSample;
  ASSERT_TRUE(TrainGraph(weighted_, o).ok());
  auto state = ReadTrainState(*ManifestOf(weighted_), weighted_);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->position.edge_weights, "sample");
  o.epochs = 2;
  o.edge_weights = EdgeWeightMode::kLoss;
  auto refused = TrainGraph(weighted_, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("--weights sample"), std::string::npos)
      << refused.status();
  o.edge_weights = EdgeWeightMode::kSample;
  auto resumed = TrainGraph(weighted_, o);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->resumed);
  // An unweighted graph trains the same under every mode: nothing to hold.
  o.epochs = 1;
  o.edge_weights = EdgeWeightMode::kSample;
  ASSERT_TRUE(TrainGraph(plain_, o).ok());
  o.epochs = 2;
  o.edge_weights = EdgeWeightMode::kLoss;
  EXPECT_TRUE(TrainGraph(plain_, o).ok());
}

// A model that diverges (weights near FLT_MAX, or a step far too large)
// stops the run with an error that says so; no checkpoint of it is
// committed, and the last good one stays as it was, every row finite.
TEST_F(EdgeWeightsTrainTest, ADivergedModelIsNeverCheckpointed) {
  ASSERT_NO_FATAL_FAILURE(ImportBoth("3e38", 1));
  TrainOptions o = SmallOptions(1);
  auto diverged = TrainGraph(weighted_, o);
  ASSERT_FALSE(diverged.ok());
  EXPECT_EQ(diverged.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(diverged.status().message().find("diverged"), std::string::npos) << diverged.status();
  EXPECT_NE(diverged.status().message().find("weights"), std::string::npos) << diverged.status();
  EXPECT_EQ(ManifestOf(weighted_)->training.checkpoint_version, 0u);

  ASSERT_TRUE(TrainGraph(plain_, o).ok());
  const uint64_t good_version = ManifestOf(plain_)->training.checkpoint_version;
  auto good = LoadSnapshot(plain_);
  ASSERT_TRUE(good.ok()) << good.status();
  o.epochs = 3;
  o.optimizer.lr = 1e36f;
  diverged = TrainGraph(plain_, o);
  ASSERT_FALSE(diverged.ok());
  EXPECT_NE(diverged.status().message().find("diverged"), std::string::npos) << diverged.status();
  EXPECT_EQ(ManifestOf(plain_)->training.checkpoint_version, good_version);
  EXPECT_EQ(EpochsDone(*ManifestOf(plain_)), 1u);
  auto kept = LoadSnapshot(plain_);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ExpectBitIdentical(*good, *kept);
  for (const auto& rows : kept->partitions) EXPECT_TRUE(AllFinite(rows));
}

// The planted test: the standard SBM (weight 1), and for each of 300
// sources two extra edges to random nodes of other blocks, one heavy
// (weight 8) and one light (weight 0.125), which side is which drawn at
// random. Without weights the two are alike; with them, the heavy
// destination must outscore the light one for most sources.
class HeavyBeatsLightTest : public ::testing::Test {
 protected:
  struct Pair {
    std::string src, heavy, light;
  };

  void SetUp() override {
    const tools::gen::SbmOptions sbm = StandardSbm();
    const std::string edges = tmp_.Sub("sbm.tsv");
    ASSERT_NO_FATAL_FAILURE(WriteSbmEdges(sbm, edges));
    std::string text = WithWeightColumn(ReadWholeFile(edges), "1");
    // SBM node names are their numbers; block b holds nodes [b·100, b·100 + 100).
    SplitMix64 rng(17);
    const uint64_t per_block = sbm.nodes / sbm.blocks;
    for (int i = 0; i < 300; ++i) {
      const uint64_t src = rng.Below(sbm.nodes);
      auto other_block_node = [&] {
        while (true) {
          const uint64_t v = rng.Below(sbm.nodes);
          if (v / per_block != src / per_block) return v;
        }
      };
      Pair p{absl::StrCat(src), absl::StrCat(other_block_node()), absl::StrCat(other_block_node())};
      if (p.heavy == p.light) continue;
      absl::StrAppend(&text, p.src, "\t", p.heavy, "\t8\n", p.src, "\t", p.light, "\t0.125\n");
      pairs_.push_back(p);
    }
    const std::string file = tmp_.Sub("weighted.tsv");
    WriteWholeFile(file, text);
    // All train: the planted edges must be trained on.
    ImportOptions o;
    o.out = graph_;
    o.files = {file};
    o.num_partitions = 2;
    o.seed = 7;
    o.threads = 2;
    o.weight_column = 2;
    auto s = ImportGraph(o);
    ASSERT_TRUE(s.ok()) << s.status();
  }

  // Share of the pairs whose heavy destination scores above the light one
  // (dot products: the default model) after training under `mode`.
  double HeavyWins(EdgeWeightMode mode) {
    TrainOptions o = SmallOptions(5);
    o.from_scratch = true;
    o.edge_weights = mode;
    auto trained = TrainGraph(graph_, o);
    EXPECT_TRUE(trained.ok()) << trained.status();
    auto snapshot = LoadSnapshot(graph_);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    auto g = Graph::Open(graph_);
    EXPECT_TRUE(g.ok());
    if (!trained.ok() || !snapshot.ok() || !g.ok()) return -1;
    const int dim = o.model.dim;
    auto row = [&](const std::string& name) -> const float* {
      const absl::StatusOr<NodeRef> n = (*g)->LookupNode(name);
      EXPECT_TRUE(n.ok()) << name;
      return snapshot->partitions[n->partition].data() + uint64_t{n->offset} * dim;
    };
    auto dot = [dim](const float* a, const float* b) {
      double s = 0;
      for (int k = 0; k < dim; ++k) s += double{a[k]} * b[k];
      return s;
    };
    int wins = 0;
    for (const Pair& p : pairs_) {
      const float* s = row(p.src);
      wins += dot(s, row(p.heavy)) > dot(s, row(p.light));
    }
    return static_cast<double>(wins) / pairs_.size();
  }

  TempDir tmp_;
  const std::string graph_ = tmp_.Sub("g");
  std::vector<Pair> pairs_;
};

TEST_F(HeavyBeatsLightTest, HeavyEdgesRankAboveLightOnes) {
  ASSERT_GT(pairs_.size(), 250u);
  const double ignored = HeavyWins(EdgeWeightMode::kIgnore);
  const double loss = HeavyWins(EdgeWeightMode::kLoss);
  const double sample = HeavyWins(EdgeWeightMode::kSample);
  std::printf("heavy destination ranks first: ignore %.3f, loss %.3f, sample %.3f\n", ignored, loss,
              sample);
  // Ignored, heavy and light are alike: about half (300 coin flips: 0.5 ±
  // 0.06 at two standard deviations, ±0.15 leaves room for training noise).
  EXPECT_GT(ignored, 0.35);
  EXPECT_LT(ignored, 0.65);
  EXPECT_GT(loss, 0.9);
  EXPECT_GT(sample, 0.9);
}

// The bucket reader of a weighted graph: under `loss` every window holds
// each edge once with its weight beside it; under `sample` an edge of
// weight w appears about w / mean times, the draws change with the bucket
// seed and repeat with it.
TEST(EdgeWeightsWindowTest, WindowsCarryOrSampleByWeight) {
  TempDir tmp;
  const std::string file = tmp.Sub("w.tsv");
  std::string text;
  // Weight of edge i -> i + 1: 1, 2, 3 or 4 by i % 4 (mean 2.5).
  for (int i = 0; i < 40000; ++i) absl::StrAppend(&text, i, "\t", i + 1, "\t", 1 + i % 4, "\n");
  WriteWholeFile(file, text);
  ImportOptions o;
  o.out = tmp.Sub("g");
  o.files = {file};
  o.threads = 2;
  o.integer_ids = true;
  o.weight_column = 2;
  ASSERT_TRUE(ImportGraph(o).ok());
  auto g = Graph::Open(o.out);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ((*g)->manifest().edge_weight_stats.mean, 2.5);
  std::vector<std::string> names;
  ASSERT_TRUE((*g)->ForEachNodeName(0,
                                    [&](uint32_t, std::string_view name) {
                                      names.emplace_back(name);
                                      return absl::OkStatus();
                                    })
                  .ok());
  auto weight_of = [&](const Edge& e) { return 1 + std::stoi(names[e.src]) % 4; };

  // Copies of each edge (by its index i = the source's name) read from all
  // windows, and whether each weight read equals its edge's.
  auto read = [&](BucketReadSpec spec, std::vector<int>* copies, bool* weights_ok) {
    IoExecutor io(2);
    BucketWindowReader reader(g->get(), &io, spec, 5000);
    copies->assign(40000, 0);
    *weights_ok = true;
    while (true) {
      auto w = reader.Next();
      ASSERT_TRUE(w.ok()) << w.status();
      if (*w == nullptr) break;
      const EdgeWindow& window = **w;
      ASSERT_EQ(window.weights.size(), spec.weights ? window.edges.size() : 0u);
      for (size_t k = 0; k < window.edges.size(); ++k) {
        const Edge& e = window.edges[k];
        ++(*copies)[std::stoi(names[e.src])];
        if (spec.weights && window.weights[k] != static_cast<float>(weight_of(e))) {
          *weights_ok = false;
        }
      }
    }
  };
  BucketReadSpec spec;
  spec.seed = 5;
  spec.weights = true;
  std::vector<int> copies;
  bool weights_ok = false;
  ASSERT_NO_FATAL_FAILURE(read(spec, &copies, &weights_ok));
  EXPECT_TRUE(weights_ok);
  EXPECT_EQ(std::count(copies.begin(), copies.end(), 1), 40000);

  spec.weights = false;
  spec.weight_sample_mean = 2.5;
  ASSERT_NO_FATAL_FAILURE(read(spec, &copies, &weights_ok));
  // Per weight class, the mean copies are w / 2.5 (10000 edges each: the
  // standard error of a class mean is below 0.005).
  for (int w = 1; w <= 4; ++w) {
    double sum = 0;
    for (int i = w - 1; i < 40000; i += 4) sum += copies[i];
    EXPECT_NEAR(sum / 10000, w / 2.5, 0.03) << "weight " << w;
  }
  // Weight 4 / 2.5 = 1.6: one or two copies, never 0 or 3.
  for (int i = 3; i < 40000; i += 4) ASSERT_TRUE(copies[i] == 1 || copies[i] == 2) << i;
  std::vector<int> again;
  ASSERT_NO_FATAL_FAILURE(read(spec, &again, &weights_ok));
  EXPECT_EQ(again, copies);
  spec.seed = 6;
  ASSERT_NO_FATAL_FAILURE(read(spec, &again, &weights_ok));
  EXPECT_NE(again, copies);
}

TEST(EdgeWeightsDeviceTest, DeviceTrainersRefuseWeightedLosses) {
  TempDir tmp;
  const std::string file = tmp.Sub("w.tsv");
  WriteWholeFile(file, "a\tb\t2\nb\tc\t1\nc\ta\t0.5\n");
  ASSERT_TRUE(Import(tmp.Sub("g"), file, true, 1).ok());
  TrainOptions o = SmallOptions(1);
  o.devices.list = "emulated";
  auto s = TrainGraph(tmp.Sub("g"), o);
  ASSERT_FALSE(s.ok());
  // The emulated device runs the device trainer's step on the CPU, in
  // every build.
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_NE(s.status().message().find("weighted graph"), std::string::npos) << s.status();
  // Without the weighted loss, the device trains.
  o.edge_weights = EdgeWeightMode::kIgnore;
  EXPECT_TRUE(TrainGraph(tmp.Sub("g"), o).ok());
}

}  // namespace
}  // namespace ember::train_test
