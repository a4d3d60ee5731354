#include "train/model/chunk_scorer.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "train/model/bf16_gemm.h"
#include "train/model/model_options.h"
#include "train/model/small_gemm.h"

namespace ember {
namespace {

// ---------------------------------------------------------------------------
// A naive per-pair reference in double precision, written from the
// definitions (not from the kernel's GEMM formulation).

using Vec = std::vector<double>;

Vec RefOp(Operator op, const double* rel, const double* x, int d) {
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
  std::vector<uint32_t> slot;  // per row (mixed chunks); empty: all 0
  bool endpoints = false;
  std::vector<uint32_t> lhs_nodes, rhs_nodes;  // set: one node table
  // Reciprocal: each slot's record is [w_r, w_{r⁻¹}], of p floats each.
  bool reciprocal = false;
  int p = 0;    // RelationParamSize
  Vec weights;  // per row (ChunkInput::weights); empty: all 1

  // Row i's record: w_r (and w_{r⁻¹} after it).
  const double* Rel(int i) const {
    const int record = static_cast<int>(rel.size()) /
                       (slot.empty() ? 1 : 1 + *std::max_element(slot.begin(), slot.end()));
    return rel.data() + (slot.empty() ? 0 : slot[i] * record);
  }
  const double* InverseRel(int i) const { return Rel(i) + p; }
  int DstColumns() const { return c + nd + (endpoints ? c : 0); }
  int SrcColumns() const { return c + ns + (endpoints ? c : 0); }
};

// Sd(i, j) and Ss(i, j) as defined in chunk_scorer.h: edge i's relation and
// the candidate in the place of one endpoint. Mixed chunks have the same
// definition (the adjoint form is exact).
double RefDstScore(const ModelOptions& o, const RefChunk& x, int i, int j) {
  const Vec a = RefOp(o.op, x.Rel(i), &x.lhs[i * x.d], x.d);
  const double* b = j < x.c             ? &x.rhs[j * x.d]
                    : j < x.c + x.nd    ? &x.dst_negs[(j - x.c) * x.d]
                                        : &x.lhs[(j - x.c - x.nd) * x.d];
  return RefCmp(o.comparator, a, b);
}
// A reciprocal model's source side is the inverse edge (d_i, r_i⁻¹, cand).
double RefSrcScore(const ModelOptions& o, const RefChunk& x, int i, int j) {
  const double* cand = j < x.c          ? &x.lhs[j * x.d]
                       : j < x.c + x.ns ? &x.src_negs[(j - x.c) * x.d]
                                        : &x.rhs[(j - x.c - x.ns) * x.d];
  if (x.reciprocal) {
    const Vec a = RefOp(o.op, x.InverseRel(i), &x.rhs[i * x.d], x.d);
    return RefCmp(o.comparator, a, cand);
  }
  const Vec a = RefOp(o.op, x.Rel(i), cand, x.d);
  return RefCmp(o.comparator, a, &x.rhs[i * x.d]);
}

// N3 from its definition: Σ|x_k|³, complex moduli under complex_diagonal.
double RefN3(const ModelOptions& o, const double* x, int n) {
  double total = 0;
  if (o.op == Operator::kComplexDiagonal) {
    for (int k = 0; k < n / 2; ++k) total += std::pow(std::hypot(x[k], x[k + n / 2]), 3);
  } else {
    for (int k = 0; k < n; ++k) total += std::pow(std::fabs(x[k]), 3);
  }
  return total;
}
// An endpoint candidate that is the row's own answer.
bool RefExcludedDst(const RefChunk& x, int i, int j) {
  return !x.lhs_nodes.empty() && j >= x.c + x.nd &&
         x.lhs_nodes[j - x.c - x.nd] == x.rhs_nodes[i];
}
bool RefExcludedSrc(const RefChunk& x, int i, int j) {
  return !x.lhs_nodes.empty() && j >= x.c + x.ns &&
         x.rhs_nodes[j - x.c - x.ns] == x.lhs_nodes[i];
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
    // Excluded candidates score kExcludedScore, as in the kernel.
    for (int j = 0; j < x.DstColumns(); ++j) {
      if (j != i) dst.push_back(RefExcludedDst(x, i, j) ? kExcludedScore : RefDstScore(o, x, i, j));
    }
    for (int j = 0; j < x.SrcColumns(); ++j) {
      if (j != i) src.push_back(RefExcludedSrc(x, i, j) ? kExcludedScore : RefSrcScore(o, x, i, j));
    }
    // The same positive score on both sides, but for a reciprocal model's.
    const double src_pos = RefSrcScore(o, x, i, i);
    // An edge's weight scales its loss on both sides, not the regularizer.
    const double w = x.weights.empty() ? 1.0 : x.weights[i];
    total += w * RefLoss(o.loss, o.margin, pos, dst);
    total += w * RefLoss(o.loss, o.margin, src_pos, src);
    if (o.regularizer == Regularizer::kN3) {
      // The positives (s, r, d) and (d, r⁻¹ or r, s), each once.
      const double* s = &x.lhs[i * x.d];
      const double* d = &x.rhs[i * x.d];
      double n3 = 2 * RefN3(o, s, x.d) + 2 * RefN3(o, d, x.d);
      if (x.p > 0) {
        n3 += RefN3(o, x.Rel(i), x.p) + RefN3(o, x.reciprocal ? x.InverseRel(i) : x.Rel(i), x.p);
      }
      total += o.reg_weight * n3;
    }
    if (min_hinge) {
      for (const auto& [p, v] : {std::pair{pos, &dst}, std::pair{src_pos, &src}}) {
        for (double n : *v) {
          if (n == kExcludedScore) continue;
          *min_hinge = std::min(*min_hinge, std::fabs(o.margin - p + n));
        }
      }
    }
  }
  return total;
}

// ---------------------------------------------------------------------------
// Float test data, and its exact double copy for the reference.

struct FloatChunk {
  std::vector<float> lhs, rhs, src_negs, dst_negs, rel, weights;
  std::vector<uint32_t> slot, lhs_nodes, rhs_nodes;
  ChunkInput input;
};

// slots > 0: a mixed chunk whose rows use relations slot[i] = i % slots.
FloatChunk MakeChunk(const ModelOptions& o, int c, int ns, int nd,
                     unsigned seed, float scale = 0.5f, int slots = 0) {
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
  const int p = RelationRecordSize(o);
  f.rel.resize(size_t(p) * std::max(slots, 1));
  for (int r = 0; r < std::max(slots, 1); ++r) InitRelationRecord(o, f.rel.data() + r * p);
  // Perturb away from the identity so that relation terms matter.
  for (float& x : f.rel) x += normal(rng);
  f.input = {f.lhs.data(),
             f.rhs.data(),
             ns ? f.src_negs.data() : nullptr,
             nd ? f.dst_negs.data() : nullptr,
             c,
             ns,
             nd};
  if (slots > 0) {
    for (int i = 0; i < c; ++i) f.slot.push_back(i % slots);
    f.input.rel_slot = f.slot.data();
  }
  return f;
}

// Turns on endpoint negatives. With `nodes`, the rows come from one node
// table with these ids (lhs then rhs, chunk each).
void AddEndpoints(FloatChunk* f, std::vector<uint32_t> lhs_nodes = {},
                  std::vector<uint32_t> rhs_nodes = {}) {
  f->input.endpoint_negs = true;
  f->lhs_nodes = std::move(lhs_nodes);
  f->rhs_nodes = std::move(rhs_nodes);
  if (!f->lhs_nodes.empty()) {
    f->input.same_node_table = true;
    f->input.lhs_nodes = f->lhs_nodes.data();
    f->input.rhs_nodes = f->rhs_nodes.data();
  }
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
  r.slot = f.slot;
  r.endpoints = f.input.endpoint_negs;
  r.lhs_nodes = f.lhs_nodes;
  r.rhs_nodes = f.rhs_nodes;
  r.reciprocal = o.reciprocal;
  r.p = RelationParamSize(o.op, o.dim);
  r.weights.assign(f.weights.begin(), f.weights.end());
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

// Compares ChunkForwardBackward's loss and gradients on `f` with central
// differences of the double-precision reference.
void ExpectGradientsMatchReference(const ModelOptions& o, FloatChunk& f) {
  RefChunk ref = ToRef(o, f);
  ChunkWorkspace ws(o.dim, f.input.chunk,
                    std::max(f.input.num_src_negs, f.input.num_dst_negs));
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

// Node ids for endpoint negatives from one table: row 1 is a self loop,
// row 0's answer (2) is row 2's source, row 3's answer (0) is row 0's
// source; each of these is excluded once per side.
const std::vector<uint32_t> kLhsNodes = {0, 1, 2, 3};
const std::vector<uint32_t> kRhsNodes = {2, 1, 6, 0};

using ModelParam = std::tuple<Operator, Comparator, Loss>;

ModelOptions SmallModel(const ModelParam& param) {
  ModelOptions o;
  std::tie(o.op, o.comparator, o.loss) = param;
  o.dim = 8;
  o.margin = 0.5f;
  return o;
}

class GradientTest : public testing::TestWithParam<ModelParam> {};

TEST_P(GradientTest, GroupedChunkMatchesCentralDifferencesOfReference) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 4, 5, 6, /*seed=*/17);
  ExpectGradientsMatchReference(o, f);
}

// Score rows of 19 and 37 columns: a full 16-lane block and a tail in the
// vectorized row losses, beside the 9-14 columns of the tests above.
TEST_P(GradientTest, LongRowsMatchCentralDifferencesOfReference) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 5, 32, 14, /*seed=*/31);
  ExpectGradientsMatchReference(o, f);
}

