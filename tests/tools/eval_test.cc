// `ember eval` end to end: JSON keys and values equal to the library's,
// the protocol label, per-relation metrics, the table for people, errors,
// and the flags' mapping onto EvalOptions.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "tests/partition/test_util.h"
#include "tests/storage/test_graph.h"
#include "tests/train/stored_model_util.h"
#include "tools/cli/eval_flags.h"
#include "train/model/checkpoint.h"
#include "train/eval/evaluator.h"

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

// Two relations: `likes` (id 0) and `knows` (id 1).
TinyGraphSpec Spec() {
  TinyGraphSpec spec;
  spec.train =
      "a\tlikes\tc\nd\tknows\te\ne\tlikes\tf\nf\tknows\tb\nb\tlikes\ta\n"
      "c\tknows\td\n";
  spec.test = "a\tlikes\tb\nc\tknows\te\nf\tlikes\ta\n";
  spec.valid = "d\tknows\tf\n";
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
  EXPECT_DOUBLE_EQ(j.at("mrr_ci95").get<double>(), m.mrr_ci95);
  EXPECT_DOUBLE_EQ(j.at("mr").get<double>(), m.mr);
  EXPECT_DOUBLE_EQ(j.at("hits@1").get<double>(), m.hits1);
  EXPECT_DOUBLE_EQ(j.at("hits@1_ci95").get<double>(), m.hits1_ci95);
  EXPECT_DOUBLE_EQ(j.at("hits@3").get<double>(), m.hits3);
  EXPECT_DOUBLE_EQ(j.at("hits@3_ci95").get<double>(), m.hits3_ci95);
  EXPECT_DOUBLE_EQ(j.at("hits@10").get<double>(), m.hits10);
  EXPECT_DOUBLE_EQ(j.at("hits@10_ci95").get<double>(), m.hits10_ci95);
  EXPECT_DOUBLE_EQ(j.at("auc").get<double>(), m.auc);
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
  EXPECT_GT(want.filtered.mrr_ci95, 0);
  EXPECT_EQ(j.at("split"), "test");
  EXPECT_EQ(j.at("protocol"),
            "filtered ranking against all 6 nodes on all 3 edges (6 queries)");
  EXPECT_EQ(j.at("negatives"), "all");
  EXPECT_EQ(j.at("edges"), 3);
  EXPECT_EQ(j.at("split_edges"), 3);
  EXPECT_EQ(j.at("queries"), 6);
  EXPECT_GE(j.at("seconds").get<double>(), 0);
  EXPECT_FALSE(j.contains("relations")) << p.out;
}

