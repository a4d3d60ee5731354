// `ember import --weight-column`: weights parsed per line and stored beside
// their edges (in every bucket, across partitions and the key-range path),
// bad weights refused as "file:line: reason" with nothing left at --out,
// and the id columns of files with a weight column.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "partition/line_parser.h"
#include "storage/graph.h"
#include "tests/partition/test_util.h"

namespace ember::import_test {
namespace {

// (src name, rel name, dst name) -> weight, read back from a graph.
using WeightedEdges = std::map<std::tuple<std::string, std::string, std::string>, float>;

WeightedEdges ReadWeightedEdges(const Graph& g, Split split) {
  const Manifest& m = g.manifest();
  EXPECT_TRUE(m.edge_weights);
  WeightedEdges out;
  for (uint32_t i = 0; i < m.num_partitions; ++i) {
    for (uint32_t j = 0; j < m.num_partitions; ++j) {
      auto cursor = g.OpenEdgeBlocks(split, i, j);
      EXPECT_TRUE(cursor.ok()) << cursor.status();
      if (!cursor.ok()) return out;
      while (true) {
        absl::StatusOr<bool> more = (*cursor)->Next();
        EXPECT_TRUE(more.ok()) << more.status();
        if (!more.ok() || !*more) break;
        const EdgeBlockView block = (*cursor)->block();
        EXPECT_TRUE(block.weighted());
        for (size_t k = 0; k < block.size(); ++k) {
          const Edge e = block[k];
          float w = 0;
          block.CopyWeightsTo(k, 1, &w);
          auto src = g.NodeName(NodeRef{i, e.src});
          auto dst = g.NodeName(NodeRef{j, e.dst});
          EXPECT_TRUE(src.ok() && dst.ok());
          if (!src.ok() || !dst.ok()) return out;
          const auto key = std::make_tuple(*src, m.relations[e.rel], *dst);
          EXPECT_EQ(out.count(key), 0u) << *src << " " << *dst;
          out[key] = w;
        }
      }
    }
  }
  return out;
}

class ImportWeightsTest : public ::testing::Test {
 protected:
  std::string Input(std::string_view name, std::string_view text) {
    const std::string path = tmp_.Sub(name);
    WriteFile(path, text);
    return path;
  }
  ScopedTempDir tmp_;
  const std::string out_ = tmp_.Sub("graph");
};

TEST_F(ImportWeightsTest, RatingsFileWithColumnsAndWeightColumn) {
  // user item rating timestamp
  const std::string in = Input("ratings.tsv",
                               "u1\ti1\t5\t881250949\n"
                               "u1\ti2\t0.5\t881250950\n"
                               "u2\ti1\t3.25\t881250951\n"
                               "u3\ti3\t1e1\t881250952\n");
  ImportOptions o = BasicOptions(out_, {in});
  o.columns = {0, 1};
  o.weight_column = 2;
  o.num_partitions = 2;
  auto s = ImportGraph(o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->weights.min, 0.5);
  EXPECT_EQ(s->weights.max, 10.0);
  EXPECT_DOUBLE_EQ(s->weights.mean, (5 + 0.5 + 3.25 + 10) / 4.0);
  auto g = Graph::Open(out_);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->manifest().format_version, Manifest::kWeightedFormatVersion);
  EXPECT_EQ((*g)->manifest().edge_weight_stats.max, 10.0);
  const std::string rel = (*g)->manifest().relations[0];
  const WeightedEdges want = {{{"u1", rel, "i1"}, 5.0f},
                              {{"u1", rel, "i2"}, 0.5f},
                              {{"u2", rel, "i1"}, 3.25f},
                              {{"u3", rel, "i3"}, 10.0f}};
  EXPECT_EQ(ReadWeightedEdges(**g, Split::kTrain), want);
}

// Without --columns, the fields other than the weight are the ids: 2 of
// them src dst, 3 src rel dst.
TEST_F(ImportWeightsTest, IdColumnsAreTheOtherFields) {
  {
    const std::string in = Input("a.tsv", "2.5\ta\tb\n1\tb\tc\n");
    ImportOptions o = BasicOptions(out_, {in});
    o.weight_column = 0;
    ASSERT_TRUE(ImportGraph(o).ok());
    auto g = Graph::Open(out_);
    ASSERT_TRUE(g.ok());
    const std::string rel = (*g)->manifest().relations[0];
    const WeightedEdges want = {{{"a", rel, "b"}, 2.5f}, {{"b", rel, "c"}, 1.0f}};
    EXPECT_EQ(ReadWeightedEdges(**g, Split::kTrain), want);
  }
  {
    const std::string in = Input("b.tsv", "a\tlikes\tb\t2\nb\tfollows\tc\t4\n");
    ImportOptions o = BasicOptions(out_, {in});
    o.weight_column = 3;
    o.overwrite = true;
    ASSERT_TRUE(ImportGraph(o).ok());
    auto g = Graph::Open(out_);
    ASSERT_TRUE(g.ok());
    const WeightedEdges want = {{{"a", "likes", "b"}, 2.0f}, {{"b", "follows", "c"}, 4.0f}};
    EXPECT_EQ(ReadWeightedEdges(**g, Split::kTrain), want);
  }
}

// Bad weights stop the import at their line, naming file, line and reason,
// and leave nothing at --out; --skip-bad-lines counts them by reason.
TEST_F(ImportWeightsTest, BadWeightsAreRefusedWithFileAndLine) {
  struct Case {
    std::string weight;
    std::string reason;
    RejectReason code;
  } cases[] = {
      {"abc", "is not a finite number", RejectReason::kBadWeight},
      {"nan", "is not a finite number", RejectReason::kBadWeight},
      {"inf", "is not a finite number", RejectReason::kBadWeight},
      {"1e99", "is not a finite number", RejectReason::kBadWeight},
      {"", "is not a finite number", RejectReason::kBadWeight},
      {"2x", "is not a finite number", RejectReason::kBadWeight},
      {"-1.5", "is negative", RejectReason::kNegativeWeight},
      {"0", "is 0", RejectReason::kZeroWeight},
      {"-0", "is 0", RejectReason::kZeroWeight},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("weight '" + c.weight + "'");
    const std::string in =
        Input("w.tsv", absl::StrCat("# a comment\na\tb\t1\nb\tc\t", c.weight, "\nc\td\t2\n"));
    ImportOptions o = BasicOptions(out_, {in});
    o.columns = {0, 1};
    o.weight_column = 2;
    auto s = ImportGraph(o);
    ASSERT_FALSE(s.ok());
    const std::string msg(s.status().message());
    EXPECT_TRUE(absl::StartsWith(msg, in + ":3: ")) << msg;
    EXPECT_TRUE(absl::StrContains(msg, c.reason)) << msg;
    EXPECT_TRUE(absl::StrContains(msg, "(column 2)")) << msg;
    ExpectNothingAt(out_);

    o.skip_bad_lines = true;
    s = ImportGraph(o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->rejected[static_cast<int>(c.code)], 1u);
    EXPECT_EQ(s->edges.train, 2u);
    std::filesystem::remove_all(out_);
  }
}

// A CSV whose first line names its columns fails on the weight column's
// name; the error says the line looks like a header and what to pass. A
// bad weight further down, or a number-like one, gets no such hint.
TEST_F(ImportWeightsTest, HeaderWithAWeightColumnIsNamedAsAHeader) {
  const std::string in =
      Input("ratings.csv", "user,item,rating,timestamp\nu1,i1,5,100\nu2,i1,3,101\n");
  ImportOptions o = BasicOptions(out_, {in});
  o.columns = {0, 1};
  o.weight_column = 2;
  auto s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  const std::string msg(s.status().message());
  EXPECT_TRUE(absl::StartsWith(msg, in + ":1: ")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "weight 'rating'")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "line 1 looks like a header: pass --header")) << msg;
  ExpectNothingAt(out_);
  o.header = true;
  ASSERT_TRUE(ImportGraph(o).ok());
  std::filesystem::remove_all(out_);

  for (const char* text : {"u1,i1,5\nu2,i1,rating\n", "u1,i1,nan\nu2,i1,5\n"}) {
    SCOPED_TRACE(text);
    ImportOptions p = BasicOptions(out_, {Input("bad.csv", text)});
    p.columns = {0, 1};
    p.weight_column = 2;
    auto bad = ImportGraph(p);
    ASSERT_FALSE(bad.ok());
    EXPECT_FALSE(absl::StrContains(bad.status().message(), "header")) << bad.status();
  }
}

