// Training after `ember import --append`: with only_new_edges the old
// nodes' rows and the relation parameters stay bit-identical while the new
// nodes learn embeddings that rank their held-out true neighbours well;
// without it, training continues from the checkpoint on the grown graph.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/train/train_test_util.h"
#include "tools/gen/sbm_generator.h"
#include "train/model/checkpoint.h"
#include "train/train_loop.h"

namespace ember {
namespace {

using train_test::EvalTest;
using train_test::LoadSnapshot;
using train_test::ManifestOf;
using train_test::ModelSnapshot;
using train_test::SmallOptions;
using train_test::TempDir;

constexpr uint64_t kNodes = 2000;
constexpr uint64_t kBlocks = 10;

// 2000 nodes in 10 blocks of 200, average degree 20, 5% of edges between
// blocks.
tools::gen::SbmOptions AppendSbm() {
  tools::gen::SbmOptions sbm;
  sbm.nodes = kNodes;
  sbm.blocks = kBlocks;
  sbm.avg_degree = 20;
  sbm.mixing = 0.05;
  sbm.seed = 11;
  return sbm;
}

// The "new" nodes, held out of the first import: 10% of the nodes, 20 in
// every block (node i is in block i % 10).
bool IsNew(uint64_t node) { return (node / kBlocks) % 10 == 3; }

using IdEdge = std::pair<uint64_t, uint64_t>;

struct AppendData {
  std::vector<IdEdge> base;      // no new endpoint: the first import
  std::vector<IdEdge> appended;  // a new endpoint, not held out
  // (new node, old node): every 5th edge of each new node to an old node,
  // kept out of both imports as the test set.
  std::vector<IdEdge> held_out;
};

AppendData SplitSbm() {
  const tools::gen::SbmOptions sbm = AppendSbm();
  EXPECT_TRUE(sbm.Validate().ok());
  AppendData d;
  std::vector<int> seen(kNodes, 0);  // edges to old nodes seen per new node
  std::vector<IdEdge> chunk;
  for (uint64_t c = 0; c < sbm.num_chunks(); ++c) {
    tools::gen::SbmChunk(sbm, c, &chunk);
    for (const auto& [a, b] : chunk) {
      if (!IsNew(a) && !IsNew(b)) {
        d.base.emplace_back(a, b);
        continue;
      }
      if (IsNew(a) != IsNew(b)) {
        const uint64_t n = IsNew(a) ? a : b;
        if (seen[n]++ % 5 == 4) {
          d.held_out.emplace_back(n, IsNew(a) ? b : a);
          continue;
        }
      }
      d.appended.emplace_back(a, b);
    }
  }
  return d;
}

void WriteEdges(const std::vector<IdEdge>& edges, const std::string& path) {
  std::string text;
  for (const auto& [a, b] : edges) absl::StrAppend(&text, a, "\t", b, "\n");
  train_test::WriteWholeFile(path, text);
}

absl::StatusOr<ImportSummary> Append(const std::string& dir, const std::string& file) {
  ImportOptions o;
  o.out = dir;
  o.append = true;
  o.files = {file};
  o.threads = 2;
  o.delimiter = '\t';
  return ImportGraph(o);
}

TrainOptions Options(int epochs) {
  TrainOptions o = SmallOptions(epochs, /*seed=*/3);
  o.model.op = Operator::kDiagonal;  // relation parameters to keep frozen
  o.devices.threads = 2;
  return o;
}

// Rows of every node id 0 .. kNodes-1 (names are decimal ids) of the stored
// model, and its relation weights.
struct Embeddings {
  int dim = 0;
  std::vector<float> rows;  // kNodes x dim, by node id
  std::vector<float> relation;
};

Embeddings LoadById(const std::string& dir, const ModelSnapshot& snap) {
  Embeddings e;
  auto g = Graph::Open(dir);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return e;
  e.dim = snap.model.dim;
  e.rows.assign(kNodes * e.dim, 0.0f);
  e.relation = snap.relation_params;
  for (uint64_t id = 0; id < kNodes; ++id) {
    auto ref = (*g)->LookupNode(std::to_string(id));
    EXPECT_TRUE(ref.ok()) << id << ": " << ref.status();
    if (!ref.ok()) continue;
    std::memcpy(&e.rows[id * e.dim],
                &snap.partitions[ref->partition][size_t{ref->offset} * e.dim],
                e.dim * sizeof(float));
  }
  return e;
}

// DistMult score with a dot comparator: sum_k a[k] w[k] b[k].
double Score(const Embeddings& e, uint64_t a, uint64_t b) {
  double s = 0;
  for (int k = 0; k < e.dim; ++k) {
    s += double{e.rows[a * e.dim + k]} * e.relation[k] * e.rows[b * e.dim + k];
  }
  return s;
}

double Norm(const float* v, int dim) {
  double s = 0;
  for (int k = 0; k < dim; ++k) s += double{v[k]} * v[k];
  return std::sqrt(s);
}

class AppendTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = SplitSbm();
    ASSERT_GT(data_.held_out.size(), 500u);
    base_file_ = tmp_.Sub("base.tsv");
    new_file_ = tmp_.Sub("new.tsv");
    WriteEdges(data_.base, base_file_);
    WriteEdges(data_.appended, new_file_);
  }