TEST_P(GradientTest, GroupedChunkWithEndpointNegatives) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 4, 5, 6, /*seed=*/19);
  AddEndpoints(&f, kLhsNodes, kRhsNodes);
  ExpectGradientsMatchReference(o, f);
}

// Edge weights (import --weight-column) scale each row's loss on both
// sides: the reference weighs each edge's two terms, grouped and mixed.
void AddWeights(FloatChunk* f) {
  for (int i = 0; i < f->input.chunk; ++i) f->weights.push_back(0.25f + 1.5f * (i % 3));
  f->input.weights = f->weights.data();
}

TEST_P(GradientTest, WeightedChunkMatchesCentralDifferencesOfReference) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 5, 32, 14, /*seed=*/31);
  AddWeights(&f);
  AddEndpoints(&f, {0, 1, 2, 3, 4}, {2, 1, 6, 0, 9});
  ExpectGradientsMatchReference(o, f);
}

// Every row's weight 2 doubles the loss and every gradient exactly (a
// power of two scales each product and sum without rounding); weight 1
// changes nothing, bit for bit.
TEST_P(GradientTest, UniformWeightsScaleExactly) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 5, 7, 6, /*seed=*/43);
  AddEndpoints(&f, {0, 1, 2, 3, 4}, {2, 1, 6, 0, 9});
  ChunkWorkspace ws(o.dim, 5, 7);
  Grads plain(f);
  const float plain_loss = ChunkForwardBackward(o, f.rel.data(), f.input, plain.View(), &ws);
  for (float w : {1.0f, 2.0f}) {
    const std::vector<float> weights(5, w);
    f.input.weights = weights.data();
    Grads weighted(f);
    const float loss = ChunkForwardBackward(o, f.rel.data(), f.input, weighted.View(), &ws);
    EXPECT_EQ(loss, w * plain_loss) << "weight " << w;
    for (auto [a, b] :
         {std::pair(&plain.lhs, &weighted.lhs), std::pair(&plain.rhs, &weighted.rhs),
          std::pair(&plain.src_negs, &weighted.src_negs),
          std::pair(&plain.dst_negs, &weighted.dst_negs), std::pair(&plain.rel, &weighted.rel)}) {
      for (size_t k = 0; k < a->size(); ++k) {
        ASSERT_EQ((*b)[k], w * (*a)[k]) << "weight " << w << ", gradient " << k;
      }
    }
  }
}

