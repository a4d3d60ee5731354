// ember neighbors: flat equals brute force, IVF/HNSW recall against flat,
// block purity on an SBM graph, relation operators, saved FAISS indexes, the
// --json line format, one type's index and known links left out (against
// `ember recommend`).
#include "tools/export/neighbors.h"

#include <faiss/Index.h>
#include <faiss/index_io.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "train/model/checkpoint.h"

namespace ember::tools {
namespace {

using ::ember::testing::TempDir;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunShell;

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// All embeddings in global-id order, straight from the checkpoint.
struct Table {
  StoredModel model;
  int dim = 0;
  uint64_t n = 0;
  std::vector<float> rows;
  std::vector<std::string> names;
  std::map<std::string, uint64_t> ids;
  const float* Row(uint64_t i) const { return &rows[i * dim]; }
};

Table LoadTable(const Graph& graph) {
  Table t;
  auto model = LoadStoredModel(graph);
  EXPECT_TRUE(model.ok()) << model.status();
  t.model = *model;
  t.dim = model->model.dim;
  t.n = graph.manifest().num_nodes;
  for (uint32_t p = 0; p < graph.manifest().num_partitions; ++p) {
    auto rows = LoadPartitionEmbeddings(graph, *model, p);
    EXPECT_TRUE(rows.ok()) << rows.status();
    t.rows.insert(t.rows.end(), rows->begin(), rows->end());
    EXPECT_TRUE(graph
                    .ForEachNodeName(p,
                                     [&](uint32_t, std::string_view name) {
                                       t.ids[std::string(name)] = t.names.size();
                                       t.names.emplace_back(name);
                                       return absl::OkStatus();
                                     })
                    .ok());
  }
  return t;
}

// The model's score, computed independently of ember's code, in double.
double Score(Comparator cmp, const std::vector<double>& q, const float* x) {
  double dot = 0, qq = 0, xx = 0, dd = 0;
  for (size_t j = 0; j < q.size(); ++j) {
    dot += q[j] * x[j];
    qq += q[j] * q[j];
    xx += double(x[j]) * x[j];
    dd += (q[j] - x[j]) * (q[j] - x[j]);
  }
  switch (cmp) {
    case Comparator::kDot:
      return dot;
    case Comparator::kCos:
      return dot / (std::max(std::sqrt(qq), 1e-12) * std::max(std::sqrt(xx), 1e-12));
    case Comparator::kL2:
      return -std::sqrt(dd);
  }
  return 0;
}

// op_r(e) written out from the operator definitions in model_options.h;
// rel R + r (R relations) is r's inverse in a reciprocal model.
std::vector<double> ApplyOp(const Table& t, int rel, const float* e) {
  const int d = t.dim, h = d / 2;
  std::vector<double> q(e, e + d);
  if (rel < 0) return q;
  const int relations = static_cast<int>(t.model.relations.num_relations);
  const float* w =
      rel < relations ? t.model.relations.Of(rel) : t.model.relations.Of(rel - relations) + d;
  switch (t.model.model.op) {
    case Operator::kNone:
      break;
    case Operator::kTranslation:
      for (int j = 0; j < d; ++j) q[j] = double(e[j]) + w[j];
      break;
    case Operator::kDiagonal:
      for (int j = 0; j < d; ++j) q[j] = double(e[j]) * w[j];
      break;
    case Operator::kComplexDiagonal:
      for (int j = 0; j < h; ++j) {
        q[j] = double(e[j]) * w[j] - double(e[j + h]) * w[j + h];
        q[j + h] = double(e[j]) * w[j + h] + double(e[j + h]) * w[j];
      }
      break;
  }
  return q;
}

struct Scored {
  double score;
  uint64_t id;
};

std::vector<Scored> BruteForce(const Table& t, uint64_t query, int rel, int k) {
  const std::vector<double> q = ApplyOp(t, rel, t.Row(query));
  std::vector<Scored> all;
  for (uint64_t i = 0; i < t.n; ++i) {
    if (i != query) all.push_back({Score(t.model.model.comparator, q, t.Row(i)), i});
  }
  std::partial_sort(all.begin(), all.begin() + k, all.end(), [](const Scored& a, const Scored& b) {
    return a.score != b.score ? a.score > b.score : a.id < b.id;
  });
  all.resize(k);
  return all;
}

// Same ids and scores (within 1e-5) as brute force; where ids differ the
// two must be tied in score.
void ExpectMatchesBruteForce(const Table& t, const NeighborList& got, int rel, int k) {
  const uint64_t query = t.ids.at(got.node);
  const std::vector<Scored> want = BruteForce(t, query, rel, k);
  const std::vector<double> q = ApplyOp(t, rel, t.Row(query));
  ASSERT_EQ(got.neighbors.size(), size_t(k)) << got.node;
  for (int i = 0; i < k; ++i) {
    const Neighbor& n = got.neighbors[i];
    EXPECT_NE(n.global_id, query) << "the query is among its own neighbours";
    EXPECT_EQ(n.node, t.names[n.global_id]);
    EXPECT_NEAR(n.score, want[i].score, 1e-5) << got.node << " rank " << i;
    if (n.global_id != want[i].id) {
      EXPECT_NEAR(Score(t.model.model.comparator, q, t.Row(n.global_id)), want[i].score, 1e-5)
          << got.node << " rank " << i << ": " << n.node << " vs " << t.names[want[i].id];
    }
  }
}

double Recall(const std::vector<NeighborList>& approx, const std::vector<NeighborList>& exact) {
  uint64_t hit = 0, total = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    std::set<uint64_t> want;
    for (const Neighbor& n : exact[i].neighbors) want.insert(n.global_id);
    for (const Neighbor& n : approx[i].neighbors) hit += want.count(n.global_id);
    total += want.size();
  }
  return total == 0 ? 0 : double(hit) / total;
}

// SBM: 2000 nodes in 10 blocks, 5 % of edges across blocks, dot comparator.
class NeighborsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string bin = EMBER_BINARY;
    const std::string edges = dir_->Sub("sbm.tsv"), labels = dir_->Sub("labels.tsv");
    graph_dir_ = dir_->Sub("g");
    ASSERT_EQ(RunShell(bin + " gen sbm --quiet --nodes 2000 --blocks 10 --avg-degree 20 "
                        "--mixing 0.05 --seed 1 --out " +
                  edges + " --labels-out " + labels),
              0);
    ASSERT_EQ(RunShell(bin + " import --quiet --partitions 2 --out " + graph_dir_ + " " + edges +
                  " > /dev/null"),
              0);
    ASSERT_EQ(RunShell(bin + " train " + graph_dir_ + " --quiet --epochs 5 --dim 32 > /dev/null"), 0);
    blocks_ = new std::map<std::string, std::string>();
    for (const std::string& line : ReadLines(labels)) {
      const size_t tab = line.find('\t');
      (*blocks_)[line.substr(0, tab)] = line.substr(tab + 1);
    }
    ASSERT_EQ(blocks_->size(), 2000u);
  }
  static void TearDownTestSuite() {
    delete blocks_;
    delete dir_;
  }

  static TempDir* dir_;
  static std::string graph_dir_;
  static std::map<std::string, std::string>* blocks_;
};
TempDir* NeighborsTest::dir_ = nullptr;
std::string NeighborsTest::graph_dir_;
std::map<std::string, std::string>* NeighborsTest::blocks_ = nullptr;

