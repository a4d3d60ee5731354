// The device trainer's kernels, as per-index bodies that compile for both the
// host and the GPU (EMBER_HD). Each kernel is a functor: calling it with every
// index in [0, size) in any order, or concurrently, performs the kernel. The
// CUDA launcher (train/cuda/cuda_device_ops.cu) runs it as a grid; the host
// launcher (train/device/host_device_ops.cc) as a loop, which is how the ordinary
// CPU test suite checks the bodies against the CPU trainer's chunk scorer.
//
// One step trains a batch of `chunks` chunks of `chunk` edges (the last chunk
// padded), both sides at once. Matrices are row-major and compact; the step's
// 2·chunks score matrices are indexed b = side · chunks + chunk_index, side 0
// scoring destinations and side 1 sources (chunk_scorer.h, mixed chunks):
//   side 0: Q_i = op_{r_i}(L_i),   K = [R; Ud; L if endpoints]
//   side 1: Q_i = op*_{r_i}(R_i),  K = [L; Us; R if endpoints]
// (a reciprocal model's side 1: Q_i = op_{r_i⁻¹}(R_i), with the inverse's
// own parameters, the second half of each relation record).
// All rows come from X, the batch's distinct rows, through index arrays
// (q_row: one per query row, k_row: one per candidate row, -1 for padding);
// gradients are added to dX, the same shape as X, and to dRel, one row of
// relation-parameter gradients per relation slot of the batch.
#ifndef EMBER_TRAIN_DEVICE_KERNEL_BODIES_H_
#define EMBER_TRAIN_DEVICE_KERNEL_BODIES_H_

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif

namespace ember::device {

// The values of Operator, Comparator and Loss (train/model/model_options.h;
// static_asserts in train/trainers/trainer_factory.cc hold them equal); this
// header is also compiled by nvcc, without the rest of train/.
enum : int { kOpNone = 0, kOpTranslation = 1, kOpDiagonal = 2, kOpComplexDiagonal = 3 };
enum : int { kCmpDot = 0, kCmpCos = 1, kCmpL2 = 2 };
enum : int { kLossRanking = 0, kLossLogistic = 1, kLossSoftmax = 2 };

// As in chunk_scorer.cc: the score of an excluded candidate, the l2 clamp,
// the cos norm clamp; and Adagrad's eps (adagrad.h).
inline constexpr float kExcluded = -1e30f;
inline constexpr float kMinSquaredDistance = 1e-30f;
inline constexpr float kMinNorm = 1e-12f;
inline constexpr float kAdagradEps = 1e-10f;

// The shape of one step.
struct StepShape {
  int dim = 0;
  int chunk = 0;       // rows per chunk (the last one padded)
  int negs = 0;        // uniform negatives per chunk and side
  int endpoints = 0;   // chunk with endpoint negatives, else 0
  int chunks = 0;      // chunks in the step
  int last_valid = 0;  // real rows of the last chunk, in [1, chunk]
  int op = kOpNone, cmp = kCmpDot, loss = kLossSoftmax;
  float margin = 0.1f;
  // Floats per relation record (RelationRecordSize: 0 for op none; w_r,
  // then w_{r⁻¹} for a reciprocal model).
  int rel_size = 0;
  int reciprocal = 0;  // 1: side 1 queries use w_{r⁻¹} (model_options.h)
  float n3 = 0.0f;     // weight of the N3 regularizer (0: none)
  // FeaturizedMode (featurized.h): 0 id rows, 1 feature mean, 2 id row plus
  // feature mean.
  int featurized = 0;

