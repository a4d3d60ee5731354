// Training a typed graph (a user-item graph with a schema): only the buckets
// that join the types are trained, so an epoch loads each user partition
// once beside the one item partition; and the model learns the planted
// tastes, ranked among the items only.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"
#include "tests/train/train_test_util.h"
#include "train/train_loop.h"

namespace ember::train_test {
namespace {

using ::ember::testing::TempDir;

// 1200 users, 240 items and 8 taste groups: user u is in group u % 8, item
// i in group i % 8, and each user likes 12 distinct items, 11 of them of its
// own group (a likes<TAB>item line each).
std::string PlantedTastes(const std::string& path) {
  std::string text;
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (int u = 0; u < 1200; ++u) {
    std::vector<int> picked;
    while (picked.size() < 12) {
      const int group = picked.size() < 11 ? u % 8 : static_cast<int>(next() % 8);
      const int item = group + 8 * static_cast<int>(next() % 30);
      if (std::find(picked.begin(), picked.end(), item) == picked.end()) picked.push_back(item);
    }
    for (int item : picked) text += absl::StrCat("user", u, "\tlikes\titem", item, "\n");
  }
  WriteWholeFile(path, text);
  return path;
}

TEST(TypedTrainTest, UserPartitionsStreamBesideOneResidentItemPartition) {
  TempDir tmp;
  ImportOptions o;
  o.out = tmp.Sub("g");
  o.files = {PlantedTastes(tmp.Sub("likes.tsv"))};
  o.schema = "likes:user:item";
  o.type_partitions = {{"user", 4}};
  o.split.fraction = {0.9, 0.05, 0.05};
  o.seed = 7;
  o.threads = 2;
  ASSERT_TRUE(ImportGraph(o).ok());

  TrainOptions t = SmallOptions(/*epochs=*/6);
  t.model.dim = 16;
  t.optimizer.lr = 0.1f;
  t.schedule.buffer_partitions = 2;  // out of core: a user partition beside the items
  auto summary = TrainGraph(o.out, t);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->epochs.size(), 6u);
  for (const EpochStats& e : summary->epochs) {
    // 4 buckets (user p, items), each needing its user partition; the items
    // stay resident between them. Untyped, the 5 x 5 grid's 25 buckets
    // would be walked.
    EXPECT_LE(e.partition_loads, 5u) << "epoch " << e.epoch;
    EXPECT_GT(e.edges, 0u);
  }
  auto eval = EvalTest(o.out);
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_TRUE(eval->typed);
  // Chance among 240 items and 1200 users is about 0.02; the tastes leave
  // about 30 items per group to rank the right one among.
  EXPECT_GT(eval->filtered.mrr, 0.06) << DescribeProtocol(*eval);
}

// A schema relation no edge uses: the import keeps it (with a warning
// naming it) and its type without nodes, whose partition comes last;
// training and its validation against sampled negatives run (a type
// without nodes offers no negatives, never an id past the last node), and
// so does a later --append that brings the relation's edges.
TEST(TypedTrainTest, ASchemaRelationWithoutEdgesIsKeptAndTrainsAndValidates) {
  TempDir tmp;
  ImportOptions o;
  o.out = tmp.Sub("g");
  std::string text;
  for (int u = 0; u < 60; ++u) {
    for (int k = 0; k < 4; ++k)
      text += absl::StrCat("user", u, "\tlikes\titem", (u + 7 * k) % 20, "\n");
  }
  WriteWholeFile(tmp.Sub("likes.tsv"), text);
  o.files = {tmp.Sub("likes.tsv")};
  o.schema = "likes:user:item,tagged:item:tag";
  o.split.fraction = {0.8, 0.2, 0.0};
  o.seed = 7;
  o.threads = 2;
  auto imported = ImportGraph(o);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->warnings.size(), 1u);
  EXPECT_NE(imported->warnings[0].find("relation 'tagged' of the schema (item -> tag) has no edge"),
            std::string::npos)
      << imported->warnings[0];
  {
    auto g = Graph::Open(o.out);
    ASSERT_TRUE(g.ok()) << g.status();
    const Manifest& m = (*g)->manifest();
    EXPECT_EQ(m.relations, (std::vector<std::string>{"likes", "tagged"}));
    ASSERT_EQ(m.node_types.size(), 3u);
    EXPECT_EQ(m.NodesOf(2), 0u);
    EXPECT_EQ(m.FirstPartitionOf(2), m.num_partitions - 1);
  }
  TrainOptions t = SmallOptions(/*epochs=*/1);
  t.model.dim = 8;
  t.validation.enabled = true;
  t.validation.negatives = 10;
  auto summary = TrainGraph(o.out, t);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_TRUE(summary->epochs.back().valid.has_value());
  EXPECT_GT(summary->epochs.back().valid->edges, 0u);

  // The kept relation takes its edges by --append.
  WriteWholeFile(tmp.Sub("tags.tsv"), "item1\ttagged\ttag0\nitem2\ttagged\ttag1\n");
  ImportOptions a;
  a.out = o.out;
  a.append = true;
  a.files = {tmp.Sub("tags.tsv")};
  a.threads = 2;
  auto appended = ImportGraph(a);
  ASSERT_TRUE(appended.ok()) << appended.status();
}

}  // namespace
}  // namespace ember::train_test
