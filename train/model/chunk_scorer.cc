#include "train/model/chunk_scorer.h"

#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>

#include "storage/base/status_macros.h"
#include "train/model/bf16_gemm.h"
#include "train/model/operators.h"
#include "train/model/small_gemm.h"
#include "train/model/vec_math.h"

namespace ember {
namespace {

// l2 distances are sqrt(max(d^2, kMinSquaredDistance)) as in PBG; where the
// clamp applies the (sub)gradient is taken as 0.
using vec::kMinSquaredDistance;
// cos: |x| is clamped below at this value (torch.nn.functional.normalize).
using vec::kMinNorm;

// Where the step's products go: fp32 (OpenBLAS and SmallGemm) or, with
// `bf16`, bf16_gemm.h on operands packed into pack_a and pack_b (the
// workspace's, sized for the largest product).
struct Products {
  bool bf16 = false;
  uint32_t* pack_a = nullptr;
  uint32_t* pack_b = nullptr;
};

// C (m × n, row stride ldc) = X (m × k) · Yᵀ (n × k), X and Y compact. Where
// SmallGemm has its AVX-512 kernel, Y is transposed into yt (k × n floats)
// and multiplied there: 187 against OpenBLAS's 134 GFLOP/s at
// 50 × 100 × 100, the transposition included (tools/bench/score_bench.cc).
inline void GemmNT(int m, int n, int k, const float* x, const float* y,
                   float* yt, float* c, int ldc, const Products& p) {
  if (n == 0) return;
  if (p.bf16) {
    const int pairs = PairCount(k);
    PackPairsAlongRows(m, k, x, k, p.pack_a, pairs);
    PackPairsTransposed(n, k, y, k, p.pack_b, n);
    Bf16Gemm(m, n, pairs, p.pack_a, pairs, 1, p.pack_b, n, c, ldc, /*accumulate=*/false);
    return;
  }
  if (SmallGemmUsesAvx512()) {
    Transpose(n, k, y, k, yt, n);
    SmallGemm(m, n, k, x, k, 1, yt, n, c, ldc, /*accumulate=*/false);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, y,
              k, 0.0f, c, ldc);
}
// C (m × n) = X (m × k, row stride ldx) · Y (k × n), or C += that with
// `accumulate`; Y and C compact.
inline void GemmNN(int m, int n, int k, const float* x, int ldx,
                   const float* y, float* c, bool accumulate, const Products& p) {
  if (k == 0) {
    if (!accumulate) std::fill_n(c, int64_t{m} * n, 0.0f);
    return;
  }
  if (p.bf16) {
    const int pairs = PairCount(k);
    PackPairsAlongRows(m, k, x, ldx, p.pack_a, pairs);
    PackPairsAcrossRows(k, n, y, n, p.pack_b, n);
    Bf16Gemm(m, n, pairs, p.pack_a, pairs, 1, p.pack_b, n, c, n, accumulate);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, x, ldx,
              y, n, accumulate ? 1.0f : 0.0f, c, n);
}
// C (m × n) = Xᵀ · Y, or C += that with `accumulate`; X is k × m (row stride
// ldx), Y is k × n; Y and C compact. In bf16, with `y_packed` Y's pairs are
// those of the previous call (of the same Y).
inline void GemmTN(int m, int n, int k, const float* x, int ldx,
                   const float* y, float* c, bool accumulate, const Products& p,
                   bool y_packed = false) {
  if (m == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill_n(c, int64_t{m} * n, 0.0f);
    return;
  }
  if (p.bf16) {
    const int pairs = PairCount(k);
    PackPairsAcrossRows(k, m, x, ldx, p.pack_a, m);
    if (!y_packed) PackPairsAcrossRows(k, n, y, n, p.pack_b, n);
    Bf16Gemm(m, n, pairs, p.pack_a, 1, m, p.pack_b, n, c, n, accumulate);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, x, ldx,
              y, n, accumulate ? 1.0f : 0.0f, c, n);
}

#if defined(__AVX512F__)
// The softmax loss of `rows` score rows of n columns whose positive is on
// the diagonal (row i's at column i), as RowLoss<kSoftmax> below row by row;
// returns their sum and writes dLoss/drow into g (rows × n). 16 lanes, the
// rows' tails by masked moves, and each pass (max, exponentials, scaling)
// over a block of rows before the next, so that the rows' reductions overlap
// instead of waiting on one another: 1.4 against 2.6 µs for 50 rows of 100.
// (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized on their own
// undefined-vector argument, a known false positive.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
float SoftmaxRows16(const float* s, int rows, int n, float* g, const float* weights) {
  const int full = n / 16 * 16;
  const auto tail = static_cast<__mmask16>((1u << (n - full)) - 1);
  constexpr int kBlock = 16;
  float row_max[kBlock], others_sum[kBlock];
  float loss = 0.0f;
  for (int first = 0; first < rows; first += kBlock) {
    const int count = std::min(kBlock, rows - first);
    for (int r = 0; r < count; ++r) {
      const float* sr = s + int64_t{first + r} * n;
      __m512 mx = _mm512_set1_ps(sr[0]);
      for (int j = 0; j < full; j += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(sr + j));
      if (tail != 0) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, tail, sr + full));
      row_max[r] = _mm512_reduce_max_ps(mx);
    }
    // The exponentials, and the sum of all but the positive's (column i),
    // from which the positive's gradient comes, as in RowLoss.
    for (int r = 0; r < count; ++r) {
      const int i = first + r;
      const float* sr = s + int64_t{i} * n;
      float* gr = g + int64_t{i} * n;
      const __m512 mx = _mm512_set1_ps(row_max[r]);
      const int pos_block = i / 16 * 16;
      const auto not_pos = static_cast<__mmask16>(~(1u << (i % 16)));
      __m512 sum = _mm512_setzero_ps();
      for (int j = 0; j < full; j += 16) {
        const __m512 e = vec::Exp16(_mm512_sub_ps(_mm512_loadu_ps(sr + j), mx));
        _mm512_storeu_ps(gr + j, e);
        sum = _mm512_mask_add_ps(sum, j == pos_block ? not_pos : __mmask16{0xFFFF}, sum, e);
      }
      if (tail != 0) {
        const __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, sr + full), mx);
        const __m512 e = _mm512_maskz_mov_ps(tail, vec::Exp16(x));
        _mm512_mask_storeu_ps(gr + full, tail, e);
        sum = _mm512_mask_add_ps(sum, full == pos_block ? not_pos : __mmask16{0xFFFF}, sum, e);
      }
      others_sum[r] = _mm512_reduce_add_ps(sum);
    }
    for (int r = 0; r < count; ++r) {
      const int i = first + r;
      const float* sr = s + int64_t{i} * n;
      float* gr = g + int64_t{i} * n;
      // A weight w scales the row's loss and gradient: w (e/Z - onehot).
      // (w = 1 leaves every product as it is without weights.)
      const float w = weights != nullptr ? weights[i] : 1.0f;
      const float others = others_sum[r];
      const float z = others + gr[i];
      const float row_loss = std::log(z) + row_max[r] - sr[i];
      loss += weights != nullptr ? w * row_loss : row_loss;
      const __m512 inv_sum = _mm512_set1_ps(weights != nullptr ? (1.0f / z) * w : 1.0f / z);
      for (int j = 0; j < full; j += 16) {
        _mm512_storeu_ps(gr + j, _mm512_mul_ps(_mm512_loadu_ps(gr + j), inv_sum));
      }
      if (tail != 0) {
        _mm512_mask_storeu_ps(gr + full, tail,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, gr + full), inv_sum));
      }
      gr[i] = -w * (others / z);
    }
  }
  return loss;
}
#pragma GCC diagnostic pop
#endif