TEST_F(NeighborsTest, FlatEqualsBruteForce) {
  auto graph = Graph::Open(graph_dir_);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Table t = LoadTable(**graph);
  ASSERT_EQ(t.model.model.comparator, Comparator::kDot);
  auto index = NeighborIndex::Build(**graph, {});
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ((*index)->metric(), "inner_product");
  std::vector<std::string> queries;
  for (uint64_t i = 0; i < t.n; i += 7) queries.push_back(t.names[i]);  // 286 nodes
  auto results = (*index)->Search(queries, "", 10);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), queries.size());
  for (const NeighborList& list : *results) ExpectMatchesBruteForce(t, list, -1, 10);
}

TEST_F(NeighborsTest, ApproximateIndexesRecallFlat) {
  auto graph = Graph::Open(graph_dir_);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Table t = LoadTable(**graph);
  auto flat = NeighborIndex::Build(**graph, {});
  ASSERT_TRUE(flat.ok()) << flat.status();
  auto exact = (*flat)->Search(t.names, "", 10);
  ASSERT_TRUE(exact.ok()) << exact.status();
  for (IndexKind kind : {IndexKind::kIvf, IndexKind::kHnsw}) {
    NeighborIndexOptions o;
    o.kind = kind;
    auto index = NeighborIndex::Build(**graph, o);
    ASSERT_TRUE(index.ok()) << index.status();
    auto approx = (*index)->Search(t.names, "", 10);
    ASSERT_TRUE(approx.ok()) << approx.status();
    const double recall = Recall(*approx, *exact);
    std::printf("[ %s ] recall@10 vs flat over %zu queries: %.4f (nlist %d nprobe %d efSearch %d)\n",
                std::string(IndexKindName(kind)).c_str(), t.names.size(), recall,
                (*index)->nlist(), (*index)->nprobe(), (*index)->ef_search());
    EXPECT_GE(recall, 0.9) << IndexKindName(kind);
    // Scores of what they do return are exact model scores.
    for (size_t i = 0; i < 50; ++i) {
      const std::vector<double> q = ApplyOp(t, -1, t.Row(i));
      for (const Neighbor& n : (*approx)[i].neighbors) {
        EXPECT_NE(n.global_id, i);
        EXPECT_NEAR(n.score, Score(Comparator::kDot, q, t.Row(n.global_id)), 1e-5);
      }
    }
  }
}

