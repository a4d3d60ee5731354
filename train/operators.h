// Relation operators op_r, applied row by row to a compact rows × dim
// matrix. Internal to train/: the templates are instantiated by the chunk
// scorer's dispatch table; the parameter layout is documented on Operator.
#ifndef EMBER_TRAIN_OPERATORS_H_
#define EMBER_TRAIN_OPERATORS_H_

#include <algorithm>
#include <cstdint>

#include "train/model_options.h"

namespace ember {

// out[r] = op(param, x[r]) for every row r.
// REQUIRES: x, out hold rows × dim floats and do not overlap; param holds
// RelationParamSize(kOp, dim) floats (may be null for kNone).
template <Operator kOp>
void OpForward(const float* param, const float* x, int rows, int dim,
               float* out) {
  const int h = dim / 2;
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<int64_t>(r) * dim;
    float* o = out + static_cast<int64_t>(r) * dim;
    if constexpr (kOp == Operator::kNone) {
      std::copy(xr, xr + dim, o);
    } else if constexpr (kOp == Operator::kTranslation) {
      for (int k = 0; k < dim; ++k) o[k] = xr[k] + param[k];
    } else if constexpr (kOp == Operator::kDiagonal) {
      for (int k = 0; k < dim; ++k) o[k] = xr[k] * param[k];
    } else {
      static_assert(kOp == Operator::kComplexDiagonal);
      const float* wr = param;
      const float* wi = param + h;
      for (int k = 0; k < h; ++k) {
        o[k] = xr[k] * wr[k] - xr[h + k] * wi[k];
        o[h + k] = xr[k] * wi[k] + xr[h + k] * wr[k];
      }
    }
  }
}

// Given d_out = dLoss/d op(param, x), accumulates d_x += dLoss/dx and
// d_param += dLoss/dparam (summed over rows).
// REQUIRES: shapes as in OpForward; d_x and d_param do not overlap the inputs;
// d_param may be null for kNone.
template <Operator kOp>
void OpBackward(const float* param, const float* x, const float* d_out,
                int rows, int dim, float* d_x, float* d_param) {
  const int h = dim / 2;
  for (int r = 0; r < rows; ++r) {
    const int64_t off = static_cast<int64_t>(r) * dim;
    const float* xr = x + off;
    const float* g = d_out + off;
    float* dx = d_x + off;
    if constexpr (kOp == Operator::kNone) {
      for (int k = 0; k < dim; ++k) dx[k] += g[k];
    } else if constexpr (kOp == Operator::kTranslation) {
      for (int k = 0; k < dim; ++k) {
        dx[k] += g[k];
        d_param[k] += g[k];
      }
    } else if constexpr (kOp == Operator::kDiagonal) {
      for (int k = 0; k < dim; ++k) {
        dx[k] += g[k] * param[k];
        d_param[k] += g[k] * xr[k];
      }
    } else {
      static_assert(kOp == Operator::kComplexDiagonal);
      const float* wr = param;
      const float* wi = param + h;
      float* dwr = d_param;
      float* dwi = d_param + h;
      for (int k = 0; k < h; ++k) {
        const float gr = g[k], gi = g[h + k];
        const float xre = xr[k], xim = xr[h + k];
        dx[k] += gr * wr[k] + gi * wi[k];
        dx[h + k] += gi * wr[k] - gr * wi[k];
        dwr[k] += gr * xre + gi * xim;
        dwi[k] += gi * xre - gr * xim;
      }
    }
  }
}

}  // namespace ember

#endif  // EMBER_TRAIN_OPERATORS_H_