// Loss of one score row whose positive sits at column `pos_col` and whose
// other n - 1 entries are negatives. Writes dLoss/drow into g (n floats;
// also used as scratch, so it is written even when only the loss is wanted).
template <Loss kLoss>
float RowLoss(const float* s, int n, int pos_col, float margin, float* g) {
  using vec::F8;
  const float pos = s[pos_col];
  if constexpr (kLoss == Loss::kSoftmax) {
    const float m = vec::Max(s, n);
    vec::MapSum(
        n, g, [m](F8 x) { return vec::Exp(x - m); }, s);
    // The positive's gradient p - 1 as -(the others' mass) / z: a confident
    // positive (p within float rounding of 1) gets its small gradient, not
    // the rounding noise of 1 - p, which row-wise Adagrad would scale up to
    // a full step on a fresh row.
    const float e_pos = g[pos_col];
    g[pos_col] = 0.0f;
    const float others = vec::Sum(g, n);
    const float z = others + e_pos;
    const float inv_z = 1.0f / z;
    vec::Map(
        n, g, [inv_z](F8 x) { return x * inv_z; }, g);
    g[pos_col] = -others * inv_z;
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

// The loss of `rows` score rows of n columns whose positive is on the
// diagonal (row i's at column i): the sum of RowLoss over the rows, each
// row's loss and gradient scaled by weights[i] unless `weights` is null.
template <Loss kLoss>
float DiagonalRowsLoss(const float* s, int rows, int n, float margin, float* g,
                       const float* weights) {
#if defined(__AVX512F__)
  if constexpr (kLoss == Loss::kSoftmax) return SoftmaxRows16(s, rows, n, g, weights);
#endif
  float loss = 0.0f;
  for (int i = 0; i < rows; ++i) {
    float* gi = g + int64_t{i} * n;
    const float row_loss = RowLoss<kLoss>(s + int64_t{i} * n, n, i, margin, gi);
    if (weights == nullptr) {
      loss += row_loss;
      continue;
    }
    const float w = weights[i];
    loss += w * row_loss;
    vec::Map(
        n, gi, [w](vec::F8 x) { return x * w; }, gi);
  }
  return loss;
}

}  // namespace

ChunkWorkspace::ChunkWorkspace(int dim, int max_chunk, int max_negs)
    : dim_(dim), max_chunk_(max_chunk), max_negs_(max_negs) {
  EMBER_CHECK(dim >= 1 && max_chunk >= 1 && max_negs >= 0);
  const size_t queries = static_cast<size_t>(max_chunk);
  const size_t candidates = 2 * queries + max_negs;  // chunk, negs, endpoints
  for (Side* side : {&dst_, &src_}) {
    for (auto* v : {&side->q, &side->q_hat, &side->dq}) v->resize(queries * dim);
    for (auto* v : {&side->k, &side->k_hat, &side->k_transposed, &side->dk}) {
      v->resize(candidates * dim);
    }
    for (auto* v : {&side->q_aux, &side->coef_q}) v->resize(queries);
    for (auto* v : {&side->k_aux, &side->coef_k}) v->resize(candidates);
    for (auto* v : {&side->scores, &side->g}) v->resize(queries * candidates);
  }
  // The largest product's packed operands (bf16_gemm.h): Q · Kᵀ, G · K and
  // Gᵀ · Q, each A and B in pairs along its depth.
  const size_t pairs_d = PairCount(dim), pairs_q = PairCount(max_chunk);
  const size_t pairs_k = PairCount(static_cast<int>(candidates));
  pack_a_.resize(std::max({queries * pairs_d, queries * pairs_k, pairs_q * candidates}));
  pack_b_.resize(std::max({pairs_d * candidates, pairs_k * dim, pairs_q * dim}));
  conj_rel_.resize(queries * dim);
  block_transposed_.resize(queries * queries);
  d_conj_rel_.resize(queries * dim);
}

namespace {

// Copies the stacked rows of `parts` (pointer, rows) into out, or returns
// the first part's pointer when the parts already lie one after another.
const float* Stack(std::initializer_list<std::pair<const float*, int>> parts,
                   int dim, float* out) {
  bool contiguous = true;
  const float* next = parts.begin()->first;
  for (const auto& [rows, n] : parts) {
    if (n == 0) continue;
    if (rows != next) contiguous = false;
    next = rows + int64_t{n} * dim;
  }
  if (contiguous) return parts.begin()->first;
  float* w = out;
  for (const auto& [rows, n] : parts) {
    w = std::copy(rows, rows + int64_t{n} * dim, w);
  }
  return out;
}

}  // namespace

// The templated chunk step; a friend of ChunkWorkspace.
class ChunkKernels {
 public:
  template <Operator kOp, Comparator kCmp, Loss kLoss>
  static float Step(const ModelOptions& options, const float* rel,
                    const ChunkInput& in, const ChunkGrads* grads,
                    ChunkWorkspace* ws);

 private:
  using Side = ChunkWorkspace::Side;

  // Scores queries q (m rows) against candidates k (n rows) into side->scores
  // (the positive of row i at column i; with endpoint_col >= 0, row i's own
  // endpoint at column endpoint_col + i), excludes candidates, and returns the
  // side's loss with dLoss/dscores in side->g (row i's scaled by
  // weights[i] unless `weights` is null). Keeps the comparator's
  // operands in *qh, *kh for the backward pass. With `mirror` (dot only):
  // its first m columns are this side's transposed, S(i, j) = M(j, i) for
  // j < m, and only the other columns are multiplied.
  template <Comparator kCmp, Loss kLoss>
  static float SideForward(const float* q, int m, const float* k, int n, int d,
                           const Products& prod, float margin, int endpoint_col,
                           const std::vector<std::pair<int, int>>* excluded, const float* weights,
                           Side* side, const float** qh, const float** kh,
                           const Side* mirror = nullptr, int mirror_cols = 0);

  // One of the caller's gradient buffers; `written` says whether it holds a
  // gradient to add to (null: always) or may be overwritten, and turns true
  // once a product has written it whole.
  struct GradRows {
    float* out = nullptr;
    bool* written = nullptr;
  };
  // Whether a product into `rows` adds to them; marks them written, as the
  // product is about to write them whole.
  static bool Accumulates(GradRows rows) {
    if (rows.written == nullptr) return true;
    const bool add = *rows.written;
    *rows.written = true;
    return add;
  }
  // Rows [first, first + rows) of a side's dK, into `to` (rows × d).
  struct KRows {
    int first, rows;
    GradRows to;
  };
  // dLoss/dQ into side->dq (m × d) and dLoss/dK into side->dk (n × d), from
  // the columns [first_col, n) of side->g only: rows [0, first_col) of dk
  // are left as they were (dot only when first_col > 0). Under dot, whose
  // products need no further work, they may go straight to the caller's
  // gradients instead: with dq_out, dQ goes to it (m × d); with
  // non-empty k_out, the rows of dK from first_col on go to their KRows,
  // which cover [0, n) in order (a KRows whose rows first_col cuts is
  // zeroed first if not yet written).
  template <Comparator kCmp>
  static void SideBackward(const float* q, int m, const float* k, int n, int d,
                           const Products& prod, const float* qh, const float* kh, Side* side,
                           int first_col = 0, GradRows dq_out = {},
                           std::span<const KRows> k_out = {});
};

template <Comparator kCmp, Loss kLoss>
float ChunkKernels::SideForward(const float* q, int m, const float* k, int n, int d,
                                const Products& prod, float margin, int endpoint_col,
                                const std::vector<std::pair<int, int>>* excluded,
                                const float* weights, Side* side, const float** qh_out,
                                const float** kh_out, const Side* mirror, int mirror_cols) {
  const float* qh = q;
  const float* kh = k;
  float* q_aux = side->q_aux.data();
  float* k_aux = side->k_aux.data();
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
    normalize(q, m, side->q_hat.data(), q_aux);
    normalize(k, n, side->k_hat.data(), k_aux);
    qh = side->q_hat.data();
    kh = side->k_hat.data();
  } else if constexpr (kCmp == Comparator::kL2) {
    for (int r = 0; r < m; ++r) q_aux[r] = vec::Dot(q + int64_t{r} * d, q + int64_t{r} * d, d);
    for (int r = 0; r < n; ++r) k_aux[r] = vec::Dot(k + int64_t{r} * d, k + int64_t{r} * d, d);
  }
  float* s = side->scores.data();
  if (mirror != nullptr) {
    EMBER_CHECK(kCmp == Comparator::kDot);
    Transpose(m, m, mirror->scores.data(), mirror_cols, s, n);
    GemmNT(m, n - m, d, qh, kh + int64_t{m} * d, side->k_transposed.data(), s + m, n, prod);
  } else {
    GemmNT(m, n, d, qh, kh, side->k_transposed.data(), s, n, prod);
  }
  if constexpr (kCmp == Comparator::kL2) {
    vec::DotsToNegativeDistances(s, m, n, q_aux, k_aux);
  }
  // Positive scores: under dot and cos the product's diagonal; under l2
  // computed directly, as the GEMM expansion cancels where a positive pair
  // is close; with bf16 products computed directly too, so that the score
  // the loss rests on most keeps fp32 precision.
  if (kCmp == Comparator::kL2 || prod.bf16) {
    for (int i = 0; i < m; ++i) {
      float pos;
      if constexpr (kCmp == Comparator::kL2) {
        pos = -std::sqrt(std::max(
            vec::SquaredDistance(q + int64_t{i} * d, k + int64_t{i} * d, d),
            kMinSquaredDistance));
      } else {
        pos = vec::Dot(qh + int64_t{i} * d, kh + int64_t{i} * d, d);
      }
      s[int64_t{i} * n + i] = pos;
    }
  }
  if constexpr (kCmp == Comparator::kL2) {
    // A row's own endpoint is often its query itself (op none): exact zero
    // distances, which the GEMM expansion would turn into noise.
    if (endpoint_col >= 0) {
      for (int i = 0; i < m; ++i) {
        const int j = endpoint_col + i;
        s[int64_t{i} * n + j] = -std::sqrt(std::max(
            vec::SquaredDistance(q + int64_t{i} * d, k + int64_t{j} * d, d),
            kMinSquaredDistance));
      }
    }
  }
  if (excluded != nullptr) {
    for (const auto& [i, j] : *excluded) s[int64_t{i} * n + j] = kExcludedScore;
  }
  float* g = side->g.data();
  const float loss = DiagonalRowsLoss<kLoss>(s, m, n, margin, g, weights);
  *qh_out = qh;
  *kh_out = kh;
  return loss;
}