  TempDir tmp_;
  AppendData data_;
  std::string base_file_, new_file_;
};

TEST_F(AppendTrainTest, OnlyNewEdgesFreezesOldRowsAndNewNodesRankTheirNeighbours) {
  const std::string dir = tmp_.Sub("graph");
  ASSERT_TRUE(train_test::ImportEdges(dir, {base_file_}, 2, /*with_splits=*/false).ok());
  auto first = TrainGraph(dir, Options(5));
  ASSERT_TRUE(first.ok()) << first.status();
  auto before = LoadSnapshot(dir);
  ASSERT_TRUE(before.ok()) << before.status();

  auto appended = Append(dir, new_file_);
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(appended->new_nodes, kNodes / 10);
  EXPECT_EQ(appended->nodes, kNodes);
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 0u);
  ASSERT_EQ(m->previous_partition_sizes.size(), 2u);

  auto second = TrainGraph(dir, [] {
    TrainOptions o = Options(5);
    o.only_new_edges = true;
    return o;
  }());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->resumed);
  EXPECT_EQ(second->start_epoch, 0);
  ASSERT_EQ(second->epochs.size(), 5u);
  for (const EpochStats& s : second->epochs) {
    EXPECT_EQ(s.edges, data_.appended.size()) << "epoch " << s.epoch << " trained old edges";
  }
  auto after = LoadSnapshot(dir);
  ASSERT_TRUE(after.ok()) << after.status();

  // Old rows: bit-identical. Relation parameters: bit-identical.
  const int dim = after->model.dim;
  ASSERT_EQ(after->partitions.size(), 2u);
  for (uint32_t p = 0; p < 2; ++p) {
    const uint64_t old_rows = m->previous_partition_sizes[p];
    ASSERT_EQ(before->partitions[p].size(), old_rows * dim);
    ASSERT_EQ(after->partitions[p].size(), m->partition_sizes[p] * dim);
    EXPECT_EQ(std::memcmp(before->partitions[p].data(), after->partitions[p].data(),
                          old_rows * dim * sizeof(float)),
              0)
        << "old rows of partition " << p << " changed under only_new_edges";
  }
  ASSERT_EQ(before->relation_params.size(), after->relation_params.size());
  EXPECT_EQ(std::memcmp(before->relation_params.data(), after->relation_params.data(),
                        before->relation_params.size() * sizeof(float)),
            0)
      << "relation parameters changed under only_new_edges";

  // New rows moved far from their init (normal, std-dev 1e-3: norm about
  // 1e-3 * sqrt(32) = 0.006).
  double new_norm = 0;
  for (uint32_t p = 0; p < 2; ++p) {
    for (uint64_t r = m->previous_partition_sizes[p]; r < m->partition_sizes[p]; ++r) {
      new_norm += Norm(&after->partitions[p][r * dim], dim);
    }
  }
  new_norm /= kNodes / 10;
  EXPECT_GT(new_norm, 0.1) << "new nodes' rows hardly moved from their init";

  // Ranking of each held-out (new, old) edge: the old neighbour among all
  // 1800 old nodes by score, filtered (the new node's other known old
  // neighbours are not candidates).
  const Embeddings e = LoadById(dir, *after);
  std::set<IdEdge> known;
  for (const auto& [a, b] : data_.appended) known.emplace(a, b), known.emplace(b, a);
  for (const auto& [n, o] : data_.held_out) known.emplace(n, o);
  std::vector<uint64_t> old_nodes;
  for (uint64_t id = 0; id < kNodes; ++id) {
    if (!IsNew(id)) old_nodes.push_back(id);
  }
  double rr_sum = 0;
  for (const auto& [n, o] : data_.held_out) {
    const double truth = Score(e, n, o);
    double rank = 1;
    for (uint64_t x : old_nodes) {
      if (x == o || known.contains({n, x})) continue;
      const double s = Score(e, n, x);
      if (s > truth) rank += 1;
      if (s == truth) rank += 0.5;
    }
    rr_sum += 1.0 / rank;
  }
  const double mrr = rr_sum / data_.held_out.size();
  // Top-20 old nodes of each new node: the share in its own block.
  double block_share = 0;
  for (uint64_t n = 0; n < kNodes; ++n) {
    if (!IsNew(n)) continue;
    std::vector<std::pair<double, uint64_t>> scored;
    for (uint64_t x : old_nodes) scored.emplace_back(-Score(e, n, x), x);
    std::partial_sort(scored.begin(), scored.begin() + 20, scored.end());
    int same = 0;
    for (int i = 0; i < 20; ++i) same += scored[i].second % kBlocks == n % kBlocks;
    block_share += same / 20.0;
  }
  block_share /= kNodes / 10;
  std::fprintf(stderr,
               "[          ] new nodes: held-out MRR %.4f over %zu edges (chance %.4f, "
               "block-level ideal %.4f), own-block share of top-20 %.3f, mean row norm %.3f\n",
               mrr, data_.held_out.size(), 8.07 / 1800, 5.77 / 180, block_share, new_norm);
  RecordProperty("new_node_mrr", absl::StrCat(mrr));
  RecordProperty("new_node_block_share", absl::StrCat(block_share));
  // Chance: the true neighbour ranks uniformly among ~1800 candidates, MRR
  // = H_1800 / 1800 ~ 0.0045. A model that knows only the block puts the
  // 180 old nodes of the block first in random order: MRR ~ H_180 / 180 ~
  // 0.032, or ~0.034 once the ~16 filtered known neighbours leave ~164 (an
  // SBM has no structure below the block, so that is about the best to
  // expect; measured: 0.037). 0.02 is 4x chance and 60% of the ideal.
  EXPECT_GT(mrr, 0.02);
  // With 5% mixing, 95% of a node's edges stay in its block.
  EXPECT_GE(block_share, 0.8);
}

