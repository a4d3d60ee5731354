// `ember eval` end to end: JSON keys and values equal to the library's,
// the table for people, and errors.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "tests/partition/test_util.h"
#include "tests/storage/test_graph.h"
#include "tests/train/stored_model_util.h"
#include "train/checkpoint.h"
#include "train/evaluator.h"

namespace ember {
namespace {

using ::ember::import_test::ProcessResult;
using ::ember::import_test::RunProcess;
using ::ember::testing::ImportTinyGraph;
using ::ember::testing::TempDir;
using ::ember::testing::TinyGraphSpec;
using ::ember::testing::WriteStoredModel;
using ::testing::HasSubstr;

const std::string kEmber = EMBER_BINARY;

TinyGraphSpec Spec() {
  TinyGraphSpec spec;
  spec.train = "a\tc\nd\te\ne\tf\nf\tb\nb\ta\nc\td\n";
  spec.test = "a\tb\nc\te\nf\ta\n";
  spec.valid = "d\tf\n";
  spec.partitions = 2;
  return spec;
}

void Row(std::string_view name, float* row) {
  const float x[] = {1, 2, 3, 2, 0, 5};
  row[0] = x[name[0] - 'a'];
  row[1] = 0.5f * (name[0] - 'a');
  row[2] = -1;
}

void ExpectMetricsJson(const nlohmann::json& j, const RankMetrics& m) {
  EXPECT_DOUBLE_EQ(j.at("mrr").get<double>(), m.mrr);
  EXPECT_DOUBLE_EQ(j.at("mr").get<double>(), m.mr);
  EXPECT_DOUBLE_EQ(j.at("hits@1").get<double>(), m.hits1);
  EXPECT_DOUBLE_EQ(j.at("hits@3").get<double>(), m.hits3);
  EXPECT_DOUBLE_EQ(j.at("hits@10").get<double>(), m.hits10);
  EXPECT_DOUBLE_EQ(j.at("auc").get<double>(), m.auc);
  EXPECT_EQ(j.size(), 6u) << j.dump();
}

EvalResult Library(const std::string& dir, const EvalOptions& options) {
  auto graph = Graph::Open(dir);
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto model = LoadStoredModel(**graph);
  EXPECT_TRUE(model.ok()) << model.status();
  auto r = Evaluate(**graph, *model, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : EvalResult{};
}

class EvalCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.Sub("g");
    ASSERT_TRUE(ImportTinyGraph(dir_, tmp_.path(), Spec()).ok());
    ModelOptions model;
    model.dim = 3;
    model.op = Operator::kDiagonal;
    ASSERT_TRUE(WriteStoredModel(dir_, model, Row).ok());
  }
  ProcessResult Ember(std::vector<std::string> args) {
    args.insert(args.begin(), kEmber);
    return RunProcess(args, tmp_.path());
  }

  TempDir tmp_;
  std::string dir_;
};

TEST_F(EvalCliTest, JsonMatchesLibrary) {
  ProcessResult p = Ember({"eval", dir_, "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  EXPECT_EQ(std::count(p.out.begin(), p.out.end(), '\n'), 1) << p.out;
  const EvalResult want = Library(dir_, EvalOptions{});
  ExpectMetricsJson(j.at("filtered"), want.filtered);
  ExpectMetricsJson(j.at("raw"), want.raw);
  EXPECT_EQ(j.at("edges"), 3);
  EXPECT_EQ(j.at("split"), "test");
  EXPECT_EQ(j.at("negatives"), "all");
  EXPECT_EQ(j.size(), 5u) << p.out;
}

TEST_F(EvalCliTest, ValidSplitSampledNegativesAndMaxEdges) {
  ProcessResult p = Ember({"eval", dir_, "--split=valid", "--negatives=4",
                           "--max-edges=1", "--seed=9", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  EvalOptions o;
  o.split = Split::kValid;
  o.negatives = 4;
  o.max_edges = 1;
  o.seed = 9;
  const EvalResult want = Library(dir_, o);
  ExpectMetricsJson(j.at("filtered"), want.filtered);
  ExpectMetricsJson(j.at("raw"), want.raw);
  EXPECT_EQ(j.at("edges"), 1);
  EXPECT_EQ(j.at("split"), "valid");
  EXPECT_EQ(j.at("negatives"), 4);
}

TEST_F(EvalCliTest, TableForPeople) {
  ProcessResult p = Ember({"eval", dir_, "--negatives", "all"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("test split: 3 edges"));
  EXPECT_THAT(p.out, HasSubstr("filtered"));
  EXPECT_THAT(p.out, HasSubstr("Hits@10"));
  EXPECT_THAT(p.out, HasSubstr("all 6 nodes"));
}

TEST_F(EvalCliTest, BadFlags) {
  ProcessResult p = Ember({"eval", dir_, "--split=bogus"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("--split takes test, valid or train"));
  p = Ember({"eval", dir_, "--negatives=lots"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("--negatives takes all, auto"));
  p = Ember({"eval"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("usage: ember eval GRAPH"));
}

TEST(EvalCliErrorTest, MissingCheckpointOrSplit) {
  TempDir tmp;
  const std::string dir = tmp.Sub("g");
  TinyGraphSpec spec;
  spec.train = "a\tb\nb\tc\n";
  ASSERT_TRUE(ImportTinyGraph(dir, tmp.path(), spec).ok());
  ProcessResult p = RunProcess({kEmber, "eval", dir, "--json"}, tmp.path());
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("ember eval: "));
  EXPECT_THAT(p.err, HasSubstr("no trained embeddings yet"));
  EXPECT_EQ(p.out, "");

  ModelOptions model;
  model.dim = 2;
  ASSERT_TRUE(WriteStoredModel(dir, model, [](std::string_view, float* r) {
                r[0] = r[1] = 1;
              }).ok());
  p = RunProcess({kEmber, "eval", dir}, tmp.path());
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("split test of"));
  EXPECT_THAT(p.err, HasSubstr("has no edges"));

  p = RunProcess({kEmber, "eval", tmp.Sub("nowhere")}, tmp.path());
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("nowhere"));
}

}  // namespace
}  // namespace ember