// Every model: mixed where SupportsMixedChunks (MixedGradientTest), grouped
// always.
std::vector<ModelParam> AllModels(bool mixed_only) {
  std::vector<ModelParam> out;
  for (Operator op : {Operator::kNone, Operator::kTranslation, Operator::kDiagonal,
                      Operator::kComplexDiagonal}) {
    for (Comparator cmp : {Comparator::kDot, Comparator::kCos, Comparator::kL2}) {
      for (Loss loss : {Loss::kRanking, Loss::kLogistic, Loss::kSoftmax}) {
        ModelOptions o;
        o.op = op;
        o.comparator = cmp;
        if (!mixed_only || SupportsMixedChunks(o)) out.push_back({op, cmp, loss});
      }
    }
  }
  return out;
}

std::string ParamName(const testing::TestParamInfo<ModelParam>& info) {
  ModelOptions o;
  std::tie(o.op, o.comparator, o.loss) = info.param;
  return Name(o);
}

INSTANTIATE_TEST_SUITE_P(AllModels, GradientTest, testing::ValuesIn(AllModels(false)),
                         ParamName);

class MixedGradientTest : public testing::TestWithParam<ModelParam> {};

TEST_P(MixedGradientTest, MixedChunkMatchesCentralDifferencesOfReference) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 5, 4, 6, /*seed=*/37, 0.5f, /*slots=*/3);
  ExpectGradientsMatchReference(o, f);
}

