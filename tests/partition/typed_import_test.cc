// Typed graphs (partition/schema.h): the schema's forms and errors, and
// imports whose node types each fill their own partitions, so that every
// bucket joins one source type to one destination type.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "partition/schema.h"
#include "storage/graph.h"
#include "tests/partition/test_util.h"

namespace ember::import_test {
namespace {

TEST(SchemaTest, FileAndInlineForms) {
  ScopedTempDir tmp;
  const std::string file = tmp.Sub("schema.tsv");
  WriteFile(file,
            "# relation\tsource\tdestination\n"
            "likes\tuser\titem\n"
            "has tag: primary\titem\ttag\n"
            "\n"
            "follows\tuser\tuser\n");
  absl::StatusOr<GraphSchema> s = ParseSchema(file);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->types, (std::vector<std::string>{"user", "item", "tag"}));
  ASSERT_EQ(s->relations.size(), 3u);
  const GraphSchema::Relation* tag = s->Find("has tag: primary");
  ASSERT_NE(tag, nullptr);
  EXPECT_EQ(tag->types, (RelationTypes{1, 2}));
  EXPECT_EQ(s->Find("follows")->types, (RelationTypes{0, 0}));
  EXPECT_EQ(s->Find("nope"), nullptr);

  // Inline: split at the last two ':', so a relation keeps its own.
  s = ParseSchema("likes:user:item, rel:with:colons:item:tag");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->types, (std::vector<std::string>{"user", "item", "tag"}));
  EXPECT_EQ(s->Find("rel:with:colons")->types, (RelationTypes{1, 2}));
  // Two fields: the one relation of an edge list without a relation column.
  s = ParseSchema("user:item");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->Find("")->types, (RelationTypes{0, 1}));
  EXPECT_EQ(s->Find(kDefaultRelation)->types, (RelationTypes{0, 1}));
}

TEST(SchemaTest, ErrorsNameTheLineOrEntry) {
  ScopedTempDir tmp;
  const std::string file = tmp.Sub("schema.tsv");
  WriteFile(file, "likes\tuser\titem\nlikes user item\n");
  absl::StatusOr<GraphSchema> s = ParseSchema(file);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StartsWith(s.status().message(), file + ":2: 1 tab-separated fields"))
      << s.status();
  WriteFile(file, "likes\tuser\titem\nlikes\titem\tuser\n");
  s = ParseSchema(file);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), file + ":2: relation 'likes' is declared "
                                                             "again with other types"))
      << s.status();
  s = ParseSchema("likes");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), "--schema entry 'likes'")) << s.status();
  s = ParseSchema("likes:user:");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), "empty")) << s.status();
}

class TypedImportTest : public ::testing::Test {
 protected:
  std::string Input(std::string_view name, std::string_view text) {
    const std::string path = tmp_.Sub(name);
    WriteFile(path, text);
    return path;
  }
  // 40 users, 12 items, 3 tags: user u likes items u % 12 and (u + 5) % 12;
  // item i has tag i % 3.
  std::string UserItemTag() {
    std::string text;
    for (int u = 0; u < 40; ++u) {
      for (int k : {0, 5}) text += absl::StrCat("u", u, "\tlikes\ti", (u + k) % 12, "\n");
    }
    for (int i = 0; i < 12; ++i) text += absl::StrCat("i", i, "\thas_tag\tt", i % 3, "\n");
    return Input("graph.tsv", text);
  }
  // The type of every node, by the partition that holds it.
  void ExpectTypesByPrefix(const Graph& g) {
    const Manifest& m = g.manifest();
    NameCache names(g, /*sample_stride=*/1);
    for (uint32_t p = 0; p < m.num_partitions; ++p) {
      const std::string& type = m.node_types[m.TypeOfPartition(p)].name;
      for (uint32_t off = 0; off < m.partition_sizes[p]; ++off) {
        const std::string* name = names.Name(p, off);
        ASSERT_NE(name, nullptr);
        EXPECT_EQ(type[0], (*name)[0]) << *name << " in partition " << p << " of " << type;
      }
    }
  }

  ScopedTempDir tmp_;
  const std::string out_ = tmp_.Sub("graph");
};

TEST_F(TypedImportTest, EachTypeFillsItsOwnPartitions) {
  ImportOptions o = BasicOptions(out_, {UserItemTag()});
  o.schema = "likes:user:item,has_tag:item:tag";
  o.type_partitions = {{"user", 4}};  // item and tag: --partitions (1)
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->types.size(), 3u);
  EXPECT_EQ(s->types[0].name, "user");
  EXPECT_EQ(s->types[0].nodes, 40u);
  EXPECT_EQ(s->types[0].partitions, 4u);
  EXPECT_EQ(s->types[1].nodes, 12u);
  EXPECT_EQ(s->types[2].nodes, 3u);

  auto g = Graph::Open(out_);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  ASSERT_TRUE(m.typed());
  EXPECT_EQ(m.num_partitions, 6u);
  ASSERT_EQ(m.node_types.size(), 3u);
  EXPECT_EQ(m.node_types[1].name, "item");
  EXPECT_EQ(m.node_types[1].first_partition, 4u);
  EXPECT_EQ(m.NodesOf(0), 40u);
  EXPECT_EQ(m.NodesOf(2), 3u);
  ASSERT_EQ(m.relations.size(), 2u);
  for (size_t r = 0; r < m.relations.size(); ++r) {
    EXPECT_EQ(m.relation_types[r],
              m.relations[r] == "likes" ? (RelationTypes{0, 1}) : (RelationTypes{1, 2}));
  }
  ExpectTypesByPrefix(**g);
  // Only (user, item) and (item, tag) buckets hold edges.
  for (uint32_t i = 0; i < m.num_partitions; ++i) {
    for (uint32_t j = 0; j < m.num_partitions; ++j) {
      const uint64_t edges = m.train_bucket_edges[i * m.num_partitions + j];
      const bool allowed = (i < 4 && j == 4) || (i == 4 && j == 5);
      if (!allowed) EXPECT_EQ(edges, 0u) << "bucket " << i << "," << j;
    }
  }
  EXPECT_EQ(m.train_bucket_edges[4 * 6 + 5], 12u);

  // The manifest reads back the same.
  absl::StatusOr<Manifest> again = ReadManifest(out_ + "/MANIFEST.json");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->relation_types, m.relation_types);
  EXPECT_EQ(again->node_types.size(), 3u);
}

