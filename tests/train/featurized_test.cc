#include "train/model/featurized.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "train/model/chunk_scorer.h"
#include "train/model/model_options.h"

namespace ember {
namespace {

// A partition's features in CSR form, as Graph::ReadPartitionFeatures
// returns them.
struct Csr {
  std::vector<uint64_t> row_start{0};
  std::vector<FeatureEntry> entries;
};

Csr MakeCsr(const std::vector<std::vector<std::pair<uint32_t, float>>>& rows) {
  Csr c;
  for (const auto& row : rows) {
    for (const auto& [f, w] : row) c.entries.push_back({f, w});
    c.row_start.push_back(c.entries.size());
  }
  return c;
}

std::vector<float> RandomVec(size_t n, std::mt19937* rng, float scale = 1) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(*rng);
  return v;
}

// Double-precision reference of the composition, from the definition.
std::vector<double> RefCompose(FeaturizedMode mode, int dim,
                               const std::vector<uint32_t>& nodes,
                               const Csr& csr, const std::vector<double>& table,
                               const std::vector<double>& id_rows) {
  std::vector<double> out(nodes.size() * dim, 0.0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const uint32_t o = nodes[i];
    double wsum = 0;
    for (uint64_t e = csr.row_start[o]; e < csr.row_start[o + 1]; ++e) {
      wsum += csr.entries[e].weight;
    }
    for (int k = 0; k < dim; ++k) {
      double v = 0;
      if (wsum != 0) {
        for (uint64_t e = csr.row_start[o]; e < csr.row_start[o + 1]; ++e) {
          const FeatureEntry& fe = csr.entries[e];
          v += fe.weight * table[size_t(fe.feature) * dim + k];
        }
        v /= wsum;
      }
      if (mode == FeaturizedMode::kIdPlusFeatures) v += id_rows[i * dim + k];
      out[i * dim + k] = v;
    }
  }
  return out;
}

std::vector<double> ToDouble(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

TEST(FeaturizedModeTest, Parse) {
  EXPECT_EQ(*ParseFeaturizedMode("off"), FeaturizedMode::kOff);
  EXPECT_EQ(*ParseFeaturizedMode("features"), FeaturizedMode::kFeatures);
  EXPECT_EQ(*ParseFeaturizedMode("id+features"),
            FeaturizedMode::kIdPlusFeatures);
  for (FeaturizedMode m : {FeaturizedMode::kOff, FeaturizedMode::kFeatures,
                           FeaturizedMode::kIdPlusFeatures}) {
    EXPECT_EQ(*ParseFeaturizedMode(FeaturizedModeName(m)), m);
  }
  const auto bad = ParseFeaturizedMode("id+feature");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("id+feature'"), std::string::npos);
  EXPECT_FALSE(ParseFeaturizedMode("").ok());
}

TEST(FeaturizedTest, NodeWork) {
  const Csr csr = MakeCsr({{}, {{1, 1.0f}, {2, 1.0f}, {3, 0.5f}}});
  EXPECT_EQ(NodeWork(FeaturizedMode::kOff, nullptr, 0), 1u);
  EXPECT_EQ(NodeWork(FeaturizedMode::kFeatures, csr.row_start.data(), 0), 0u);
  EXPECT_EQ(NodeWork(FeaturizedMode::kFeatures, csr.row_start.data(), 1), 3u);
  EXPECT_EQ(
      NodeWork(FeaturizedMode::kIdPlusFeatures, csr.row_start.data(), 0), 1u);
  EXPECT_EQ(
      NodeWork(FeaturizedMode::kIdPlusFeatures, csr.row_start.data(), 1), 4u);
}

TEST(FeaturizedTest, WeightedMeanByHand) {
  // F = [[1, 0], [0, 1], [2, 2]].
  const std::vector<float> table = {1, 0, 0, 1, 2, 2};
  const Csr csr = MakeCsr({
      {{0, 1.0f}, {2, 3.0f}},   // (1*[1,0] + 3*[2,2]) / 4 = [1.75, 1.5]
      {},                       // no features
      {{1, 2.0f}, {0, -2.0f}},  // weights sum to 0
      {{1, 0.25f}},             // one feature: its row, whatever the weight
      {{1, 1.0f}, {1, 3.0f}},   // repeated feature: still its row
  });
  const std::vector<uint32_t> nodes = {0, 1, 2, 3, 4};
  std::vector<float> out(nodes.size() * 2, -7.0f);
  ComposeEmbeddings(FeaturizedMode::kFeatures, 2, nodes, csr.row_start.data(),
                    csr.entries.data(), table.data(), nullptr, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.75f, 1.5f, 0, 0, 0, 0, 0, 1, 0, 1}));

  const std::vector<float> ids = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  ComposeEmbeddings(FeaturizedMode::kIdPlusFeatures, 2, nodes,
                    csr.row_start.data(), csr.entries.data(), table.data(),
                    ids.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{11.75f, 21.5f, 30, 40, 50, 60, 70, 81,
                                     90, 101}));
  // In place: out == id_rows.
  std::vector<float> inplace = ids;
  ComposeEmbeddings(FeaturizedMode::kIdPlusFeatures, 2, nodes,
                    csr.row_start.data(), csr.entries.data(), table.data(),
                    inplace.data(), inplace.data());
  EXPECT_EQ(inplace, out);

  EXPECT_FLOAT_EQ(FeatureMeanScale({csr.entries.data(), 2}), 0.25f);
  EXPECT_EQ(FeatureMeanScale({}), 0.0f);
  EXPECT_EQ(FeatureMeanScale({csr.entries.data() + 2, 2}), 0.0f);
}