TEST_F(AppendTrainTest, WithoutOnlyNewEdgesTrainingContinuesFromTheCheckpoint) {
  const std::string dir = tmp_.Sub("graph");
  ASSERT_TRUE(train_test::ImportEdges(dir, {base_file_}, 2, /*with_splits=*/true).ok());
  ASSERT_TRUE(TrainGraph(dir, Options(3)).ok());
  auto before = LoadSnapshot(dir);
  ASSERT_TRUE(before.ok()) << before.status();
  auto m0 = ManifestOf(dir);
  ASSERT_TRUE(m0.ok());
  ASSERT_EQ(train_test::EpochsDone(*m0), 3u);
  const uint64_t version0 = m0->training.checkpoint_version;

  ASSERT_TRUE(Append(dir, new_file_).ok());
  auto summary = TrainGraph(dir, Options(2));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_TRUE(summary->resumed);
  EXPECT_EQ(summary->start_epoch, 0);
  ASSERT_EQ(summary->epochs.size(), 2u);
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(train_test::EpochsDone(*m), 2u);
  EXPECT_GT(m->training.checkpoint_version, version0);
  // Every train edge, old and new, is trained.
  EXPECT_EQ(summary->epochs[0].edges, m->edges.train);

  auto after = LoadSnapshot(dir);
  ASSERT_TRUE(after.ok()) << after.status();
  const int dim = after->model.dim;
  // Old rows changed, but continued from where they were: each stays close
  // to its checkpointed direction (a fresh init would be uncorrelated).
  double cos_sum = 0;
  uint64_t rows = 0;
  bool changed = false;
  for (uint32_t p = 0; p < 2; ++p) {
    for (uint64_t r = 0; r < m->previous_partition_sizes[p]; ++r) {
      const float* a = &before->partitions[p][r * dim];
      const float* b = &after->partitions[p][r * dim];
      changed |= std::memcmp(a, b, dim * sizeof(float)) != 0;
      double dot = 0;
      for (int k = 0; k < dim; ++k) dot += double{a[k]} * b[k];
      cos_sum += dot / (Norm(a, dim) * Norm(b, dim) + 1e-30);
      ++rows;
    }
  }
  EXPECT_TRUE(changed) << "old rows did not change without only_new_edges";
  const double mean_cos = cos_sum / rows;
  EXPECT_GT(mean_cos, 0.5) << "old rows look re-initialised, not continued";

  auto eval = EvalTest(dir);
  ASSERT_TRUE(eval.ok()) << eval.status();
  std::fprintf(stderr,
               "[          ] continued: old-row cosine to checkpoint %.3f, test MRR %.4f\n",
               mean_cos, eval->filtered.mrr);
  // Chance is ~H_2000/2000 = 0.004.
  EXPECT_GT(eval->filtered.mrr, 0.012);
}

TEST_F(AppendTrainTest, OnlyNewEdgesNeedsAnAppendAndACheckpoint) {
  const std::string dir = tmp_.Sub("graph");
  ASSERT_TRUE(train_test::ImportEdges(dir, {base_file_}, 2, /*with_splits=*/false).ok());
  TrainOptions o = Options(1);
  o.only_new_edges = true;
  // Never appended.
  auto s = TrainGraph(dir, o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  // Appended, but never trained: there are no old rows to keep.
  ASSERT_TRUE(Append(dir, new_file_).ok());
  s = TrainGraph(dir, o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
}

}  // namespace
}  // namespace ember