TEST_F(TypedImportTest, ANodeOfTwoTypesIsAnErrorNamingBothPlaces) {
  const std::string f = Input("e.tsv", "u1\tlikes\ti1\nu2\tlikes\tu1\n");
  ImportOptions o = BasicOptions(out_, {f});
  o.schema = "likes:user:item";
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  const std::string msg(s.status().message());
  EXPECT_TRUE(absl::StrContains(msg, "node 'u1'")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, f + ":1")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, f + ":2")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "user") && absl::StrContains(msg, "item")) << msg;
  ExpectNothingAt(out_);
}

TEST_F(TypedImportTest, ARelationOutsideTheSchemaIsAnErrorNamingItsLine) {
  const std::string f = Input("e.tsv", "u1\tlikes\ti1\nu2\tfollows\tu1\n");
  ImportOptions o = BasicOptions(out_, {f});
  o.schema = "likes:user:item";
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StartsWith(s.status().message(), f + ":2: relation 'follows' is not in the "
                                                         "schema"))
      << s.status();
  ExpectNothingAt(out_);
  // --type-partitions must name a type of the schema.
  o = BasicOptions(out_, {Input("ok.tsv", "u1\tlikes\ti1\n")});
  o.schema = "likes:user:item";
  o.type_partitions = {{"users", 2}};
  s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), "type 'users'")) << s.status();
}

// A two-column edge list takes its types from a SRC:DST entry.
TEST_F(TypedImportTest, TwoColumnFilesAndAutoPartitionsPerType) {
  std::string text;
  for (int u = 0; u < 3000; ++u) text += absl::StrCat("u", u, "\ti", u % 20, "\n");
  ImportOptions o = BasicOptions(out_, {Input("pairs.tsv", text)});
  o.schema = "user:item";
  o.num_partitions = 0;  // auto
  o.auto_dim = 4096;     // rows of 16 KiB: the users need several partitions
  o.memory_budget = 64ull << 20;
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_TRUE(s.ok()) << s.status();
  auto g = Graph::Open(out_);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  EXPECT_EQ(m.relations, (std::vector<std::string>{"default"}));
  EXPECT_GT(m.PartitionsOf(0), 1u) << "users";
  EXPECT_EQ(m.PartitionsOf(1), 1u) << "the 20 items stay one resident partition";
  EXPECT_EQ(m.num_partitions, m.PartitionsOf(0) + 1);
  ExpectTypesByPrefix(**g);
}

// An append keeps the schema: new nodes go to their type's partitions, and
// a node used as another type than the graph holds it is refused.
TEST_F(TypedImportTest, AppendKeepsTheTypes) {
  ImportOptions o = BasicOptions(out_, {UserItemTag()});
  o.schema = "likes:user:item,has_tag:item:tag";
  o.type_partitions = {{"user", 2}};
  ASSERT_TRUE(ImportGraph(o).ok());
  ImportOptions a = BasicOptions(out_, {Input("more.tsv", "u100\tlikes\ti100\n")});
  a.append = true;
  absl::StatusOr<ImportSummary> s = ImportGraph(a);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->new_nodes, 2u);
  {
    auto g = Graph::Open(out_);
    ASSERT_TRUE(g.ok()) << g.status();
    ExpectTypesByPrefix(**g);
  }
  const std::string bad = Input("bad.tsv", "u5\tlikes\tu6\n");
  a.files = {bad};
  s = ImportGraph(a);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), bad + ":1: node 'u6' is of type item"))
      << s.status();
  a.files = {Input("rel.tsv", "u5\tfollows\tu6\n")};
  s = ImportGraph(a);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), "'follows' is not in the schema"))
      << s.status();
}

// Graphs without a schema are one untyped kind of node, as before.
TEST_F(TypedImportTest, UntypedGraphsAreOneKind) {
  ImportOptions o = BasicOptions(out_, {UserItemTag()});
  o.num_partitions = 3;
  ASSERT_TRUE(ImportGraph(o).ok());
  auto g = Graph::Open(out_);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  EXPECT_FALSE(m.typed());
  EXPECT_EQ(m.TypeOfPartition(2), 0u);
  EXPECT_EQ(m.PartitionsOf(0), 3u);
  EXPECT_EQ(m.NodesOf(0), m.num_nodes);
  EXPECT_FALSE(m.FindType("user").ok());
}

}  // namespace
}  // namespace ember::import_test
