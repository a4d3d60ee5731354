// Knowledge-graph quality end to end on `ember gen kg`: what the defaults
// (mixed-relation chunks, endpoint negatives, --lr auto) learn per relation
// kind, against PBG's chunking and against models that theory says must
// fail; and `ember tune` picking the better of two settings.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "train/model/bf16_gemm.h"

namespace ember {
namespace {

using ::ember::testing::ProcessResult;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunProcess;
using ::ember::testing::RunShell;
using ::ember::testing::TempDir;

const std::string kEmber = EMBER_BINARY;

struct KindMetrics {
  double mrr = 0, hits1 = 0;
};

class KgQualityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    Run({"gen", "kg", "--nodes", "4000", "--seed", "3", "--quiet", "--out", Path("kg.train"),
         "--valid-out", Path("kg.valid"), "--test-out", Path("kg.test"), "--relations-out",
         Path("kg.rel")});
    Run({"import", "--out", Path("kg"), "--valid", Path("kg.valid"), "--test", Path("kg.test"),
         "--quiet", Path("kg.train")});
    Run({"import", "--out", Path("kg4"), "--partitions", "4", "--valid", Path("kg.valid"),
         "--test", Path("kg.test"), "--quiet", Path("kg.train")});
    std::istringstream rel(ReadWholeFile(Path("kg.rel")));
    std::string line;
    while (std::getline(rel, line)) {
      const size_t tab = line.find('\t');
      (*kinds_)[line.substr(0, tab)] = line.substr(tab + 1, line.find('\t', tab + 1) - tab - 1);
    }
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string Path(const std::string& name) { return dir_->path() + "/" + name; }

  static ProcessResult Run(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kEmber};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = RunProcess(argv, dir_->path());
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    return r;
  }

  // Trains a copy of the graph `source` (kg: one partition; kg4: four)
  // with `flags` (5 epochs, dim 100, one thread unless `flags` say
  // otherwise) and returns filtered test metrics by relation kind,
  // weighted by edges.
  static std::map<std::string, KindMetrics> TrainAndEval(const std::string& name,
                                                         std::vector<std::string> flags,
                                                         const std::string& source = "kg") {
    const std::string graph = Path(name);
    EXPECT_EQ(RunShell("cp -r " + Path(source) + " " + graph), 0);
    const bool threads_given = std::find(flags.begin(), flags.end(), "--threads") != flags.end();
    std::vector<std::string> train = {"train", graph, "--epochs", "5", "--dim", "100", "--quiet"};
    if (!threads_given) train.insert(train.end(), {"--threads", "1"});
    train.insert(train.end(), flags.begin(), flags.end());
    Run(train);
    const ProcessResult eval =
        Run({"eval", graph, "--by-relation", "--max-edges", "0", "--json"});
    const nlohmann::json j = nlohmann::json::parse(eval.out);
    std::map<std::string, KindMetrics> sums;
    std::map<std::string, double> edges;
    for (const nlohmann::json& r : j.at("relations")) {
      const std::string kind = kinds_->at(r.at("relation").get<std::string>());
      const double n = r.at("edges").get<double>();
      sums[kind].mrr += n * r.at("mrr").get<double>();
      sums[kind].hits1 += n * r.at("hits@1").get<double>();
      edges[kind] += n;
    }
    for (auto& [kind, m] : sums) {
      m.mrr /= edges[kind];
      m.hits1 /= edges[kind];
    }
    return sums;
  }

  static TempDir* dir_;
  static std::map<std::string, std::string>* kinds_;  // relation -> kind
};
// Measured (seed 3, dim 100, 5 epochs): complex_diagonal with the defaults
// against the same model left near its random start (a step of 1e-4):
// inverse MRR 0.744 against 0.048 (Hits@1 0.634 against 0.000), symmetric
// MRR 0.677 against 0.056. The defaults must beat the reference by 0.4 in
// MRR and 0.35 in Hits@1: about 60 % of the gaps, so that a model learning
// half as much fails, and 0.2-0.3 below what they reach.
constexpr double kLearnedMrrGap = 0.4, kLearnedHits1Gap = 0.35;
// Two trainers on 4 partitions against one (measured, three runs): inverse
// MRR 0.63 against 0.67-0.69, symmetric 0.54 against 0.62 (they meet every
// round, not every batch); with the merge dropping the trainers' changes,
// 0.004 and 0.03. Within 0.15: twice the measured difference, a quarter of
// a broken merge's.
constexpr double kTwoTrainersMrrBound = 0.15;

TempDir* KgQualityTest::dir_ = nullptr;
std::map<std::string, std::string>* KgQualityTest::kinds_ =
    new std::map<std::string, std::string>();