TEST_P(MixedGradientTest, WeightedMixedChunk) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 5, 4, 6, /*seed=*/37, 0.5f, /*slots=*/3);
  AddWeights(&f);
  ExpectGradientsMatchReference(o, f);
}

TEST_P(MixedGradientTest, MixedChunkWithEndpointNegatives) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 4, 5, 3, /*seed=*/29, 0.5f, /*slots=*/2);
  AddEndpoints(&f, kLhsNodes, kRhsNodes);
  ExpectGradientsMatchReference(o, f);
}

// A mixed chunk whose rows all share one relation is the grouped chunk.
TEST_P(MixedGradientTest, OneSlotMixedChunkEqualsGroupedChunk) {
  const ModelOptions o = SmallModel(GetParam());
  FloatChunk f = MakeChunk(o, 4, 5, 6, /*seed=*/31);
  AddEndpoints(&f);
  ChunkWorkspace ws(o.dim, 4, 6);
  Grads grouped(f);
  const float grouped_loss = ChunkForwardBackward(o, f.rel.data(), f.input, grouped.View(), &ws);
  const std::vector<uint32_t> slots(4, 0);
  f.input.rel_slot = slots.data();
  Grads mixed(f);
  const float mixed_loss = ChunkForwardBackward(o, f.rel.data(), f.input, mixed.View(), &ws);
  EXPECT_NEAR(mixed_loss, grouped_loss, 1e-5 * std::max(1.0f, std::fabs(grouped_loss)));
  for (size_t k = 0; k < grouped.lhs.size(); ++k) {
    EXPECT_NEAR(mixed.lhs[k], grouped.lhs[k], 1e-5) << k;
    EXPECT_NEAR(mixed.rhs[k], grouped.rhs[k], 1e-5) << k;
  }
  for (size_t k = 0; k < grouped.rel.size(); ++k) {
    EXPECT_NEAR(mixed.rel[k], grouped.rel[k], 1e-4) << k;
  }
}

INSTANTIATE_TEST_SUITE_P(MixedModels, MixedGradientTest, testing::ValuesIn(AllModels(true)),
                         ParamName);

// Reciprocal relations (ModelOptions::reciprocal): every model with an
// operator, grouped and mixed (every reciprocal model mixes), with endpoint
// negatives, against central differences of the reference, whose source
// side scores the inverse edges (d, r⁻¹, candidate) with w_{r⁻¹}.
std::vector<ModelParam> OperatorModels() {
  std::vector<ModelParam> out;
  for (const ModelParam& m : AllModels(false)) {
    if (std::get<0>(m) != Operator::kNone) out.push_back(m);
  }
  return out;
}

// make(s) for the first seed s from `seed` on whose ranking hinges all
// stay clear of the kinks that ExpectGradientsMatchReference's finite
// differences must not cross (any seed for the other losses): fixed
// seeds, found the same way every run.
template <class Make>
FloatChunk ClearOfKinks(const ModelOptions& o, unsigned seed, const Make& make) {
  for (unsigned s = seed;; ++s) {
    FloatChunk f = make(s);
    double min_hinge;
    RefChunkLoss(o, ToRef(o, f), &min_hinge);
    if (o.loss != Loss::kRanking || min_hinge > 1e-3) return f;
  }
}

ModelOptions ReciprocalModel(const ModelParam& param) {
  ModelOptions o = SmallModel(param);
  o.reciprocal = true;
  return o;
}

class ReciprocalGradientTest : public testing::TestWithParam<ModelParam> {};