// CLI, --queries and --json over all 2000 nodes: one JSON line per query,
// best first, query excluded, and >= 90 % of top-10 neighbours in the
// query's block.
TEST_F(NeighborsTest, CliJsonAndBlockPurity) {
  TempDir tmp;
  const std::string queries = tmp.Sub("queries.txt"), out = tmp.Sub("out.jsonl");
  {
    std::ofstream q(queries);
    for (const auto& [name, block] : *blocks_) q << name << "\n";
  }
  const std::string bin = EMBER_BINARY;
  ASSERT_EQ(RunShell(bin + " neighbors " + graph_dir_ + " --quiet --json --k 10 --queries " +
                queries + " > " + out),
            0);
  const std::vector<std::string> lines = ReadLines(out);
  ASSERT_EQ(lines.size(), blocks_->size());
  uint64_t same = 0, total = 0;
  size_t i = 0;
  for (const auto& [name, block] : *blocks_) {
    const std::string& line = lines[i++];
    // Key order as documented: {"node": ..., "neighbors": [...], "gemm": {...}}.
    ASSERT_EQ(line.rfind("{\"node\":", 0), 0u) << line;
    const nlohmann::json j = nlohmann::json::parse(line);
    ASSERT_EQ(j.size(), 3u);
    ASSERT_FALSE(j["gemm"]["kernel"].get<std::string>().empty()) << line;
    ASSERT_EQ(j["node"], name);
    ASSERT_EQ(j["neighbors"].size(), 10u);
    double last = INFINITY;
    for (const auto& n : j["neighbors"]) {
      ASSERT_EQ(n.size(), 2u);
      const std::string other = n["node"];
      const double score = n["score"];
      EXPECT_NE(other, name) << "query in its own results";
      EXPECT_LE(score, last) << "not best first: " << line;
      last = score;
      same += blocks_->at(other) == block;
      ++total;
    }
  }
  const double purity = double(same) / total;
  std::printf("[ purity ] %.4f of top-10 neighbours share the query's block (%zu queries)\n",
              purity, blocks_->size());
  EXPECT_GE(purity, 0.9);
}