// Measured (seed 3): the defaults reach inverse MRR 0.75 (Hits@1 0.65) and
// symmetric 0.68 (0.57); PBG's grouped chunks without endpoint negatives
// reach inverse Hits@1 0.00 (the query entity outranks the answer); TransE
// reaches symmetric MRR 0.05, as it must (h + r = t and t + r = h force
// r = 0 and h = t). The reference is the same model left near its random
// start, ranked the same way in the same test (kLearnedMrrGap).
TEST_F(KgQualityTest, DefaultsLearnInversesAndSymmetriesWherePbgChunkingAndTransEFail) {
  const auto untrained =
      TrainAndEval("untrained", {"--operator", "complex_diagonal", "--lr", "0.0001"});
  const auto complex = TrainAndEval("complex", {"--operator", "complex_diagonal"});
  std::printf("[ KG ] untrained | complex_diagonal: inverse MRR %.3f | %.3f, Hits@1 %.3f | "
              "%.3f; symmetric MRR %.3f | %.3f\n",
              untrained.at("inverse").mrr, complex.at("inverse").mrr,
              untrained.at("inverse").hits1, complex.at("inverse").hits1,
              untrained.at("symmetric").mrr, complex.at("symmetric").mrr);
  EXPECT_GE(complex.at("inverse").mrr, untrained.at("inverse").mrr + kLearnedMrrGap);
  EXPECT_GE(complex.at("inverse").hits1, untrained.at("inverse").hits1 + kLearnedHits1Gap);
  EXPECT_GE(complex.at("symmetric").mrr, untrained.at("symmetric").mrr + kLearnedMrrGap);

  const auto grouped = TrainAndEval(
      "grouped", {"--operator", "complex_diagonal", "--relation-batching", "grouped",
                  "--endpoint-negatives=false", "--relation-lr-scale", "1", "--lr", "0.1"});
  EXPECT_LT(grouped.at("inverse").hits1, complex.at("inverse").hits1 - 0.3);

  const auto transe =
      TrainAndEval("transe", {"--operator", "translation", "--comparator", "l2", "--lr", "0.1"});
  EXPECT_LT(transe.at("symmetric").mrr, 0.2);
}

// --precision bf16 learns what fp32 learns on the knowledge graph: the
// defaults' filtered MRR by relation kind within kBf16MrrBound of fp32's.
// Measured (seed 3): inverse 0.7453 against 0.7442, symmetric 0.6741
// against 0.6772; over all relations, seeds 1-3: 0.4086, 0.4094, 0.4165
// against 0.4071, 0.4103, 0.4154, within 0.0015 each, where seeds alone
// move it by 0.008.
constexpr double kBf16MrrBound = 0.03;
TEST_F(KgQualityTest, Bf16ProductsLearnWhatFp32Learns) {
  if (!Bf16GemmAvailable()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  const auto fp32 = TrainAndEval("complex_fp32", {"--operator", "complex_diagonal"});
  const auto bf16 =
      TrainAndEval("complex_bf16", {"--operator", "complex_diagonal", "--precision", "bf16"});
  for (const char* kind : {"inverse", "symmetric"}) {
    std::printf("[ KG ] %s MRR: fp32 %.4f, bf16 products %.4f\n", kind, fp32.at(kind).mrr,
                bf16.at(kind).mrr);
    EXPECT_NEAR(bf16.at(kind).mrr, fp32.at(kind).mrr, kBf16MrrBound) << kind;
  }
  EXPECT_GE(bf16.at("inverse").mrr, kLearnedMrrGap);
}

// Two trainers on four partitions each train their own copy of the relation
// parameters, summed at every round end (train/schedule/parameter_sync.h):
// they learn the relations as one trainer does on the same partitions. A
// merge that drops the trainers' changes leaves relations near their init,
// far below (InProcessSyncTest checks the sum itself).
TEST_F(KgQualityTest, TwoTrainersMergingRelationsLearnWhatOneTrainerLearns) {
  const auto one =
      TrainAndEval("one-trainer", {"--operator", "complex_diagonal", "--threads", "2"}, "kg4");
  const auto two = TrainAndEval(
      "two-trainers", {"--operator", "complex_diagonal", "--threads", "2", "--trainers", "2"},
      "kg4");
  for (const char* kind : {"inverse", "symmetric"}) {
    SCOPED_TRACE(kind);
    std::printf("[ KG ] 4 partitions, %s MRR: one trainer %.3f, two trainers %.3f\n", kind,
                one.at(kind).mrr, two.at(kind).mrr);
    EXPECT_NEAR(two.at(kind).mrr, one.at(kind).mrr, kTwoTrainersMrrBound);
  }
}

TEST_F(KgQualityTest, TunePicksTheBetterOfTwoSettingsAndWritesAFlagfile) {
  const std::string graph = Path("tuned");
  ASSERT_EQ(RunShell("cp -r " + Path("kg") + " " + graph), 0);
  // A step of 1e-4 leaves the model near its random start.
  const ProcessResult tune =
      Run({"tune", graph, "--grid", "lr=0.0001,0.1", "--grid", "num-uniform-negs=20",
           "--operator", "complex_diagonal", "--dim", "32", "--sample-edges", "0", "--threads",
           "1", "--json"});
  const nlohmann::json j = nlohmann::json::parse(tune.out);
  ASSERT_EQ(j.at("runs").size(), 2u);
  EXPECT_EQ(j.at("best").get<int>(), 1);
  EXPECT_GT(j["runs"][1]["valid_mrr"].get<double>(), 2 * j["runs"][0]["valid_mrr"].get<double>());
  const std::string flagfile = j.at("flagfile").get<std::string>();
  const std::string flags = ReadWholeFile(flagfile);
  EXPECT_NE(flags.find("--lr=0.1\n"), std::string::npos) << flags;
  EXPECT_NE(flags.find("--num_uniform_negs=20\n"), std::string::npos) << flags;
  EXPECT_NE(flags.find("--operator=complex_diagonal\n"), std::string::npos) << flags;
  // The user's graph has no checkpoint, and train reads the flagfile.
  const ProcessResult train =
      Run({"train", graph, "--flagfile=" + flagfile, "--epochs", "1", "--threads", "1", "--json"});
  const nlohmann::json epoch = nlohmann::json::parse(train.out.substr(0, train.out.find('\n')));
  EXPECT_NEAR(epoch.at("lr").get<double>(), 0.1, 1e-6);
  EXPECT_EQ(train.err.find("resumed"), std::string::npos);
}

}  // namespace
}  // namespace ember
