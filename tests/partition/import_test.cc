// Integration tests of ImportGraph on R-MAT graphs: exact edge and node
// counts, every edge read back by name, determinism across runs and thread
// counts, the degree partitioner's balance, and a small memory budget.
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "storage/graph.h"
#include "tests/partition/test_util.h"
#include "tools/gen/gen_output.h"
#include "tools/gen/rmat_generator.h"

namespace ember::import_test {
namespace {

// Writes an R-MAT edge list ("src\tdst\n", integer ids) with the generator
// library.
void WriteRmat(const std::string& path, int scale, uint64_t edge_factor,
               uint64_t seed) {
  tools::gen::RmatOptions o;
  o.scale = scale;
  o.edge_factor = edge_factor;
  o.seed = seed;
  tools::gen::GenOutputOptions out;
  out.path = path;
  out.threads = 2;
  absl::Status s = tools::gen::GenerateRmat(o, out);
  ASSERT_TRUE(s.ok()) << "GenerateRmat: " << s;
}

// Imports an R-MAT graph and checks it against the input exactly.
void CheckRmatImport(bool integer_ids) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("rmat16.tsv");
  ASSERT_NO_FATAL_FAILURE(WriteRmat(input, /*scale=*/16, /*edge_factor=*/16,
                                    /*seed=*/1234));
  std::vector<IntEdge> expected = ReadIntEdgeFile(input);
  ASSERT_EQ(expected.size(), uint64_t{16} << 16)
      << "the generator wrote the wrong number of lines";
  const uint64_t distinct = DistinctNodes(expected);
  std::sort(expected.begin(), expected.end());

  ImportOptions o = BasicOptions(tmp.Sub("graph"), {input});
  o.num_partitions = 4;
  o.integer_ids = integer_ids;
  auto summary = ImportGraph(o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->nodes, distinct);
  EXPECT_EQ(summary->lines, expected.size());
  EXPECT_EQ(summary->edges.train, expected.size());
  EXPECT_EQ(summary->edges.valid, 0u);
  EXPECT_EQ(summary->edges.test, 0u);
  EXPECT_EQ(summary->partitions, 4u);
  EXPECT_EQ(summary->moved_to_train, 0u);
  for (int r = 0; r < kNumRejectReasons; ++r) EXPECT_EQ(summary->rejected[r], 0u);

  auto g = Graph::Open(o.out);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  EXPECT_TRUE(m.Validate().ok()) << m.Validate();
  EXPECT_EQ(m.num_nodes, distinct);
  EXPECT_EQ(m.num_partitions, 4u);
  ASSERT_EQ(m.partition_sizes.size(), 4u);
  uint64_t sum = 0;
  for (uint64_t s : m.partition_sizes) {
    EXPECT_GT(s, 0u) << "a hash partition of " << distinct << " nodes is empty";
    sum += s;
  }
  EXPECT_EQ(sum, distinct);
  EXPECT_EQ(m.edges.train, expected.size());
  EXPECT_EQ(m.edges.valid + m.edges.test, 0u);
  EXPECT_EQ(m.integer_ids, integer_ids);
  ASSERT_EQ(m.train_bucket_edges.size(), 16u);
  uint64_t bucket_sum = 0;
  for (uint64_t b : m.train_bucket_edges) bucket_sum += b;
  EXPECT_EQ(bucket_sum, expected.size());

  NameCache names(**g);
  // ReadIntEdges also checks train_bucket_edges against each bucket's size.
  std::vector<IntEdge> got = ReadIntEdges(**g, Split::kTrain, &names);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected)
      << "the multiset of read-back edges differs from the input";
  for (Split s : {Split::kValid, Split::kTest}) {
    EXPECT_TRUE(ReadIntEdges(**g, s, &names).empty()) << SplitName(s);
  }