TEST_P(ReciprocalGradientTest, GroupedChunk) {
  const ModelOptions o = ReciprocalModel(GetParam());
  ASSERT_TRUE(SupportsMixedChunks(o));
  FloatChunk f = ClearOfKinks(o, 23, [&](unsigned seed) { return MakeChunk(o, 4, 5, 6, seed); });
  ASSERT_EQ(f.rel.size(), 2u * o.dim);
  ExpectGradientsMatchReference(o, f);
}

TEST_P(ReciprocalGradientTest, GroupedChunkWithEndpointNegatives) {
  const ModelOptions o = ReciprocalModel(GetParam());
  FloatChunk f = ClearOfKinks(o, 19, [&](unsigned seed) {
    FloatChunk chunk = MakeChunk(o, 4, 5, 6, seed);
    AddEndpoints(&chunk, kLhsNodes, kRhsNodes);
    return chunk;
  });
  ExpectGradientsMatchReference(o, f);
}

TEST_P(ReciprocalGradientTest, MixedChunkWithEndpointNegatives) {
  const ModelOptions o = ReciprocalModel(GetParam());
  FloatChunk f = ClearOfKinks(o, 29, [&](unsigned seed) {
    FloatChunk chunk = MakeChunk(o, 4, 5, 3, seed, 0.5f, /*slots=*/3);
    AddEndpoints(&chunk, kLhsNodes, kRhsNodes);
    return chunk;
  });
  ExpectGradientsMatchReference(o, f);
}

INSTANTIATE_TEST_SUITE_P(OperatorModels, ReciprocalGradientTest,
                         testing::ValuesIn(OperatorModels()), ParamName);

// With w_{r⁻¹} set to the adjoint's parameters J·w_r (the models with an
// adjoint and an operator), the reciprocal model scores every edge as the
// model does: the same loss and row gradients, and w_r's gradient is the
// sum of the two halves' (J mapping the inverse's back).
class ReciprocalAdjointTest : public testing::TestWithParam<ModelParam> {};

std::vector<ModelParam> AdjointOperatorModels() {
  std::vector<ModelParam> out;
  for (const ModelParam& m : AllModels(true)) {
    if (std::get<0>(m) != Operator::kNone) out.push_back(m);
  }
  return out;
}

