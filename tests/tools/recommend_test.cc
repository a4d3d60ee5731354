// Recommenders end to end on a typed user-item graph with planted tastes:
// `ember recommend` writes each user's top K items, exact and without what
// the user already has; `ember eval --protocol recommend` scores them
// against held-out items beside a popularity baseline, which the model must
// beat by a clear margin.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "partition/importer.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "train/eval/recommend_eval.h"
#include "train/eval/recommender.h"
#include "train/model/candidate_scorer.h"
#include "train/model/checkpoint.h"
#include "train/train_loop.h"

namespace ember {
namespace {

using ::ember::testing::ProcessResult;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunProcess;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;

const std::string kEmber = EMBER_BINARY;

// 800 users, 200 items in 8 taste groups (user u and item i in groups u % 8
// and i % 8); each user likes 15 items, 14 of its own group; items of a
// group are liked in proportion to 1/(rank+1), so popularity is a real,
// beatable baseline.
std::string PlantedTastes() {
  std::string text;
  uint64_t state = 99;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  auto zipf_item = [&](int group) {
    // Rank r in 0..24 with weight 1/(r+1): inverse CDF by linear search.
    static const std::vector<double> cdf = [] {
      std::vector<double> c;
      double sum = 0;
      for (int r = 0; r < 25; ++r) c.push_back(sum += 1.0 / (r + 1));
      for (double& x : c) x /= sum;
      return c;
    }();
    const double u = (next() % 1000000) / 1e6;
    const int r = static_cast<int>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    return group + 8 * std::min(r, 24);
  };
  for (int u = 0; u < 800; ++u) {
    std::set<int> items;
    while (items.size() < 15) {
      items.insert(items.size() < 14 ? zipf_item(u % 8) : zipf_item(static_cast<int>(next() % 8)));
    }
    for (int i : items) text += absl::StrCat("user", u, "\tlikes\titem", i, "\n");
  }
  return text;
}

class RecommendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string file = dir_->Sub("likes.tsv");
    std::ofstream(file) << PlantedTastes();
    ImportOptions o;
    o.out = dir_->Sub("g");
    o.files = {file};
    o.schema = "likes:user:item";
    o.type_partitions = {{"user", 2}};
    o.split.fraction = {0.8, 0.0, 0.2};
    o.seed = 3;
    o.threads = 2;
    auto imported = ImportGraph(o);
    ASSERT_TRUE(imported.ok()) << imported.status();
    TrainOptions t;
    t.model.dim = 16;
    t.epochs = 8;
    t.optimizer.lr = 0.1f;
    t.pipeline.batch_size = 500;
    t.devices.threads = 2;
    t.seed = 1;
    auto trained = TrainGraph(o.out, t);
    ASSERT_TRUE(trained.ok()) << trained.status();
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Graph() { return dir_->Sub("g"); }

  ProcessResult Ember(std::vector<std::string> args) {
    args.insert(args.begin(), kEmber);
    return RunProcess(args, tmp_.path());
  }

  static TempDir* dir_;
  TempDir tmp_;
};

TempDir* RecommendTest::dir_ = nullptr;

// The train links of each user (names).
std::map<std::string, std::set<std::string>> TrainLinks(const ember::Graph& g) {
  std::map<std::string, std::set<std::string>> out;
  const Manifest& m = g.manifest();
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    for (uint32_t q = 0; q < m.num_partitions; ++q) {
      EXPECT_TRUE(g.ForEachEdgeBlock(Split::kTrain, p, q, [&](std::span<const Edge> block) {
                     for (const Edge& e : block) {
                       out[*g.NodeName({p, e.src})].insert(*g.NodeName({q, e.dst}));
                     }
                     return absl::OkStatus();
                   }).ok());
    }
  }
  return out;
}