  // Names are distinct across the whole graph (NameCache has checked
  // NodeName and LookupNode on a sample).
  absl::flat_hash_set<std::string> seen;
  for (const auto& part : names.all()) {
    for (const std::string& name : part) {
      EXPECT_TRUE(seen.insert(name).second) << "name " << name << " twice";
    }
  }
  EXPECT_FALSE((*g)->LookupNode("no-such-node").ok());
  EXPECT_TRUE(StagingDirs(o.out).empty());
}

TEST(ImportRmatTest, Scale16FourPartitionsIntegerIds) {
  CheckRmatImport(/*integer_ids=*/true);
}

TEST(ImportRmatTest, Scale16FourPartitionsStringIds) {
  CheckRmatImport(/*integer_ids=*/false);
}

GraphSnapshot ImportAndSnapshot(const ImportOptions& o,
                                ImportSummary* summary = nullptr) {
  auto s = ImportGraph(o);
  EXPECT_TRUE(s.ok()) << o.out << ": " << s.status();
  if (!s.ok()) return {};
  if (summary != nullptr) *summary = *s;
  auto g = Graph::Open(o.out);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return {};
  return Snapshot(**g);
}

TEST(ImportDeterminismTest, SameSeedSameGraphForAnyThreadCount) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("rmat15.tsv");
  ASSERT_NO_FATAL_FAILURE(WriteRmat(input, 15, 16, 99));

  ImportOptions o = BasicOptions(tmp.Sub("a"), {input});
  o.num_partitions = 4;
  o.seed = 5;
  o.threads = 2;
  const GraphSnapshot a = ImportAndSnapshot(o);
  o.out = tmp.Sub("b");
  const GraphSnapshot b = ImportAndSnapshot(o);
  o.out = tmp.Sub("c");
  o.threads = 1;
  const GraphSnapshot c = ImportAndSnapshot(o);
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(a.manifest.edges.train, uint64_t{16} << 15);
  {
    SCOPED_TRACE("same seed, threads 2 twice");
    ExpectSameGraph(a, b);
  }
  {
    SCOPED_TRACE("threads 2 vs threads 1");
    ExpectSameGraph(a, c);
  }
}

TEST(ImportDeterminismTest, SplitIsDeterministicAndDependsOnSeed) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("rmat15.tsv");
  ASSERT_NO_FATAL_FAILURE(WriteRmat(input, 15, 16, 77));
  std::vector<IntEdge> input_edges = ReadIntEdgeFile(input);
  const uint64_t n = input_edges.size();

  ImportOptions o = BasicOptions(tmp.Sub("a"), {input});
  o.num_partitions = 4;
  o.seed = 7;
  o.threads = 2;
  auto split = ParseSplitFractions("0.8,0.1,0.1");
  ASSERT_TRUE(split.ok()) << split.status();
  o.split = *split;
  ImportSummary sa, sc;
  const GraphSnapshot a = ImportAndSnapshot(o, &sa);
  o.out = tmp.Sub("b");
  o.threads = 1;
  const GraphSnapshot b = ImportAndSnapshot(o);
  o.out = tmp.Sub("c");
  o.threads = 2;
  o.seed = 8;
  const GraphSnapshot c = ImportAndSnapshot(o, &sc);
  ASSERT_FALSE(HasFailure());
  {
    SCOPED_TRACE("seed 7, threads 2 vs threads 1");
    ExpectSameGraph(a, b);
  }

  // Counts: nothing lost, roughly 80/10/10 before moves to train.
  for (const ImportSummary* s : {&sa, &sc}) {
    EXPECT_EQ(s->edges.total(), n);
    EXPECT_GT(s->edges.valid, 0u);
    EXPECT_GT(s->edges.test, 0u);
    const double held_out =
        static_cast<double>(s->edges.valid + s->edges.test + s->moved_to_train) / n;
    EXPECT_NEAR(held_out, 0.2, 0.03);
  }

  // Read both graphs back by name: the union of the splits is the input,
  // held-out edges only touch nodes seen in train, and the seed changes
  // which edges are held out.
  std::sort(input_edges.begin(), input_edges.end());
  std::vector<IntEdge> held_out_a, held_out_c;
  for (const char* dir : {"a", "c"}) {
    auto g = Graph::Open(tmp.Sub(dir));
    ASSERT_TRUE(g.ok()) << g.status();
    NameCache names(**g);
    std::vector<IntEdge> train = ReadIntEdges(**g, Split::kTrain, &names);
    std::vector<IntEdge> valid = ReadIntEdges(**g, Split::kValid, &names);
    std::vector<IntEdge> test = ReadIntEdges(**g, Split::kTest, &names);
    EXPECT_EQ(train.size(), (*g)->manifest().edges.train);
    EXPECT_EQ(valid.size(), (*g)->manifest().edges.valid);
    EXPECT_EQ(test.size(), (*g)->manifest().edges.test);
    absl::flat_hash_set<uint64_t> train_nodes;
    for (const auto& [s, d] : train) {
      train_nodes.insert(s);
      train_nodes.insert(d);
    }
    std::vector<IntEdge> all = train;
    for (const auto* v : {&valid, &test}) {
      for (const auto& [s, d] : *v) {
        EXPECT_TRUE(train_nodes.contains(s) && train_nodes.contains(d))
            << "held-out edge (" << s << ", " << d
            << ") has an endpoint in no train edge";
        all.emplace_back(s, d);
      }
    }
    std::sort(all.begin(), all.end());
    EXPECT_TRUE(all == input_edges) << dir << ": splits do not add up to the input";
    std::vector<IntEdge>& h = dir[0] == 'a' ? held_out_a : held_out_c;
    h = valid;
    h.insert(h.end(), test.begin(), test.end());
    std::sort(h.begin(), h.end());
  }
  EXPECT_NE(held_out_a, held_out_c) << "seeds 7 and 8 gave the same split";
}