TEST_F(NeighborsTest, SavedIndexLoadsInFaiss) {
  TempDir tmp;
  auto graph = Graph::Open(graph_dir_);
  ASSERT_TRUE(graph.ok());
  const Table t = LoadTable(**graph);
  const std::string queries = tmp.Sub("q.txt"), out = tmp.Sub("out.jsonl");
  std::vector<uint64_t> query_ids;
  {
    std::ofstream q(queries);
    for (uint64_t i = 3; i < t.n; i += 40) {
      q << t.names[i] << "\n";
      query_ids.push_back(i);
    }
  }
  for (const std::string kind : {"flat", "ivf", "hnsw"}) {
    SCOPED_TRACE(kind);
    const std::string index_path = tmp.Sub("index." + kind);
    const std::string bin = EMBER_BINARY;
    ASSERT_EQ(RunShell(bin + " neighbors " + graph_dir_ + " --quiet --json --index " + kind +
                  " --queries " + queries + " --save-index " + index_path + " > " + out),
              0);
    const std::vector<std::string> names = ReadLines(index_path + ".names.tsv");
    ASSERT_EQ(names, t.names);
    const nlohmann::json meta = nlohmann::json::parse(ReadWholeFile(index_path + ".meta.json"));
    EXPECT_EQ(meta["metric"], "inner_product");
    EXPECT_EQ(meta["index"], kind);
    std::unique_ptr<faiss::Index> index(faiss::read_index(index_path.c_str()));
    ASSERT_EQ(uint64_t(index->ntotal), t.n);
    ASSERT_EQ(index->d, t.dim);
    const std::vector<std::string> lines = ReadLines(out);
    ASSERT_EQ(lines.size(), query_ids.size());
    for (size_t i = 0; i < query_ids.size(); ++i) {
      std::vector<float> dist(11);
      std::vector<faiss::Index::idx_t> labels(11);
      index->search(1, t.Row(query_ids[i]), 11, dist.data(), labels.data());
      std::set<std::string> from_faiss;
      for (auto id : labels) {
        if (id >= 0 && uint64_t(id) != query_ids[i] && from_faiss.size() < 10) {
          from_faiss.insert(names[id]);
        }
      }
      std::set<std::string> from_ember;
      const nlohmann::json j = nlohmann::json::parse(lines[i]);
      for (const auto& n : j["neighbors"]) {
        from_ember.insert(n["node"].get<std::string>());
      }
      EXPECT_EQ(from_ember, from_faiss) << t.names[query_ids[i]];
    }
  }
  // An existing index file is refused without --overwrite.
  const std::string bin = EMBER_BINARY;
  EXPECT_EQ(RunShell(bin + " neighbors " + graph_dir_ + " --quiet --node 5 --save-index " +
                tmp.Sub("index.flat") + " > /dev/null 2>&1"),
            1);
}

TEST_F(NeighborsTest, UnknownNodeIsAnError) {
  TempDir tmp;
  const std::string err = tmp.Sub("err.txt");
  const std::string bin = EMBER_BINARY;
  EXPECT_EQ(RunShell(bin + " neighbors " + graph_dir_ + " --quiet --node no_such_node > /dev/null 2> " +
                err),
            1);
  EXPECT_NE(ReadWholeFile(err).find("unknown node 'no_such_node'"), std::string::npos) << ReadWholeFile(err);
  EXPECT_EQ(RunShell(bin + " neighbors " + graph_dir_ + " --quiet --node 5 --relation nope > /dev/null 2> " +
                err),
            1);
  EXPECT_NE(ReadWholeFile(err).find("unknown relation 'nope'"), std::string::npos) << ReadWholeFile(err);

  auto graph = Graph::Open(graph_dir_);
  ASSERT_TRUE(graph.ok());
  auto index = NeighborIndex::Build(**graph, {});
  ASSERT_TRUE(index.ok());
  auto r = (*index)->Search({"5", "no_such_node"}, "", 10);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status()));
  EXPECT_NE(std::string(r.status().message()).find("no_such_node"), std::string::npos);
}