  EMBER_HD bool has_id_rows() const { return featurized != 1; }
  // Floats of one operator's parameters (w_r or w_{r⁻¹}).
  EMBER_HD int op_size() const { return reciprocal ? rel_size / 2 : rel_size; }
  EMBER_HD bool has_features() const { return featurized != 0; }
  EMBER_HD int candidates() const { return chunk + negs + endpoints; }
  EMBER_HD int64_t matrices() const { return 2 * int64_t{chunks}; }
  EMBER_HD int64_t query_rows() const { return matrices() * chunk; }
  EMBER_HD int64_t candidate_rows() const { return matrices() * candidates(); }
  // Real rows of the chunk of matrix b.
  EMBER_HD int valid_rows(int64_t b) const {
    return b % chunks == chunks - 1 ? last_valid : chunk;
  }
};

// Where one step reads and writes; every pointer is in the launcher's memory
// (device memory for CUDA).
struct StepArgs {
  // Per batch, uploaded by the host (device_batch_plan.h).
  const int32_t* q_row = nullptr;   // query_rows: row of X, or -1
  const int32_t* k_row = nullptr;   // candidate_rows: row of X, or -1
  const int32_t* q_slot = nullptr;  // chunks · chunk: relation slot per edge
  const uint8_t* u_table = nullptr; // per distinct row: 0 the src partition, 1 the dst
  const uint32_t* u_node = nullptr; // per distinct row: its row in that partition
  const float* rel = nullptr;       // slots × rel_size relation parameters
  int64_t slots = 0;                // relation slots (0 for op none)
  int64_t distinct = 0;             // rows of X
  // Featurized models: distinct row u's features are entries
  // [u_feat_start[u], u_feat_start[u + 1]) of u_feat (a distinct feature)
  // and u_weight (its weight over the row's weight sum); distinct feature f
  // is row f_id[f] of the feature table.
  const int64_t* u_feat_start = nullptr;
  const int32_t* u_feat = nullptr;
  const float* u_weight = nullptr;
  const uint32_t* f_id = nullptr;
  int64_t distinct_features = 0;
  float* features = nullptr;       // the feature table's rows (this device's replica)
  float* feature_state = nullptr;  // and their row-wise Adagrad state
  float* dfeat = nullptr;          // distinct_features × dim, zeroed before the step
  // The bucket's partitions (table 0 and 1; the same when src == dst).
  float* rows[2] = {nullptr, nullptr};
  float* state[2] = {nullptr, nullptr};  // row-wise Adagrad state
  uint64_t frozen[2] = {0, 0};           // rows below are never updated
  float lr = 0;
  // Work buffers.
  float* x = nullptr;       // distinct × dim
  float* dx = nullptr;      // distinct × dim
  float* q = nullptr;       // query_rows × dim
  float* k = nullptr;       // candidate_rows × dim
  float* q_aux = nullptr;   // query_rows: 1/|q| (cos), |q|^2 (l2)
  float* k_aux = nullptr;   // candidate_rows: likewise
  float* s = nullptr;       // matrices × chunk × candidates: scores, then dLoss/dS
  float* dq = nullptr;      // query_rows × dim
  float* dk = nullptr;      // candidate_rows × dim
  float* coef_q = nullptr;  // query_rows (l2)
  float* coef_k = nullptr;  // candidate_rows (l2), zeroed before the step
  float* row_loss = nullptr;  // query_rows
  float* drel = nullptr;      // slots × rel_size, zeroed before the step
};

EMBER_HD inline void AtomicAddFloat(float* p, float v) {
#ifdef __CUDA_ARCH__
  atomicAdd(p, v);
#else
  *p += v;
#endif
}

EMBER_HD inline float MaxF(float a, float b) { return a > b ? a : b; }

// The adjoint op* has parameters J·p with J diagonal ±1 (chunk_scorer.h):
// element k of J.
EMBER_HD inline float AdjointSign(int op, int k, int dim) {
  if (op == kOpTranslation) return -1.0f;
  if (op == kOpComplexDiagonal && k >= dim / 2) return -1.0f;
  return 1.0f;
}

// Element k of op(p', x), with p' = J·p for the adjoint, else p.
EMBER_HD inline float OpElement(int op, bool adjoint, const float* p, const float* x, int k,
                                int dim) {
  auto param = [&](int j) { return adjoint ? AdjointSign(op, j, dim) * p[j] : p[j]; };
  switch (op) {
    case kOpTranslation:
      return x[k] + param(k);
    case kOpDiagonal:
      return x[k] * param(k);
    case kOpComplexDiagonal: {
      const int h = dim / 2;
      const int j = k < h ? k : k - h;
      const float re = x[j], im = x[j + h], w_re = param(j), w_im = param(j + h);
      return k < h ? re * w_re - im * w_im : re * w_im + im * w_re;
    }
    default:
      return x[k];
  }
}

// Element k of the gradients of op(p', x) given g = dLoss/d op: *dx_k with
// respect to x, *dp_k with respect to p (J applied back for the adjoint).
EMBER_HD inline void OpBackwardElement(int op, bool adjoint, const float* p, const float* x,
                                       const float* g, int k, int dim, float* dx_k,
                                       float* dp_k) {
  auto param = [&](int j) { return adjoint ? AdjointSign(op, j, dim) * p[j] : p[j]; };
  float dp = 0.0f;
  switch (op) {
    case kOpTranslation:
      *dx_k = g[k];
      dp = g[k];
      break;
    case kOpDiagonal:
      *dx_k = g[k] * param(k);
      dp = g[k] * x[k];
      break;
    case kOpComplexDiagonal: {
      // With o = x * w (complex): dx = g * conj(w), dw = g * conj(x).
      const int h = dim / 2;
      const int j = k < h ? k : k - h;
      const float g_re = g[j], g_im = g[j + h];
      const float w_re = param(j), w_im = param(j + h), x_re = x[j], x_im = x[j + h];
      if (k < h) {
        *dx_k = g_re * w_re + g_im * w_im;
        dp = g_re * x_re + g_im * x_im;
      } else {
        *dx_k = g_im * w_re - g_re * w_im;
        dp = g_im * x_re - g_re * x_im;
      }
      break;
    }
    default:
      *dx_k = g[k];
      break;
  }
  *dp_k = adjoint ? AdjointSign(op, k, dim) * dp : dp;
}

// Query row r's relation slot; whether it is on side 1 (scoring sources);
// whether it applies the adjoint (side 1 of a model that is not
// reciprocal); and where its operator's parameters start in the slots'
// records (a.rel, a.drel): w_r, or w_{r⁻¹} on side 1 of a reciprocal model.
EMBER_HD inline int64_t QuerySlot(const StepShape& sh, const StepArgs& a, int64_t r) {
  return sh.rel_size > 0 ? a.q_slot[r % (int64_t{sh.chunks} * sh.chunk)] : 0;
}
EMBER_HD inline bool QueryIsSourceSide(const StepShape& sh, int64_t r) {
  return r >= int64_t{sh.chunks} * sh.chunk;
}
EMBER_HD inline bool QueryIsAdjoint(const StepShape& sh, int64_t r) {
  return !sh.reciprocal && QueryIsSourceSide(sh, r);
}
EMBER_HD inline int64_t QueryParamOffset(const StepShape& sh, const StepArgs& a, int64_t r) {
  return QuerySlot(sh, a, r) * sh.rel_size +
         (sh.reciprocal && QueryIsSourceSide(sh, r) ? sh.op_size() : 0);
}

// Two independent kernels as one launch: First over [0, first.size()),
// Second over the indices after it.
template <class First, class Second>
struct Sequenced {
  First first;
  Second second;
  EMBER_HD void operator()(int64_t i) const {
    const int64_t n = first.size();
    if (i < n) {
      first(i);
    } else {
      second(i - n);
    }
  }
  EMBER_HD int64_t size() const { return first.size() + second.size(); }
};

// X[u] = the row of distinct row u as the model composes it (featurized.h):
// its id row, the weighted mean of its feature rows, or their sum; and dX
// zeroed. Size distinct · dim.
struct GatherDistinct {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t i) const {
    const int64_t u = i / sh.dim;
    const int k = static_cast<int>(i % sh.dim);
    const int t = a.u_table[u];
    float x = sh.has_id_rows() ? a.rows[t][int64_t{a.u_node[u]} * sh.dim + k] : 0.0f;
    if (sh.has_features()) {
      for (int64_t e = a.u_feat_start[u]; e < a.u_feat_start[u + 1]; ++e) {
        x += a.u_weight[e] * a.features[int64_t{a.f_id[a.u_feat[e]]} * sh.dim + k];
      }
    }
    a.x[i] = x;
    a.dx[i] = 0.0f;
  }
  int64_t size() const { return a.distinct * sh.dim; }
};