TEST(FeaturizedTest, RepeatedFeaturesAreSummedOnce) {
  const int dim = 2;
  const Csr csr = MakeCsr({
      {{1, 1.0f}, {1, 3.0f}},  // feature 1 twice: coefficients 1/4 and 3/4
      {{1, 1.0f}, {0, 1.0f}},  // feature 1 again: 1/2
      {},                      // no features: no gradient anywhere
      {{2, 1.0f}, {2, -1.0f}}, // zero sum: no gradient for feature 2
  });
  const std::vector<uint32_t> nodes = {0, 1, 2, 3, 0};
  const std::vector<float> g = {1, 2, 10, 20, 100, 200, 5, 5, 1000, 2000};
  FeatureGradAccumulator acc(dim, 3);
  std::map<uint32_t, std::vector<float>> got;
  std::vector<uint32_t> order;
  std::vector<float> id_grads(g.size(), -1.0f);
  BackpropFeatures(FeaturizedMode::kIdPlusFeatures, nodes,
                   csr.row_start.data(), csr.entries.data(), g.data(), &acc,
                   [&](uint32_t f, const float* row) {
                     EXPECT_EQ(got.count(f), 0u) << "feature " << f;
                     got[f].assign(row, row + dim);
                     order.push_back(f);
                   },
                   id_grads.data());
  EXPECT_EQ(order, (std::vector<uint32_t>{1, 0}));  // first-touch order
  // Feature 1: node 0 (twice in the batch, 1/4 + 3/4 each) + node 1 (1/2).
  EXPECT_EQ(got[1], (std::vector<float>{1 + 5 + 1000, 2 + 10 + 2000}));
  EXPECT_EQ(got[0], (std::vector<float>{5, 10}));
  EXPECT_EQ(id_grads, g);
  EXPECT_EQ(acc.num_pending(), 0u);

  // kFeatures leaves id_grads alone; a null id_grads is fine in both modes.
  std::vector<float> untouched(g.size(), -1.0f);
  int calls = 0;
  BackpropFeatures(FeaturizedMode::kFeatures, nodes, csr.row_start.data(),
                   csr.entries.data(), g.data(), &acc,
                   [&](uint32_t, const float*) { ++calls; },
                   untouched.data());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(untouched, std::vector<float>(g.size(), -1.0f));
  BackpropFeatures(FeaturizedMode::kIdPlusFeatures, nodes,
                   csr.row_start.data(), csr.entries.data(), g.data(), &acc,
                   [&](uint32_t, const float*) { ++calls; }, nullptr);
  EXPECT_EQ(calls, 4);
}

TEST(FeaturizedTest, HotPathAllocatesNothingAfterWarmUp) {
  const int dim = 16;
  const uint32_t V = 50;
  std::mt19937 rng(3);
  std::vector<std::vector<std::pair<uint32_t, float>>> rows(40);
  for (auto& row : rows) {
    const int m = int(rng() % 6);
    for (int k = 0; k < m; ++k) row.push_back({uint32_t(rng() % V), 1.0f});
  }
  const Csr csr = MakeCsr(rows);
  std::vector<uint32_t> nodes(40);
  for (uint32_t i = 0; i < 40; ++i) nodes[i] = i;
  const std::vector<float> g = RandomVec(nodes.size() * dim, &rng);
  FeatureGradAccumulator acc(dim, V);
  auto step = [&](std::span<const uint32_t> ns) {
    acc.Add(FeaturizedMode::kFeatures, ns, csr.row_start.data(),
            csr.entries.data(), g.data(), nullptr);
    acc.Flush([](uint32_t, const float*) {});
  };
  step(nodes);  // warm-up: the largest step
  const uint64_t warm = acc.num_growths();
  for (int it = 0; it < 20; ++it) {
    std::shuffle(nodes.begin(), nodes.end(), rng);
    step(std::span<const uint32_t>(nodes).first(10 + it));
    step(nodes);
  }
  EXPECT_EQ(acc.num_growths(), warm);
}