template <Comparator kCmp>
void ChunkKernels::SideBackward(const float* q, int m, const float* k, int n,
                                int d, const Products& prod, const float* qh, const float* kh,
                                Side* side, int first_col, GradRows dq_out,
                                std::span<const KRows> k_out) {
  EMBER_CHECK(kCmp == Comparator::kDot || (dq_out.out == nullptr && k_out.size() == 0));
  float* g = side->g.data();
  float* coef_q = side->coef_q.data();
  float* coef_k = side->coef_k.data();
  if constexpr (kCmp == Comparator::kL2) {
    // With S = -dist, dS/dq = (k - q) / dist. Replacing G by H = G / dist
    // turns the backward into dq = (H K)_q - q · Σ(H entries of q), so the
    // GEMMs below serve l2 too; coef_* collects those sums per row.
    std::fill(coef_q, coef_q + m, 0.0f);
    std::fill(coef_k, coef_k + n, 0.0f);
    const float* s = side->scores.data();
    const float min_dist = std::sqrt(kMinSquaredDistance);
    for (int i = 0; i < m; ++i) {
      const float* si = s + int64_t{i} * n;
      float* gi = g + int64_t{i} * n;
      coef_q[i] += vec::MapSum(
          n, gi,
          [min_dist](vec::F8 score, vec::F8 grad) {
            const vec::F8 dist = -score;
            return dist > min_dist ? grad / dist : vec::F8{};
          },
          si, gi);
      vec::Add(gi, n, coef_k);
    }
  }
  // dQ̂ = G K̂, dK̂ = Gᵀ Q̂ (columns and rows from first_col on).
  float* dq = side->dq.data();
  float* dk = side->dk.data();
  const int64_t skip = first_col;
  if (dq_out.out != nullptr) {
    GemmNN(m, d, n - first_col, g + skip, n, kh + skip * d, dq_out.out, Accumulates(dq_out), prod);
  } else {
    GemmNN(m, d, n - first_col, g + skip, n, kh + skip * d, dq, /*accumulate=*/false, prod);
  }
  if (k_out.size() > 0) {
    int covered = 0;
    bool q_packed = false;
    for (const KRows& rows : k_out) {
      EMBER_CHECK(rows.first == covered);
      covered += rows.rows;
      const int from = std::max(rows.first, first_col);
      if (from >= covered) continue;
      bool add = Accumulates(rows.to);
      if (!add && from > rows.first) {  // rows first_col cuts off hold zero
        std::fill_n(rows.to.out, int64_t{rows.rows} * d, 0.0f);
        add = true;
      }
      GemmTN(covered - from, d, m, g + from, n, qh, rows.to.out + int64_t{from - rows.first} * d,
             add, prod, q_packed);
      q_packed = true;
    }
    EMBER_CHECK(covered == n);
  } else {
    GemmTN(n - first_col, d, m, g + skip, n, qh, dk + skip * d, /*accumulate=*/false, prod);
  }
  if constexpr (kCmp == Comparator::kCos) {
    auto unnormalize = [d](const float* xh, const float* inv, int rows, float* dx) {
      for (int r = 0; r < rows; ++r) {
        const float* x = xh + int64_t{r} * d;
        float* gr = dx + int64_t{r} * d;
        const float proj = vec::Dot(x, gr, d);
        const float sc = inv[r];
        vec::Map(
            d, gr, [proj, sc](vec::F8 gk, vec::F8 xk) { return (gk - xk * proj) * sc; },
            gr, x);
      }
    };
    unnormalize(qh, side->q_aux.data(), m, dq);
    unnormalize(kh, side->k_aux.data(), n, dk);
  } else if constexpr (kCmp == Comparator::kL2) {
    auto subtract = [d](const float* x, const float* coef, int rows, float* dx) {
      for (int r = 0; r < rows; ++r) {
        const float* xr = x + int64_t{r} * d;
        float* gr = dx + int64_t{r} * d;
        const float w = coef[r];
        vec::Map(
            d, gr, [w](vec::F8 gk, vec::F8 xk) { return gk - w * xk; }, gr, xr);
      }
    };
    subtract(q, coef_q, m, dq);
    subtract(k, coef_k, n, dk);
  }
}

