#include "train/chunk_scorer.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "train/model_options.h"

namespace ember {
namespace {

// ---------------------------------------------------------------------------
// A naive per-pair reference in double precision, written from the
// definitions (not from the kernel's GEMM formulation).

using Vec = std::vector<double>;

Vec RefOp(Operator op, const Vec& rel, const double* x, int d) {
  Vec out(x, x + d);
  switch (op) {
    case Operator::kNone:
      break;
    case Operator::kTranslation:
      for (int k = 0; k < d; ++k) out[k] += rel[k];
      break;
    case Operator::kDiagonal:
      for (int k = 0; k < d; ++k) out[k] *= rel[k];
      break;
    case Operator::kComplexDiagonal: {
      const int h = d / 2;
      for (int k = 0; k < h; ++k) {
        const double re = x[k], im = x[h + k], wr = rel[k], wi = rel[h + k];
        out[k] = re * wr - im * wi;
        out[h + k] = re * wi + im * wr;
      }
      break;
    }
  }
  return out;
}

double RefCmp(Comparator cmp, const Vec& a, const double* b) {
  const int d = static_cast<int>(a.size());
  double dot = 0, na = 0, nb = 0, dist2 = 0;
  for (int k = 0; k < d; ++k) {
    dot += a[k] * b[k];
    na += a[k] * a[k];
    nb += b[k] * b[k];
    dist2 += (a[k] - b[k]) * (a[k] - b[k]);
  }
  switch (cmp) {
    case Comparator::kDot:
      return dot;
    case Comparator::kCos:
      return dot / (std::sqrt(na) * std::sqrt(nb));
    case Comparator::kL2:
      return -std::sqrt(dist2);
  }
  return 0;
}

double SoftPlus(double x) {
  return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0);
}

double RefLoss(Loss loss, double margin, double pos, const Vec& negs) {
  double total = 0;
  switch (loss) {
    case Loss::kRanking:
      for (double n : negs) total += std::max(0.0, margin - pos + n);
      return total;
    case Loss::kLogistic:
      for (double n : negs) total += SoftPlus(n);  // -log(1 - σ(n))
      return SoftPlus(-pos) + (negs.empty() ? 0.0 : total / negs.size());
    case Loss::kSoftmax: {
      double m = pos;
      for (double n : negs) m = std::max(m, n);
      double z = std::exp(pos - m);
      for (double n : negs) z += std::exp(n - m);
      return std::log(z) + m - pos;
    }
  }
  return 0;
}

struct RefChunk {
  int d = 0, c = 0, ns = 0, nd = 0;
  Vec lhs, rhs, src_negs, dst_negs, rel;
};

// Sd(i, j) and Ss(i, j) as defined in chunk_scorer.h.
double RefDstScore(const ModelOptions& o, const RefChunk& x, int i, int j) {
  const Vec a = RefOp(o.op, x.rel, &x.lhs[i * x.d], x.d);
  const double* b = j < x.c ? &x.rhs[j * x.d] : &x.dst_negs[(j - x.c) * x.d];
  return RefCmp(o.comparator, a, b);
}
double RefSrcScore(const ModelOptions& o, const RefChunk& x, int i, int j) {
  const Vec a =
      RefOp(o.op, x.rel,
            j < x.c ? &x.lhs[j * x.d] : &x.src_negs[(j - x.c) * x.d], x.d);
  return RefCmp(o.comparator, a, &x.rhs[i * x.d]);
}

// Also reports the smallest |hinge argument| so that finite differences can
// stay clear of the ranking loss's kinks.
double RefChunkLoss(const ModelOptions& o, const RefChunk& x,
                    double* min_hinge = nullptr) {
  double total = 0;
  if (min_hinge) *min_hinge = 1e300;
  for (int i = 0; i < x.c; ++i) {
    const double pos = RefDstScore(o, x, i, i);
    Vec dst, src;
    for (int j = 0; j < x.c + x.nd; ++j) {
      if (j != i) dst.push_back(RefDstScore(o, x, i, j));
    }
    for (int j = 0; j < x.c + x.ns; ++j) {
      if (j != i) src.push_back(RefSrcScore(o, x, i, j));
    }
    total += RefLoss(o.loss, o.margin, pos, dst);
    total += RefLoss(o.loss, o.margin, pos, src);
    if (min_hinge) {
      for (const Vec* v : {&dst, &src}) {
        for (double n : *v) {
          *min_hinge = std::min(*min_hinge, std::fabs(o.margin - pos + n));
        }
      }
    }
  }
  return total;
}

// ---------------------------------------------------------------------------
// Float test data, and its exact double copy for the reference.

struct FloatChunk {
  std::vector<float> lhs, rhs, src_negs, dst_negs, rel;
  ChunkInput input;
};

FloatChunk MakeChunk(const ModelOptions& o, int c, int ns, int nd,
                     unsigned seed, float scale = 0.5f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  auto fill = [&](std::vector<float>* v, int n) {
    v->resize(n);
    for (float& x : *v) x = normal(rng);
  };
  FloatChunk f;
  const int d = o.dim;
  fill(&f.lhs, c * d);
  fill(&f.rhs, c * d);
  fill(&f.src_negs, ns * d);
  fill(&f.dst_negs, nd * d);
  f.rel.resize(RelationParamSize(o.op, d));
  InitRelationParams(o.op, d, f.rel.data());
  // Perturb away from the identity so that relation terms matter.
  for (float& x : f.rel) x += normal(rng);
  f.input = {f.lhs.data(),
             f.rhs.data(),
             ns ? f.src_negs.data() : nullptr,
             nd ? f.dst_negs.data() : nullptr,
             c,
             ns,
             nd};
  return f;
}

RefChunk ToRef(const ModelOptions& o, const FloatChunk& f) {
  RefChunk r;
  r.d = o.dim;
  r.c = f.input.chunk;
  r.ns = f.input.num_src_negs;
  r.nd = f.input.num_dst_negs;
  r.lhs.assign(f.lhs.begin(), f.lhs.end());
  r.rhs.assign(f.rhs.begin(), f.rhs.end());
  r.src_negs.assign(f.src_negs.begin(), f.src_negs.end());
  r.dst_negs.assign(f.dst_negs.begin(), f.dst_negs.end());
  r.rel.assign(f.rel.begin(), f.rel.end());
  return r;
}

struct Grads {
  std::vector<float> lhs, rhs, src_negs, dst_negs, rel;
  explicit Grads(const FloatChunk& f)
      : lhs(f.lhs.size()),
        rhs(f.rhs.size()),
        src_negs(f.src_negs.size()),
        dst_negs(f.dst_negs.size()),
        rel(f.rel.size()) {}
  ChunkGrads View() {
    return {lhs.data(), rhs.data(), src_negs.data(), dst_negs.data(),
            rel.data()};
  }
};

std::string Name(const ModelOptions& o) {
  return std::string(OperatorName(o.op)) + "_" +
         std::string(ComparatorName(o.comparator)) + "_" +
         std::string(LossName(o.loss));
}

// ---------------------------------------------------------------------------
// Finite-difference gradient checks: every operator × comparator × loss.

class GradientTest
    : public testing::TestWithParam<std::tuple<Operator, Comparator, Loss>> {};

TEST_P(GradientTest, MatchesCentralDifferencesOfReference) {
  ModelOptions o;
  std::tie(o.op, o.comparator, o.loss) = GetParam();
  o.dim = 8;
  o.margin = 0.5f;
  const int c = 4, ns = 5, nd = 6;
  FloatChunk f = MakeChunk(o, c, ns, nd, /*seed=*/17);
  RefChunk ref = ToRef(o, f);

  ChunkWorkspace ws(o.dim, c, std::max(ns, nd));
  Grads g(f);
  const float loss =
      ChunkForwardBackward(o, f.rel.data(), f.input, g.View(), &ws);
  double min_hinge;
  const double ref_loss = RefChunkLoss(o, ref, &min_hinge);
  EXPECT_NEAR(loss, ref_loss, 1e-4 * std::max(1.0, std::fabs(ref_loss)));
  constexpr double kH = 1e-5;
  if (o.loss == Loss::kRanking) {
    ASSERT_GT(min_hinge, 100 * kH) << "reseed";
  }

  struct Block {
    const char* name;
    Vec* x;
    const std::vector<float>* grad;
  };
  const Block blocks[] = {{"lhs", &ref.lhs, &g.lhs},
                          {"rhs", &ref.rhs, &g.rhs},
                          {"src_negs", &ref.src_negs, &g.src_negs},
                          {"dst_negs", &ref.dst_negs, &g.dst_negs},
                          {"rel", &ref.rel, &g.rel}};
  for (const Block& b : blocks) {
    ASSERT_EQ(b.x->size(), b.grad->size());
    for (size_t k = 0; k < b.x->size(); ++k) {
      const double saved = (*b.x)[k];
      (*b.x)[k] = saved + kH;
      const double up = RefChunkLoss(o, ref);
      (*b.x)[k] = saved - kH;
      const double down = RefChunkLoss(o, ref);
      (*b.x)[k] = saved;
      const double fd = (up - down) / (2 * kH);
      EXPECT_NEAR((*b.grad)[k], fd, 2e-5 + 2e-4 * std::fabs(fd))
          << b.name << "[" << k << "]";
    }
  }
  if (o.op == Operator::kNone) {
    EXPECT_TRUE(g.rel.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, GradientTest,
    testing::Combine(
        testing::Values(Operator::kNone, Operator::kTranslation,
                        Operator::kDiagonal, Operator::kComplexDiagonal),
        testing::Values(Comparator::kDot, Comparator::kCos, Comparator::kL2),
        testing::Values(Loss::kRanking, Loss::kLogistic, Loss::kSoftmax)),
    [](const auto& info) {
      ModelOptions o;
      std::tie(o.op, o.comparator, o.loss) = info.param;
      return Name(o);
    });

// ---------------------------------------------------------------------------
// The GEMM scores equal the per-pair reference, at a realistic size.

TEST(ChunkScorerTest, GemmScoresMatchPerPairReference) {
  for (Operator op : {Operator::kNone, Operator::kTranslation,
                      Operator::kDiagonal, Operator::kComplexDiagonal}) {
    for (Comparator cmp :
         {Comparator::kDot, Comparator::kCos, Comparator::kL2}) {
      ModelOptions o;
      o.op = op;
      o.comparator = cmp;
      o.dim = 64;
      const int c = 16, ns = 20, nd = 12;
      FloatChunk f = MakeChunk(o, c, ns, nd, /*seed=*/3);
      RefChunk ref = ToRef(o, f);
      ChunkWorkspace ws(o.dim, 32, 32);
      const float loss = ChunkForward(o, f.rel.data(), f.input, &ws);
      const double ref_loss = RefChunkLoss(o, ref);
      EXPECT_NEAR(loss, ref_loss, 1e-4 * std::max(1.0, std::fabs(ref_loss)))
          << Name(o);
      for (int i = 0; i < c; ++i) {
        for (int j = 0; j < c + nd; ++j) {
          const double want = RefDstScore(o, ref, i, j);
          EXPECT_NEAR(ws.dst_scores()[i * (c + nd) + j], want,
                      1e-4 * std::max(1.0, std::fabs(want)))
              << Name(o) << " dst " << i << "," << j;
        }
        for (int j = 0; j < c + ns; ++j) {
          const double want = RefSrcScore(o, ref, i, j);
          EXPECT_NEAR(ws.src_scores()[i * (c + ns) + j], want,
                      1e-4 * std::max(1.0, std::fabs(want)))
              << Name(o) << " src " << i << "," << j;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// An edge is never its own negative.

TEST(ChunkScorerTest, SelfPairIsNotANegative) {
  // Two orthogonal edges: pos = 1, the only negative (the other edge) = 0.
  const std::vector<float> lhs = {1, 0, 0, 1};
  const std::vector<float> rhs = {1, 0, 0, 1};
  ChunkInput in{lhs.data(), rhs.data(), nullptr, nullptr, 2, 0, 0};
  ChunkWorkspace ws(2, 2, 0);
  ModelOptions o;
  o.dim = 2;

  // Ranking: margin - pos + neg < 0 for the real negative; the self pair
  // would add `margin` per edge and side.
  o.loss = Loss::kRanking;
  o.margin = 0.1f;
  EXPECT_FLOAT_EQ(ChunkForward(o, nullptr, in, &ws), 0.0f);

  // Softmax: log(e^1 + e^0) - 1 per edge and side; with the self pair it
  // would be log(2e + 1) - 1.
  o.loss = Loss::kSoftmax;
  EXPECT_NEAR(ChunkForward(o, nullptr, in, &ws), 4 * std::log1p(std::exp(-1.0)),
              1e-6);

  // Logistic: the negative term is the mean over the one real negative.
  o.loss = Loss::kLogistic;
  EXPECT_NEAR(ChunkForward(o, nullptr, in, &ws),
              4 * (SoftPlus(-1.0) + SoftPlus(0.0)), 1e-6);
}

TEST(ChunkScorerTest, SingleEdgeWithoutNegativesHasNoNegativeTerm) {
  const std::vector<float> lhs = {0.3f, -0.2f}, rhs = {0.5f, 0.1f};
  ChunkInput in{lhs.data(), rhs.data(), nullptr, nullptr, 1, 0, 0};
  ChunkWorkspace ws(2, 1, 0);
  ModelOptions o;
  o.dim = 2;
  std::vector<float> dl(2), dr(2);
  ChunkGrads g{dl.data(), dr.data(), nullptr, nullptr, nullptr};
  o.loss = Loss::kSoftmax;
  EXPECT_FLOAT_EQ(ChunkForwardBackward(o, nullptr, in, g, &ws), 0.0f);
  EXPECT_FLOAT_EQ(dl[0], 0.0f);
  EXPECT_FLOAT_EQ(dr[1], 0.0f);
  o.loss = Loss::kLogistic;
  const double pos = 0.3 * 0.5 - 0.2 * 0.1;
  EXPECT_NEAR(ChunkForward(o, nullptr, in, &ws), 2 * SoftPlus(-pos), 1e-6);
}

// ---------------------------------------------------------------------------
// Accumulation and aliasing contracts.

TEST(ChunkScorerTest, GradientsAccumulateAndForwardMatches) {
  ModelOptions o;
  o.op = Operator::kDiagonal;
  o.dim = 16;
  FloatChunk f = MakeChunk(o, 6, 7, 7, /*seed=*/5);
  ChunkWorkspace ws(o.dim, 8, 8);
  Grads once(f), twice(f);
  const float l1 =
      ChunkForwardBackward(o, f.rel.data(), f.input, once.View(), &ws);
  EXPECT_EQ(ChunkForward(o, f.rel.data(), f.input, &ws), l1);
  ChunkForwardBackward(o, f.rel.data(), f.input, twice.View(), &ws);
  ChunkForwardBackward(o, f.rel.data(), f.input, twice.View(), &ws);
  for (size_t k = 0; k < once.lhs.size(); ++k) {
    EXPECT_FLOAT_EQ(twice.lhs[k], 2 * once.lhs[k]);
  }
  for (size_t k = 0; k < once.rel.size(); ++k) {
    EXPECT_FLOAT_EQ(twice.rel[k], 2 * once.rel[k]);
  }
}

TEST(ChunkScorerTest, SharedNegativesMayAlias) {
  ModelOptions o;
  o.op = Operator::kComplexDiagonal;
  o.comparator = Comparator::kCos;
  o.dim = 12;
  FloatChunk f = MakeChunk(o, 5, 6, 6, /*seed=*/9);
  f.dst_negs = f.src_negs;
  f.input.dst_negs = f.input.src_negs;  // the same uniform rows on both sides
  ChunkWorkspace ws(o.dim, 5, 6);

  Grads separate(f);
  ChunkForwardBackward(o, f.rel.data(), f.input, separate.View(), &ws);
  Grads shared(f);
  ChunkGrads view = shared.View();
  view.dst_negs = view.src_negs;  // both sides' gradients into one buffer
  ChunkForwardBackward(o, f.rel.data(), f.input, view, &ws);
  for (size_t k = 0; k < shared.src_negs.size(); ++k) {
    EXPECT_NEAR(shared.src_negs[k], separate.src_negs[k] + separate.dst_negs[k],
                1e-6);
  }
}

}  // namespace
}  // namespace ember
