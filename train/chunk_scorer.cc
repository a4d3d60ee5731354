#include "train/chunk_scorer.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>

#include "storage/status_macros.h"
#include "train/operators.h"
#include "train/vec_math.h"

namespace ember {
namespace {

// l2 distances are sqrt(max(d^2, kMinSquaredDistance)) as in PBG; where the
// clamp applies the (sub)gradient is taken as 0.
using vec::kMinSquaredDistance;
// cos: |x| is clamped below at this value (torch.nn.functional.normalize).
constexpr float kMinNorm = 1e-12f;

// C (m × n) = alpha · X (m × k) · Yᵀ (n × k) + beta · C, all compact.
inline void GemmNT(int m, int n, int k, const float* x, const float* y,
                   float beta, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, y,
              k, beta, c, n);
}
// C (m × n) = X (m × k) · Y (k × n) + beta · C, all compact.
inline void GemmNN(int m, int n, int k, const float* x, const float* y,
                   float beta, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, x, k, y,
              n, beta, c, n);
}
// C (m × n) = Xᵀ · Y + beta · C, X is k × m (row stride m), Y is k × n.
inline void GemmTN(int m, int n, int k, const float* x, const float* y,
                   float beta, float* c) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, x, m, y,
              n, beta, c, n);
}

// Loss of one score row whose positive sits at column `pos_col` and whose
// other n - 1 entries are negatives. Writes dLoss/drow into g (n floats;
// also used as scratch, so it is written even when only the loss is wanted).
template <Loss kLoss>
float RowLoss(const float* s, int n, int pos_col, float margin, float* g) {
  using vec::F8;
  const float pos = s[pos_col];
  if constexpr (kLoss == Loss::kSoftmax) {
    const float m = vec::Max(s, n);
    const float z = vec::MapSum(
        n, g, [m](F8 x) { return vec::Exp(x - m); }, s);
    const float inv_z = 1.0f / z;
    vec::Map(
        n, g, [inv_z](F8 x) { return x * inv_z; }, g);
    g[pos_col] -= 1.0f;
    return std::log(z) + m - pos;
  } else if constexpr (kLoss == Loss::kRanking) {
    const float shift = margin - pos;
    const float total = vec::MapSum(
        n, g, [shift](F8 x) { return vec::Max(x + shift, F8{}); }, s);
    const float loss = total - g[pos_col];
    const float active = vec::MapSum(
        n, g, [](F8 x) { return x > F8{} ? vec::Splat(1.0f) : F8{}; }, g);
    g[pos_col] = -(active - g[pos_col]);
    return loss;
  } else {
    static_assert(kLoss == Loss::kLogistic);
    // -log(1 - σ(x)) = softplus(x) = max(x, 0) + log(1 + e^-|x|).
    const float total = vec::MapSum(
        n, g,
        [](F8 x) {
          return vec::Max(x, F8{}) + vec::Log(1.0f + vec::Exp(-vec::Abs(x)));
        },
        s);
    const float neg_weight = n > 1 ? 1.0f / static_cast<float>(n - 1) : 0.0f;
    const float sp_pos = g[pos_col];
    // -log σ(pos) = softplus(pos) - pos.
    const float loss = (sp_pos - pos) + neg_weight * (total - sp_pos);
    vec::Map(
        n, g,
        [neg_weight](F8 x) {
          const F8 e = vec::Exp(-vec::Abs(x));
          return neg_weight * (x >= F8{} ? vec::Splat(1.0f) : e) / (1.0f + e);
        },
        s);
    // d/dpos of -log σ(pos) is σ(pos) - 1 = -σ(-pos).
    const float e = std::exp(-std::fabs(pos));
    g[pos_col] = -(pos >= 0.0f ? e : 1.0f) / (1.0f + e);
    return loss;
  }
}

}  // namespace