template <Operator kOp, Comparator kCmp, Loss kLoss>
float ChunkKernels::Step(const ModelOptions& options, const float* rel,
                         const ChunkInput& in, const ChunkGrads* grads,
                         ChunkWorkspace* ws) {
  const int d = options.dim;
  const int c = in.chunk;
  const int ns = in.num_src_negs;
  const int nd = in.num_dst_negs;
  const int e = in.endpoint_negs ? c : 0;
  const int nkd = in.dst_candidates();
  const int nks = in.src_candidates();
  const int p = RelationParamSize(kOp, d);
  const bool mixed = in.rel_slot != nullptr;
  // Reciprocal: each slot holds the record [w_r, w_{r⁻¹}] (rec floats), and
  // the src side's queries are op_{r⁻¹}(R_i) against K = [L; Us; R if E],
  // as a mixed chunk's are op*_r(R_i), grouped or not.
  const bool recip = options.reciprocal;
  const int rec = recip ? 2 * p : p;
  const bool query_op_src = mixed || recip;
  const int64_t cd = int64_t{c} * d;
  Side& dst = ws->dst_;
  Side& src = ws->src_;
  auto row = [d](auto* x, int i) { return x + int64_t{i} * d; };
  // Row i's record in `params` (rec floats per slot), and its adjoint
  // parameters (p floats per slot, mixed chunks of non-reciprocal models).
  auto slot_rel = [&](auto* params, int i) {
    return params + (mixed ? int64_t{in.rel_slot[i]} * rec : 0);
  };
  auto slot_conj = [&](auto* params, int i) { return params + int64_t{in.rel_slot[i]} * p; };

  // Mixed chunks: the adjoint parameters of every slot in use.
  int slots = 1;
  if (mixed) {
    slots = 1 + *std::max_element(in.rel_slot, in.rel_slot + c);
    if (!recip) {
      for (int r = 0; r < slots; ++r) {
        AdjointRelationParams(kOp, rel + int64_t{r} * p, p, ws->conj_rel_.data() + int64_t{r} * p);
      }
    }
  }

  // Dst side: Q = op_{r_i}(L_i), K = [R; Ud; L if E].
  const float* qd = in.lhs;
  if constexpr (kOp != Operator::kNone) {
    if (mixed) {
      for (int i = 0; i < c; ++i) OpForward<kOp>(slot_rel(rel, i), row(in.lhs, i), 1, d, row(dst.q.data(), i));
    } else {
      OpForward<kOp>(rel, in.lhs, c, d, dst.q.data());
    }
    qd = dst.q.data();
  }
  const float* kd = Stack({{in.rhs, c}, {in.dst_negs, nd}, {in.lhs, e}}, d, dst.k.data());

  // Src side. Grouped: Q = R, K = op_r([L; Us; R if E]). Mixed: Q = op*(R),
  // K = [L; Us; R if E]. Reciprocal: Q = op_{r⁻¹}(R), K = [L; Us; R if E].
  const float* qs = in.rhs;
  const float* ks;
  if (query_op_src) {
    if constexpr (kOp != Operator::kNone) {
      if (recip && !mixed) {
        OpForward<kOp>(rel + p, in.rhs, c, d, src.q.data());
      } else {
        for (int i = 0; i < c; ++i) {
          const float* params = recip ? slot_rel(rel, i) + p : slot_conj(ws->conj_rel_.data(), i);
          OpForward<kOp>(params, row(in.rhs, i), 1, d, row(src.q.data(), i));
        }
      }
      qs = src.q.data();
    }
    ks = Stack({{in.lhs, c}, {in.src_negs, ns}, {in.rhs, e}}, d, src.k.data());
  } else if constexpr (kOp == Operator::kNone) {
    ks = Stack({{in.lhs, c}, {in.src_negs, ns}, {in.rhs, e}}, d, src.k.data());
  } else {
    float* w = src.k.data();
    OpForward<kOp>(rel, in.lhs, c, d, w);
    OpForward<kOp>(rel, in.src_negs, ns, d, w + cd);
    OpForward<kOp>(rel, in.rhs, e, d, w + cd + int64_t{ns} * d);
    ks = w;
  }

  // Endpoint candidates that are the row's own answer.
  std::vector<std::pair<int, int>>& excluded_dst = dst.excluded;
  std::vector<std::pair<int, int>>& excluded_src = src.excluded;
  excluded_dst.clear();
  excluded_src.clear();
  if (e > 0 && in.same_node_table) {
    for (int i = 0; i < c; ++i) {
      for (int j = 0; j < c; ++j) {
        if (in.lhs_nodes[j] == in.rhs_nodes[i]) excluded_dst.push_back({i, c + nd + j});
        if (in.rhs_nodes[j] == in.lhs_nodes[i]) excluded_src.push_back({i, c + ns + j});
      }
    }
  }

  // The in-chunk block. In a grouped chunk under dot, src score (i, j) for
  // j < c is op_r(L_j) · R_i = dst score (j, i): the src side copies that
  // block instead of multiplying it, and its gradient joins the dst side's
  // (G_d(j, i) += G_s(i, j)), whose products then carry it to L and R. A
  // quarter of the chunk's FLOPs at chunk 50 with 50 negatives.
  const bool mirrored = kCmp == Comparator::kDot && !query_op_src;
  const float *qdh, *kdh, *qsh, *ksh;
  const Products prod{options.precision == Precision::kBf16, ws->pack_a_.data(),
                      ws->pack_b_.data()};
  float loss = SideForward<kCmp, kLoss>(
      qd, c, kd, nkd, d, prod, options.margin, e > 0 ? c + nd : -1,
      excluded_dst.empty() ? nullptr : &excluded_dst, in.weights, &dst, &qdh, &kdh);
  loss += SideForward<kCmp, kLoss>(qs, c, ks, nks, d, prod, options.margin, e > 0 ? c + ns : -1,
                                   excluded_src.empty() ? nullptr : &excluded_src, in.weights, &src,
                                   &qsh, &ksh, mirrored ? &dst : nullptr, nkd);
  // N3 (model_options.h) of each row's positives, (s, r, d) and (d, r⁻¹ or
  // r, s): e_s and e_d twice, each side's relation parameters once. Its
  // gradients are added once the products have written theirs.
  const bool n3 = options.regularizer == Regularizer::kN3 && options.reg_weight > 0;
  auto add_n3 = [&](const ChunkGrads* g) {
    constexpr bool kComplex = kOp == Operator::kComplexDiagonal;
    const float w = options.reg_weight;
    float total = 0.0f;
    for (int i = 0; i < c; ++i) {
      total += 2.0f * N3Penalty(row(in.lhs, i), d, kComplex, 2.0f * w,
                                g != nullptr ? row(g->lhs, i) : nullptr);
      total += 2.0f * N3Penalty(row(in.rhs, i), d, kComplex, 2.0f * w,
                                g != nullptr ? row(g->rhs, i) : nullptr);
      if (p > 0) {
        const float* r = slot_rel(rel, i);
        float* gr = g != nullptr ? slot_rel(g->rel, i) : nullptr;
        total += N3Penalty(r, p, kComplex, w, gr);
        total += N3Penalty(recip ? r + p : r, p, kComplex, w, gr != nullptr && recip ? gr + p : gr);
      }
    }
    return w * total;
  };
  if (grads == nullptr) return n3 ? loss + add_n3(nullptr) : loss;
  if (mirrored) {
    // The src block's gradient, transposed, added to the dst block row by row.
    float* block_t = ws->block_transposed_.data();
    Transpose(c, c, src.g.data(), nks, block_t, c);
    for (int j = 0; j < c; ++j) {
      vec::Add(block_t + int64_t{j} * c, c, dst.g.data() + int64_t{j} * nkd);
    }
  }
  // Under dot the products go straight to the caller's gradients wherever
  // their rows are inputs; otherwise (through an op, or cos and l2, which
  // work on them further) into the workspace, and from there to the caller.
  constexpr bool kDot = kCmp == Comparator::kDot;
  // Dst side: K's rows are inputs; Q's went through op_{r_i}.
  const bool dst_k_direct = kDot;
  const bool dst_q_direct = kDot && kOp == Operator::kNone;
  // Src side: grouped, Q's rows are inputs and K's went through op_r; mixed
  // or reciprocal, the reverse (through op*_{r_i} or op_{r_i⁻¹}).
  const bool src_q_direct = kDot && (!query_op_src || kOp == Operator::kNone);
  const bool src_k_direct = kDot && (query_op_src || kOp == Operator::kNone);
  // With overwrite_rows, the first product into each buffer writes it where
  // every product goes straight to the caller (dot without an operator);
  // otherwise some of the gradient is added by a pass, and the buffers are
  // zeroed first, as the caller would have.
  constexpr bool kAllDirect = kDot && kOp == Operator::kNone;
  bool written[4] = {true, true, true, true};  // lhs, rhs, src_negs, dst_negs
  float* const buffers[4] = {grads->lhs, grads->rhs, grads->src_negs, grads->dst_negs};
  const int64_t sizes[4] = {cd, cd, int64_t{ns} * d, int64_t{nd} * d};
  if (grads->overwrite_rows) {
    for (int b = 0; b < 4; ++b) {
      if (kAllDirect) {
        written[b] = false;
      } else {
        std::fill_n(buffers[b], sizes[b], 0.0f);
      }
    }
  }
  const GradRows lhs_to{grads->lhs, &written[0]}, rhs_to{grads->rhs, &written[1]};
  const GradRows src_negs_to{grads->src_negs, &written[2]};
  const GradRows dst_negs_to{grads->dst_negs, &written[3]};
  const KRows dst_k_rows[] = {{0, c, rhs_to}, {c, nd, dst_negs_to}, {c + nd, e, lhs_to}};
  const KRows src_k_rows[] = {{0, c, lhs_to}, {c, ns, src_negs_to}, {c + ns, e, rhs_to}};
  SideBackward<kCmp>(qd, c, kd, nkd, d, prod, qdh, kdh, &dst, 0,
                     dst_q_direct ? lhs_to : GradRows{},
                     kDot ? std::span<const KRows>(dst_k_rows) : std::span<const KRows>());
  SideBackward<kCmp>(qs, c, ks, nks, d, prod, qsh, ksh, &src, mirrored ? c : 0,
                     src_q_direct ? rhs_to : GradRows{},
                     src_k_direct ? std::span<const KRows>(src_k_rows) : std::span<const KRows>());
  // A buffer no product reached holds a zero gradient.
  for (int b = 0; b < 4; ++b) {
    if (!written[b]) std::fill_n(buffers[b], sizes[b], 0.0f);
  }

  // Dst side, what did not go straight to the caller.
  if (!dst_q_direct) {
    if (mixed) {
      for (int i = 0; i < c; ++i) {
        OpBackward<kOp>(slot_rel(rel, i), row(in.lhs, i), row(dst.dq.data(), i), 1, d,
                        row(grads->lhs, i), p > 0 ? slot_rel(grads->rel, i) : nullptr);
      }
    } else {
      OpBackward<kOp>(rel, in.lhs, dst.dq.data(), c, d, grads->lhs, grads->rel);
    }
  }
  if (!dst_k_direct) {
    const float* dkd = dst.dk.data();
    vec::Add(dkd, c * d, grads->rhs);
    if (nd > 0) vec::Add(dkd + cd, nd * d, grads->dst_negs);
    if (e > 0) vec::Add(dkd + cd + int64_t{nd} * d, e * d, grads->lhs);
  }

  // Src side, likewise.
  const float* dks = src.dk.data();
  const float* dks_endpoints = dks + cd + int64_t{ns} * d;
  if (query_op_src) {
    if (!src_q_direct) {
      if constexpr (kOp == Operator::kNone) {
        vec::Add(src.dq.data(), c * d, grads->rhs);
      } else if (recip && !mixed) {
        OpBackward<kOp>(rel + p, in.rhs, src.dq.data(), c, d, grads->rhs, grads->rel + p);
      } else if (recip) {
        for (int i = 0; i < c; ++i) {
          OpBackward<kOp>(slot_rel(rel, i) + p, row(in.rhs, i), row(src.dq.data(), i), 1, d,
                          row(grads->rhs, i), slot_rel(grads->rel, i) + p);
        }
      } else {
        float* d_conj = ws->d_conj_rel_.data();
        std::fill(d_conj, d_conj + int64_t{slots} * p, 0.0f);
        for (int i = 0; i < c; ++i) {
          OpBackward<kOp>(slot_conj(ws->conj_rel_.data(), i), row(in.rhs, i), row(src.dq.data(), i),
                          1, d, row(grads->rhs, i), slot_conj(d_conj, i));
        }
        for (int r = 0; r < slots; ++r) {
          float* g = d_conj + int64_t{r} * p;
          AdjointRelationParams(kOp, g, p, g);
          vec::Add(g, p, grads->rel + int64_t{r} * p);
        }
      }
    }
    if (!src_k_direct) {
      vec::Add(dks, c * d, grads->lhs);
      if (ns > 0) vec::Add(dks + cd, ns * d, grads->src_negs);
      if (e > 0) vec::Add(dks_endpoints, e * d, grads->rhs);
    }
  } else {
    if (!src_q_direct) vec::Add(src.dq.data(), c * d, grads->rhs);
    if (!src_k_direct) {
      // Mirrored: the block's gradient went to L through the dst side.
      if (!mirrored) OpBackward<kOp>(rel, in.lhs, dks, c, d, grads->lhs, grads->rel);
      if (ns > 0) OpBackward<kOp>(rel, in.src_negs, dks + cd, ns, d, grads->src_negs, grads->rel);
      if (e > 0) OpBackward<kOp>(rel, in.rhs, dks_endpoints, e, d, grads->rhs, grads->rel);
    }
  }
  if (n3) loss += add_n3(grads);
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
  EMBER_CHECK(in.rel_slot == nullptr || SupportsMixedChunks(options));
  EMBER_CHECK(!in.endpoint_negs || !in.same_node_table ||
              (in.lhs_nodes != nullptr && in.rhs_nodes != nullptr));
  EMBER_CHECK(RelationParamSize(options.op, options.dim) == 0 || rel != nullptr);
  EMBER_CHECK(!options.reciprocal || options.op != Operator::kNone);
  EMBER_CHECK(options.precision == Precision::kFp32 || Bf16GemmAvailable());
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
