#include "train/model/candidate_scorer.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "storage/base/status_macros.h"
#include "train/model/operators.h"
#include "train/model/vec_math.h"

namespace ember {
namespace {

// Same clamps as the chunk scorer (chunk_scorer.cc).
using vec::kMinSquaredDistance;
using vec::kMinNorm;

void EnsureSize(std::vector<float>* v, size_t n) {
  if (v->size() < n) v->resize(n);
}

}  // namespace

// Templated kernels; a friend of CandidateWorkspace.
class CandidateKernels {
 public:
  template <Operator kOp, Comparator kCmp>
  static void Score(const ModelOptions& model, const float* rel,
                    CorruptSide side, const float* queries, int nq,
                    const float* candidates, int nc, float* scores,
                    CandidateWorkspace* ws) {
    const int d = model.dim;
    if (nq == 0 || nc == 0) return;
    // A: the query side of the GEMM (nq rows), B: the candidate side (nc).
    const float* a = queries;
    const float* b = candidates;
    if constexpr (kOp != Operator::kNone) {
      if (side == CorruptSide::kTail) {
        EnsureSize(&ws->a_, size_t(nq) * d);
        OpForward<kOp>(rel, queries, nq, d, ws->a_.data());
        a = ws->a_.data();
      } else {
        EnsureSize(&ws->b_, size_t(nc) * d);
        OpForward<kOp>(rel, candidates, nc, d, ws->b_.data());
        b = ws->b_.data();
      }
    }
    if constexpr (kCmp == Comparator::kCos) {
      // Normalize in place where the rows are already ours, else copy.
      auto normalize = [d](const float* x, int rows, float* out) {
        for (int r = 0; r < rows; ++r) {
          const float* xr = x + int64_t{r} * d;
          const float s =
              1.0f / std::max(std::sqrt(vec::Dot(xr, xr, d)), kMinNorm);
          vec::Map(
              d, out + int64_t{r} * d, [s](vec::F8 v) { return v * s; }, xr);
        }
      };
      EnsureSize(&ws->a_, size_t(nq) * d);
      EnsureSize(&ws->b_, size_t(nc) * d);
      normalize(a, nq, ws->a_.data());
      normalize(b, nc, ws->b_.data());
      a = ws->a_.data();
      b = ws->b_.data();
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nc, d, 1.0f, a,
                d, b, d, 0.0f, scores, nc);
    if constexpr (kCmp == Comparator::kL2) {
      EnsureSize(&ws->a_aux_, nq);
      EnsureSize(&ws->b_aux_, nc);
      float* a_sq = ws->a_aux_.data();
      float* b_sq = ws->b_aux_.data();
      for (int r = 0; r < nq; ++r) {
        const float* x = a + int64_t{r} * d;
        a_sq[r] = vec::Dot(x, x, d);
      }
      for (int r = 0; r < nc; ++r) {
        const float* x = b + int64_t{r} * d;
        b_sq[r] = vec::Dot(x, x, d);
      }
      vec::DotsToNegativeDistances(scores, nq, nc, a_sq, b_sq);
    }
  }
};

namespace {

using ScoreFn = void (*)(const ModelOptions&, const float*, CorruptSide,
                         const float*, int, const float*, int, float*,
                         CandidateWorkspace*);

template <Operator kOp>
constexpr std::array<ScoreFn, kNumComparators> RowFor() {
  return {&CandidateKernels::Score<kOp, Comparator::kDot>,
          &CandidateKernels::Score<kOp, Comparator::kCos>,
          &CandidateKernels::Score<kOp, Comparator::kL2>};
}

// Indexed [operator][comparator].
constexpr std::array<std::array<ScoreFn, kNumComparators>, kNumOperators>
    kScoreTable = {RowFor<Operator::kNone>(), RowFor<Operator::kTranslation>(),
                   RowFor<Operator::kDiagonal>(),
                   RowFor<Operator::kComplexDiagonal>()};

using OpFn = void (*)(const float*, const float*, int, int, float*);

// Indexed by operator.
constexpr std::array<OpFn, kNumOperators> kOpTable = {
    &OpForward<Operator::kNone>, &OpForward<Operator::kTranslation>,
    &OpForward<Operator::kDiagonal>, &OpForward<Operator::kComplexDiagonal>};

}  // namespace

void ApplyOperator(Operator op, const float* rel, const float* rows,
                   int num_rows, int dim, float* out) {
  EMBER_CHECK(static_cast<int>(op) < kNumOperators && num_rows >= 0);
  kOpTable[static_cast<int>(op)](rel, rows, num_rows, dim, out);
}

void ScoreCandidates(const ModelOptions& model, const float* rel,
                     CorruptSide side, const float* queries, int num_queries,
                     const float* candidates, int num_candidates, float* scores,
                     CandidateWorkspace* ws) {
  EMBER_CHECK(num_queries >= 0 && num_candidates >= 0 && ws != nullptr);
  kScoreTable[static_cast<int>(model.op)][static_cast<int>(model.comparator)](
      model, rel, side, queries, num_queries, candidates, num_candidates,
      scores, ws);
}

float ScorePair(const ModelOptions& model, const float* rel, const float* src,
                const float* dst) {
  const int d = model.dim;
  const int h = d / 2;
  std::vector<double> a(d);
  for (int k = 0; k < d; ++k) {
    switch (model.op) {
      case Operator::kNone:
        a[k] = src[k];
        break;
      case Operator::kTranslation:
        a[k] = double{src[k]} + rel[k];
        break;
      case Operator::kDiagonal:
        a[k] = double{src[k]} * rel[k];
        break;
      case Operator::kComplexDiagonal:
        if (k < h) {
          a[k] = double{src[k]} * rel[k] - double{src[k + h]} * rel[k + h];
        } else {
          a[k] = double{src[k - h]} * rel[k] + double{src[k]} * rel[k - h];
        }
        break;
    }
  }
  double dot = 0, aa = 0, bb = 0, dist2 = 0;
  for (int k = 0; k < d; ++k) {
    dot += a[k] * dst[k];
    aa += a[k] * a[k];
    bb += double{dst[k]} * dst[k];
    dist2 += (a[k] - dst[k]) * (a[k] - dst[k]);
  }
  switch (model.comparator) {
    case Comparator::kDot:
      return static_cast<float>(dot);
    case Comparator::kCos:
      return static_cast<float>(dot / std::max(std::sqrt(aa), 1e-12) /
                                std::max(std::sqrt(bb), 1e-12));
    case Comparator::kL2:
      return static_cast<float>(
          -std::sqrt(std::max(dist2, double{kMinSquaredDistance})));
  }
  return 0.0f;
}

}  // namespace ember
