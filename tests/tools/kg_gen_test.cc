// Tests for the synthetic knowledge graph generator (tools/gen/kg_generator.h):
// the planted relation patterns hold exactly, the split keeps inverse and
// mirror partners in train, output is deterministic and thread-independent,
// bad options fail clearly, and `ember gen kg` output imports.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "tests/tools/gen_test_util.h"
#include "tools/gen/gen_output.h"
#include "tools/gen/kg_generator.h"

namespace ember::tools::gen {
namespace {

using ::ember::testing::GenOutputTo;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunProcess;
using ::ember::testing::TabRows;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;

// Small but with every kind; cheap under sanitizers.
KgOptions SmallKg() {
  KgOptions o;
  o.nodes = 3000;
  o.types = 6;
  o.seed = 3;
  return o;
}

KgOutputPaths Paths(const TempDir& dir, const std::string& prefix) {
  return {dir.Sub(prefix + ".valid"), dir.Sub(prefix + ".test"),
          dir.Sub(prefix + ".relations")};
}

std::vector<std::string> FilesIn(const TempDir& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The graph as a lookup: (src, rel, dst) -> split.
class EdgeIndex {
 public:
  explicit EdgeIndex(const KgGraph& g) {
    for (const KgEdge& e : g.edges) {
      EXPECT_TRUE(
          split_.emplace(std::tuple(e.src, e.relation, e.dst), e.split).second)
          << "duplicate edge " << e.src << " " << e.relation << " " << e.dst;
    }
  }
  // nullptr when absent.
  const KgSplit* Find(uint32_t src, uint32_t rel, uint32_t dst) const {
    auto it = split_.find(std::tuple(src, rel, dst));
    return it == split_.end() ? nullptr : &it->second;
  }

 private:
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint32_t>, KgSplit> split_;
};

uint32_t RelationIndex(const KgGraph& g, const std::string& name) {
  for (uint32_t i = 0; i < g.relations.size(); ++i) {
    if (g.relations[i].name == name) return i;
  }
  ADD_FAILURE() << "no relation " << name;
  return 0;
}

// ------------------------------------------------------------ relations ---

TEST(KgMixTest, ForTotalSplitsEveryCountIntoValidMixes) {
  for (uint32_t r = 7; r <= 600; ++r) {
    auto mix = KgRelationMix::ForTotal(r);
    ASSERT_TRUE(mix.ok()) << r << ": " << mix.status();
    EXPECT_EQ(mix->total(), r);
    EXPECT_TRUE(mix->Validate().ok()) << r;
    for (uint32_t count : {mix->inverse_pairs, mix->symmetric, mix->hierarchies,
                           mix->plain, mix->functional, mix->compositions}) {
      EXPECT_GE(count, 1u) << "relations " << r;
    }
  }
  auto thirty = KgRelationMix::ForTotal(30);
  ASSERT_TRUE(thirty.ok());
  const KgRelationMix def;
  EXPECT_EQ(def.total(), 30u);
  EXPECT_EQ(
      std::tie(thirty->inverse_pairs, thirty->symmetric, thirty->hierarchies,
               thirty->plain, thirty->functional, thirty->compositions),
      std::tie(def.inverse_pairs, def.symmetric, def.hierarchies, def.plain,
               def.functional, def.compositions));
  const absl::Status six = KgRelationMix::ForTotal(6).status();
  EXPECT_EQ(six.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(six.message()), HasSubstr("--relations"));
}

TEST(KgBuildTest, RelationsAreNamedByKindWithPartners) {
  auto g = BuildKg(SmallKg());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->relations.size(), 30u);
  std::map<std::string, int> kinds;
  for (const KgRelation& r : g->relations)
    ++kinds[std::string(KgKindName(r.kind))];
  EXPECT_EQ(kinds, (std::map<std::string, int>{{"composition", 4},
                                               {"functional", 4},
                                               {"hierarchy", 2},
                                               {"inverse", 10},
                                               {"plain", 6},
                                               {"symmetric", 4}}));
  const KgRelation& fwd = g->relations[RelationIndex(*g, "inv2_fwd")];
  EXPECT_EQ(fwd.kind, KgKind::kInverse);
  EXPECT_EQ(fwd.partner, "inv2_rev");
  EXPECT_EQ(g->relations[RelationIndex(*g, "inv2_rev")].partner, "inv2_fwd");
  EXPECT_EQ(g->relations[RelationIndex(*g, "comp1")].partner, "plain1,func1");
  EXPECT_EQ(g->relations[RelationIndex(*g, "sym3")].partner, "-");
  EXPECT_EQ(g->relations[RelationIndex(*g, "hyper0")].kind, KgKind::kHierarchy);
}

TEST(KgBuildTest, EdgesAreDistinctTypedAndLoopFree) {
  const KgOptions o = SmallKg();
  auto g = BuildKg(o);
  ASSERT_TRUE(g.ok()) << g.status();
  EdgeIndex index(*g);  // fails on a duplicate
  std::vector<uint64_t> per_relation(g->relations.size(), 0);
  for (const KgEdge& e : g->edges) {
    ASSERT_LT(e.src, o.nodes);
    ASSERT_LT(e.dst, o.nodes);
    ASSERT_NE(e.src, e.dst);
    ++per_relation[e.relation];
    const KgRelation& r = g->relations[e.relation];
    if (r.kind == KgKind::kHierarchy) continue;
    EXPECT_EQ(o.type_of(e.src), r.domain_type) << r.name;
    EXPECT_EQ(o.type_of(e.dst), r.range_type) << r.name;
    if (r.kind != KgKind::kSymmetric) {
      EXPECT_NE(r.domain_type, r.range_type) << r.name;
    }
  }
  for (size_t i = 0; i < per_relation.size(); ++i) {
    EXPECT_GT(per_relation[i], 0u) << g->relations[i].name;
    if (g->relations[i].kind == KgKind::kPlain) {
      EXPECT_LE(per_relation[i], o.facts_per_relation());
    }
  }
}

TEST(KgBuildTest, InversePairsAreCompleteAndHeldOutInversesStayInTrain) {
  auto g = BuildKg(SmallKg());
  ASSERT_TRUE(g.ok()) << g.status();
  EdgeIndex index(*g);
  uint64_t checked = 0, held_out = 0;
  for (const KgEdge& e : g->edges) {
    const KgRelation& r = g->relations[e.relation];
    if (r.kind != KgKind::kInverse) continue;
    const uint32_t partner = RelationIndex(*g, r.partner);
    const KgSplit* inverse = index.Find(e.dst, partner, e.src);
    ASSERT_NE(inverse, nullptr) << e.src << " " << r.name << " " << e.dst;
    ++checked;
    if (e.split != KgSplit::kTrain) {
      ++held_out;
      EXPECT_EQ(*inverse, KgSplit::kTrain)
          << e.src << " " << r.name << " " << e.dst;
    }
  }
  EXPECT_GT(checked, 10000u);
  EXPECT_GT(held_out, 500u);  // ~10 % held out: the set is not empty
}

TEST(KgBuildTest, SymmetricRelationsAreClosed) {
  auto g = BuildKg(SmallKg());
  ASSERT_TRUE(g.ok()) << g.status();
  EdgeIndex index(*g);
  uint64_t checked = 0, held_out = 0;
  for (const KgEdge& e : g->edges) {
    if (g->relations[e.relation].kind != KgKind::kSymmetric) continue;
    const KgSplit* mirror = index.Find(e.dst, e.relation, e.src);
    ASSERT_NE(mirror, nullptr) << e.src << " " << e.relation << " " << e.dst;
    ++checked;
    if (e.split != KgSplit::kTrain) {
      ++held_out;
      EXPECT_EQ(*mirror, KgSplit::kTrain);
    }
  }
  EXPECT_GT(checked, 5000u);
  EXPECT_GT(held_out, 200u);
}

TEST(KgBuildTest, HierarchiesAreTreesOverTypeOrSupertype) {
  const KgOptions o = SmallKg();
  auto g = BuildKg(o);
  ASSERT_TRUE(g.ok()) << g.status();
  for (uint32_t k = 0; k < o.mix.hierarchies; ++k) {
    const uint32_t rel = RelationIndex(*g, "hyper" + std::to_string(k));
    std::vector<int64_t> parent(o.nodes, -1);
    uint64_t same_type = 0;
    for (const KgEdge& e : g->edges) {
      if (e.relation != rel) continue;
      ASSERT_EQ(parent[e.src], -1) << "entity " << e.src << " has two parents";
      parent[e.src] = e.dst;
      const uint32_t child_type = o.type_of(e.src);
      const uint32_t parent_type = o.type_of(e.dst);
      if (parent_type == child_type) {
        ++same_type;
      } else {
        EXPECT_EQ(parent_type, KgOptions::supertype(child_type))
            << e.src << " -> " << e.dst;
      }
    }
    for (uint64_t e = 0; e < o.nodes; ++e) {
      EXPECT_EQ(parent[e] == -1, e == 0) << "entity " << e;
      // Following parents reaches the root within N steps: no cycle.
      uint64_t steps = 0;
      for (int64_t at = static_cast<int64_t>(e); at != 0; at = parent[at]) {
        ASSERT_NE(at, -1);
        ASSERT_LT(++steps, o.nodes) << "cycle through entity " << e;
      }
    }
    // Both kinds of parent occur (same_type_parent = 0.5).
    EXPECT_GT(same_type, o.nodes / 4);
    EXPECT_LT(same_type, 3 * o.nodes / 4);
  }
}

TEST(KgBuildTest, CompositionsHoldExactly) {
  const KgOptions o = SmallKg();
  auto g = BuildKg(o);
  ASSERT_TRUE(g.ok()) << g.status();
  EdgeIndex index(*g);
  for (uint32_t k = 0; k < o.mix.compositions; ++k) {
    const uint32_t plain = RelationIndex(*g, "plain" + std::to_string(k));
    const uint32_t func = RelationIndex(*g, "func" + std::to_string(k));
    const uint32_t comp = RelationIndex(*g, "comp" + std::to_string(k));
    std::map<uint32_t, uint32_t> f;  // func is N-to-1 over its whole domain
    std::set<std::pair<uint32_t, uint32_t>> expected;
    uint64_t comp_edges = 0;
    for (const KgEdge& e : g->edges) {
      if (e.relation == func) {
        EXPECT_TRUE(f.emplace(e.src, e.dst).second)
            << "func" << k << " " << e.src;
      }
    }
    EXPECT_EQ(f.size(), o.type_size(g->relations[func].domain_type));
    for (const KgEdge& e : g->edges) {
      if (e.relation == plain) {
        ASSERT_TRUE(f.count(e.dst)) << "plain" << k << " tail " << e.dst;
        expected.emplace(e.src, f[e.dst]);
        EXPECT_NE(index.Find(e.src, comp, f[e.dst]), nullptr)
            << e.src << " plain" << k << " " << e.dst << " func" << k << " "
            << f[e.dst];
      }
      if (e.relation == comp) ++comp_edges;
    }
    // And nothing else: every comp edge has a path.
    EXPECT_EQ(comp_edges, expected.size()) << "comp" << k;
    EXPECT_GT(comp_edges, 0u);
  }
}

TEST(KgBuildTest, SplitFractionsAndHeldOutNodesAppearInTrain) {
  KgOptions o = SmallKg();
  o.valid_fraction = 0.1;
  o.test_fraction = 0.05;
  auto g = BuildKg(o);
  ASSERT_TRUE(g.ok()) << g.status();
  uint64_t count[3] = {0, 0, 0};
  std::vector<bool> in_train(o.nodes, false);
  for (const KgEdge& e : g->edges) {
    ++count[static_cast<int>(e.split)];
    if (e.split == KgSplit::kTrain) in_train[e.src] = in_train[e.dst] = true;
  }
  const double total = static_cast<double>(g->edges.size());
  EXPECT_NEAR(count[1] / total, 0.1, 0.01);
  EXPECT_NEAR(count[2] / total, 0.05, 0.01);
  for (const KgEdge& e : g->edges) {
    if (e.split == KgSplit::kTrain) continue;
    EXPECT_TRUE(in_train[e.src]) << e.src;
    EXPECT_TRUE(in_train[e.dst]) << e.dst;
  }
  EXPECT_LT(g->moved_to_train, count[1] + count[2]);

  o.valid_fraction = 0;
  o.test_fraction = 0;
  auto all_train = BuildKg(o);
  ASSERT_TRUE(all_train.ok());
  for (const KgEdge& e : all_train->edges) {
    ASSERT_EQ(e.split, KgSplit::kTrain);
  }
  EXPECT_EQ(all_train->edges.size(), g->edges.size());  // the split only
}

TEST(KgBuildTest, DegreesAreHeavyTailed) {
  const KgOptions o = SmallKg();
  auto g = BuildKg(o);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<uint64_t> degree(o.nodes, 0);
  for (const KgEdge& e : g->edges) {
    ++degree[e.src];
    ++degree[e.dst];
  }
  const double mean = 2.0 * g->edges.size() / o.nodes;
  const uint64_t max = *std::max_element(degree.begin(), degree.end());
  EXPECT_GT(static_cast<double>(max), 20 * mean) << "max " << max;
  // The hubs are the low ranks: entity 0 .. types-1.
  EXPECT_GT(static_cast<double>(degree[1]), 10 * mean);

  KgOptions flat = o;
  flat.popularity_exponent = 0;
  auto u = BuildKg(flat);
  ASSERT_TRUE(u.ok());
  std::vector<uint64_t> flat_degree(o.nodes, 0);
  for (const KgEdge& e : u->edges) {
    if (u->relations[e.relation].kind == KgKind::kHierarchy) continue;
    ++flat_degree[e.src];
    ++flat_degree[e.dst];
  }
  const uint64_t flat_max =
      *std::max_element(flat_degree.begin(), flat_degree.end());
  EXPECT_LT(flat_max, max / 4) << "uniform popularity has no hubs";
}

// ---------------------------------------------------------------- files ---

TEST(KgFilesTest, DeterministicBySeedAndIndependentOfThreads) {
  TempDir dir;
  const KgOptions o = SmallKg();
  ASSERT_TRUE(
      GenerateKg(o, GenOutputTo(dir.Sub("a.train"), 1), Paths(dir, "a")).ok());
  ASSERT_TRUE(
      GenerateKg(o, GenOutputTo(dir.Sub("b.train"), 4), Paths(dir, "b")).ok());
  KgOptions other = o;
  other.seed = 4;
  ASSERT_TRUE(
      GenerateKg(other, GenOutputTo(dir.Sub("c.train"), 2), Paths(dir, "c"))
          .ok());
  for (const char* ext : {".train", ".valid", ".test", ".relations"}) {
    const std::string a = ReadWholeFile(dir.Sub(std::string("a") + ext));
    EXPECT_FALSE(a.empty()) << ext;
    EXPECT_EQ(a, ReadWholeFile(dir.Sub(std::string("b") + ext))) << ext;
    if (std::string(ext) != ".relations") {
      EXPECT_NE(a, ReadWholeFile(dir.Sub(std::string("c") + ext))) << ext;
    }
  }
  EXPECT_EQ(FilesIn(dir).size(), 24u);  // each output and its record; no temporaries left
}

TEST(KgFilesTest, FilesHoldTheGraphAsTriples) {
  TempDir dir;
  const KgOptions o = SmallKg();
  KgStats stats;
  ASSERT_TRUE(
      GenerateKg(o, GenOutputTo(dir.Sub("g.train")), Paths(dir, "g"), &stats)
          .ok());
  auto g = BuildKg(o);
  ASSERT_TRUE(g.ok());
  std::vector<std::vector<std::string>> expected[3];
  for (const KgEdge& e : g->edges) {
    expected[static_cast<int>(e.split)].push_back(
        {std::to_string(e.src), g->relations[e.relation].name,
         std::to_string(e.dst)});
  }
  EXPECT_EQ(TabRows(ReadWholeFile(dir.Sub("g.train"))), expected[0]);
  EXPECT_EQ(TabRows(ReadWholeFile(dir.Sub("g.valid"))), expected[1]);
  EXPECT_EQ(TabRows(ReadWholeFile(dir.Sub("g.test"))), expected[2]);
  EXPECT_EQ(stats.train_edges, expected[0].size());
  EXPECT_EQ(stats.valid_edges, expected[1].size());
  EXPECT_EQ(stats.test_edges, expected[2].size());
  EXPECT_EQ(stats.nodes, o.nodes);
  EXPECT_EQ(stats.relations_by_kind.at("inverse"), 10u);
  uint64_t by_kind = 0;
  for (const auto& [kind, n] : stats.edges_by_kind) by_kind += n;
  EXPECT_EQ(by_kind, g->edges.size());

  const auto rels = TabRows(ReadWholeFile(dir.Sub("g.relations")));
  ASSERT_EQ(rels.size(), g->relations.size());
  for (size_t i = 0; i < rels.size(); ++i) {
    EXPECT_EQ(rels[i], (std::vector<std::string>{
                           g->relations[i].name,
                           std::string(KgKindName(g->relations[i].kind)),
                           g->relations[i].partner}));
  }
}

TEST(KgFilesTest, ExistingOutputLeavesEveryPathAsItWas) {
  TempDir dir;
  const KgOutputPaths paths = Paths(dir, "g");
  std::ofstream(paths.test) << "keep\n";
  const absl::Status s =
      GenerateKg(SmallKg(), GenOutputTo(dir.Sub("g.train")), paths);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(paths.test));
  EXPECT_EQ(ReadWholeFile(paths.test), "keep\n");
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"g.test"});
}