TEST_P(ReciprocalAdjointTest, AdjointInverseIsTheModelItself) {
  ModelOptions plain = SmallModel(GetParam());
  ASSERT_TRUE(SupportsMixedChunks(plain));
  const ModelOptions recip = ReciprocalModel(GetParam());
  const int p = RelationParamSize(plain.op, plain.dim);
  for (const int slots : {0, 2}) {
    FloatChunk f = MakeChunk(plain, 4, 5, 6, /*seed=*/47, 0.5f, slots);
    AddEndpoints(&f, kLhsNodes, kRhsNodes);
    std::vector<float> records;
    for (int r = 0; r < std::max(slots, 1); ++r) {
      const float* w = f.rel.data() + int64_t{r} * p;
      records.insert(records.end(), w, w + p);
      std::vector<float> conj(p);
      AdjointRelationParams(plain.op, w, p, conj.data());
      records.insert(records.end(), conj.begin(), conj.end());
    }
    ChunkWorkspace ws(plain.dim, 4, 6);
    Grads want(f), got(f);
    got.rel.assign(records.size(), 0.0f);
    const float want_loss = ChunkForwardBackward(plain, f.rel.data(), f.input, want.View(), &ws);
    const float got_loss = ChunkForwardBackward(recip, records.data(), f.input, got.View(), &ws);
    const std::string what = slots > 0 ? "mixed" : "grouped";
    EXPECT_NEAR(got_loss, want_loss, 1e-5 * std::max(1.0f, std::fabs(want_loss))) << what;
    for (size_t k = 0; k < want.lhs.size(); ++k) {
      EXPECT_NEAR(got.lhs[k], want.lhs[k], 1e-4) << what << " lhs " << k;
      EXPECT_NEAR(got.rhs[k], want.rhs[k], 1e-4) << what << " rhs " << k;
    }
    for (int r = 0; r < std::max(slots, 1); ++r) {
      std::vector<float> inverse(got.rel.begin() + int64_t{2 * r + 1} * p,
                                 got.rel.begin() + int64_t{2 * r + 2} * p);
      AdjointRelationParams(plain.op, inverse.data(), p, inverse.data());
      for (int k = 0; k < p; ++k) {
        EXPECT_NEAR(got.rel[int64_t{2 * r} * p + k] + inverse[k], want.rel[int64_t{r} * p + k],
                    1e-4)
            << what << " rel " << r << "," << k;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AdjointModels, ReciprocalAdjointTest,
                         testing::ValuesIn(AdjointOperatorModels()), ParamName);

// N3 (Regularizer::kN3) in the loss and its gradients, for every model,
// grouped and mixed (where it mixes), reciprocal or not, with endpoint
// negatives: against central differences of the reference's
// 2 N3(e_s) + 2 N3(e_d) + N3(w) + N3(w' ) per edge.
class N3GradientTest : public testing::TestWithParam<ModelParam> {};

TEST_P(N3GradientTest, MatchesCentralDifferencesOfReference) {
  for (const bool reciprocal : {false, true}) {
    ModelOptions o = SmallModel(GetParam());
    if (reciprocal && o.op == Operator::kNone) continue;
    o.reciprocal = reciprocal;
    o.regularizer = Regularizer::kN3;
    o.reg_weight = 0.07f;
    for (const int slots : {0, 3}) {
      if (slots > 0 && !SupportsMixedChunks(o)) continue;
      SCOPED_TRACE(std::string(reciprocal ? "reciprocal " : "") +
                   (slots > 0 ? "mixed" : "grouped"));
      FloatChunk f = ClearOfKinks(o, 53, [&](unsigned seed) {
        FloatChunk chunk = MakeChunk(o, 5, 4, 6, seed, 0.5f, slots);
        AddEndpoints(&chunk, {0, 1, 2, 3, 4}, {2, 1, 6, 0, 9});
        return chunk;
      });
      ExpectGradientsMatchReference(o, f);
      // The forward alone reports the same loss.
      ChunkWorkspace ws(o.dim, 5, 6);
      Grads g(f);
      EXPECT_EQ(ChunkForward(o, f.rel.data(), f.input, &ws),
                ChunkForwardBackward(o, f.rel.data(), f.input, g.View(), &ws));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, N3GradientTest, testing::ValuesIn(AllModels(false)), ParamName);

// A weight of 0 (or no regularizer) leaves the step exactly as it was.
TEST(ChunkScorerTest, N3OfWeightZeroIsNoRegularizer) {
  ModelOptions o = SmallModel({Operator::kComplexDiagonal, Comparator::kDot, Loss::kSoftmax});
  FloatChunk f = MakeChunk(o, 5, 4, 6, /*seed=*/59);
  ChunkWorkspace ws(o.dim, 5, 6);
  Grads plain(f), zero(f);
  const float plain_loss = ChunkForwardBackward(o, f.rel.data(), f.input, plain.View(), &ws);
  o.regularizer = Regularizer::kN3;
  o.reg_weight = 0.0f;
  EXPECT_EQ(ChunkForwardBackward(o, f.rel.data(), f.input, zero.View(), &ws), plain_loss);
  EXPECT_EQ(zero.lhs, plain.lhs);
  EXPECT_EQ(zero.rhs, plain.rhs);
  EXPECT_EQ(zero.rel, plain.rel);
}

// --precision bf16: the same step with its products on bf16 operands
// (bf16_gemm.h). Against the fp32 step on the same chunk, grouped, mixed
// where the model has an adjoint, and with endpoint negatives, at an odd
// dimension and odd candidate counts (pairs with a zero high half): the
// loss within 1 % and every gradient entry within 2 % of its buffer's
// largest. bf16 keeps 8 significant bits, so the gradients must also differ
// from fp32's somewhere (else the bf16 path did not run).
class Bf16StepTest : public testing::TestWithParam<ModelParam> {
 protected:
  void SetUp() override {
    if (!Bf16GemmAvailable()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  }
};

TEST_P(Bf16StepTest, MatchesTheFp32StepWithinBf16Rounding) {
  ModelOptions fp32 = SmallModel(GetParam());
  fp32.dim = fp32.op == Operator::kComplexDiagonal ? 38 : 37;
  ModelOptions bf16 = fp32;
  bf16.precision = Precision::kBf16;
  for (const bool mixed : {false, true}) {
    if (mixed && !SupportsMixedChunks(fp32)) continue;
    for (const bool endpoints : {false, true}) {
      FloatChunk f = MakeChunk(fp32, 13, 11, 17, /*seed=*/41, 0.5f, mixed ? 3 : 0);
      if (endpoints) AddEndpoints(&f);
      ChunkWorkspace ws(fp32.dim, 13, 17);
      Grads want(f), got(f);
      const float want_loss = ChunkForwardBackward(fp32, f.rel.data(), f.input, want.View(), &ws);
      const float got_loss = ChunkForwardBackward(bf16, f.rel.data(), f.input, got.View(), &ws);
      const std::string what = Name(fp32) + (mixed ? " mixed" : " grouped") +
                               (endpoints ? " with endpoints" : "");
      EXPECT_NEAR(got_loss, want_loss, 1e-2 * std::fabs(want_loss)) << what;
      auto expect_close = [&](const std::vector<float>& a, const std::vector<float>& b,
                              const char* buffer) {
        float largest = 0;
        for (const float x : b) largest = std::max(largest, std::fabs(x));
        for (size_t k = 0; k < a.size(); ++k) {
          ASSERT_NEAR(a[k], b[k], 2e-2f * largest + 1e-6f) << what << " " << buffer << " " << k;
        }
      };
      expect_close(got.lhs, want.lhs, "lhs");
      expect_close(got.rhs, want.rhs, "rhs");
      expect_close(got.src_negs, want.src_negs, "src_negs");
      expect_close(got.dst_negs, want.dst_negs, "dst_negs");
      expect_close(got.rel, want.rel, "rel");
      EXPECT_NE(got.lhs, want.lhs) << what;
      EXPECT_NE(got.rhs, want.rhs) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, Bf16StepTest, testing::ValuesIn(AllModels(false)), ParamName);

// The endpoint candidate that is a self loop's own node is excluded: with
// one self-loop edge and nothing else, its only endpoint candidate on each
// side is excluded, so the loss is the no-negative loss.
// A chunk of more rows than the dimension: the in-chunk block (chunk ×
// chunk) outgrows every chunk × dim and candidates × dim buffer.
TEST(ChunkScorerTest, LargeChunkAtSmallDimension) {
  ModelOptions o;
  o.dim = 2;
  FloatChunk f = MakeChunk(o, 40, 3, 2, /*seed=*/5);
  ExpectGradientsMatchReference(o, f);
}

// The scores' product on the BLAS, as on a CPU without AVX-512, for the
// mirrored (dot) and unmirrored (l2) grouped chunks.
TEST(ChunkScorerTest, BlasScoresMatchReference) {
  ForceSmallGemmFallbackForTesting(true);
  for (const Comparator cmp : {Comparator::kDot, Comparator::kL2}) {
    const ModelOptions o = SmallModel({Operator::kComplexDiagonal, cmp, Loss::kSoftmax});
    FloatChunk f = MakeChunk(o, 6, 7, 5, /*seed=*/13);
    ExpectGradientsMatchReference(o, f);
  }
  ForceSmallGemmFallbackForTesting(false);
}

TEST(ChunkScorerTest, SelfLoopIsNotItsOwnEndpointNegative) {
  const std::vector<float> lhs = {0.3f, -0.2f}, rhs = {0.3f, -0.2f};
  const std::vector<uint32_t> node = {7};
  ChunkInput in{lhs.data(), rhs.data(), nullptr, nullptr, 1, 0, 0};
  in.endpoint_negs = true;
  in.same_node_table = true;
  in.lhs_nodes = node.data();
  in.rhs_nodes = node.data();
  ChunkWorkspace ws(2, 1, 0);
  ModelOptions o;
  o.dim = 2;
  o.loss = Loss::kSoftmax;
  EXPECT_NEAR(ChunkForward(o, nullptr, in, &ws), 0.0, 1e-6);
  EXPECT_EQ(ws.dst_scores()[1], kExcludedScore);
  EXPECT_EQ(ws.src_scores()[1], kExcludedScore);
  // From different node tables the same ids are different nodes.
  in.same_node_table = false;
  EXPECT_GT(ChunkForward(o, nullptr, in, &ws), 0.5);
}

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

// A confident positive (p within float rounding of 1): its gradient is
// -(the others' mass) / z, not 1 - p, which rounds to 0 (or to noise that
// row-wise Adagrad scales up to a full step on a fresh row). Edge 0 scores
// 25 against its one negative's 0 on both sides, so dl0[0] = -10 q, with
// q = e^-25 / (1 + e^-25); edge 1's rows touch only dl0[1].
TEST(ChunkScorerTest, ConfidentPositiveKeepsItsSmallSoftmaxGradient) {
  const std::vector<float> lhs = {5, 0, 0, 1}, rhs = {5, 0, 0, 1};
  ChunkInput in{lhs.data(), rhs.data(), nullptr, nullptr, 2, 0, 0};
  ChunkWorkspace ws(2, 2, 0);
  ModelOptions o;
  o.dim = 2;
  o.loss = Loss::kSoftmax;
  std::vector<float> dl(4), dr(4);
  ChunkGrads g{dl.data(), dr.data(), nullptr, nullptr, nullptr};
  ChunkForwardBackward(o, nullptr, in, g, &ws);
  const double q = std::exp(-25.0) / (1 + std::exp(-25.0));
  EXPECT_NEAR(dl[0], -10 * q, 1e-4 * 10 * q);
  EXPECT_NEAR(dr[0], -10 * q, 1e-4 * 10 * q);
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
  // Equal up to the rounding of the two orders of addition (a row's
  // gradient sums both sides' terms, which may cancel).
  auto largest = [](const std::vector<float>& v) {
    float m = 0;
    for (float x : v) m = std::max(m, std::fabs(x));
    return m;
  };
  for (size_t k = 0; k < once.lhs.size(); ++k) {
    EXPECT_NEAR(twice.lhs[k], 2 * once.lhs[k], 1e-5 * largest(once.lhs));
  }
  for (size_t k = 0; k < once.rel.size(); ++k) {
    EXPECT_NEAR(twice.rel[k], 2 * once.rel[k], 1e-5 * largest(once.rel));
  }
}

// overwrite_rows: the node gradients replace what their buffers held (here
// garbage), equal to those added to zeroed buffers, for every model,
// grouped and mixed, with and without endpoint negatives and negatives, in
// fp32 and bf16; relation gradients are still added.
TEST(ChunkScorerTest, OverwriteRowsEqualsAddingToZeroedBuffers) {
  for (const ModelParam& param : AllModels(false)) {
    for (const Precision precision : {Precision::kFp32, Precision::kBf16}) {
      if (precision == Precision::kBf16 && !Bf16GemmAvailable()) continue;
      ModelOptions o = SmallModel(param);
      o.precision = precision;
      for (const bool mixed : {false, true}) {
        if (mixed && !SupportsMixedChunks(o)) continue;
        for (const bool endpoints : {false, true}) {
          for (const int negs : {0, 6}) {
            FloatChunk f = MakeChunk(o, 5, negs, negs, /*seed=*/43, 0.5f, mixed ? 2 : 0);
            if (endpoints) AddEndpoints(&f);
            ChunkWorkspace ws(o.dim, 5, 6);
            Grads added(f), overwritten(f);
            for (std::vector<float>* v : {&overwritten.lhs, &overwritten.rhs,
                                          &overwritten.src_negs, &overwritten.dst_negs}) {
              std::fill(v->begin(), v->end(), 7.0f);
            }
            std::fill(added.rel.begin(), added.rel.end(), 0.5f);
            std::fill(overwritten.rel.begin(), overwritten.rel.end(), 0.5f);
            ChunkForwardBackward(o, f.rel.data(), f.input, added.View(), &ws);
            ChunkGrads view = overwritten.View();
            view.overwrite_rows = true;
            ChunkForwardBackward(o, f.rel.data(), f.input, view, &ws);
            const std::string what = Name(o) + " " + std::string(PrecisionName(precision)) +
                                     (mixed ? " mixed" : " grouped") +
                                     (endpoints ? " with endpoints" : "") + " negs " +
                                     std::to_string(negs);
            // The same products in the same order: equal but for where
            // the first product adds to zero instead of writing.
            auto expect_equal = [&](const std::vector<float>& a, const std::vector<float>& b) {
              ASSERT_EQ(a.size(), b.size());
              for (size_t k = 0; k < a.size(); ++k) ASSERT_FLOAT_EQ(a[k], b[k]) << what << " " << k;
            };
            expect_equal(overwritten.lhs, added.lhs);
            expect_equal(overwritten.rhs, added.rhs);
            expect_equal(overwritten.src_negs, added.src_negs);
            expect_equal(overwritten.dst_negs, added.dst_negs);
            expect_equal(overwritten.rel, added.rel);
          }
        }
      }
    }
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