TEST(ImportDegreePartitionerTest, BalancesDegreeAndKeepsEveryEdge) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("rmat14.tsv");
  ASSERT_NO_FATAL_FAILURE(WriteRmat(input, 14, 16, 3));
  std::vector<IntEdge> expected = ReadIntEdgeFile(input);
  const uint64_t distinct = DistinctNodes(expected);
  std::sort(expected.begin(), expected.end());

  constexpr uint32_t P = 4;
  ImportOptions o = BasicOptions(tmp.Sub("graph"), {input});
  o.num_partitions = P;
  o.partitioner = PartitionerKind::kDegree;
  o.integer_ids = true;
  auto summary = ImportGraph(o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->nodes, distinct);

  auto g = Graph::Open(o.out);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  EXPECT_EQ(m.partitioner, "degree");
  EXPECT_EQ(m.num_nodes, distinct);

  // Total degree per partition, counted from the buckets themselves.
  std::vector<uint64_t> load(P, 0);
  for (uint32_t i = 0; i < P; ++i) {
    for (uint32_t j = 0; j < P; ++j) {
      std::vector<Edge> b;
      ASSERT_TRUE((*g)->ReadBucket(Split::kTrain, i, j, &b).ok());
      load[i] += b.size();
      load[j] += b.size();
    }
  }
  const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
  ASSERT_GT(*lo, 0u);
  EXPECT_LE(static_cast<double>(*hi) / *lo, 1.1)
      << "degree per partition: " << load[0] << " " << load[1] << " "
      << load[2] << " " << load[3];

  NameCache names(**g);
  std::vector<IntEdge> got = ReadIntEdges(**g, Split::kTrain, &names);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "read-back edges differ from the input";
}

// An input with many distinct string ids, so that a 64 MiB budget forces
// the node aggregator to spill and the slot table into key ranges.
void WriteManyNodesInput(const std::string& path, uint64_t lines,
                         uint64_t id_space, uint64_t seed,
                         std::vector<NamedEdge>* edges) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> id(0, id_space - 1);
  std::string text;
  text.reserve(lines * 20);
  edges->clear();
  edges->reserve(lines);
  for (uint64_t i = 0; i < lines; ++i) {
    std::string a = absl::StrCat("n", id(rng));
    std::string b = absl::StrCat("n", id(rng));
    absl::StrAppend(&text, a, "\t", b, "\n");
    edges->push_back(NamedEdge{std::move(a), "", std::move(b)});
  }
  ASSERT_NO_FATAL_FAILURE(WriteFile(path, text));
  std::sort(edges->begin(), edges->end());
}