// loss = Σ_i <c_i, out_i> + ½ ‖out‖², so dloss/dout_i = c_i + out_i; being
// quadratic in the parameters, its central differences are exact up to
// rounding.
class FeaturizedGradTest : public ::testing::TestWithParam<FeaturizedMode> {};

TEST_P(FeaturizedGradTest, FiniteDifferences) {
  const FeaturizedMode mode = GetParam();
  const int dim = 8;
  const uint32_t V = 6;
  const Csr csr = MakeCsr({
      {},                                   // no features
      {{2, 1.0f}},                          // one feature
      {{0, 0.5f}, {3, 2.0f}, {5, 1.5f}},    // several, non-unit weights
      {{1, 1.0f}, {1, 2.0f}, {4, 0.25f}},   // a repeated feature
      {{4, 0.3f}, {0, -0.1f}, {2, 0.7f}},   // mixed signs, nonzero sum
      {{3, 1.0f}, {3, -1.0f}},              // weights sum to zero
  });
  // Nodes repeat within the batch, as they do across a chunk's sets.
  const std::vector<uint32_t> nodes = {0, 1, 2, 3, 4, 5, 2, 3};
  const size_t n = nodes.size();
  std::mt19937 rng(11);
  const std::vector<float> table = RandomVec(size_t(V) * dim, &rng);
  const std::vector<float> ids = RandomVec(n * dim, &rng);
  const std::vector<float> c = RandomVec(n * dim, &rng);

  std::vector<float> out(n * dim);
  ComposeEmbeddings(mode, dim, nodes, csr.row_start.data(), csr.entries.data(),
                    table.data(), ids.data(), out.data());
  std::vector<double> table_d = ToDouble(table), ids_d = ToDouble(ids);
  const std::vector<double> ref =
      RefCompose(mode, dim, nodes, csr, table_d, ids_d);
  for (size_t k = 0; k < out.size(); ++k) {
    EXPECT_NEAR(out[k], ref[k], 1e-5 * std::max(1.0, std::fabs(ref[k])));
  }

  std::vector<float> g(n * dim);
  for (size_t k = 0; k < g.size(); ++k) g[k] = c[k] + out[k];
  FeatureGradAccumulator acc(dim, V);
  std::vector<float> table_grad(table.size(), 0.0f);
  std::vector<int> calls(V, 0);
  std::vector<float> id_grads(n * dim, 0.0f);
  BackpropFeatures(mode, nodes, csr.row_start.data(), csr.entries.data(),
                   g.data(), &acc,
                   [&](uint32_t f, const float* row) {
                     ++calls[f];
                     std::copy(row, row + dim, table_grad.data() + f * dim);
                   },
                   id_grads.data());
  for (uint32_t f = 0; f < V; ++f) EXPECT_LE(calls[f], 1) << "feature " << f;

  auto loss = [&]() {
    const std::vector<double> o =
        RefCompose(mode, dim, nodes, csr, table_d, ids_d);
    double l = 0;
    for (size_t k = 0; k < o.size(); ++k) l += c[k] * o[k] + 0.5 * o[k] * o[k];
    return l;
  };
  constexpr double kH = 1e-3;
  auto fd = [&](std::vector<double>* x, size_t k) {
    const double saved = (*x)[k];
    (*x)[k] = saved + kH;
    const double up = loss();
    (*x)[k] = saved - kH;
    const double down = loss();
    (*x)[k] = saved;
    return (up - down) / (2 * kH);
  };
  for (size_t k = 0; k < table_d.size(); ++k) {
    const double want = fd(&table_d, k);
    EXPECT_NEAR(table_grad[k], want, 1e-5 + 1e-5 * std::fabs(want))
        << "F[" << k / dim << "][" << k % dim << "]";
  }
  if (mode == FeaturizedMode::kIdPlusFeatures) {
    for (size_t k = 0; k < ids_d.size(); ++k) {
      const double want = fd(&ids_d, k);
      EXPECT_NEAR(id_grads[k], want, 1e-5 + 1e-5 * std::fabs(want))
          << "id[" << k / dim << "][" << k % dim << "]";
    }
  } else {
    EXPECT_EQ(id_grads, std::vector<float>(n * dim, 0.0f));
  }
}