ChunkWorkspace::ChunkWorkspace(int dim, int max_chunk, int max_negs)
    : dim_(dim), max_chunk_(max_chunk), max_negs_(max_negs) {
  EMBER_CHECK(dim >= 1 && max_chunk >= 1 && max_negs >= 0);
  const size_t rows = static_cast<size_t>(max_chunk) + max_negs;
  const size_t mat = rows * dim;
  const size_t scores = static_cast<size_t>(max_chunk) * rows;
  for (auto* v : {&a_, &b_, &a_hat_, &b_hat_, &da_, &db_}) v->resize(mat);
  for (auto* v : {&a_aux_, &b_aux_, &coef_a_, &coef_b_}) v->resize(rows);
  for (auto* v : {&s_dst_, &s_src_, &g_dst_, &g_src_}) v->resize(scores);
}

// The templated chunk step; a friend of ChunkWorkspace.
class ChunkKernels {
 public:
  template <Operator kOp, Comparator kCmp, Loss kLoss>
  static float Step(const ModelOptions& options, const float* rel,
                    const ChunkInput& in, const ChunkGrads* grads,
                    ChunkWorkspace* ws);
};

template <Operator kOp, Comparator kCmp, Loss kLoss>
float ChunkKernels::Step(const ModelOptions& options, const float* rel,
                         const ChunkInput& in, const ChunkGrads* grads,
                         ChunkWorkspace* ws) {
  const int d = options.dim;
  const int c = in.chunk;
  const int na = c + in.num_src_negs;  // rows of A, columns of Ss
  const int nb = c + in.num_dst_negs;  // rows of B, columns of Sd
  // A = [op(L); op(Us)], B = [R; Ud]. Rows the caller already stacked
  // (negatives right after the chunk) are read in place, without a copy.
  const int64_t cd = int64_t{c} * d;
  const float* a = in.lhs;
  const float* b = in.rhs;
  if (kOp != Operator::kNone ||
      (in.num_src_negs > 0 && in.src_negs != in.lhs + cd)) {
    float* w = ws->a_.data();
    OpForward<kOp>(rel, in.lhs, c, d, w);
    OpForward<kOp>(rel, in.src_negs, in.num_src_negs, d, w + cd);
    a = w;
  }
  if (in.num_dst_negs > 0 && in.dst_negs != in.rhs + cd) {
    float* w = ws->b_.data();
    std::copy(in.rhs, in.rhs + cd, w);
    std::copy(in.dst_negs, in.dst_negs + int64_t{in.num_dst_negs} * d, w + cd);
    b = w;
  }

  // Comparator preparation: the GEMM operands (â, b̂) and per-row data.
  const float* ah = a;
  const float* bh = b;
  float* a_aux = ws->a_aux_.data();
  float* b_aux = ws->b_aux_.data();
  if constexpr (kCmp == Comparator::kCos) {
    auto normalize = [d](const float* x, int rows, float* xh, float* inv) {
      for (int r = 0; r < rows; ++r) {
        const float* xr = x + int64_t{r} * d;
        const float norm = std::sqrt(vec::Dot(xr, xr, d));
        const float s = 1.0f / std::max(norm, kMinNorm);
        inv[r] = s;
        vec::Map(
            d, xh + int64_t{r} * d, [s](vec::F8 v) { return v * s; }, xr);
      }
    };
    normalize(a, na, ws->a_hat_.data(), a_aux);
    normalize(b, nb, ws->b_hat_.data(), b_aux);
    ah = ws->a_hat_.data();
    bh = ws->b_hat_.data();
  } else if constexpr (kCmp == Comparator::kL2) {
    for (int r = 0; r < na; ++r) {
      const float* x = a + int64_t{r} * d;
      a_aux[r] = vec::Dot(x, x, d);
    }
    for (int r = 0; r < nb; ++r) {
      const float* x = b + int64_t{r} * d;
      b_aux[r] = vec::Dot(x, x, d);
    }
  }

  // Scores: Sd = Â[0:c] B̂ᵀ, Ss = B̂[0:c] Âᵀ.
  float* sd = ws->s_dst_.data();
  float* ss = ws->s_src_.data();
  GemmNT(c, nb, d, ah, bh, 0.0f, sd);
  GemmNT(c, na, d, bh, ah, 0.0f, ss);
  if constexpr (kCmp == Comparator::kL2) {
    vec::DotsToNegativeDistances(sd, c, nb, a_aux, b_aux);
    vec::DotsToNegativeDistances(ss, c, na, b_aux, a_aux);
  }
  // Positive scores, computed directly (for l2 this avoids the cancellation
  // of the GEMM expansion where a positive pair is close).
  for (int i = 0; i < c; ++i) {
    float pos;
    if constexpr (kCmp == Comparator::kL2) {
      pos = -std::sqrt(std::max(
          vec::SquaredDistance(a + int64_t{i} * d, b + int64_t{i} * d, d),
          kMinSquaredDistance));
    } else {
      pos = vec::Dot(ah + int64_t{i} * d, bh + int64_t{i} * d, d);
    }
    sd[int64_t{i} * nb + i] = pos;
    ss[int64_t{i} * na + i] = pos;
  }

  // Loss and dLoss/dscores.
  float* gd = ws->g_dst_.data();
  float* gs = ws->g_src_.data();
  float loss = 0.0f;
  for (int i = 0; i < c; ++i) {
    loss += RowLoss<kLoss>(sd + int64_t{i} * nb, nb, i, options.margin,
                           gd + int64_t{i} * nb);
    loss += RowLoss<kLoss>(ss + int64_t{i} * na, na, i, options.margin,
                           gs + int64_t{i} * na);
  }
  if (grads == nullptr) return loss;

  float* coef_a = ws->coef_a_.data();
  float* coef_b = ws->coef_b_.data();
  if constexpr (kCmp == Comparator::kL2) {
    // With S = -dist, dS/dq = (k - q) / dist. Replacing G by H = G / dist
    // turns the backward into dq = (H K)_q - q · Σ(H entries of q), so the
    // GEMMs below serve l2 too; coef_* collects those sums per row of A, B.
    std::fill(coef_a, coef_a + na, 0.0f);
    std::fill(coef_b, coef_b + nb, 0.0f);
    auto scale = [](const float* s, float* g, int rows, int cols,
                    float* row_sum, float* col_sum) {
      const float min_dist = std::sqrt(kMinSquaredDistance);
      for (int i = 0; i < rows; ++i) {
        const float* si = s + int64_t{i} * cols;
        float* gi = g + int64_t{i} * cols;
        row_sum[i] += vec::MapSum(
            cols, gi,
            [min_dist](vec::F8 score, vec::F8 grad) {
              const vec::F8 dist = -score;
              return dist > min_dist ? grad / dist : vec::F8{};
            },
            si, gi);
        vec::Add(gi, cols, col_sum);
      }
    };
    scale(sd, gd, c, nb, coef_a, coef_b);
    scale(ss, gs, c, na, coef_b, coef_a);
  }

  // dÂ = Gsᵀ B̂[0:c] + [Gd B̂; 0], dB̂ = Gdᵀ Â[0:c] + [Gs Â; 0].
  float* da = ws->da_.data();
  float* db = ws->db_.data();
  GemmTN(na, d, c, gs, bh, 0.0f, da);
  GemmNN(c, d, nb, gd, bh, 1.0f, da);
  GemmTN(nb, d, c, gd, ah, 0.0f, db);
  GemmNN(c, d, na, gs, ah, 1.0f, db);

  // Comparator backward: dÂ → dA, dB̂ → dB.
  if constexpr (kCmp == Comparator::kCos) {
    auto unnormalize = [d](const float* xh, const float* inv, int rows,
                           float* dx) {
      for (int r = 0; r < rows; ++r) {
        const float* x = xh + int64_t{r} * d;
        float* g = dx + int64_t{r} * d;
        const float proj = vec::Dot(x, g, d);
        const float s = inv[r];
        vec::Map(
            d, g,
            [proj, s](vec::F8 gk, vec::F8 xk) { return (gk - xk * proj) * s; },
            g, x);
      }
    };
    unnormalize(ah, a_aux, na, da);
    unnormalize(bh, b_aux, nb, db);
  } else if constexpr (kCmp == Comparator::kL2) {
    auto subtract = [d](const float* x, const float* coef, int rows,
                        float* dx) {
      for (int r = 0; r < rows; ++r) {
        const float* xr = x + int64_t{r} * d;
        float* g = dx + int64_t{r} * d;
        const float w = coef[r];
        vec::Map(
            d, g, [w](vec::F8 gk, vec::F8 xk) { return gk - w * xk; }, g, xr);
      }
    };
    subtract(a, coef_a, na, da);
    subtract(b, coef_b, nb, db);
  }

  // Into the caller's buffers: B's rows are inputs; A's go through op_r.
  vec::Add(db, c * d, grads->rhs);
  if (in.num_dst_negs > 0) {
    vec::Add(db + int64_t{c} * d, in.num_dst_negs * d, grads->dst_negs);
  }
  OpBackward<kOp>(rel, in.lhs, da, c, d, grads->lhs, grads->rel);
  if (in.num_src_negs > 0) {
    OpBackward<kOp>(rel, in.src_negs, da + int64_t{c} * d, in.num_src_negs, d,
                    grads->src_negs, grads->rel);
  }
  return loss;
}