TEST_F(ImportWeightsTest, MissingWeightColumnIsTooFewColumns) {
  const std::string in = Input("w.tsv", "a\tb\t1\nb\tc\n");
  ImportOptions o = BasicOptions(out_, {in});
  o.columns = {0, 1};
  o.weight_column = 2;
  auto s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StartsWith(s.status().message(), in + ":2: too few columns")) << s.status();
  ExpectNothingAt(out_);
}

TEST_F(ImportWeightsTest, OptionsThatCannotGoWithWeightsAreRefused) {
  const std::string in = Input("w.tsv", "a\tb\t1\n");
  ImportOptions o = BasicOptions(out_, {in});
  o.weight_column = 1;
  o.columns = {0, 1};
  EXPECT_TRUE(absl::StrContains(ImportGraph(o).status().message(), "also named by --columns"));
  o.columns = {0, 2};
  o.dedupe = true;
  EXPECT_TRUE(absl::StrContains(ImportGraph(o).status().message(), "--dedupe"));
  ExpectNothingAt(out_);
}

// The weight the test below gives edge (a, b).
float WeightOf(uint64_t a, uint64_t b) {
  return 0.25f * static_cast<float>(1 + (a * 31 + b) % 997);
}

// Many edges over several partitions, through the key-range path (a budget
// too small for the slot table in one piece, as ImportMemoryBudgetTest):
// every weight stays with its edge.
TEST_F(ImportWeightsTest, WeightsFollowTheirEdgesThroughKeyRanges) {
  constexpr uint64_t kLines = 1'200'000;
  std::string text;
  text.reserve(kLines * 24);
  uint64_t x = 11;
  for (uint64_t i = 0; i < kLines; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t a = (x >> 20) % 16'000'000, b = (x >> 40) % 16'000'000 + (i % 7);
    absl::StrAppend(&text, a, "\t", b, "\t", WeightOf(a, b), "\n");
  }
  const std::string in = Input("big.tsv", text);
  ImportOptions o = BasicOptions(out_, {in});
  o.weight_column = 2;
  o.integer_ids = true;
  o.num_partitions = 2;
  o.memory_budget = 64ull << 20;
  auto s = ImportGraph(o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->key_ranges, 1u) << "64 MiB did not split the slot table";
  auto g = Graph::Open(out_);
  ASSERT_TRUE(g.ok());
  const Manifest& m = (*g)->manifest();
  std::vector<std::vector<uint64_t>> ids(m.num_partitions);
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    ASSERT_TRUE((*g)->ForEachNodeName(p,
                                      [&](uint32_t, std::string_view name) {
                                        uint64_t v = 0;
                                        EXPECT_TRUE(ParseCanonicalU64(name, &v)) << name;
                                        ids[p].push_back(v);
                                        return absl::OkStatus();
                                      })
                    .ok());
  }
  uint64_t edges = 0, wrong = 0;
  for (uint32_t i = 0; i < m.num_partitions; ++i) {
    for (uint32_t j = 0; j < m.num_partitions; ++j) {
      auto cursor = (*g)->OpenEdgeBlocks(Split::kTrain, i, j);
      ASSERT_TRUE(cursor.ok());
      while (*(*cursor)->Next()) {
        const EdgeBlockView block = (*cursor)->block();
        std::vector<float> w(block.size());
        block.CopyWeightsTo(0, block.size(), w.data());
        for (size_t k = 0; k < block.size(); ++k) {
          const Edge e = block[k];
          wrong += w[k] != WeightOf(ids[i][e.src], ids[j][e.dst]);
          ++edges;
        }
      }
    }
  }
  EXPECT_EQ(edges, kLines);
  EXPECT_EQ(wrong, 0u);
}

// Graphs imported without a weight column are as before: format version 1,
// unweighted blocks.
TEST_F(ImportWeightsTest, UnweightedImportKeepsVersionOne) {
  const std::string in = Input("e.tsv", "a\tb\nb\tc\n");
  ASSERT_TRUE(ImportGraph(BasicOptions(out_, {in})).ok());
  auto g = Graph::Open(out_);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->manifest().format_version, Manifest::kFormatVersion);
  EXPECT_FALSE((*g)->manifest().edge_weights);
  auto cursor = (*g)->OpenEdgeBlocks(Split::kTrain, 0, 0);
  ASSERT_TRUE(cursor.ok());
  ASSERT_TRUE(*(*cursor)->Next());
  EXPECT_FALSE((*cursor)->block().weighted());
}

}  // namespace
}  // namespace ember::import_test