// Q rows: op (side 0) or op* (side 1; op_{r⁻¹} when reciprocal) of their X
// rows; size query_rows · dim.
struct GatherQueries {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t i) const {
    const int64_t r = i / sh.dim;
    const int k = static_cast<int>(i % sh.dim);
    const int32_t xr = a.q_row[r];
    if (xr < 0) {
      a.q[i] = 0.0f;
      return;
    }
    const float* p = sh.rel_size > 0 ? a.rel + QueryParamOffset(sh, a, r) : nullptr;
    a.q[i] = OpElement(sh.op, QueryIsAdjoint(sh, r), p, a.x + int64_t{xr} * sh.dim, k, sh.dim);
  }
  EMBER_HD int64_t size() const { return sh.query_rows() * sh.dim; }
};

// K rows: copies of their X rows; size candidate_rows · dim.
struct GatherCandidates {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t i) const {
    const int32_t xr = a.k_row[i / sh.dim];
    a.k[i] = xr < 0 ? 0.0f : a.x[int64_t{xr} * sh.dim + i % sh.dim];
  }
  EMBER_HD int64_t size() const { return sh.candidate_rows() * sh.dim; }
};

// Comparator preparation of every Q row, then every K row: cos normalizes
// the row in place and keeps 1/|x|; l2 keeps |x|^2. Size: query_rows +
// candidate_rows (only launched for cos and l2).
struct PrepareRows {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t i) const {
    const bool query = i < sh.query_rows();
    const int64_t r = query ? i : i - sh.query_rows();
    float* x = (query ? a.q : a.k) + r * sh.dim;
    float* aux = (query ? a.q_aux : a.k_aux) + r;
    float sq = 0.0f;
    for (int k = 0; k < sh.dim; ++k) sq += x[k] * x[k];
    if (sh.cmp == kCmpL2) {
      *aux = sq;
      return;
    }
    const float inv = 1.0f / MaxF(sqrtf(sq), kMinNorm);
    *aux = inv;
    for (int k = 0; k < sh.dim; ++k) x[k] *= inv;
  }
  int64_t size() const { return sh.query_rows() + sh.candidate_rows(); }
};