TEST(IndexMemoryTest, VectorsAndEachKindsStructures) {
  NeighborIndexOptions o;
  const uint64_t vectors = 1000000ull * 100 * 4;
  const uint64_t flat = IndexMemoryBytes(IndexKind::kFlat, 1000000, 100, 250000, false, o);
  EXPECT_EQ(flat, vectors + 250000ull * 100 * 4);
  EXPECT_EQ(IndexMemoryBytes(IndexKind::kFlat, 1000000, 100, 250000, true, o),
            flat + 1000000ull * 4);
  // HNSW: 2 M int32 links per row at level 0, and a quarter more above.
  EXPECT_EQ(IndexMemoryBytes(IndexKind::kHnsw, 1000000, 100, 250000, false, o),
            flat + 1000000ull * 2 * 32 * 4 * 5 / 4);
  EXPECT_GT(IndexMemoryBytes(IndexKind::kIvf, 1000000, 100, 250000, false, o), flat);
}

TEST_F(NeighborsTest, AnIndexOverTheMemoryBudgetIsRefusedBeforeItIsBuilt) {
  auto graph = Graph::Open(graph_dir_);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Manifest& m = (*graph)->manifest();
  const uint64_t largest = *std::max_element(m.partition_sizes.begin(), m.partition_sizes.end());
  NeighborIndexOptions o;
  o.kind = IndexKind::kHnsw;
  const uint64_t need = IndexMemoryBytes(o.kind, m.num_nodes, 32, largest, false, o);
  o.memory_budget = need - 1;
  auto refused = NeighborIndex::Build(**graph, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("raise --memory-budget"));
  o.memory_budget = need;
  EXPECT_TRUE(NeighborIndex::Build(**graph, o).ok());

  TempDir tmp;
  const std::string err = tmp.Sub("err.txt");
  EXPECT_EQ(RunShell(std::string(EMBER_BINARY) + " neighbors " + graph_dir_ +
                     " --quiet --node 5 --memory-budget 64K > /dev/null 2> " + err),
            1);
  EXPECT_THAT(ReadWholeFile(err), ::testing::HasSubstr("over the memory budget of 64.0 KiB"));
}

// A tiny multi-relation graph: neighbours of op_r(e_q) equal brute force, for
// translation + l2 (TransE) and complex_diagonal + cos (normalised index).
TEST(NeighborsRelationTest, OperatorAppliedToQuery) {
  TempDir tmp;
  const std::string edges = tmp.Sub("edges.tsv");
  {
    std::ofstream out(edges);
    uint64_t x = 99;
    for (int i = 0; i < 2400; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const int src = (x >> 33) % 300, rel = (x >> 20) % 3;
      // Each relation maps a node to a fixed offset, plus some noise.
      const int dst = ((x >> 10) % 8 == 0) ? (x >> 40) % 300 : (src + 17 * (rel + 1)) % 300;
      out << "v" << src << "\tr" << rel << "\tv" << dst << "\n";
    }
  }
  const std::string bin = EMBER_BINARY;
  struct Config {
    const char* op;
    const char* cmp;
    IndexKind kind;
  };
  for (const Config& c : {Config{"translation", "l2", IndexKind::kFlat},
                          Config{"complex_diagonal", "cos", IndexKind::kFlat},
                          Config{"translation", "dot", IndexKind::kFlat}}) {
    SCOPED_TRACE(std::string(c.op) + "/" + c.cmp);
    const std::string g = tmp.Sub(std::string("g_") + c.op + "_" + c.cmp);
    ASSERT_EQ(RunShell(bin + " import --quiet --partitions 2 --out " + g + " " + edges + " > /dev/null"),
              0);
    ASSERT_EQ(RunShell(bin + " train " + g + " --quiet --epochs 3 --dim 16 --operator " + c.op +
                  " --comparator " + c.cmp + " > /dev/null"),
              0);
    auto graph = Graph::Open(g);
    ASSERT_TRUE(graph.ok());
    const Table t = LoadTable(**graph);
    ASSERT_EQ((*graph)->manifest().relations.size(), 3u);
    NeighborIndexOptions o;
    o.kind = c.kind;
    auto index = NeighborIndex::Build(**graph, o);
    ASSERT_TRUE(index.ok()) << index.status();
    std::vector<std::string> queries;
    for (uint64_t i = 0; i < t.n; i += 5) queries.push_back(t.names[i]);
    uint64_t differs = 0;
    auto plain = (*index)->Search(queries, "", 10);
    ASSERT_TRUE(plain.ok());
    for (int rel = 0; rel < 3; ++rel) {
      const std::string name = (*graph)->manifest().relations[rel];
      auto results = (*index)->Search(queries, name, 10);
      ASSERT_TRUE(results.ok()) << results.status();
      for (size_t i = 0; i < results->size(); ++i) {
        ExpectMatchesBruteForce(t, (*results)[i], rel, 10);
        differs += (*results)[i].neighbors[0].global_id != (*plain)[i].neighbors[0].global_id;
      }
    }
    // The operator changes the answers (it is not silently ignored).
    EXPECT_GT(differs, 0u);
  }
}