TEST(ImportMemoryBudgetTest, SpillingAndKeyRangesGiveTheSameEdges) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("many_nodes.tsv");
  std::vector<NamedEdge> expected;
  ASSERT_NO_FATAL_FAILURE(WriteManyNodesInput(input, /*lines=*/1'200'000,
                                              /*id_space=*/16'000'000,
                                              /*seed=*/11, &expected));

  ImportOptions small = BasicOptions(tmp.Sub("small"), {input});
  small.num_partitions = 2;
  small.memory_budget = 64ull << 20;
  auto ss = ImportGraph(small);
  ASSERT_TRUE(ss.ok()) << ss.status();
  EXPECT_GT(ss->node_runs_spilled, 0u)
      << "64 MiB did not make the node aggregator spill";
  EXPECT_GT(ss->key_ranges, 1u) << "64 MiB did not split the slot table";

  ImportOptions big = small;
  big.out = tmp.Sub("big");
  big.memory_budget = 4ull << 30;
  auto sb = ImportGraph(big);
  ASSERT_TRUE(sb.ok()) << sb.status();
  EXPECT_EQ(sb->node_runs_spilled, 0u);
  EXPECT_EQ(sb->key_ranges, 1u);
  EXPECT_EQ(ss->nodes, sb->nodes);
  EXPECT_EQ(ss->edges.train, expected.size());

  auto gs = Graph::Open(small.out);
  ASSERT_TRUE(gs.ok()) << gs.status();
  auto gb = Graph::Open(big.out);
  ASSERT_TRUE(gb.ok()) << gb.status();
  // A sparse NodeName sample: point lookups are slow on partitions of ~1M
  // nodes (see the storage report).
  const std::vector<NamedEdge> es =
      ReadNamedEdges(**gs, Split::kTrain, false, /*sample_stride=*/100'003);
  const std::vector<NamedEdge> eb =
      ReadNamedEdges(**gb, Split::kTrain, false, /*sample_stride=*/100'003);
  EXPECT_EQ(es.size(), expected.size());
  EXPECT_TRUE(es == expected) << "budgeted import differs from the input";
  EXPECT_TRUE(eb == expected) << "unconstrained import differs from the input";
}

// Dedupe under a small budget: exact dedupe needs each key range's edges in
// one chunk, so the importer must split into key ranges; the result must be
// the input's distinct edges.
TEST(ImportMemoryBudgetTest, DedupeUnderSmallBudgetIsExact) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("rmat15.tsv");
  ASSERT_NO_FATAL_FAILURE(WriteRmat(input, 15, 20, 5));
  std::vector<IntEdge> expected = ReadIntEdgeFile(input);
  const uint64_t lines = expected.size();
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
  ASSERT_LT(expected.size(), lines) << "R-MAT input has no duplicates to drop";

  ImportOptions o = BasicOptions(tmp.Sub("graph"), {input});
  o.num_partitions = 2;
  o.dedupe = true;
  o.integer_ids = true;
  o.memory_budget = 64ull << 20;
  auto s = ImportGraph(o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->key_ranges, 1u) << "dedupe of " << lines
                               << " edges under 64 MiB used one key range";
  EXPECT_EQ(s->duplicates_dropped, lines - expected.size());
  EXPECT_EQ(s->edges.train, expected.size());
  auto g = Graph::Open(o.out);
  ASSERT_TRUE(g.ok()) << g.status();
  NameCache names(**g);
  std::vector<IntEdge> got = ReadIntEdges(**g, Split::kTrain, &names);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "deduped edges differ from the input's distinct edges";
}

}  // namespace
}  // namespace ember::import_test
