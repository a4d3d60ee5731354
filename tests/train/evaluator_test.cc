#include "train/eval/evaluator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"
#include "tests/train/stored_model_util.h"
#include "train/model/candidate_scorer.h"
#include "train/model/checkpoint.h"
#include "train/eval/rank_metrics.h"

namespace ember {
namespace {

using ::ember::testing::ImportTinyGraph;
using ::ember::testing::TempDir;
using ::ember::testing::TinyGraphSpec;
using ::ember::testing::WriteStoredModel;

// A graph at tmp/g with a stored model whose rows come from `row_of`.
std::unique_ptr<Graph> MakeGraph(const TempDir& tmp, const TinyGraphSpec& spec,
                                 const ModelOptions& model,
                                 const testing::NodeRowFn& row_of,
                                 const testing::RelationFn& rel_of = nullptr,
                                 const std::string& name = "g") {
  const std::string dir = tmp.Sub(name);
  absl::Status s = ImportTinyGraph(dir, tmp.path(), spec);
  EXPECT_TRUE(s.ok()) << s;
  s = WriteStoredModel(dir, model, row_of, rel_of);
  EXPECT_TRUE(s.ok()) << s;
  auto graph = Graph::Open(dir);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? std::move(*graph) : nullptr;
}

EvalResult EvalStored(const Graph& graph, const EvalOptions& options) {
  auto model = LoadStoredModel(graph);
  EXPECT_TRUE(model.ok()) << model.status();
  auto result = Evaluate(graph, *model, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : EvalResult{};
}

void ExpectSameMetrics(const RankMetrics& a, const RankMetrics& b,
                       double tol = 0) {
  EXPECT_EQ(a.count, b.count);
  EXPECT_NEAR(a.mrr, b.mrr, tol);
  EXPECT_NEAR(a.mr, b.mr, tol);
  EXPECT_NEAR(a.hits1, b.hits1, tol);
  EXPECT_NEAR(a.hits3, b.hits3, tol);
  EXPECT_NEAR(a.hits10, b.hits10, tol);
  EXPECT_NEAR(a.auc, b.auc, tol);
}

// Six nodes; dot product on (x, 0) rows, so every score is exact.
//   x: a=1 b=2 c=3 d=2 e=0 f=5; train a->c, d->e, e->f, f->b; test a->b.
// Tail query (a, ?) scores x; true b=2 among a=1 c=3 d=2 e=0 f=5:
//   raw: 2 higher (c, f), 1 tie (d): rank 3.5, AUC (2 + .5)/5 = .5;
//   filtered (a->c is true): rank 2.5, AUC (2 + .5)/4.
// Head query (?, b) scores 2x; true a=2 among b=4 c=6 d=4 e=0 f=10:
//   raw: 4 higher: rank 5, AUC 1/5; filtered (f->b is true): rank 4, 1/4.
TinyGraphSpec HandSpec(uint32_t partitions) {
  TinyGraphSpec spec;
  spec.train = "a\tc\nd\te\ne\tf\nf\tb\n";
  spec.test = "a\tb\n";
  spec.partitions = partitions;
  return spec;
}

void HandRow(std::string_view name, float* row) {
  const float x[] = {1, 2, 3, 2, 0, 5};  // a..f
  row[0] = x[name[0] - 'a'];
  row[1] = 0;
}

class HandRanksTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(HandRanksTest, TiesFilteredAndRawAsComputedByHand) {
  TempDir tmp;
  ModelOptions model;
  model.dim = 2;
  auto graph = MakeGraph(tmp, HandSpec(GetParam()), model, HandRow);
  ASSERT_NE(graph, nullptr);
  EvalOptions options;
  options.threads = 2;
  const EvalResult r = EvalStored(*graph, options);
  EXPECT_EQ(r.edges, 1u);
  EXPECT_EQ(r.raw.count, 2u);
  EXPECT_DOUBLE_EQ(r.raw.mr, (3.5 + 5) / 2);
  EXPECT_DOUBLE_EQ(r.raw.mrr, (1 / 3.5 + 1 / 5.0) / 2);
  EXPECT_DOUBLE_EQ(r.raw.hits1, 0);
  EXPECT_DOUBLE_EQ(r.raw.hits3, 0);
  EXPECT_DOUBLE_EQ(r.raw.hits10, 1);
  EXPECT_DOUBLE_EQ(r.raw.auc, (0.5 + 0.2) / 2);
  EXPECT_EQ(r.filtered.count, 2u);
  EXPECT_DOUBLE_EQ(r.filtered.mr, (2.5 + 4) / 2);
  EXPECT_DOUBLE_EQ(r.filtered.mrr, (1 / 2.5 + 1 / 4.0) / 2);
  EXPECT_DOUBLE_EQ(r.filtered.hits1, 0);
  EXPECT_DOUBLE_EQ(r.filtered.hits3, 0.5);
  EXPECT_DOUBLE_EQ(r.filtered.hits10, 1);
  EXPECT_DOUBLE_EQ(r.filtered.auc, (2.5 / 4 + 0.25) / 2);
}

INSTANTIATE_TEST_SUITE_P(Partitions, HandRanksTest, ::testing::Values(1, 3));

// A second true tail above the true answer: raw rank 2, filtered rank 1.
// A typed graph ranks each query among its answer's type only: users
// u1 u2 and items i1 i2 i3, dot on (x, 0) rows u1=1 u2=2 i1=3 i2=2 i3=5;
// train u1->i1, u2->i2, u2->i3; test u1->i2.
// Tail (u1, ?) among the items: i1 and i3 score higher: raw rank 3;
//   filtered (u1->i1 is true): rank 2. (Untyped, u2's tie: raw 3.5.)
// Head (?, i2) among the users, 2x: u2 scores 4 > 2: raw rank 2; filtered
//   (u2->i2 is true): rank 1. (Untyped, i1, i2, i3 join: raw 5.)
TinyGraphSpec TypedSpec(uint32_t user_partitions) {
  TinyGraphSpec spec;
  spec.train = "u1\ti1\nu2\ti2\nu2\ti3\n";
  spec.test = "u1\ti2\n";
  spec.schema = "user:item";
  spec.type_partitions = {{"user", user_partitions}};
  return spec;
}

void TypedRow(std::string_view name, float* row) {
  const std::map<std::string_view, float> x = {
      {"u1", 1}, {"u2", 2}, {"i1", 3}, {"i2", 2}, {"i3", 5}};
  row[0] = x.at(name);
  row[1] = 0;
}

TEST(EvaluatorTest, TypedGraphsRankAmongTheAnswersType) {
  for (uint32_t user_partitions : {1u, 2u}) {
    SCOPED_TRACE(user_partitions);
    TempDir tmp;
    ModelOptions model;
    model.dim = 2;
    auto graph = MakeGraph(tmp, TypedSpec(user_partitions), model, TypedRow);
    ASSERT_NE(graph, nullptr);
    ASSERT_TRUE(graph->manifest().typed());
    EvalOptions options;
    options.threads = 2;
    const EvalResult r = EvalStored(*graph, options);
    EXPECT_TRUE(r.typed);
    EXPECT_DOUBLE_EQ(r.raw.mr, (3 + 2) / 2.0);
    EXPECT_DOUBLE_EQ(r.filtered.mr, (2 + 1) / 2.0);
    EXPECT_DOUBLE_EQ(r.raw.auc, 0);  // no candidate of the type scores below
    EXPECT_NE(DescribeProtocol(r).find("answer's type"), std::string::npos);
    // Sampled negatives come from the answer's type too: still none below.
    options.negatives = 50;
    const EvalResult sampled = EvalStored(*graph, options);
    EXPECT_DOUBLE_EQ(sampled.raw.auc, 0);
    EXPECT_GT(sampled.raw.mr, 2);
  }
  // The same edges untyped: users and items rank together.
  TempDir tmp;
  ModelOptions model;
  model.dim = 2;
  TinyGraphSpec untyped = TypedSpec(1);
  untyped.schema.clear();
  untyped.type_partitions.clear();
  auto graph = MakeGraph(tmp, untyped, model, TypedRow);
  ASSERT_NE(graph, nullptr);
  EvalOptions options;
  const EvalResult r = EvalStored(*graph, options);
  EXPECT_FALSE(r.typed);
  EXPECT_DOUBLE_EQ(r.raw.mr, (3.5 + 5) / 2);
}

// A schema relation with no edges leaves its type without nodes, its
// partition last: sampled negatives draw none from it (its first global id
// is one past the last node), and the ranks are those of the graph without
// it.
TEST(EvaluatorTest, SampledNegativesSkipATypeWithoutNodes) {
  TempDir tmp;
  ModelOptions model;
  model.dim = 2;
  TinyGraphSpec spec;
  spec.train = "u1\tlikes\ti1\nu2\tlikes\ti2\nu2\tlikes\ti3\n";
  spec.test = "u1\tlikes\ti2\n";
  spec.schema = "likes:user:item,tagged:item:tag";
  auto graph = MakeGraph(tmp, spec, model, TypedRow);
  ASSERT_NE(graph, nullptr);
  const Manifest& m = graph->manifest();
  ASSERT_EQ(m.node_types.size(), 3u);
  ASSERT_EQ(m.NodesOf(2), 0u);
  ASSERT_EQ(m.FirstPartitionOf(2), m.num_partitions - 1);
  EvalOptions options;
  options.threads = 2;
  options.negatives = 50;
  const EvalResult r = EvalStored(*graph, options);
  EXPECT_EQ(r.edges, 1u);
  EXPECT_DOUBLE_EQ(r.raw.auc, 0);  // the answer's type only, as without the tag type
  EXPECT_GT(r.raw.mr, 2);
}

TEST(EvaluatorTest, OtherTrueTailIsFilteredOut) {
  TempDir tmp;
  ModelOptions model;
  model.dim = 2;
  TinyGraphSpec spec;
  spec.train = "s\tother\nlow\ts\ntrue\tlow\n";
  spec.valid = "s\ttrue\n";
  auto graph = MakeGraph(tmp, spec, model, [](std::string_view n, float* r) {
    // Tail query (s, ?): other=3 > true=2 > s=1 > low=0. Head query
    // (?, true): scores 2x: s=1 is beaten by other (3) and true (2).
    r[0] = n == "other" ? 3 : n == "true" ? 2 : n == "s" ? 1 : 0;
    r[1] = 0;
  });
  ASSERT_NE(graph, nullptr);
  EvalOptions options;
  options.split = Split::kValid;
  const EvalResult r = EvalStored(*graph, options);
  // Tail: raw rank 2, filtered 1. Head: rank 3 both ways (no true heads of
  // true other than s).
  EXPECT_DOUBLE_EQ(r.raw.mr, (2 + 3) / 2.0);
  EXPECT_DOUBLE_EQ(r.filtered.mr, (1 + 3) / 2.0);
  EXPECT_DOUBLE_EQ(r.filtered.hits1, 0.5);
  EXPECT_DOUBLE_EQ(r.raw.hits1, 0);
}

// Per-node rows from the name alone, so that every layout agrees.
void RandomRow(int dim, std::string_view name, float* row) {
  std::mt19937 rng(std::hash<std::string_view>()(name));
  std::normal_distribution<float> normal;
  for (int k = 0; k < dim; ++k) row[k] = normal(rng);
}

TinyGraphSpec RandomSpec(int nodes, int train_edges, int test_edges,
                         int relations, uint32_t partitions) {
  std::mt19937 rng(11);
  auto node = [&](int i) { return absl::StrCat("n", i); };
  TinyGraphSpec spec;
  for (int i = 0; i < nodes; ++i) {  // every node in train
    absl::StrAppend(&spec.train, node(i), "\tr", i % relations, "\t",
                    node((i * 7 + 1) % nodes), "\n");
  }
  for (int k = nodes; k < train_edges; ++k) {
    absl::StrAppend(&spec.train, node(rng() % nodes), "\tr",
                    rng() % relations, "\t", node(rng() % nodes), "\n");
  }
  for (int k = 0; k < test_edges; ++k) {
    absl::StrAppend(&spec.test, node(rng() % nodes), "\tr", rng() % relations,
                    "\t", node(rng() % nodes), "\n");
  }
  spec.partitions = partitions;
  return spec;
}

// A graph of `spec` at tmp/name whose rows are RandomRow of the node names
// and whose relation parameters are RandomRow of "rel:" + relation name.
std::unique_ptr<Graph> RandomRowGraph(const TempDir& tmp, const TinyGraphSpec& spec,
                                      const ModelOptions& model, const std::string& name = "g") {
  auto row = [&](std::string_view n, float* r) { RandomRow(model.dim, n, r); };
  auto rel = [&](std::string_view n, float* p) {  // p: null for op none
    if (p != nullptr) RandomRow(RelationRecordSize(model), absl::StrCat("rel:", std::string(n)), p);
  };
  return MakeGraph(tmp, spec, model, row, rel, name);
}

TEST(EvaluatorTest, SameResultForThreadsBatchesAndPartitionLayouts) {
  TempDir tmp;
  ModelOptions model;
  model.op = Operator::kComplexDiagonal;
  model.comparator = Comparator::kCos;
  model.dim = 10;
  auto one = RandomRowGraph(tmp, RandomSpec(300, 900, 120, 3, 1), model, "one");
  auto three = RandomRowGraph(tmp, RandomSpec(300, 900, 120, 3, 3), model, "three");
  ASSERT_NE(one, nullptr);
  ASSERT_NE(three, nullptr);
  EvalOptions options;
  options.threads = 1;
  const EvalResult base = EvalStored(*one, options);
  EXPECT_EQ(base.edges, 120u);
  EXPECT_EQ(base.raw.count, 240u);
  EXPECT_LT(base.filtered.mr, base.raw.mr + 1e-12);

  options.threads = 2;
  const EvalResult two_threads = EvalStored(*one, options);
  ExpectSameMetrics(base.raw, two_threads.raw);
  ExpectSameMetrics(base.filtered, two_threads.filtered);

  options.batch_edges = 7;  // many batches, partial chunks
  const EvalResult small_batches = EvalStored(*one, options);
  ExpectSameMetrics(base.raw, small_batches.raw, 1e-12);
  ExpectSameMetrics(base.filtered, small_batches.filtered, 1e-12);

  options.batch_edges = 0;
  const EvalResult three_parts = EvalStored(*three, options);
  EXPECT_EQ(three_parts.edges, 120u);
  ExpectSameMetrics(base.raw, three_parts.raw, 1e-12);
  ExpectSameMetrics(base.filtered, three_parts.filtered, 1e-12);

  // Sampled negatives: deterministic for a seed whatever the threads.
  options.negatives = 50;
  options.seed = 3;
  options.threads = 1;
  const EvalResult sampled1 = EvalStored(*three, options);
  options.threads = 2;
  const EvalResult sampled2 = EvalStored(*three, options);
  ExpectSameMetrics(sampled1.raw, sampled2.raw);
  ExpectSameMetrics(sampled1.filtered, sampled2.filtered);
  EXPECT_LE(sampled1.raw.mr, 51.0);

  // The in-memory variant agrees with the stored one.
  auto stored = LoadStoredModel(*three);
  ASSERT_TRUE(stored.ok());
  std::vector<std::vector<float>> rows;
  for (uint32_t p = 0; p < 3; ++p) {
    auto r = LoadPartitionEmbeddings(*three, *stored, p);
    ASSERT_TRUE(r.ok());
    rows.push_back(*r);
  }
  options.negatives = 0;
  auto in_memory = Evaluate(
      *three, stored->model, stored->relations,
      [&](uint32_t p) -> absl::StatusOr<const float*> { return rows[p].data(); },
      options);
  ASSERT_TRUE(in_memory.ok()) << in_memory.status();
  ExpectSameMetrics(three_parts.raw, in_memory->raw);
  ExpectSameMetrics(three_parts.filtered, in_memory->filtered);
}

// Filtered and raw MRR and Hits@10 of `test` edges ranked against every
// node by ScorePair (double accumulation), straight from the definitions
// in evaluator.h; `edges` holds every edge of every split.
struct Triple {
  int src, rel, dst;
  auto operator<=>(const Triple&) const = default;
};
std::pair<RankMetrics, RankMetrics> ReferenceRanks(const ModelOptions& model, int nodes,
                                                   const std::set<Triple>& edges,
                                                   const std::vector<Triple>& test) {
  // The rows and relation records RandomRowGraph stores.
  auto random_row = [&](const std::string& name, int size) {
    std::vector<float> r(size);
    RandomRow(size, name, r.data());
    return r;
  };
  std::vector<std::vector<float>> rows;
  for (int n = 0; n < nodes; ++n) rows.push_back(random_row(absl::StrCat("n", n), model.dim));
  RankSums filtered, raw;
  for (const Triple& t : test) {
    QueryRank f[2], w[2];
    const std::vector<float> p =
        random_row(absl::StrCat("rel:r", t.rel), std::max(1, RelationRecordSize(model)));
    // Side 0 scores (s, r, d); side 1 (a head query) the same, but for a
    // reciprocal model, which scores (?, r, d) as (d, r⁻¹, ?) with w_{r⁻¹}.
    auto score = [&](int side, int s, int d) {
      if (side == 1 && model.reciprocal) {
        return ScorePair(model, p.data() + model.dim, rows[d].data(), rows[s].data());
      }
      return ScorePair(model, p.data(), rows[s].data(), rows[d].data());
    };
    for (int side = 0; side < 2; ++side) {  // 0: tail query, 1: head query
      const float truth = score(side, t.src, t.dst);
      for (int x = 0; x < nodes; ++x) {
        const Triple other = side == 0 ? Triple{t.src, t.rel, x} : Triple{x, t.rel, t.dst};
        if (x == (side == 0 ? t.dst : t.src)) continue;
        const float v = side == 0 ? score(side, t.src, x) : score(side, x, t.dst);
        for (QueryRank* q : {&w[side], &f[side]}) {
          if (q == &f[side] && edges.contains(other)) continue;
          q->greater += v > truth;
          q->equal += v == truth;
          q->negatives += 1;
        }
      }
    }
    raw.AddEdge(w[0], w[1]);
    filtered.AddEdge(f[0], f[1]);
  }
  return {filtered.Metrics(), raw.Metrics()};
}

TEST(EvaluatorTest, RanksMatchAReferenceForEveryOperatorAndComparator) {
  // Queries of several relations and both sides: where the model has an
  // adjoint form they share GEMMs (head queries map through the adjoint),
  // elsewhere they are grouped by side and relation; both must rank as the
  // definition does. Reciprocal models (every operator and comparator)
  // share GEMMs too, and rank a head query (?, r, d) as (d, r⁻¹, ?) with
  // the inverse relation's own parameters.
  constexpr int kNodes = 40, kRelations = 3;
  std::mt19937 rng(5);
  std::set<Triple> edges;
  std::vector<Triple> test;
  TinyGraphSpec spec;
  auto line = [](const Triple& t) {
    return absl::StrCat("n", t.src, "\tr", t.rel, "\tn", t.dst, "\n");
  };
  for (int i = 0; i < kNodes; ++i) {  // every node in train
    const Triple t{i, i % kRelations, (i * 7 + 1) % kNodes};
    if (edges.insert(t).second) absl::StrAppend(&spec.train, line(t));
  }
  while (edges.size() < 200) {
    const Triple t{int(rng() % kNodes), int(rng() % kRelations), int(rng() % kNodes)};
    if (!edges.insert(t).second) continue;
    if (test.size() < 60) {
      test.push_back(t);
      absl::StrAppend(&spec.test, line(t));
    } else {
      absl::StrAppend(&spec.train, line(t));
    }
  }
  spec.partitions = 2;
  TempDir tmp;
  for (int reciprocal = 0; reciprocal < 2; ++reciprocal) {
    for (int op = reciprocal; op < kNumOperators; ++op) {
      for (int cmp = 0; cmp < kNumComparators; ++cmp) {
        ModelOptions model;
        model.op = static_cast<Operator>(op);
        model.comparator = static_cast<Comparator>(cmp);
        model.dim = 8;
        model.reciprocal = reciprocal == 1;
        SCOPED_TRACE(absl::StrCat(std::string(OperatorName(model.op)), " ",
                                  std::string(ComparatorName(model.comparator)),
                                  reciprocal ? " reciprocal" : ""));
        auto graph = RandomRowGraph(tmp, spec, model, absl::StrCat("m", reciprocal, op, cmp));
        ASSERT_NE(graph, nullptr);
        EvalOptions options;
        options.batch_edges = 25;  // batches of mixed relations, partial chunks
        const EvalResult got = EvalStored(*graph, options);
        ASSERT_EQ(got.edges, test.size());
        const auto [filtered, raw] = ReferenceRanks(model, kNodes, edges, test);
        // Float GEMMs against double sums: a near-tie may flip (one rank of
        // 120 queries moves MRR by at most 1 / 240).
        for (const auto& [a, b] : {std::pair{got.filtered, filtered}, std::pair{got.raw, raw}}) {
          EXPECT_NEAR(a.mrr, b.mrr, 0.005);
          EXPECT_NEAR(a.hits10, b.hits10, 0.01);
          EXPECT_NEAR(a.mr, b.mr, 0.02);
        }
        EXPECT_GT(raw.mr, filtered.mr);  // the filter removed true answers
      }
    }
  }
}

TEST(PlanEvalMemoryTest, BatchesShrinkToTheBudgetWithoutChangingTheRanks) {
  TempDir tmp;
  ModelOptions model;
  model.op = Operator::kDiagonal;
  model.dim = 16;
  auto graph = RandomRowGraph(tmp, RandomSpec(300, 900, 3000, 3, 2), model);
  ASSERT_NE(graph, nullptr);
  const Manifest& m = graph->manifest();
  EvalOptions options;
  options.threads = 1;
  options.max_edges = 0;  // every test edge
  auto unbounded = PlanEvalMemory(m, model, 0, options);
  ASSERT_TRUE(unbounded.ok());
  EXPECT_EQ(unbounded->batch_edges, m.edges.test);  // one batch holds them all
  EXPECT_GE(unbounded->fixed_bytes, 150 * 16 * sizeof(float));  // a partition's rows
  EXPECT_GE(unbounded->per_edge_bytes, 2 * 16 * sizeof(float));  // two endpoint rows
  const EvalResult whole = EvalStored(*graph, options);

  // Room for 1500 edges: two batches, under the budget, the same ranks.
  options.memory_budget = unbounded->fixed_bytes + 1500 * unbounded->per_edge_bytes;
  auto bounded = PlanEvalMemory(m, model, 0, options);
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_EQ(bounded->batch_edges, 1500u);
  EXPECT_LE(bounded->bytes(), options.memory_budget);
  const EvalResult halves = EvalStored(*graph, options);
  ExpectSameMetrics(whole.filtered, halves.filtered, 1e-12);
  ExpectSameMetrics(whole.raw, halves.raw, 1e-12);

  // Below a batch of kMinEvalBatchEdges: refused, naming the need.
  options.memory_budget =
      unbounded->fixed_bytes + (kMinEvalBatchEdges - 1) * unbounded->per_edge_bytes;
  auto refused = PlanEvalMemory(m, model, 0, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("over the memory budget"), std::string::npos)
      << refused.status();
  auto stored = LoadStoredModel(*graph);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Evaluate(*graph, *stored, options).status().code(),
            absl::StatusCode::kResourceExhausted);
  // A featurized model's feature table counts too.
  options.memory_budget = 0;
  auto featurized = PlanEvalMemory(m, model, 1 << 20, options);
  ASSERT_TRUE(featurized.ok());
  EXPECT_EQ(featurized->fixed_bytes, unbounded->fixed_bytes + (1 << 20));
}

// A ring of n nodes, n_i -> n_{i+1} ("next"), every `test_every`-th edge a
// test edge, under ComplEx with dim 2: e_i = exp(i θ_i) with θ_i = step ·
// (i + u_i), u_i uniform in [-noise, noise] (0 when noise is 0), and the
// relation rotates by one step. Without noise every true answer is the
// unique best; with it, true answers rank up to a few times `noise` down.
std::unique_ptr<Graph> RingGraph(const TempDir& tmp, int n, int test_every,
                                 double noise, uint32_t partitions) {
  TinyGraphSpec spec;
  spec.partitions = partitions;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(i % test_every == 0 ? &spec.test : &spec.train, "n", i,
                    "\tnext\tn", (i + 1) % n, "\n");
  }
  ModelOptions model;
  model.op = Operator::kComplexDiagonal;
  model.dim = 2;
  const double step = 2 * std::numbers::pi / n;
  return MakeGraph(
      tmp, spec, model,
      [&](std::string_view name, float* r) {
        const int i = std::stoi(std::string(name.substr(1)));
        std::mt19937 rng(i);
        const double u =
            noise > 0
                ? std::uniform_real_distribution<double>(-noise, noise)(rng)
                : 0;
        r[0] = std::cos(step * (i + u));
        r[1] = std::sin(step * (i + u));
      },
      [&](std::string_view, float* p) {
        p[0] = std::cos(step);
        p[1] = std::sin(step);
      });
}

// Progress comes in slices of at most 65536 candidates, rising to edges ×
// candidates, and reporting it leaves the metrics exactly as they are.
TEST(EvaluatorTest, ProgressRisesToEdgesTimesCandidatesAndChangesNothing) {
  TempDir tmp;
  ModelOptions model;
  model.dim = 4;
  auto graph = RandomRowGraph(tmp, RandomSpec(70000, 70000, 40, 1, 1), model);
  ASSERT_NE(graph, nullptr);
  const uint64_t nodes = graph->manifest().num_nodes;
  ASSERT_GT(nodes, 65536u);  // two slices
  for (uint64_t negatives : {uint64_t{0}, uint64_t{100}}) {
    SCOPED_TRACE(negatives);
    EvalOptions options;
    options.threads = 2;
    options.batch_edges = 16;  // three batches
    options.negatives = negatives;
    const EvalResult quiet = EvalStored(*graph, options);
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    options.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
    const EvalResult reported = EvalStored(*graph, options);
    ExpectSameMetrics(quiet.raw, reported.raw);
    ExpectSameMetrics(quiet.filtered, reported.filtered);
    const uint64_t total = 40 * (negatives > 0 ? negatives : nodes);
    ASSERT_EQ(calls.size(), negatives > 0 ? 3u : 6u);
    for (size_t k = 0; k < calls.size(); ++k) {
      EXPECT_EQ(calls[k].second, total);
      if (k > 0) EXPECT_GT(calls[k].first, calls[k - 1].first);
    }
    EXPECT_EQ(calls.back().first, total);
  }
}

TEST(EvaluatorTest, PerfectEmbeddingsRankFirst) {
  TempDir tmp;
  auto graph = RingGraph(tmp, 40, 4, 0, 2);
  ASSERT_NE(graph, nullptr);
  const EvalResult r = EvalStored(*graph, EvalOptions{});
  EXPECT_EQ(r.edges, 10u);
  for (const RankMetrics& m : {r.raw, r.filtered}) {
    EXPECT_DOUBLE_EQ(m.mrr, 1);
    EXPECT_DOUBLE_EQ(m.mr, 1);
    EXPECT_DOUBLE_EQ(m.hits1, 1);
    EXPECT_DOUBLE_EQ(m.auc, 1);
    // Identical ranks: an interval of zero width.
    EXPECT_EQ(m.mrr_ci95, 0);
    EXPECT_EQ(m.hits1_ci95, 0);
    EXPECT_EQ(m.hits10_ci95, 0);
  }
  EvalOptions sampled;
  sampled.negatives = 5;
  const EvalResult s = EvalStored(*graph, sampled);
  EXPECT_DOUBLE_EQ(s.raw.auc, 1);
  EXPECT_DOUBLE_EQ(s.filtered.hits1, 1);
}

TEST(EvaluatorTest, RandomEmbeddingsGiveChanceAuc) {
  TempDir tmp;
  ModelOptions model;
  model.op = Operator::kTranslation;
  model.comparator = Comparator::kL2;
  model.dim = 16;
  auto graph = RandomRowGraph(tmp, RandomSpec(400, 1200, 250, 2, 2), model);
  ASSERT_NE(graph, nullptr);
  const EvalResult r = EvalStored(*graph, EvalOptions{});
  EXPECT_EQ(r.raw.count, 500u);
  // 500 queries of roughly uniform AUC (sd 0.29): mean within ~5 sd.
  EXPECT_NEAR(r.raw.auc, 0.5, 0.07);
  EXPECT_NEAR(r.filtered.auc, 0.5, 0.07);
  EXPECT_NEAR(r.raw.mr, 200, 30);
}

TEST(EvaluatorTest, MaxEdgesSamplesDeterministically) {
  TempDir tmp;
  ModelOptions model;
  model.dim = 4;
  auto graph = RandomRowGraph(tmp, RandomSpec(100, 300, 60, 1, 2), model);
  ASSERT_NE(graph, nullptr);
  EvalOptions options;
  options.max_edges = 17;
  options.seed = 5;
  const EvalResult a = EvalStored(*graph, options);
  const EvalResult b = EvalStored(*graph, options);
  EXPECT_EQ(a.edges, 17u);
  EXPECT_EQ(a.raw.count, 34u);
  ExpectSameMetrics(a.raw, b.raw);
  options.max_edges = 1000;  // more than the split: all of it
  EXPECT_EQ(EvalStored(*graph, options).edges, 60u);
}

// Angles off by up to 4 steps: true answers rank anywhere from 1 to a few
// dozen, so reciprocal ranks spread over (0, 1].
TEST(EvaluatorTest, IntervalShrinksWithSampleSize) {
  TempDir tmp;
  auto graph = RingGraph(tmp, 800, 2, 4, 1);
  ASSERT_NE(graph, nullptr);
  EvalOptions options;
  options.max_edges = 16;
  const EvalResult small = EvalStored(*graph, options);
  options.max_edges = 0;
  const EvalResult all = EvalStored(*graph, options);
  EXPECT_EQ(small.edges, 16u);
  EXPECT_EQ(all.edges, 400u);
  EXPECT_EQ(all.filtered.edges, 400u);
  EXPECT_GT(all.filtered.mrr_ci95, 0);
  // 25 times the edges: about 5 times narrower.
  EXPECT_LT(all.filtered.mrr_ci95, small.filtered.mrr_ci95 / 2.5);
  EXPECT_LT(all.filtered.hits3_ci95, small.filtered.hits3_ci95 / 2.5);
  // The small sample's estimate lies near the whole split's: within twice
  // its 95 % half-width, which chance alone exceeds about once in 10^4.
  EXPECT_NEAR(small.filtered.mrr, all.filtered.mrr, 2 * small.filtered.mrr_ci95);
}

TEST(EvaluatorTest, ByRelationAveragesBackToOverall) {
  TempDir tmp;
  ModelOptions model;
  model.op = Operator::kDiagonal;
  model.dim = 6;
  auto graph = RandomRowGraph(tmp, RandomSpec(200, 600, 150, 4, 2), model);
  ASSERT_NE(graph, nullptr);
  EvalOptions options;
  EXPECT_TRUE(EvalStored(*graph, options).by_relation.empty());
  options.by_relation = true;
  const EvalResult r = EvalStored(*graph, options);
  ASSERT_EQ(r.by_relation.size(), graph->manifest().relations.size());
  uint64_t count = 0, edges = 0;
  double mrr = 0, mr = 0, hits1 = 0, hits3 = 0, hits10 = 0, auc = 0;
  int relations_with_edges = 0;
  for (const RankMetrics& m : r.by_relation) {
    EXPECT_EQ(m.count, 2 * m.edges);
    relations_with_edges += m.edges > 0;
    count += m.count;
    edges += m.edges;
    mrr += m.mrr * m.count;
    mr += m.mr * m.count;
    hits1 += m.hits1 * m.count;
    hits3 += m.hits3 * m.count;
    hits10 += m.hits10 * m.count;
    auc += m.auc * m.count;
  }
  EXPECT_EQ(relations_with_edges, 4);
  EXPECT_EQ(count, r.filtered.count);
  EXPECT_EQ(edges, r.edges);
  EXPECT_NEAR(mrr / count, r.filtered.mrr, 1e-12);
  EXPECT_NEAR(mr / count, r.filtered.mr, 1e-9);
  EXPECT_NEAR(hits1 / count, r.filtered.hits1, 1e-12);
  EXPECT_NEAR(hits3 / count, r.filtered.hits3, 1e-12);
  EXPECT_NEAR(hits10 / count, r.filtered.hits10, 1e-12);
  EXPECT_NEAR(auc / count, r.filtered.auc, 1e-12);
  // Asking for relations changes nothing else.
  options.by_relation = false;
  ExpectSameMetrics(EvalStored(*graph, options).filtered, r.filtered);
}

TEST(EvaluatorTest, EdgeReciprocalRanksAverageToTheMrrInTheSameOrderEveryTime) {
  TempDir tmp;
  auto graph = RingGraph(tmp, 800, 2, 4, 1);
  ASSERT_NE(graph, nullptr);
  EvalOptions options;
  options.max_edges = 100;
  options.seed = 3;
  EXPECT_TRUE(EvalStored(*graph, options).edge_rr.empty());
  options.edge_rr = true;
  const EvalResult r = EvalStored(*graph, options);
  ASSERT_EQ(r.edge_rr.size(), r.edges);
  double sum = 0;
  for (float x : r.edge_rr) {
    EXPECT_GT(x, 0);
    EXPECT_LE(x, 1);
    sum += x;
  }
  EXPECT_NEAR(sum / r.edge_rr.size(), r.filtered.mrr, 1e-6);
  // The same edges in the same order whatever the batches: what paired
  // comparisons of two models rest on.
  options.batch_edges = 7;
  options.threads = 3;
  EXPECT_EQ(EvalStored(*graph, options).edge_rr, r.edge_rr);
  // Asking for them changes nothing else.
  options.edge_rr = false;
  ExpectSameMetrics(EvalStored(*graph, options).filtered, r.filtered);
}

TEST(EvaluatorTest, ProtocolNamesCandidatesAndSample) {
  TempDir tmp;
  ModelOptions model;
  model.dim = 4;
  auto graph = RandomRowGraph(tmp, RandomSpec(100, 300, 60, 1, 2), model);
  ASSERT_NE(graph, nullptr);
  const uint64_t nodes = graph->manifest().num_nodes;
  EvalOptions options;
  EvalResult r = EvalStored(*graph, options);
  EXPECT_EQ(r.split_edges, 60u);
  EXPECT_EQ(r.num_nodes, nodes);
  EXPECT_EQ(r.negatives, 0u);
  EXPECT_EQ(DescribeProtocol(r),
            absl::StrCat("filtered ranking against all ", nodes,
                         " nodes on all 60 edges (120 queries)"));
  options.max_edges = 10;
  r = EvalStored(*graph, options);
  EXPECT_EQ(DescribeProtocol(r),
            absl::StrCat("filtered ranking against all ", nodes,
                         " nodes on a sample of 10 of 60 edges (20 queries)"));
  options.negatives = 25;
  r = EvalStored(*graph, options);
  EXPECT_EQ(r.negatives, 25u);
  EXPECT_EQ(DescribeProtocol(r),
            "filtered ranking against 25 sampled negatives (optimistic) on a "
            "sample of 10 of 60 edges (20 queries)");
}

TEST(EvaluatorTest, Errors) {
  TempDir tmp;
  const std::string dir = tmp.Sub("g");
  TinyGraphSpec spec;
  spec.train = "a\tb\nb\tc\n";
  ASSERT_TRUE(ImportTinyGraph(dir, tmp.path(), spec).ok());
  {
    auto graph = Graph::Open(dir);
    ASSERT_TRUE(graph.ok());
    auto result = Evaluate(**graph, StoredModel{}, EvalOptions{});
    EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(result.status().message().find("ember train"),
              std::string_view::npos)
        << result.status();
  }
  ModelOptions model;
  model.dim = 2;
  ASSERT_TRUE(WriteStoredModel(dir, model, [](std::string_view, float* r) {
                r[0] = r[1] = 1;
              }).ok());
  auto graph = Graph::Open(dir);
  ASSERT_TRUE(graph.ok());
  auto stored = LoadStoredModel(**graph);
  ASSERT_TRUE(stored.ok());
  auto result = Evaluate(**graph, *stored, EvalOptions{});  // no test edges
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("split test"),
            std::string_view::npos)
      << result.status();
  // Train edges can be evaluated too; every score ties here.
  EvalOptions train;
  train.split = Split::kTrain;
  auto ok = Evaluate(**graph, *stored, train);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_DOUBLE_EQ(ok->raw.mr, 2);  // 1 + 0.5 × 2 tied negatives
  EXPECT_DOUBLE_EQ(ok->raw.auc, 0.5);
  EvalOptions bad;
  bad.threads = -1;
  EXPECT_EQ(Evaluate(**graph, *stored, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ember