TEST_F(RecommendTest, WritesEachUsersTopKItemsWithoutWhatTheyHave) {
  const std::string out = tmp_.Sub("recs.tsv");
  ProcessResult r =
      Ember({"recommend", Graph(), "--relation", "likes", "--k", "5", "--out", out, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["sources"], 800);
  EXPECT_EQ(j["rows"], 800 * 5);
  auto g = ember::Graph::Open(Graph());
  ASSERT_TRUE(g.ok());
  const auto known = TrainLinks(**g);
  std::map<std::string, std::vector<std::pair<double, std::string>>> by_user;
  std::istringstream lines(ReadWholeFile(out));
  std::string line;
  while (std::getline(lines, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    ASSERT_EQ(f.size(), 4u) << line;
    EXPECT_EQ(f[0].rfind("user", 0), 0u) << line;
    EXPECT_EQ(f[1].rfind("item", 0), 0u) << "only items are recommended: " << line;
    auto& list = by_user[f[0]];
    EXPECT_EQ(std::stoi(f[3]), static_cast<int>(list.size()) + 1) << line;
    list.emplace_back(std::stod(f[2]), f[1]);
    const auto it = known.find(f[0]);
    if (it != known.end()) EXPECT_EQ(it->second.count(f[1]), 0u) << "known item: " << line;
  }
  EXPECT_EQ(by_user.size(), 800u);
  for (const auto& [user, list] : by_user) {
    ASSERT_EQ(list.size(), 5u) << user;
    for (size_t i = 1; i < list.size(); ++i) EXPECT_GE(list[i - 1].first, list[i].first) << user;
  }
  // An existing output is refused without --overwrite.
  r = Ember({"recommend", Graph(), "--relation", "likes", "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

// The top K are exactly the K best of a brute-force scoring of every item.
TEST_F(RecommendTest, TopKIsExact) {
  auto g = ember::Graph::Open(Graph());
  ASSERT_TRUE(g.ok());
  const Manifest& m = (*g)->manifest();
  auto model = LoadStoredModel(**g);
  ASSERT_TRUE(model.ok()) << model.status();
  const uint32_t items = m.FirstPartitionOf(1);
  auto item_rows = LoadPartitionEmbeddings(**g, *model, items);
  auto user_rows = LoadPartitionEmbeddings(**g, *model, 0);
  ASSERT_TRUE(item_rows.ok() && user_rows.ok());
  RecommendOptions o;
  o.k = 7;
  o.exclude_known = false;
  o.sources = {m.PartitionBase(0) + 3, m.PartitionBase(0) + 11};
  o.threads = 2;
  int seen = 0;
  const int dim = model->model.dim;
  ASSERT_TRUE(Recommend(**g, *model, o, [&](uint64_t source, std::span<const Scored> top) {
                ++seen;
                const float* u = user_rows->data() + (source - m.PartitionBase(0)) * dim;
                std::vector<std::pair<float, uint64_t>> all;
                for (uint64_t i = 0; i < m.partition_sizes[items]; ++i) {
                  all.emplace_back(-ScorePair(model->model, model->relations.Of(0), u,
                                              item_rows->data() + i * dim),
                                   m.PartitionBase(items) + i);
                }
                std::sort(all.begin(), all.end());
                EXPECT_EQ(top.size(), 7u);
                for (size_t k = 0; k < top.size(); ++k) {
                  EXPECT_NEAR(top[k].score, -all[k].first, 1e-4) << source << " rank " << k;
                }
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(seen, 2);
}

TEST_F(RecommendTest, EvalBeatsPopularityByAClearMargin) {
  ProcessResult r = Ember({"eval", Graph(), "--protocol", "recommend", "--relation", "likes", "--k",
                           "10,20", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["protocol"], "recommend");
  EXPECT_GT(j["sources"].get<int>(), 700);
  const double model = j["model"]["recall@10"], popular = j["popularity"]["recall@10"];
  // Popularity knows only the global item ranks; the model knows each
  // user's group. Measured 0.4 or more against 0.1 or less; the margin left
  // for seeds is wide.
  EXPECT_GT(model, popular + 0.1) << r.out;
  EXPECT_GT(popular, 0.0) << "a popularity baseline that never hits is no baseline";
  EXPECT_GE(j["model"]["recall@20"].get<double>(), model);
  EXPECT_GT(j["model"]["ndcg@10"].get<double>(), j["popularity"]["ndcg@10"].get<double>());
  EXPECT_LE(j["model"]["hit_rate@10"].get<double>(), 1.0);
  // The table for people.
  r = Ember({"eval", Graph(), "--protocol", "recommend", "--k", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Recall@10"));
  EXPECT_THAT(r.out, HasSubstr("popularity"));
  EXPECT_THAT(r.out, HasSubstr("item nodes"));
}

TEST_F(RecommendTest, UsersFileAndWrongTypeIsRefused) {
  const std::string users = tmp_.Sub("users.txt");
  std::ofstream(users) << "user5\nuser7\n";
  const std::string out = tmp_.Sub("some.tsv");
  ProcessResult r = Ember({"recommend", Graph(), "--users", users, "--k", "3", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = ReadWholeFile(out);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6);
  std::ofstream(users) << "user5\nitem7\n";
  r = Ember({"recommend", Graph(), "--users", users, "--out", tmp_.Sub("bad.tsv")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(users + ":2: 'item7' is of type item, not user"));
}

}  // namespace
}  // namespace ember