namespace {

using StepFn = float (*)(const ModelOptions&, const float*, const ChunkInput&,
                         const ChunkGrads*, ChunkWorkspace*);

constexpr int kNumSteps = kNumOperators * kNumComparators * kNumLosses;

constexpr int StepIndex(Operator op, Comparator cmp, Loss loss) {
  return (static_cast<int>(op) * kNumComparators + static_cast<int>(cmp)) *
             kNumLosses +
         static_cast<int>(loss);
}

template <size_t... kIndex>
constexpr std::array<StepFn, kNumSteps> MakeStepTable(
    std::index_sequence<kIndex...>) {
  return {&ChunkKernels::Step<
      static_cast<Operator>(kIndex / (kNumComparators * kNumLosses)),
      static_cast<Comparator>(kIndex / kNumLosses % kNumComparators),
      static_cast<Loss>(kIndex % kNumLosses)>...};
}

// The one map from runtime options to kernel instantiations.
constexpr std::array<StepFn, kNumSteps> kSteps =
    MakeStepTable(std::make_index_sequence<kNumSteps>{});

float Dispatch(const ModelOptions& options, const float* rel,
               const ChunkInput& in, const ChunkGrads* grads,
               ChunkWorkspace* ws) {
  EMBER_CHECK(options.dim == ws->dim());
  EMBER_CHECK(options.op != Operator::kComplexDiagonal || options.dim % 2 == 0);
  EMBER_CHECK(in.chunk >= 1 && in.chunk <= ws->max_chunk());
  EMBER_CHECK(in.num_src_negs >= 0 && in.num_src_negs <= ws->max_negs());
  EMBER_CHECK(in.num_dst_negs >= 0 && in.num_dst_negs <= ws->max_negs());
  EMBER_CHECK(in.lhs != nullptr && in.rhs != nullptr);
  EMBER_CHECK(in.num_src_negs == 0 || in.src_negs != nullptr);
  EMBER_CHECK(in.num_dst_negs == 0 || in.dst_negs != nullptr);
  EMBER_CHECK(RelationParamSize(options.op, options.dim) == 0 ||
              rel != nullptr);
  if (grads != nullptr) {
    EMBER_CHECK(grads->lhs != nullptr && grads->rhs != nullptr);
    EMBER_CHECK(in.num_src_negs == 0 || grads->src_negs != nullptr);
    EMBER_CHECK(in.num_dst_negs == 0 || grads->dst_negs != nullptr);
    EMBER_CHECK(RelationParamSize(options.op, options.dim) == 0 ||
                grads->rel != nullptr);
  }
  const int index = StepIndex(options.op, options.comparator, options.loss);
  EMBER_CHECK(index >= 0 && index < kNumSteps);
  return kSteps[index](options, rel, in, grads, ws);
}

}  // namespace

float ChunkForward(const ModelOptions& options, const float* rel,
                   const ChunkInput& input, ChunkWorkspace* ws) {
  return Dispatch(options, rel, input, nullptr, ws);
}

float ChunkForwardBackward(const ModelOptions& options, const float* rel,
                           const ChunkInput& input, const ChunkGrads& grads,
                           ChunkWorkspace* ws) {
  return Dispatch(options, rel, input, &grads, ws);
}

}  // namespace ember