TEST(KgFilesTest, BadOptionsAreInvalidArgument) {
  struct Case {
    void (*mutate)(KgOptions*);
    const char* message;
  };
  const Case cases[] = {
      {[](KgOptions* o) { o->types = 1; }, "--types"},
      {[](KgOptions* o) { o->nodes = 11; }, "--nodes"},
      {[](KgOptions* o) { o->nodes = uint64_t{1} << 32; }, "--nodes"},
      {[](KgOptions* o) { o->types = 2; }, "--types must be >= 3"},
      {[](KgOptions* o) { o->mix.plain = 1; }, "compositions"},
      {[](KgOptions* o) { o->mix.functional = 0; }, "compositions"},
      {[](KgOptions* o) { o->facts_per_node = 0; }, "--facts-per-node"},
      {[](KgOptions* o) { o->facts_per_node = 1e-5; }, "no facts"},
      {[](KgOptions* o) { o->popularity_exponent = -1; },
       "--popularity-exponent"},
      {[](KgOptions* o) { o->same_type_parent = 2; }, "same_type_parent"},
      {[](KgOptions* o) {
         o->valid_fraction = 0.3;
         o->test_fraction = 0.3;
       },
       "--valid-fraction"},
      {[](KgOptions* o) { o->test_fraction = -0.1; }, "--test-fraction"},
  };
  TempDir dir;
  for (const Case& c : cases) {
    KgOptions o = SmallKg();
    c.mutate(&o);
    const absl::Status s = o.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_EQ(GenerateKg(o, GenOutputTo(dir.Sub("x")), Paths(dir, "x")).code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(KgOptions().Validate().ok());

  KgOutputPaths no_valid = Paths(dir, "x");
  no_valid.valid.clear();
  absl::Status s = GenerateKg(SmallKg(), GenOutputTo(dir.Sub("x")), no_valid);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("--valid-out"));

  KgOutputPaths same = Paths(dir, "x");
  same.relations = dir.Sub("x");
  s = GenerateKg(SmallKg(), GenOutputTo(dir.Sub("x")), same);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("must differ"));
  EXPECT_TRUE(FilesIn(dir).empty());
}