EMBER_HD inline float NegativeDistance(const float* x, const float* y, int dim) {
  float d2 = 0.0f;
  for (int k = 0; k < dim; ++k) d2 += (x[k] - y[k]) * (x[k] - y[k]);
  return -sqrtf(MaxF(d2, kMinSquaredDistance));
}

// One score row per query row (after the score GEMM): completes the scores
// (l2 distances, exclusions, padding), then writes the row's loss and
// overwrites the scores with dLoss/dS (for l2, dLoss/dS / dist, with the row
// sums into coef_q and the column sums added to coef_k). Size: query_rows.
struct ScoreRows {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t r) const {
    const int c = sh.chunk, n = sh.candidates(), d = sh.dim;
    const int64_t b = r / c;
    const int i = static_cast<int>(r % c);
    float* s = a.s + r * n;
    const int valid = sh.valid_rows(b);
    if (i >= valid) {
      for (int j = 0; j < n; ++j) s[j] = 0.0f;
      a.row_loss[r] = 0.0f;
      if (sh.cmp == kCmpL2) a.coef_q[r] = 0.0f;
      return;
    }
    const int32_t* k_row = a.k_row + b * n;
    const float* kb = a.k + b * n * d;
    const float* kaux = a.k_aux + b * n;
    const int endpoint_col = c + sh.negs;
    if (sh.cmp == kCmpL2) {
      const float qa = a.q_aux[r];
      for (int j = 0; j < n; ++j) {
        s[j] = -sqrtf(MaxF(qa + kaux[j] - 2.0f * s[j], kMinSquaredDistance));
      }
      // Direct where the expansion would cancel: the positive, the own endpoint.
      const float* q = a.q + r * d;
      s[i] = NegativeDistance(q, kb + int64_t{i} * d, d);
      if (sh.endpoints > 0) s[endpoint_col + i] = NegativeDistance(q, kb + int64_t{endpoint_col + i} * d, d);
    }
    // Padding columns, and endpoint candidates that are the row's answer.
    for (int j = valid; j < c; ++j) s[j] = kExcluded;
    for (int j = 0; j < sh.endpoints; ++j) {
      if (j >= valid || k_row[endpoint_col + j] == k_row[i]) s[endpoint_col + j] = kExcluded;
    }
    a.row_loss[r] = RowLossAndGrad(s, n, i, valid + sh.negs + (sh.endpoints > 0 ? valid : 0));
    if (sh.cmp == kCmpL2) {
      float sum = 0.0f;
      float* coef_k = a.coef_k + b * n;
      for (int j = 0; j < n; ++j) {
        AtomicAddFloat(&coef_k[j], s[j]);
        sum += s[j];
      }
      a.coef_q[r] = sum;
    }
  }
  int64_t size() const { return sh.query_rows(); }

  // The loss of score row s (positive at pos; `counted` entries count as
  // candidates for the logistic mean, as on the CPU) into the return value,
  // dLoss/ds into s (divided by the distance for l2).
  EMBER_HD float RowLossAndGrad(float* s, int n, int pos_col, int counted) const {
    const float pos = s[pos_col];
    float loss = 0.0f;
    if (sh.loss == kLossSoftmax) {
      float m = s[0];
      for (int j = 1; j < n; ++j) m = MaxF(m, s[j]);
      // The positive's gradient p - 1 as -(the others' mass) / z: a
      // confident positive (p within float rounding of 1) gets its small
      // gradient, not the rounding noise of 1 - p.
      float others = 0.0f;
      for (int j = 0; j < n; ++j) others += j == pos_col ? 0.0f : expf(s[j] - m);
      const float z = others + expf(pos - m);
      loss = logf(z) + m - pos;
      for (int j = 0; j < n; ++j) Emit(s, j, j == pos_col ? -others / z : expf(s[j] - m) / z);
    } else if (sh.loss == kLossRanking) {
      const float shift = sh.margin - pos;
      int active = 0;
      for (int j = 0; j < n; ++j) {
        if (j == pos_col) continue;
        const float h = s[j] + shift;
        if (h > 0.0f) {
          loss += h;
          ++active;
        }
      }
      // The positive's own term (margin > 0 makes it active) is left out,
      // as on the CPU.
      for (int j = 0; j < n; ++j) {
        if (j != pos_col) Emit(s, j, s[j] + shift > 0.0f ? 1.0f : 0.0f);
      }
      Emit(s, pos_col, -static_cast<float>(active));
    } else {
      const float w = counted > 1 ? 1.0f / static_cast<float>(counted - 1) : 0.0f;
      for (int j = 0; j < n; ++j) {
        if (j == pos_col) continue;
        const float x = s[j];
        const float e = expf(-fabsf(x));
        loss += w * (MaxF(x, 0.0f) + log1pf(e));
        Emit(s, j, w * (x >= 0.0f ? 1.0f : e) / (1.0f + e));
      }
      const float e = expf(-fabsf(pos));
      loss += MaxF(pos, 0.0f) + log1pf(e) - pos;
      Emit(s, pos_col, -(pos >= 0.0f ? e : 1.0f) / (1.0f + e));
    }
    return loss;
  }
  // Replaces score s[j] by its gradient g (l2: g / dist, 0 where clamped).
  EMBER_HD void Emit(float* s, int j, float g) const {
    if (sh.cmp == kCmpL2) {
      const float dist = -s[j];
      g = dist > sqrtf(kMinSquaredDistance) ? g / dist : 0.0f;
    }
    s[j] = g;
  }
};

