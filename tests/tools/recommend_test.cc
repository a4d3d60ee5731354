// Recommenders end to end on a typed user-item graph with planted tastes:
// `ember recommend` writes each user's top K items, exact and without what
// the user already has; `ember eval --protocol recommend` scores them
// against held-out items beside a popularity baseline, which the model must
// beat by a clear margin.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "partition/importer.h"
#include "storage/base/status_macros.h"
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

// Imports `o` and trains the graph with `t`.
absl::Status ImportAndTrain(const ImportOptions& o, const TrainOptions& t) {
  absl::StatusOr<ImportSummary> imported = ImportGraph(o);
  if (!imported.ok()) return imported.status();
  return TrainGraph(o.out, t).status();
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
    TrainOptions t;
    t.model.dim = 16;
    t.epochs = 8;
    t.optimizer.lr = 0.1f;
    t.pipeline.batch_size = 500;
    t.devices.threads = 2;
    t.seed = 1;
    const absl::Status s = ImportAndTrain(o, t);
    ASSERT_TRUE(s.ok()) << s;
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
  o.exclude_known.clear();
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

// The rows of a tsv output: (user, item) in order.
std::vector<std::pair<std::string, std::string>> TsvRows(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    EXPECT_EQ(f.size(), 4u) << line;
    if (f.size() == 4) out.emplace_back(f[0], f[1]);
  }
  return out;
}

// The users of a tsv output, each once, in the order of their first row.
std::vector<std::string> TsvUsers(const std::string& text) {
  std::vector<std::string> users;
  for (const auto& [user, item] : TsvRows(text)) {
    if (users.empty() || users.back() != user) users.push_back(user);
  }
  return users;
}

// Users of both user partitions, in an order that is not the graph's.
std::vector<std::string> UsersOutOfOrder(const ember::Graph& g) {
  std::vector<std::pair<uint64_t, std::string>> by_id;
  for (int u : {5, 7, 123, 400, 650, 799}) {
    const std::string name = absl::StrCat("user", u);
    auto ref = g.LookupNode(name);
    EXPECT_TRUE(ref.ok()) << ref.status();
    if (ref.ok()) by_id.emplace_back(g.GlobalId(*ref), name);
  }
  std::sort(by_id.rbegin(), by_id.rend());  // descending ids
  std::vector<std::string> out;
  for (const auto& [id, name] : by_id) out.push_back(name);
  return out;
}