// ------------------------------------------------------------------ CLI ---

TEST(KgCliTest, GenKgJsonMatchesLibraryAndImports) {
  TempDir dir;
  const std::string bin = EMBER_BINARY;
  auto ember = [&](std::vector<std::string> args) {
    args.insert(args.begin(), bin);
    return RunProcess(args, dir.path());
  };
  auto r = ember({"gen",
                  "kg",
                  "--nodes",
                  "2000",
                  "--relations",
                  "15",
                  "--seed",
                  "5",
                  "--threads",
                  "2",
                  "--quiet",
                  "--json",
                  "--out",
                  dir.Sub("kg.train"),
                  "--valid-out",
                  dir.Sub("kg.valid"),
                  "--test-out",
                  dir.Sub("kg.test"),
                  "--relations-out",
                  dir.Sub("kg.relations")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("generator"), "kg");
  EXPECT_EQ(j.at("nodes"), 2000);
  uint64_t relations = 0;
  for (const auto& [kind, n] : j.at("relations_by_kind").items()) {
    relations += n.get<uint64_t>();
  }
  EXPECT_EQ(relations, 15u);

  KgOptions o;
  o.nodes = 2000;
  o.seed = 5;
  o.mix = *KgRelationMix::ForTotal(15);
  ASSERT_TRUE(
      GenerateKg(o, GenOutputTo(dir.Sub("lib.train")), Paths(dir, "lib")).ok());
  EXPECT_EQ(ReadWholeFile(dir.Sub("kg.train")),
            ReadWholeFile(dir.Sub("lib.train")));
  EXPECT_EQ(ReadWholeFile(dir.Sub("kg.test")),
            ReadWholeFile(dir.Sub("lib.test")));
  EXPECT_EQ(ReadWholeFile(dir.Sub("kg.relations")),
            ReadWholeFile(dir.Sub("lib.relations")));

  r = ember({"import", "--out", dir.Sub("graph"), "--valid",
             dir.Sub("kg.valid"), "--test", dir.Sub("kg.test"), "--quiet",
             "--json", dir.Sub("kg.train")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json imp = nlohmann::json::parse(r.out);
  EXPECT_EQ(imp.at("edges").at("train"), j.at("edges").at("train"));
  EXPECT_EQ(imp.at("edges").at("valid"), j.at("edges").at("valid"));
  EXPECT_EQ(imp.at("edges").at("test"), j.at("edges").at("test"));
  EXPECT_GT(imp.at("edges").at("valid").get<uint64_t>(), 0u);
  EXPECT_EQ(imp.at("relations"), 15);
  EXPECT_EQ(imp.at("moved_to_train"), 0);  // held-out nodes are in train

  // Bad flags: a clear message and no output.
  r = ember({"gen", "kg", "--relations", "5", "--quiet", "--out",
             dir.Sub("bad.train"), "--valid-out", dir.Sub("bad.valid"),
             "--test-out", dir.Sub("bad.test")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--relations"));
  r = ember({"gen", "kg", "--quiet", "--out", dir.Sub("bad.train")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--valid-out"));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("bad.train")));
}

TEST(KgCliTest, UsageListsEveryGenerator) {
  TempDir dir;
  const std::string bin = EMBER_BINARY;
  auto r = RunProcess({bin, "--help"}, dir.path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("KIND: rmat, sbm, features, kg"));
  r = RunProcess({bin, "gen"}, dir.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("rmat|sbm|features|kg"));
  r = RunProcess({bin, "gen", "nosuch", "--out", dir.Sub("x")}, dir.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("'kg'"));
}

}  // namespace
}  // namespace ember::tools::gen