// A typed user-item graph: --type item indexes the items only, results map
// back to global ids; the queries (users) are outside the index. With
// exclude_known a user's train items are left out, and the top K is then
// what `ember recommend` computes, the same exact ranking.
TEST(NeighborsTypedTest, OneTypeAndKnownLinksLeftOut) {
  TempDir tmp;
  const std::string edges = tmp.Sub("likes.tsv"), g = tmp.Sub("g");
  {
    std::ofstream out(edges);
    uint64_t x = 7;
    for (int u = 0; u < 200; ++u) {
      std::set<int> items;
      while (items.size() < 8) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        // Mostly the user's group (u % 6) of 60 items.
        items.insert((x >> 33) % 4 == 0 ? (x >> 40) % 60 : u % 6 + 6 * ((x >> 40) % 10));
      }
      for (int i : items) out << "user" << u << "\tlikes\titem" << i << "\n";
    }
  }
  const std::string bin = EMBER_BINARY;
  ASSERT_EQ(RunShell(bin +
                     " import --quiet --schema likes:user:item --type-partitions user=2 "
                     "--split 0.8,0,0.2 --seed 3 --out " +
                     g + " " + edges + " > /dev/null"),
            0);
  ASSERT_EQ(RunShell(bin + " train " + g +
                     " --quiet --epochs 3 --dim 16 --operator translation --comparator dot "
                     "--seed 1 --threads 2 > /dev/null"),
            0);
  auto graph = Graph::Open(g);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Manifest& m = (*graph)->manifest();
  const Table t = LoadTable(**graph);
  auto item_type = m.FindType("item");
  ASSERT_TRUE(item_type.ok());
  const uint64_t first = m.PartitionBase(m.FirstPartitionOf(*item_type));
  const uint64_t items = m.NodesOf(*item_type);
  ASSERT_EQ(first + items, t.n) << "items come after the users' partitions";

  NeighborIndexOptions o;
  o.type = "item";
  auto index = NeighborIndex::Build(**graph, o);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ((*index)->size(), items);
  EXPECT_EQ((*index)->first_id(), first);

  // Each query's train items (global ids).
  std::map<uint64_t, std::set<uint64_t>> known;
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    for (uint32_t q = 0; q < m.num_partitions; ++q) {
      ASSERT_TRUE((*graph)
                      ->ForEachEdgeBlock(Split::kTrain, p, q,
                                         [&](std::span<const Edge> block) {
                                           for (const Edge& e : block) {
                                             known[m.PartitionBase(p) + e.src].insert(
                                                 m.PartitionBase(q) + e.dst);
                                           }
                                           return absl::OkStatus();
                                         })
                      .ok());
    }
  }
  std::vector<std::string> queries;
  for (int u = 0; u < 200; u += 9) queries.push_back("user" + std::to_string(u));
  // Brute force over the items, leaving out `skip`.
  auto brute = [&](uint64_t query, const std::set<uint64_t>& skip) {
    const std::vector<double> q = ApplyOp(t, 0, t.Row(query));
    std::vector<Scored> all;
    for (uint64_t i = first; i < t.n; ++i) {
      if (!skip.count(i)) all.push_back({Score(Comparator::kDot, q, t.Row(i)), i});
    }
    std::sort(all.begin(), all.end(), [](const Scored& a, const Scored& b) {
      return a.score != b.score ? a.score > b.score : a.id < b.id;
    });
    all.resize(10);
    return all;
  };
  auto plain = (*index)->Search(queries, "likes", 10);
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto fresh = (*index)->Search(queries, "likes", 10, /*exclude_known=*/true);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  uint64_t known_in_plain = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    SCOPED_TRACE(queries[i]);
    const uint64_t query = t.ids.at(queries[i]);
    const std::set<uint64_t>& links = known[query];
    ASSERT_FALSE(links.empty());
    for (const auto& [list, skip] :
         {std::pair{&(*plain)[i], std::set<uint64_t>{}}, std::pair{&(*fresh)[i], links}}) {
      const std::vector<Scored> want = brute(query, skip);
      ASSERT_EQ(list->neighbors.size(), 10u);
      for (int r = 0; r < 10; ++r) {
        const Neighbor& n = list->neighbors[r];
        EXPECT_GE(n.global_id, first) << "a node of another type: " << n.node;
        EXPECT_EQ(n.node, t.names[n.global_id]);
        EXPECT_EQ(n.global_id, want[r].id) << "rank " << r;
        EXPECT_NEAR(n.score, want[r].score, 1e-4) << "rank " << r;
      }
    }
    for (const Neighbor& n : (*plain)[i].neighbors) known_in_plain += links.count(n.global_id);
    for (const Neighbor& n : (*fresh)[i].neighbors)
      EXPECT_FALSE(links.count(n.global_id)) << n.node;
  }
  // Leaving them out changed something: the model ranks what users have high.
  EXPECT_GT(known_in_plain, 0u);
  auto bad = (*index)->Search(queries, "", 10, /*exclude_known=*/true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();

  // The CLI: the same lists, and the same as `ember recommend`'s.
  const std::string users = tmp.Sub("users.txt");
  {
    std::ofstream f(users);
    for (const std::string& q : queries) f << q << "\n";
  }
  const std::string json = tmp.Sub("out.jsonl"), recs = tmp.Sub("recs.tsv");
  ASSERT_EQ(RunShell(bin + " neighbors " + g +
                     " --quiet --json --type item --relation likes "
                     "--exclude-known --k 10 --queries " +
                     users + " > " + json),
            0);
  // neighbors leaves out the train split's links: recommend's
  // --exclude-known=train (its default leaves out every split's).
  ASSERT_EQ(RunShell(bin + " recommend " + g + " --quiet --relation likes --k 10 --users " + users +
                     " --exclude-known=train --out " + recs),
            0);
  std::map<std::string, std::vector<std::pair<std::string, double>>> recommended;
  for (const std::string& line : ReadLines(recs)) {
    std::istringstream in(line);
    std::string user, item;
    double score;
    in >> user >> item >> score;
    recommended[user].emplace_back(item, score);
  }
  const std::vector<std::string> lines = ReadLines(json);
  ASSERT_EQ(lines.size(), queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    const nlohmann::json j = nlohmann::json::parse(lines[i]);
    ASSERT_EQ(j["node"], queries[i]);
    const auto& rec = recommended[queries[i]];
    ASSERT_EQ(j["neighbors"].size(), 10u);
    ASSERT_EQ(rec.size(), 10u);
    for (int r = 0; r < 10; ++r) {
      EXPECT_EQ(j["neighbors"][r]["node"], (*fresh)[i].neighbors[r].node);
      EXPECT_EQ(j["neighbors"][r]["node"], rec[r].first) << queries[i] << " rank " << r;
      EXPECT_NEAR(j["neighbors"][r]["score"].get<double>(), rec[r].second, 1e-4);
    }
  }
  // Without --exclude-known the known items stay (the flag is recommend's,
  // on there by default, off here unless given).
  ASSERT_EQ(RunShell(bin + " neighbors " + g +
                     " --quiet --json --type item --relation likes "
                     "--k 10 --queries " +
                     users + " > " + json),
            0);
  EXPECT_EQ(nlohmann::json::parse(ReadLines(json)[0])["neighbors"][0]["node"],
            (*plain)[0].neighbors[0].node);

  // Refusals, and the saved index holds the type's rows.
  const std::string err = tmp.Sub("err.txt");
  EXPECT_EQ(RunShell(bin + " neighbors " + g +
                     " --quiet --node user1 --exclude-known > /dev/null 2> " + err),
            1);
  EXPECT_THAT(ReadWholeFile(err), ::testing::HasSubstr("--exclude-known needs --relation"));
  EXPECT_EQ(RunShell(bin + " neighbors " + g +
                     " --quiet --node user1 --type movie > /dev/null 2> " + err),
            1);
  EXPECT_THAT(ReadWholeFile(err), ::testing::HasSubstr("movie"));
  const std::string saved = tmp.Sub("items.index");
  ASSERT_EQ(RunShell(bin + " neighbors " + g + " --quiet --type item --node item3 --save-index " +
                     saved + " > /dev/null"),
            0);
  EXPECT_EQ(ReadLines(saved + ".names.tsv").size(), items);
  const nlohmann::json meta = nlohmann::json::parse(ReadWholeFile(saved + ".meta.json"));
  EXPECT_EQ(meta["type"], "item");
  EXPECT_EQ(meta["first_global_id"], first);
  std::unique_ptr<faiss::Index> read(faiss::read_index(saved.c_str()));
  EXPECT_EQ(uint64_t(read->ntotal), items);
}