// Comparator backward of every dQ row, then every dK row (after the two
// gradient GEMMs): cos projects out the normalized row and rescales; l2
// subtracts coef · x. Size: query_rows + candidate_rows (cos and l2 only).
struct ComparatorBackward {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t i) const {
    const bool query = i < sh.query_rows();
    const int64_t r = query ? i : i - sh.query_rows();
    const float* x = (query ? a.q : a.k) + r * sh.dim;
    float* g = (query ? a.dq : a.dk) + r * sh.dim;
    if (sh.cmp == kCmpL2) {
      const float w = (query ? a.coef_q : a.coef_k)[r];
      for (int k = 0; k < sh.dim; ++k) g[k] -= w * x[k];
      return;
    }
    float proj = 0.0f;
    for (int k = 0; k < sh.dim; ++k) proj += x[k] * g[k];
    const float inv = (query ? a.q_aux : a.k_aux)[r];
    for (int k = 0; k < sh.dim; ++k) g[k] = (g[k] - x[k] * proj) * inv;
  }
  int64_t size() const { return sh.query_rows() + sh.candidate_rows(); }
};

// dQ through the operator into dX and dRel; size query_rows · dim.
struct ScatterQueries {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t i) const {
    const int64_t r = i / sh.dim;
    const int k = static_cast<int>(i % sh.dim);
    const int32_t xr = a.q_row[r];
    if (xr < 0) return;
    const int64_t offset = sh.rel_size > 0 ? QueryParamOffset(sh, a, r) : 0;
    const float* p = sh.rel_size > 0 ? a.rel + offset : nullptr;
    float dx_k, dp_k;
    OpBackwardElement(sh.op, QueryIsAdjoint(sh, r), p, a.x + int64_t{xr} * sh.dim, a.dq + r * sh.dim, k,
                      sh.dim, &dx_k, &dp_k);
    AtomicAddFloat(&a.dx[int64_t{xr} * sh.dim + k], dx_k);
    if (sh.rel_size > 0) AtomicAddFloat(&a.drel[offset + k], dp_k);
  }
  EMBER_HD int64_t size() const { return sh.query_rows() * sh.dim; }
};