TEST_F(RecommendTest, OutDashWritesToStdoutInTheUsersOrder) {
  auto g = ember::Graph::Open(Graph());
  ASSERT_TRUE(g.ok());
  const std::vector<std::string> users = UsersOutOfOrder(**g);
  const std::string list = tmp_.Sub("users.txt");
  std::ofstream(list) << absl::StrJoin(users, "\n") << "\n";
  ProcessResult r = Ember({"recommend", Graph(), "--users", list, "--k", "3", "--out", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(TsvUsers(r.out), users) << r.out;
  EXPECT_EQ(TsvRows(r.out).size(), users.size() * 3);
  EXPECT_THAT(r.err, HasSubstr("recommended item x 3"));  // the summary, off stdout
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("-")));
  // The same from standard input and from --user, the same rows.
  const std::string file_out = r.out;
  r = RunProcess({kEmber, "recommend", Graph(), "--users", "-", "--k", "3", "--out", "-"},
                 tmp_.path(), list);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, file_out);
  r = Ember({"recommend", Graph(), "--user", absl::StrJoin(users, ","), "--k", "3", "--out", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, file_out);
  // Not both.
  r = Ember({"recommend", Graph(), "--user", "user5", "--users", list, "--out", "-"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("not both"));
}

TEST_F(RecommendTest, RepeatedUsersOnceAndUnknownUsersSkippedUnlessStrict) {
  const std::string list = tmp_.Sub("users.txt");
  std::ofstream(list) << "user7\nuser5\nnobody\nuser7\nuser5\nuser9\n";
  ProcessResult r = Ember({"recommend", Graph(), "--users", list, "--k", "2", "--out", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(TsvUsers(r.out), (std::vector<std::string>{"user7", "user5", "user9"}));
  EXPECT_THAT(r.err, HasSubstr("2 repeated users recommended for once"));
  EXPECT_THAT(r.err, HasSubstr("skipped 1 user the graph does not know (cold start; first: "
                               "'nobody' (" +
                               list + ":3))"));
  r = Ember({"recommend", Graph(), "--users", list, "--strict", "--out", "-"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(list + ":3: "));
  EXPECT_THAT(r.err, HasSubstr("nobody"));
  EXPECT_EQ(r.out, "");
  // Nobody known at all is an error, not an empty output.
  r = Ember({"recommend", Graph(), "--user", "nobody,noone", "--out", tmp_.Sub("none.tsv")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("none of the 2 users"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("none.tsv")));
}

TEST_F(RecommendTest, JsonlAndNpyHoldTheTsvsRows) {
  auto g = ember::Graph::Open(Graph());
  ASSERT_TRUE(g.ok());
  const std::vector<std::string> users = UsersOutOfOrder(**g);
  const std::string list = absl::StrJoin(users, ",");
  ProcessResult tsv = Ember({"recommend", Graph(), "--user", list, "--k", "4", "--out", "-"});
  ASSERT_EQ(tsv.exit_code, 0) << tsv.err;
  const auto rows = TsvRows(tsv.out);
  ASSERT_EQ(rows.size(), users.size() * 4);

  ProcessResult jsonl = Ember({"recommend", Graph(), "--user", list, "--k", "4", "--out-format",
                               "jsonl", "--out", tmp_.Sub("recs.jsonl")});
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  std::istringstream lines(ReadWholeFile(tmp_.Sub("recs.jsonl")));
  std::string line;
  size_t row = 0;
  for (size_t u = 0; std::getline(lines, line); ++u) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ASSERT_LT(u, users.size());
    EXPECT_EQ(j["user"], users[u]);
    ASSERT_EQ(j["items"].size(), 4u);
    ASSERT_EQ(j["scores"].size(), 4u);
    for (const auto& item : j["items"]) EXPECT_EQ(item, rows[row++].second) << line;
  }
  EXPECT_EQ(row, rows.size());

  const std::string prefix = tmp_.Sub("recs");
  ProcessResult npy = Ember(
      {"recommend", Graph(), "--user", list, "--k", "4", "--out-format", "npy", "--out", prefix});
  ASSERT_EQ(npy.exit_code, 0) << npy.err;
  const std::string ids = ReadWholeFile(prefix + ".ids.npy");
  const std::string scores = ReadWholeFile(prefix + ".scores.npy");
  ASSERT_GT(ids.size(), 10u);
  ASSERT_EQ(ids.substr(0, 6), "\x93NUMPY");
  const size_t data = 10 + (uint8_t(ids[8]) | uint8_t(ids[9]) << 8);
  EXPECT_EQ(data % 64, 0u);
  EXPECT_THAT(ids.substr(10, data - 10), HasSubstr("'descr': '<i8'"));
  EXPECT_THAT(ids.substr(10, data - 10),
              HasSubstr(absl::StrCat("'shape': (", users.size(), ", 4)")));
  EXPECT_THAT(scores.substr(10, data - 10), HasSubstr("'descr': '<f4'"));
  ASSERT_EQ(ids.size(), data + users.size() * 4 * sizeof(int64_t));
  ASSERT_EQ(scores.size(), data + users.size() * 4 * sizeof(float));
  const std::vector<std::string> user_names =
      absl::StrSplit(ReadWholeFile(prefix + ".users.tsv"), '\n', absl::SkipEmpty());
  EXPECT_EQ(user_names, users);
  const std::vector<std::string> item_names =
      absl::StrSplit(ReadWholeFile(prefix + ".items.tsv"), '\n', absl::SkipEmpty());
  EXPECT_EQ(item_names.size(), 200u);
  for (size_t i = 0; i < rows.size(); ++i) {
    int64_t index = 0;
    std::memcpy(&index, ids.data() + data + i * sizeof(int64_t), sizeof index);
    ASSERT_GE(index, 0);
    ASSERT_LT(index, int64_t(item_names.size()));
    EXPECT_EQ(item_names[index], rows[i].second) << "row " << i / 4 << " rank " << i % 4 + 1;
  }
  // npy needs files, not standard output.
  npy = Ember({"recommend", Graph(), "--user", list, "--out-format", "npy", "--out", "-"});
  EXPECT_EQ(npy.exit_code, 1);
  EXPECT_THAT(npy.err, HasSubstr("path prefix"));
}

// By default every split's links are left out: the graph's 20 % test
// items are never recommended; --exclude-known=train offers them again.
TEST_F(RecommendTest, ExcludeKnownLeavesOutEverySplitUnlessTrain) {
  auto g = ember::Graph::Open(Graph());
  ASSERT_TRUE(g.ok());
  const Manifest& m = (*g)->manifest();
  std::set<std::pair<std::string, std::string>> test_links;
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    for (uint32_t q = 0; q < m.num_partitions; ++q) {
      ASSERT_TRUE(
          (*g)->ForEachEdgeBlock(
                  Split::kTest, p, q,
                  [&](std::span<const Edge> block) {
                    for (const Edge& e : block) {
                      test_links.emplace(*(*g)->NodeName({p, e.src}), *(*g)->NodeName({q, e.dst}));
                    }
                    return absl::OkStatus();
                  })
              .ok());
    }
  }
  ASSERT_FALSE(test_links.empty());
  auto recommended_test_links = [&](const std::string& text) {
    int n = 0;
    for (const auto& row : TsvRows(text)) n += test_links.count(row);
    return n;
  };
  ProcessResult all = Ember({"recommend", Graph(), "--k", "10", "--out", "-"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(recommended_test_links(all.out), 0);
  ProcessResult bare = Ember({"recommend", Graph(), "--k", "10", "--exclude-known", "--out", "-"});
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(bare.out, all.out);
  ProcessResult train =
      Ember({"recommend", Graph(), "--k", "10", "--exclude-known=train", "--out", "-"});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_GT(recommended_test_links(train.out), 100) << "the model finds held-out items";
  ProcessResult none =
      Ember({"recommend", Graph(), "--k", "10", "--noexclude-known", "--out", "-"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_GT(recommended_test_links(none.out), 100);
}

// A graph of 100 nodes (untyped), trained briefly.
class TinyRecommendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string text;
    for (int i = 0; i < 100; ++i) {
      for (int step : {1, 7, 31}) text += absl::StrCat("n", i, "\tn", (i + step) % 100, "\n");
    }
    std::ofstream(tmp_.Sub("edges.tsv")) << text;
    ImportOptions o;
    o.out = tmp_.Sub("g");
    o.files = {tmp_.Sub("edges.tsv")};
    o.seed = 1;
    o.threads = 2;
    TrainOptions t;
    t.model.dim = 8;
    t.epochs = 1;
    t.devices.threads = 2;
    t.seed = 1;
    const absl::Status s = ImportAndTrain(o, t);
    ASSERT_TRUE(s.ok()) << s;
  }
  ProcessResult Ember(std::vector<std::string> args) {
    args.insert(args.begin(), kEmber);
    return RunProcess(args, tmp_.path());
  }
  TempDir tmp_;
};

TEST_F(TinyRecommendTest, AHugeKReturnsEveryItemAndATooSmallBudgetIsAClearError) {
  const std::string g = tmp_.Sub("g");
  ProcessResult r = Ember(
      {"recommend", g, "--k", "1048576", "--exclude-known=none", "--user", "n3,n50", "--out", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Every node but the source itself.
  EXPECT_EQ(TsvRows(r.out).size(), 2u * 99);
  r = Ember({"recommend", g, "--k", "1048576", "--out", tmp_.Sub("all.npy-prefix"), "--out-format",
             "npy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(ReadWholeFile(tmp_.Sub("all.npy-prefix.ids.npy")),
              HasSubstr("'shape': (100, 100)"));  // K = min(k, candidates)
  r = Ember({"recommend", g, "--k", "10", "--memory-budget", "64K", "--out", tmp_.Sub("r.tsv")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--memory-budget 64"));
  EXPECT_THAT(r.err, HasSubstr("leaves no room for a source's top 10"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("r.tsv")));
}

TEST_F(TinyRecommendTest, AUsersPathThatDoesNotExistIsAnError) {
  const std::string g = tmp_.Sub("g");
  ProcessResult r =
      Ember({"recommend", g, "--users", tmp_.Sub("no-such-users.txt"), "--out", tmp_.Sub("r.tsv")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(tmp_.Sub("no-such-users.txt") + ": no such file"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("r.tsv")));
  // No --users at all: every source.
  r = Ember({"recommend", g, "--k", "2", "--out", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(TsvUsers(r.out).size(), 100u);
}

// The budget bounds the heaps held at once: a slice of sources at a time,
// the same top Ks as without a budget.
TEST_F(TinyRecommendTest, ABudgetForAFewHeapsGivesTheSameTopKs) {
  auto graph = ember::Graph::Open(tmp_.Sub("g"));
  ASSERT_TRUE(graph.ok());
  auto model = LoadStoredModel(**graph);
  ASSERT_TRUE(model.ok()) << model.status();
  RecommendOptions o;
  o.k = 5;
  o.threads = 1;
  auto collect = [&](const RecommendOptions& options) {
    std::vector<std::pair<uint64_t, std::vector<uint64_t>>> out;
    const absl::Status s =
        Recommend(**graph, *model, options, [&](uint64_t source, std::span<const Scored> top) {
          std::vector<uint64_t> ids;
          for (const Scored& t : top) ids.push_back(t.id);
          out.emplace_back(source, ids);
          return absl::OkStatus();
        });
    EXPECT_TRUE(s.ok()) << s;
    return out;
  };
  const auto unbounded = collect(o);
  ASSERT_EQ(unbounded.size(), 100u);
  auto plan = PlanRecommendMemory((*graph)->manifest(), model->model.dim, o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->heap_k, 5u);
  EXPECT_EQ(plan->heap_bytes, 2 * 5 * sizeof(Scored));
  o.memory_budget = plan->fixed_bytes + 3 * plan->heap_bytes;
  plan = PlanRecommendMemory((*graph)->manifest(), model->model.dim, o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->slice_sources, 3u);
  EXPECT_EQ(collect(o), unbounded);
  // Sources out of order come back in their order.
  o.memory_budget = 0;
  o.sources = {unbounded[40].first, unbounded[2].first, unbounded[77].first};
  const auto picked = collect(o);
  ASSERT_EQ(picked.size(), 3u);
  EXPECT_EQ(picked[0], unbounded[40]);
  EXPECT_EQ(picked[1], unbounded[2]);
  EXPECT_EQ(picked[2], unbounded[77]);
  o.sources.push_back(unbounded[2].first);
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
}

// A typed user-item graph of the relation `likes` from train, valid and
// test lines ("": no such file), trained for an epoch, evaluated at K = 1
// on the test split by the recommender protocol.
absl::StatusOr<RecommendEvalResult> EvaluatePlanted(const std::string& train,
                                                    const std::string& valid,
                                                    const std::string& test) {
  TempDir tmp;
  ImportOptions o;
  o.out = tmp.Sub("g");
  o.schema = "likes:user:item";
  o.threads = 2;
  for (auto [text, name, files] :
       {std::tuple(&train, "train.tsv", &o.files), std::tuple(&valid, "valid.tsv", &o.valid_files),
        std::tuple(&test, "test.tsv", &o.test_files)}) {
    if (text->empty()) continue;
    std::ofstream(tmp.Sub(name)) << *text;
    files->push_back(tmp.Sub(name));
  }
  TrainOptions t;
  t.model.dim = 4;
  t.epochs = 1;
  t.devices.threads = 1;
  RETURN_IF_ERROR(ImportAndTrain(o, t));
  ASSIGN_OR_RETURN(std::unique_ptr<ember::Graph> g, ember::Graph::Open(o.out));
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*g));
  RecommendEvalOptions e;
  e.ks = {1};
  e.split = Split::kTest;
  e.threads = 1;
  return EvaluateRecommendations(*g, model, e);
}

// Train lines: i0 liked by u1..u9, i1 by u1..u8, `extra` by u1..u3 (the
// popularity order i0, i1, extra), and `own` lines first.
std::string PopularItems(const std::string& own, const std::string& extra) {
  std::string train = own;
  for (int u = 1; u <= 9; ++u) absl::StrAppend(&train, "u", u, "\tlikes\ti0\n");
  for (int u = 1; u <= 8; ++u) absl::StrAppend(&train, "u", u, "\tlikes\ti1\n");
  for (int u = 1; u <= 3; ++u) absl::StrAppend(&train, "u", u, "\tlikes\t", extra, "\n");
  return train;
}

// The recommender protocol leaves out what a source has in any other
// split. u0 has i2 in train, the most popular item i0 in valid and the
// second most popular i1 in test: popularity's top 1 for u0 is i1 once i0
// is left out (Recall@1 1.0), i0 if only train were (0.0). u1's test pair
// (u1, i3) is also in its valid split: dropped from the held-out set.
TEST(RecommendProtocolTest, EveryOtherSplitIsLeftOutAndKnownPairsDropped) {
  auto r = EvaluatePlanted(PopularItems("u0\tlikes\ti2\nu9\tlikes\ti3\n", "i2"),
                           "u0\tlikes\ti0\nu1\tlikes\ti3\n", "u0\tlikes\ti1\nu1\tlikes\ti3\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->sources, 1u);  // u1's one held-out pair is known
  EXPECT_EQ(r->held_out, 1u);
  EXPECT_EQ(r->held_out_known, 1u);
  EXPECT_EQ(r->left_out, (std::vector<Split>{Split::kTrain, Split::kValid}));
  ASSERT_EQ(r->popularity.size(), 1u);
  EXPECT_DOUBLE_EQ(r->popularity[0].recall, 1.0);
  EXPECT_DOUBLE_EQ(r->popularity[0].recall_capped, 1.0);
}

// Recall@K divides by the held-out count, capped Recall@K by min(K, held):
// with K = 1 and two held-out items, a hit is 0.5 and 1.0.
TEST(RecommendProtocolTest, CappedRecallDividesByMinKHeld) {
  auto r =
      EvaluatePlanted(PopularItems("u0\tlikes\ti3\n", "i3"), "", "u0\tlikes\ti0\nu0\tlikes\ti1\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->popularity[0].recall, 0.5);
  EXPECT_DOUBLE_EQ(r->popularity[0].recall_capped, 1.0);
}

}  // namespace
}  // namespace ember