// A reciprocal model's inverse relations answer head queries: --relation
// r_inv applies w_{r⁻¹}, as brute force does; a model without them, or a
// name that is no relation's inverse, is an unknown relation.
TEST(NeighborsRelationTest, ReciprocalInverseRelations) {
  TempDir tmp;
  const std::string edges = tmp.Sub("edges.tsv");
  {
    std::ofstream out(edges);
    uint64_t x = 7;
    for (int i = 0; i < 1200; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const int src = (x >> 33) % 200, rel = (x >> 20) % 2;
      out << "v" << src << "\tr" << rel << "\tv" << (src + 11 * (rel + 1)) % 200 << "\n";
    }
  }
  const std::string bin = EMBER_BINARY;
  const std::string g = tmp.Sub("g");
  ASSERT_EQ(RunShell(bin + " import --quiet --out " + g + " " + edges + " > /dev/null"), 0);
  ASSERT_EQ(RunShell(bin + " train " + g + " --quiet --epochs 2 --dim 16 --lr 0.1 " +
                     "--operator complex_diagonal --reciprocal > /dev/null"),
            0);
  auto graph = Graph::Open(g);
  ASSERT_TRUE(graph.ok());
  const Table t = LoadTable(**graph);
  ASSERT_TRUE(t.model.model.reciprocal);
  ASSERT_EQ(t.model.relations.param_size, 2 * t.dim);
  auto index = NeighborIndex::Build(**graph, NeighborIndexOptions{});
  ASSERT_TRUE(index.ok()) << index.status();
  std::vector<std::string> queries;
  for (uint64_t i = 0; i < t.n; i += 7) queries.push_back(t.names[i]);
  for (int rel = 0; rel < 2; ++rel) {
    const std::string name = (*graph)->manifest().relations[rel];
    auto forward = (*index)->Search(queries, name, 5);
    auto inverse = (*index)->Search(queries, name + "_inv", 5);
    ASSERT_TRUE(forward.ok()) << forward.status();
    ASSERT_TRUE(inverse.ok()) << inverse.status();
    uint64_t differs = 0;
    for (size_t i = 0; i < inverse->size(); ++i) {
      ExpectMatchesBruteForce(t, (*inverse)[i], 2 + rel, 5);
      differs += (*inverse)[i].neighbors[0].global_id != (*forward)[i].neighbors[0].global_id;
    }
    EXPECT_GT(differs, 0u);
  }
  // Known links run source to destination: an inverse cannot leave them out.
  auto inverse_known = (*index)->Search(queries, "r0_inv", 5, /*exclude_known=*/true);
  EXPECT_EQ(inverse_known.status().code(), absl::StatusCode::kInvalidArgument);
  auto unknown = (*index)->Search(queries, "r7_inv", 5);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown.status().message()), ::testing::HasSubstr("_inv"));
}

}  // namespace
}  // namespace ember::tools