INSTANTIATE_TEST_SUITE_P(FeaturizedModes, FeaturizedGradTest,
                         ::testing::Values(FeaturizedMode::kFeatures,
                                           FeaturizedMode::kIdPlusFeatures),
                         [](const auto& info) {
                           return info.param == FeaturizedMode::kFeatures
                                      ? std::string("Features")
                                      : std::string("IdPlusFeatures");
                         });

// End to end with the real chunk scorer: a chunk's lhs and src negatives
// come from partition P, its rhs and dst negatives from partition Q; all
// compose from one shared feature table. The node-row gradients of
// ChunkForwardBackward, accumulated over the four node sets and flushed once,
// must match central differences of ChunkForward's loss w.r.t. every
// feature-table entry (and every id-row entry in kIdPlusFeatures).
struct E2eCase {
  FeaturizedMode mode;
  Comparator cmp;
  Loss loss;
  Operator op;
};

class FeaturizedChunkTest : public ::testing::TestWithParam<E2eCase> {};

TEST_P(FeaturizedChunkTest, FiniteDifferences) {
  const E2eCase& tc = GetParam();
  ModelOptions o;
  o.dim = 8;
  o.comparator = tc.cmp;
  o.loss = tc.loss;
  o.op = tc.op;
  o.margin = 0.5f;
  ASSERT_TRUE(o.Validate().ok());
  const int dim = o.dim;
  const uint32_t V = 10;
  const Csr csr_p = MakeCsr({
      {{0, 1.0f}, {3, 2.0f}},
      {{1, 0.5f}},
      {{2, 1.0f}, {2, 1.0f}, {7, 3.0f}},
      {{4, 1.0f}, {5, 1.0f}, {6, 1.0f}, {0, 0.5f}},
      {},
      {{9, 2.0f}, {8, 0.5f}},
  });
  const Csr csr_q = MakeCsr({
      {{3, 1.0f}},
      {{0, 0.7f}, {1, 0.3f}},
      {{5, 2.0f}, {2, 1.0f}},
      {{6, 1.0f}, {7, 1.0f}},
      {{8, 1.0f}, {3, 4.0f}, {9, 0.1f}},
      {{4, 1.0f}},
  });
  const uint32_t np = 6, nq = 6;
  // A node may appear in several sets (lhs 3 is also a src negative).
  const std::vector<uint32_t> lhs = {0, 1, 2, 3}, rhs = {2, 3, 4, 5};
  const std::vector<uint32_t> src_negs = {5, 3, 4}, dst_negs = {0, 1, 2};
  const int chunk = 4, ns = 3, nd = 3;

  std::mt19937 rng(29);
  std::vector<float> table = RandomVec(size_t(V) * dim, &rng);
  std::vector<float> ids_p = RandomVec(size_t(np) * dim, &rng);
  std::vector<float> ids_q = RandomVec(size_t(nq) * dim, &rng);
  std::vector<float> rel(RelationParamSize(o.op, dim));
  InitRelationParams(o.op, dim, rel.data());
  for (float& r : rel) r += RandomVec(1, &rng, 0.3f)[0];

  ChunkWorkspace ws(dim, chunk, std::max(ns, nd));
  // Gathers a set's id rows and composes it into `out`.
  auto compose = [&](const std::vector<uint32_t>& set, const Csr& csr,
                     const std::vector<float>& ids, std::vector<float>* out) {
    std::vector<float> gathered(set.size() * dim);
    for (size_t i = 0; i < set.size(); ++i) {
      std::copy_n(ids.data() + size_t(set[i]) * dim, dim,
                  gathered.data() + i * dim);
    }
    out->resize(set.size() * dim);
    ComposeEmbeddings(tc.mode, dim, set, csr.row_start.data(),
                      csr.entries.data(), table.data(), gathered.data(),
                      out->data());
  };
  std::vector<float> L, R, Us, Ud;
  auto compose_all = [&]() {
    compose(lhs, csr_p, ids_p, &L);
    compose(rhs, csr_q, ids_q, &R);
    compose(src_negs, csr_p, ids_p, &Us);
    compose(dst_negs, csr_q, ids_q, &Ud);
    ChunkInput in;
    in.lhs = L.data();
    in.rhs = R.data();
    in.src_negs = Us.data();
    in.dst_negs = Ud.data();
    in.chunk = chunk;
    in.num_src_negs = ns;
    in.num_dst_negs = nd;
    return in;
  };
  auto loss = [&]() {
    const ChunkInput in = compose_all();
    return double(ChunkForward(o, rel.data(), in, &ws));
  };

  // Analytic gradients.
  const ChunkInput in = compose_all();
  std::vector<float> gL(L.size()), gR(R.size()), gUs(Us.size()),
      gUd(Ud.size()), grel(rel.size());
  ChunkGrads g{gL.data(), gR.data(), gUs.data(), gUd.data(),
               grel.empty() ? nullptr : grel.data()};
  ChunkForwardBackward(o, rel.data(), in, g, &ws);
  FeatureGradAccumulator acc(dim, V);
  std::vector<float> grad_p(ids_p.size(), 0.0f), grad_q(ids_q.size(), 0.0f);
  std::vector<float> id_grads;
  auto add = [&](const std::vector<uint32_t>& set, const Csr& csr,
                 const std::vector<float>& node_grads,
                 std::vector<float>* grad_ids) {
    id_grads.assign(node_grads.size(), 0.0f);
    acc.Add(tc.mode, set, csr.row_start.data(), csr.entries.data(),
            node_grads.data(), id_grads.data());
    for (size_t i = 0; i < set.size(); ++i) {  // scatter-add id gradients
      for (int k = 0; k < dim; ++k) {
        (*grad_ids)[size_t(set[i]) * dim + k] += id_grads[i * dim + k];
      }
    }
  };
  add(lhs, csr_p, gL, &grad_p);
  add(rhs, csr_q, gR, &grad_q);
  add(src_negs, csr_p, gUs, &grad_p);
  add(dst_negs, csr_q, gUd, &grad_q);
  std::vector<float> table_grad(table.size(), 0.0f);
  std::vector<int> calls(V, 0);
  acc.Flush([&](uint32_t f, const float* row) {
    ++calls[f];
    std::copy_n(row, dim, table_grad.data() + size_t(f) * dim);
  });
  for (uint32_t f = 0; f < V; ++f) EXPECT_EQ(calls[f], 1) << "feature " << f;

  // Central differences of the float loss. h = 1e-2 balances float rounding
  // of the loss (~1e-7 relative, divided by 2h) against the O(h^2)
  // truncation error; observed max |error| is ~2.6e-4 on these cases. The
  // fixed seed keeps every ranking hinge away from its kink by more than h.
  constexpr float kH = 1e-2f;
  double max_err = 0;
  auto check = [&](std::vector<float>* x, const std::vector<float>& grad,
                   const char* name) {
    for (size_t k = 0; k < x->size(); ++k) {
      const float saved = (*x)[k];
      (*x)[k] = saved + kH;
      const double up = loss();
      (*x)[k] = saved - kH;
      const double down = loss();
      (*x)[k] = saved;
      const double fd = (up - down) / (2.0 * kH);
      max_err = std::max(max_err, std::fabs(fd - grad[k]));
      EXPECT_NEAR(grad[k], fd, 1e-3 + 5e-3 * std::fabs(fd))
          << name << "[" << k / dim << "][" << k % dim << "]";
    }
  };
  check(&table, table_grad, "F");
  if (tc.mode == FeaturizedMode::kIdPlusFeatures) {
    check(&ids_p, grad_p, "id_p");
    check(&ids_q, grad_q, "id_q");
  } else {
    EXPECT_EQ(grad_p, std::vector<float>(grad_p.size(), 0.0f));
  }
  RecordProperty("max_abs_err", std::to_string(max_err));
}

INSTANTIATE_TEST_SUITE_P(
    FeaturizedCases, FeaturizedChunkTest,
    ::testing::Values(
        E2eCase{FeaturizedMode::kFeatures, Comparator::kDot, Loss::kSoftmax,
                Operator::kNone},
        E2eCase{FeaturizedMode::kIdPlusFeatures, Comparator::kDot,
                Loss::kSoftmax, Operator::kDiagonal},
        E2eCase{FeaturizedMode::kFeatures, Comparator::kCos, Loss::kRanking,
                Operator::kTranslation},
        E2eCase{FeaturizedMode::kIdPlusFeatures, Comparator::kCos,
                Loss::kRanking, Operator::kNone},
        E2eCase{FeaturizedMode::kIdPlusFeatures, Comparator::kL2,
                Loss::kLogistic, Operator::kComplexDiagonal}),
    [](const auto& info) {
      const E2eCase& c = info.param;
      return std::string(c.mode == FeaturizedMode::kFeatures ? "Features"
                                                             : "IdPlus") +
             "_" + std::string(ComparatorName(c.cmp)) + "_" +
             std::string(LossName(c.loss)) + "_" +
             std::string(OperatorName(c.op));
    });

}  // namespace
}  // namespace ember