// N3 (model_options.h) of every query row's positive (q, r, a): adds
// n3 · (N3(x_q) + N3(w) + N3(x_a)) to the row's loss (after ScoreRows wrote
// it), and its gradients to dX and dRel; w is the parameters the row's
// operator is made of as stored (w_r, or w_{r⁻¹} on side 1 of a reciprocal
// model; the adjoint's J·w_r has the same N3). Size: query_rows (launched
// when n3 > 0).
struct RegularizeRows {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t r) const {
    const int32_t xq = a.q_row[r];
    if (xq < 0) return;
    const int d = sh.dim;
    const int32_t xa = a.k_row[r / sh.chunk * sh.candidates() + r % sh.chunk];
    float total = N3Row(a.x + int64_t{xq} * d, a.dx + int64_t{xq} * d, d) +
                  N3Row(a.x + int64_t{xa} * d, a.dx + int64_t{xa} * d, d);
    if (sh.rel_size > 0) {
      const int64_t offset = QueryParamOffset(sh, a, r);
      total += N3Row(a.rel + offset, a.drel + offset, sh.op_size());
    }
    a.row_loss[r] += sh.n3 * total;
  }
  // Σ_k |x_k|³ of `size` floats (moduli of (x_k, x_{k+size/2}) under
  // complex_diagonal), adding n3 · 3 |x_k| x_k to g.
  EMBER_HD float N3Row(const float* x, float* g, int size) const {
    const float scale = 3.0f * sh.n3;
    float total = 0.0f;
    if (sh.op == kOpComplexDiagonal) {
      const int h = size / 2;
      for (int k = 0; k < h; ++k) {
        const float re = x[k], im = x[k + h];
        const float m = sqrtf(re * re + im * im);
        total += m * m * m;
        AtomicAddFloat(&g[k], scale * m * re);
        AtomicAddFloat(&g[k + h], scale * m * im);
      }
      return total;
    }
    for (int k = 0; k < size; ++k) {
      const float m = fabsf(x[k]);
      total += m * m * m;
      AtomicAddFloat(&g[k], scale * m * x[k]);
    }
    return total;
  }
  int64_t size() const { return sh.query_rows(); }
};

