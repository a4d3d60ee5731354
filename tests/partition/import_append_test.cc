// Tests of `ember import --append` (ImportOptions::append): the counts of
// the grown graph add up, old nodes keep their (partition, offset) and name,
// every old and new edge is read back exactly once, the latest edge
// generation holds exactly the appended edges, relations keep their ids,
// bad appends are refused without changing the graph, and an append killed
// with SIGKILL before its commit leaves the old graph, cleaned up by the
// next append.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "storage/graph.h"
#include "tests/partition/test_util.h"

namespace ember::import_test {
namespace {


const std::string kEmber = EMBER_BINARY;

// `n` triples "src<TAB>rel<TAB>dst" over nodes `prefix`0 .. `prefix`(nodes-1)
// (with `old_nodes` > 0, every other edge has one endpoint among the old
// nodes "a"0 .. "a"(old_nodes-1)) and the given relation names. Fixed seed.
std::vector<NamedEdge> MakeTriples(uint64_t seed, int n, const std::string& prefix,
                                   int nodes, int old_nodes,
                                   const std::vector<std::string>& rels) {
  std::mt19937_64 rng(seed);
  std::vector<NamedEdge> edges;
  for (int i = 0; i < n; ++i) {
    std::string src = absl::StrCat(prefix, rng() % nodes);
    std::string dst = absl::StrCat(prefix, rng() % nodes);
    if (old_nodes > 0 && i % 4 == 0) dst = absl::StrCat("a", rng() % old_nodes);
    if (old_nodes > 0 && i % 4 == 1) src = absl::StrCat("a", rng() % old_nodes);
    edges.push_back({src, rels[rng() % rels.size()], dst});
  }
  return edges;
}

std::string TriplesText(const std::vector<NamedEdge>& edges) {
  std::string text;
  for (const NamedEdge& e : edges) absl::StrAppend(&text, e.src, "\t", e.rel, "\t", e.dst, "\n");
  return text;
}

std::set<std::string> NodeNames(const std::vector<NamedEdge>& edges) {
  std::set<std::string> names;
  for (const NamedEdge& e : edges) {
    names.insert(e.src);
    names.insert(e.dst);
  }
  return names;
}

// Every edge of every split by names (relations included), sorted.
std::vector<NamedEdge> AllEdges(const Graph& g, uint32_t min_generation = 0) {
  NameCache names(g, /*sample_stride=*/1);
  const uint32_t P = g.manifest().num_partitions;
  std::vector<NamedEdge> out;
  for (Split s : kAllSplits) {
    for (uint32_t i = 0; i < P; ++i) {
      for (uint32_t j = 0; j < P; ++j) {
        std::vector<Edge> bucket;
        absl::Status st = g.ReadBucket(s, i, j, &bucket, min_generation);
        EXPECT_TRUE(st.ok()) << st;
        for (const Edge& e : bucket) {
          const std::string* a = names.Name(i, e.src);
          const std::string* b = names.Name(j, e.dst);
          if (a == nullptr || b == nullptr) return out;
          EXPECT_LT(e.rel, g.manifest().relations.size());
          if (e.rel >= g.manifest().relations.size()) return out;
          out.push_back({*a, g.manifest().relations[e.rel], *b});
        }
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<NamedEdge> Sorted(std::vector<NamedEdge> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<NamedEdge> Concat(std::vector<NamedEdge> a, const std::vector<NamedEdge>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  return a;
}

// Every node's reference by name.
std::map<std::string, NodeRef> RefsByName(const Graph& g) {
  std::map<std::string, NodeRef> refs;
  NameCache names(g, /*sample_stride=*/1);
  for (uint32_t p = 0; p < names.all().size(); ++p) {
    for (uint32_t o = 0; o < names.all()[p].size(); ++o) {
      refs.emplace(names.all()[p][o], NodeRef{p, o});
    }
  }
  return refs;
}

ImportOptions AppendOptions(const std::string& graph, std::vector<std::string> files) {
  ImportOptions o = BasicOptions(graph, std::move(files));
  o.append = true;
  // num_partitions stays at its default of 1: an append takes P from the
  // graph, so this must be ignored.
  return o;
}

class ImportAppendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_edges_ = MakeTriples(1, 3000, "a", 400, 0, {"follows", "likes"});
    // Half of the appended edges touch an old node; "buys" is new.
    new_edges_ = MakeTriples(2, 1000, "n", 150, 400, {"likes", "buys"});
    base_file_ = tmp_.Sub("base.tsv");
    new_file_ = tmp_.Sub("new.tsv");
    ASSERT_NO_FATAL_FAILURE(WriteFile(base_file_, TriplesText(base_edges_)));
    ASSERT_NO_FATAL_FAILURE(WriteFile(new_file_, TriplesText(new_edges_)));
    graph_ = tmp_.Sub("graph");
    ImportOptions o = BasicOptions(graph_, {base_file_});
    o.num_partitions = 4;
    o.split.fraction = {0.8, 0.1, 0.1};
    auto s = ImportGraph(o);
    ASSERT_TRUE(s.ok()) << s.status();
  }

  ScopedTempDir tmp_;
  std::vector<NamedEdge> base_edges_, new_edges_;
  std::string base_file_, new_file_, graph_;
};

TEST_F(ImportAppendTest, CountsAddUpAndOldNodesKeepTheirIds) {
  Manifest old;
  std::map<std::string, NodeRef> old_refs;
  {
    auto g = OpenGraph(graph_);
    ASSERT_TRUE(g.ok()) << g.status();
    old = (*g)->manifest();
    old_refs = RefsByName(**g);
    ASSERT_EQ(AllEdges(**g), Sorted(base_edges_));
  }
  ASSERT_EQ(old.edge_generation, 0u);
  ASSERT_EQ(old_refs.size(), NodeNames(base_edges_).size());

  ImportOptions o = AppendOptions(graph_, {new_file_});
  o.split.fraction = {0.8, 0.1, 0.1};
  auto summary = ImportGraph(o);
  ASSERT_TRUE(summary.ok()) << summary.status();

  std::set<std::string> all_names = NodeNames(base_edges_);
  const std::set<std::string> appended_names = NodeNames(new_edges_);
  all_names.insert(appended_names.begin(), appended_names.end());
  const uint64_t new_nodes = all_names.size() - old_refs.size();
  ASSERT_GT(new_nodes, 100u);
  EXPECT_EQ(summary->new_nodes, new_nodes);
  EXPECT_EQ(summary->nodes, all_names.size());
  EXPECT_EQ(summary->edges.total(), new_edges_.size());

  auto g = OpenGraph(graph_);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  EXPECT_EQ(m.num_nodes, all_names.size());
  EXPECT_EQ(m.num_partitions, 4u);
  EXPECT_EQ(m.edge_generation, 1u);
  EXPECT_EQ(m.previous_partition_sizes, old.partition_sizes);
  ASSERT_EQ(m.partition_sizes.size(), 4u);
  uint64_t grown = 0;
  for (uint32_t p = 0; p < 4; ++p) {
    EXPECT_GE(m.partition_sizes[p], old.partition_sizes[p]) << "partition " << p << " shrank";
    grown += m.partition_sizes[p] - old.partition_sizes[p];
  }
  EXPECT_EQ(grown, new_nodes);
  for (Split s : kAllSplits) {
    EXPECT_EQ(m.edges[s], old.edges[s] + summary->edges[s]) << SplitName(s);
  }
  EXPECT_EQ(m.edges.total(), base_edges_.size() + new_edges_.size());
  uint64_t bucket_sum = 0;
  for (uint64_t b : m.train_bucket_edges) bucket_sum += b;
  EXPECT_EQ(bucket_sum, m.edges.train);
  // Untrained before, untrained after (epochs restarting after an append to
  // a trained graph: tests/train/append_train_test.cc).
  EXPECT_EQ(m.training.checkpoint_version, 0u);

  // Old nodes: same (partition, offset), same name.
  for (const auto& [name, ref] : old_refs) {
    auto back = (*g)->LookupNode(name);
    ASSERT_TRUE(back.ok()) << name << ": " << back.status();
    EXPECT_TRUE(*back == ref) << name << " moved from (" << ref.partition << ", " << ref.offset
                              << ") to (" << back->partition << ", " << back->offset << ")";
    auto n = (*g)->NodeName(ref);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, name);
  }
  // New nodes: found by name, beyond the old partition sizes.
  for (const std::string& name : appended_names) {
    if (old_refs.contains(name)) continue;
    auto ref = (*g)->LookupNode(name);
    ASSERT_TRUE(ref.ok()) << name << ": " << ref.status();
    EXPECT_GE(ref->offset, old.partition_sizes[ref->partition]) << name;
    EXPECT_LT(ref->offset, m.partition_sizes[ref->partition]) << name;
    auto n = (*g)->NodeName(*ref);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, name);
  }

  // Every edge exactly once; the latest generation is the appended edges.
  EXPECT_EQ(AllEdges(**g), Concat(base_edges_, new_edges_));
  EXPECT_EQ(AllEdges(**g, m.edge_generation), Sorted(new_edges_));

  // Relations: old ids kept, new ones after them.
  ASSERT_EQ(old.relations.size(), 2u);
  ASSERT_EQ(m.relations.size(), 3u);
  EXPECT_EQ(m.relations[0], old.relations[0]);
  EXPECT_EQ(m.relations[1], old.relations[1]);
  EXPECT_EQ(m.relations[2], "buys");
}

TEST_F(ImportAppendTest, AppendingTwiceAddsTwoGenerations) {
  const std::vector<NamedEdge> third = MakeTriples(3, 500, "z", 80, 400, {"likes", "rates"});
  const std::string third_file = tmp_.Sub("third.tsv");
  ASSERT_NO_FATAL_FAILURE(WriteFile(third_file, TriplesText(third)));
  Manifest first;
  {
    auto s = ImportGraph(AppendOptions(graph_, {new_file_}));
    ASSERT_TRUE(s.ok()) << s.status();
    auto g = OpenGraph(graph_);
    ASSERT_TRUE(g.ok()) << g.status();
    first = (*g)->manifest();
  }
  auto s = ImportGraph(AppendOptions(graph_, {third_file}));
  ASSERT_TRUE(s.ok()) << s.status();
  auto g = OpenGraph(graph_);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  EXPECT_EQ(m.edge_generation, 2u);
  EXPECT_EQ(m.previous_partition_sizes, first.partition_sizes);
  EXPECT_EQ(m.edges.total(), base_edges_.size() + new_edges_.size() + third.size());
  std::set<std::string> names = NodeNames(base_edges_);
  for (const std::vector<NamedEdge>* v :
       std::initializer_list<const std::vector<NamedEdge>*>{&new_edges_, &third}) {
    const std::set<std::string> more = NodeNames(*v);
    names.insert(more.begin(), more.end());
  }
  EXPECT_EQ(m.num_nodes, names.size());
  EXPECT_EQ(m.relations, (std::vector<std::string>{"follows", "likes", "buys", "rates"}));
  EXPECT_EQ(AllEdges(**g), Concat(Concat(base_edges_, new_edges_), third));
  EXPECT_EQ(AllEdges(**g, 2), Sorted(third));
  EXPECT_EQ(AllEdges(**g, 1), Concat(new_edges_, third));
}

TEST_F(ImportAppendTest, IntegerIdsMismatchIsRefusedAndGraphUnchanged) {
  GraphSnapshot before;
  {
    auto g = OpenGraph(graph_);
    ASSERT_TRUE(g.ok()) << g.status();
    before = Snapshot(**g);
  }
  const std::string ints = tmp_.Sub("ints.tsv");
  ASSERT_NO_FATAL_FAILURE(WriteFile(ints, "1\t2\n3\t4\n"));
  ImportOptions o = AppendOptions(graph_, {ints});
  o.integer_ids = true;
  auto s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
  EXPECT_NE(s.status().message().find("integer-ids"), std::string::npos) << s.status();
  auto g = OpenGraph(graph_);
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectSameGraph(before, Snapshot(**g));
  EXPECT_EQ((*g)->manifest().edge_generation, 0u);

  // The other way round: an integer graph refuses a string append.
  const std::string int_graph = tmp_.Sub("int-graph");
  ImportOptions io = BasicOptions(int_graph, {ints});
  io.integer_ids = true;
  ASSERT_TRUE(ImportGraph(io).ok());
  auto s2 = ImportGraph(AppendOptions(int_graph, {ints}));
  ASSERT_FALSE(s2.ok());
  EXPECT_EQ(s2.status().code(), absl::StatusCode::kInvalidArgument) << s2.status();
}

TEST_F(ImportAppendTest, AppendToMissingGraphFails) {
  auto s = ImportGraph(AppendOptions(tmp_.Sub("nothing-here"), {new_file_}));
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(fs::exists(tmp_.Sub("nothing-here")));
}

TEST_F(ImportAppendTest, BadLineInAppendLeavesGraphUnchanged) {
  GraphSnapshot before;
  {
    auto g = OpenGraph(graph_);
    ASSERT_TRUE(g.ok()) << g.status();
    before = Snapshot(**g);
  }
  const std::string bad = tmp_.Sub("bad.tsv");
  ASSERT_NO_FATAL_FAILURE(WriteFile(bad, TriplesText(new_edges_) + "lonely\n"));
  auto s = ImportGraph(AppendOptions(graph_, {bad}));
  ASSERT_FALSE(s.ok());
  auto g = OpenGraph(graph_);
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectSameGraph(before, Snapshot(**g));
  EXPECT_FALSE((*g)->LookupNode("n1").ok());
  g->reset();
  // And a good append afterwards still works.
  auto ok = ImportGraph(AppendOptions(graph_, {new_file_}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto g2 = OpenGraph(graph_);
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(AllEdges(**g2), Concat(base_edges_, new_edges_));
}

// --- crash safety ---------------------------------------------------------

std::vector<std::string> AppendDirs(const std::string& graph) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(graph, ec)) {
    if (e.path().filename().string().rfind("append-", 0) == 0) found.push_back(e.path());
  }
  return found;
}

uint64_t SstFilesUnder(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".sst" &&
        it->path().string().find("/append-") == std::string::npos) {
      ++n;
    }
  }
  return n;
}

// An append killed with SIGKILL (early: while it parses; late: once it has
// ingested files into the graph's DBs, before the manifest) leaves the old
// graph readable with its old counts and without the new nodes; the next
// append removes the leftovers and commits the right counts.
TEST(ImportAppendKillTest, KilledAppendLeavesOldGraphAndRerunSucceeds) {
  ScopedTempDir tmp;
  const std::string base = tmp.Sub("base.tsv");
  const std::string more = tmp.Sub("more.tsv");
  for (auto [path, scale, seed] : {std::tuple{base, "14", "5"}, std::tuple{more, "17", "6"}}) {
    ProcessResult gen = RunProcess({kEmber, "gen", "rmat", "--scale", scale, "--edge_factor",
                                    "16", "--seed", seed, "--threads", "2", "--quiet", "--out",
                                    path},
                                   tmp.path());
    ASSERT_EQ(gen.exit_code, 0) << "ember gen rmat failed: " << gen.err;
  }
  const std::vector<IntEdge> base_edges = ReadIntEdgeFile(base);
  const std::vector<IntEdge> more_edges = ReadIntEdgeFile(more);
  std::vector<IntEdge> all = base_edges;
  all.insert(all.end(), more_edges.begin(), more_edges.end());
  absl::flat_hash_set<uint64_t> base_ids;
  for (auto [a, b] : base_edges) base_ids.insert(a), base_ids.insert(b);
  // A node that only the append introduces.
  std::string only_new;
  for (auto [a, b] : more_edges) {
    if (!base_ids.contains(a)) {
      only_new = std::to_string(a);
      break;
    }
  }
  ASSERT_FALSE(only_new.empty());

  const std::string graph = tmp.Sub("graph");
  {
    ImportOptions o = BasicOptions(graph, {base});
    o.num_partitions = 8;
    auto s = ImportGraph(o);
    ASSERT_TRUE(s.ok()) << s.status();
  }
  GraphSnapshot before;
  {
    auto g = OpenGraph(graph);
    ASSERT_TRUE(g.ok()) << g.status();
    before = Snapshot(**g);
  }
  const uint64_t base_ssts = SstFilesUnder(graph);
  const std::vector<std::string> args = {kEmber, "import", "--append", graph, "--threads", "2",
                                         "--quiet", more};

  auto check_old_graph = [&](const char* when) {
    SCOPED_TRACE(when);
    auto g = OpenGraph(graph);
    ASSERT_TRUE(g.ok()) << g.status();
    ExpectSameGraph(before, Snapshot(**g));
    EXPECT_EQ((*g)->manifest().edge_generation, 0u);
    auto ref = (*g)->LookupNode(only_new);
    EXPECT_TRUE(absl::IsNotFound(ref.status()))
        << "LookupNode(" << only_new << ") of a node only the killed append introduced: "
        << (ref.ok() ? absl::StrCat("found at (", ref->partition, ", ", ref->offset, ")")
                     : ref.status().ToString());
  };

  // Kill 1: early, once append-<pid>/ exists and holds spill.
  {
    ChildProcess child(args, tmp.Sub("child"));
    ASSERT_TRUE(child.started());
    ASSERT_TRUE(PollUntil(&child, [&] { return !AppendDirs(graph).empty(); },
                          std::chrono::seconds(60)))
        << "no " << graph << "/append-* appeared; stderr: " << child.Wait().err;
    ASSERT_FALSE(child.Exited()) << "the append finished before it could be killed; make the "
                                    "input larger";
    child.Kill();
    EXPECT_EQ(child.Wait().term_signal, SIGKILL);
    EXPECT_FALSE(AppendDirs(graph).empty());
    ASSERT_NO_FATAL_FAILURE(check_old_graph("after an early kill"));
  }
  // Kill 2: late, once the graph's DBs hold more SST files than before (an
  // ingest has happened) but, with luck, before the manifest commit.
  bool killed_late = false;
  {
    ChildProcess child(args, tmp.Sub("child"));
    ASSERT_TRUE(child.started());
    const bool ingesting = PollUntil(
        &child, [&] { return SstFilesUnder(graph) > base_ssts; }, std::chrono::seconds(120));
    if (ingesting && !child.Exited()) {
      child.Kill();
      ProcessResult r = child.Wait();
      auto g = OpenGraph(graph);
      ASSERT_TRUE(g.ok()) << g.status();
      killed_late = r.term_signal == SIGKILL && (*g)->manifest().edge_generation == 0;
    } else {
      child.Wait();
    }
    if (killed_late) {
      ASSERT_NO_FATAL_FAILURE(check_old_graph("after a kill during ingestion"));
    } else {
      // It committed first; start over from the base graph for the rerun.
      fs::remove_all(graph);
      ImportOptions o = BasicOptions(graph, {base});
      o.num_partitions = 8;
      ASSERT_TRUE(ImportGraph(o).ok());
    }
  }
  std::cerr << "[          ] late kill "
            << (killed_late ? "happened (after an ingest, before the commit)"
                            : "missed (the append committed first)")
            << "\n";

  // The rerun removes the leftovers and commits the right counts.
  ProcessResult r = RunProcess(args, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << "append after a kill failed: " << r.err;
  EXPECT_TRUE(AppendDirs(graph).empty()) << AppendDirs(graph).front();
  auto g = OpenGraph(graph);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  EXPECT_EQ(m.edge_generation, 1u);
  EXPECT_EQ(m.num_nodes, DistinctNodes(all));
  EXPECT_EQ(m.edges.train, all.size());
  EXPECT_EQ(m.previous_partition_sizes, before.manifest.partition_sizes);
  NameCache names(**g);
  std::vector<IntEdge> read = ReadIntEdges(**g, Split::kTrain, &names);
  std::sort(all.begin(), all.end());
  EXPECT_TRUE(read == all) << "read back " << read.size() << " edges, expected " << all.size();
  auto ref = (*g)->LookupNode(only_new);
  EXPECT_TRUE(ref.ok()) << ref.status();
}

}  // namespace
}  // namespace ember::import_test