TEST_F(EvalCliTest, SampledNegativesStayAvailableAndLabelled) {
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
  EXPECT_EQ(j.at("protocol"),
            "filtered ranking against 4 sampled negatives (optimistic) on all 1 "
            "edges (2 queries)");

  p = Ember({"eval", dir_, "--negatives", "4", "--max-edges", "2"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("test split: filtered ranking against 4 sampled "
                               "negatives (optimistic) on a sample of 2 of 3 "
                               "edges (4 queries)"));
}

TEST_F(EvalCliTest, ByRelationMatchesLibrary) {
  ProcessResult p = Ember({"eval", dir_, "--by-relation", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json j = nlohmann::json::parse(p.out);
  EvalOptions o;
  o.by_relation = true;
  const EvalResult want = Library(dir_, o);
  ASSERT_EQ(want.by_relation.size(), 2u);
  const nlohmann::json& rels = j.at("relations");
  ASSERT_EQ(rels.size(), 2u) << p.out;
  const char* names[] = {"likes", "knows"};
  for (size_t id = 0; id < 2; ++id) {
    const RankMetrics& m = want.by_relation[id];
    EXPECT_EQ(rels[id].at("relation"), names[id]);
    EXPECT_EQ(rels[id].at("id"), id);
    EXPECT_EQ(rels[id].at("edges"), m.edges);
    EXPECT_EQ(rels[id].at("queries"), m.count);
    EXPECT_DOUBLE_EQ(rels[id].at("mrr").get<double>(), m.mrr);
    EXPECT_DOUBLE_EQ(rels[id].at("hits@10").get<double>(), m.hits10);
  }
  EXPECT_EQ(rels[0].at("edges"), 2);  // a likes b, f likes a
  EXPECT_EQ(rels[1].at("edges"), 1);  // c knows e

  p = Ember({"eval", dir_, "--by-relation"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("per relation (filtered):"));
  EXPECT_THAT(p.out, HasSubstr("\nlikes "));
  EXPECT_THAT(p.out, HasSubstr("\nknows "));
}

TEST_F(EvalCliTest, TableForPeople) {
  ProcessResult p = Ember({"eval", dir_});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("test split: filtered ranking against all 6 "
                               "nodes on all 3 edges (6 queries)"));
  EXPECT_THAT(p.out, HasSubstr("filtered"));
  EXPECT_THAT(p.out, HasSubstr("Hits@10"));
  EXPECT_THAT(p.out, HasSubstr(" ± "));
  EXPECT_THAT(p.out, HasSubstr("95 % confidence interval"));
  EXPECT_THAT(p.out, ::testing::Not(HasSubstr("per relation")));
}

TEST_F(EvalCliTest, BadFlags) {
  ProcessResult p = Ember({"eval", dir_, "--split=bogus"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("--split takes test, valid or train"));
  for (const char* bad : {"--negatives=lots", "--negatives=0", "--negatives=auto"}) {
    p = Ember({"eval", dir_, bad});
    EXPECT_EQ(p.exit_code, 1) << bad;
    EXPECT_THAT(p.err, HasSubstr("flag 'negatives'")) << bad;
    EXPECT_THAT(p.err, HasSubstr("expected all")) << bad;
  }
  p = Ember({"eval"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("usage: ember eval GRAPH"));
}

TEST_F(EvalCliTest, AModelOverTheMemoryBudgetIsRefusedBeforeRanking) {
  auto graph = Graph::Open(dir_);
  ASSERT_TRUE(graph.ok());
  auto model = LoadStoredModel(**graph);
  ASSERT_TRUE(model.ok());
  // The CLI ranks on the machine's threads (--threads 0): so does the plan.
  auto plan = PlanEvalMemory((*graph)->manifest(), model->model, 0, EvalOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const uint64_t need = plan->bytes();  // all 3 test edges in one batch
  const std::vector<uint64_t> partition_sizes = (*graph)->manifest().partition_sizes;
  ProcessResult p = Ember({"eval", dir_, absl::StrCat("--memory-budget=", need - 1)});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("over the memory budget"));
  EXPECT_THAT(p.err, HasSubstr("ember eval: ranking needs about"));
  EXPECT_THAT(p.err, HasSubstr(absl::StrCat("the largest partition, ",
                                            std::max(partition_sizes[0], partition_sizes[1]),
                                            " nodes x 3 dims")));
  EXPECT_THAT(p.err, HasSubstr("raise --memory-budget"));
  EXPECT_EQ(p.out, "");
  p = Ember({"eval", dir_, absl::StrCat("--memory-budget=", need), "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  ExpectMetricsJson(nlohmann::json::parse(p.out).at("filtered"),
                    Library(dir_, EvalOptions{}).filtered);
}

// The protocol no longer depends on the graph: whatever its size (the old
// `auto` switched to 1000 sampled negatives above 100,000 nodes), the
// defaults rank a sample of 10,000 edges against every node.
TEST(EvalFlagsTest, DefaultIsAllNodesOnASampleOfEdges) {
  absl::FlagSaver saver;
  auto options = tools::EvalOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->negatives, 0u);
  EXPECT_EQ(options->max_edges, 10000u);
  EXPECT_EQ(options->split, Split::kTest);
  EXPECT_FALSE(options->by_relation);
  EXPECT_EQ(options->memory_budget, uint64_t{2} << 30);  // as train's

  absl::SetFlag(&FLAGS_negatives, tools::EvalNegatives{1000});
  absl::SetFlag(&FLAGS_max_edges, uint64_t{0});
  absl::SetFlag(&FLAGS_by_relation, true);
  options = tools::EvalOptionsFromFlags();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->negatives, 1000u);
  EXPECT_EQ(options->max_edges, 0u);
  EXPECT_TRUE(options->by_relation);

  // Train's per-epoch validation defaults to the same protocol, smaller.
  EXPECT_EQ(absl::GetFlag(FLAGS_eval_negatives).value, 0u);
  EXPECT_EQ(absl::GetFlag(FLAGS_eval_max_edges), 2000u);
}

TEST(EvalFlagsTest, NegativesParse) {
  tools::EvalNegatives n{7};
  std::string error;
  EXPECT_TRUE(tools::AbslParseFlag("all", &n, &error));
  EXPECT_EQ(n.value, 0u);
  EXPECT_TRUE(tools::AbslParseFlag("1000", &n, &error));
  EXPECT_EQ(n.value, 1000u);
  EXPECT_EQ(tools::AbslUnparseFlag(n), "1000");
  EXPECT_EQ(tools::AbslUnparseFlag(tools::EvalNegatives{}), "all");
  for (const char* bad : {"0", "auto", "-3", "", "4294967296"}) {
    EXPECT_FALSE(tools::AbslParseFlag(bad, &n, &error)) << bad;
    EXPECT_THAT(error, HasSubstr("expected all")) << bad;
  }
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