// dK into dX; size candidate_rows · dim.
struct ScatterCandidates {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t i) const {
    const int32_t xr = a.k_row[i / sh.dim];
    if (xr >= 0) AtomicAddFloat(&a.dx[int64_t{xr} * sh.dim + i % sh.dim], a.dk[i]);
  }
  EMBER_HD int64_t size() const { return sh.candidate_rows() * sh.dim; }
};

// One row-wise Adagrad step (adagrad.h) of `row` and its state.
EMBER_HD inline void AdagradRow(float* row, float* state, const float* g, int dim, float lr) {
  float sq = 0.0f;
  for (int k = 0; k < dim; ++k) sq += g[k] * g[k];
  const float s = *state + sq / static_cast<float>(dim);
  *state = s;
  const float step = lr / (sqrtf(s) + kAdagradEps);
  for (int k = 0; k < dim; ++k) row[k] -= step * g[k];
}

// dX through the feature mean into the distinct features' gradients;
// size distinct · dim (featurized models only).
struct ScatterFeatures {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t i) const {
    const int64_t u = i / sh.dim;
    const int k = static_cast<int>(i % sh.dim);
    const float g = a.dx[i];
    for (int64_t e = a.u_feat_start[u]; e < a.u_feat_start[u + 1]; ++e) {
      AtomicAddFloat(&a.dfeat[int64_t{a.u_feat[e]} * sh.dim + k], a.u_weight[e] * g);
    }
  }
  int64_t size() const { return a.distinct * sh.dim; }
};

// Row-wise Adagrad of every distinct feature row; size distinct_features.
struct AdagradFeatures {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t f) const {
    const uint64_t row = a.f_id[f];
    AdagradRow(a.features + row * sh.dim, a.feature_state + row, a.dfeat + f * sh.dim, sh.dim,
               a.lr);
  }
  int64_t size() const { return a.distinct_features; }
};

// Row-wise Adagrad (adagrad.h) of every distinct row's id row with its
// summed gradient, into the partition rows; frozen rows are skipped. Size:
// distinct (models with id rows only).
struct AdagradRows {
  StepShape sh;
  StepArgs a;
  EMBER_HD void operator()(int64_t u) const {
    const int t = a.u_table[u];
    const uint64_t node = a.u_node[u];
    if (node < a.frozen[t]) return;
    AdagradRow(a.rows[t] + node * sh.dim, a.state[t] + node, a.dx + u * sh.dim, sh.dim, a.lr);
  }
  int64_t size() const { return a.distinct; }
};

}  // namespace ember::device

#endif  // EMBER_TRAIN_DEVICE_KERNEL_BODIES_H_
