// Relation operators op_r, applied row by row to a compact rows × dim
// matrix. Internal to train/: the templates are instantiated by the chunk
// scorer's dispatch table; the parameter layout is documented on Operator.
#ifndef EMBER_TRAIN_MODEL_OPERATORS_H_
#define EMBER_TRAIN_MODEL_OPERATORS_H_

#include <algorithm>
#include <cstdint>

#include "train/model/model_options.h"
#include "train/model/vec_math.h"

namespace ember {

// out[r] = op(param, x[r]) for every row r.
// REQUIRES: x, out hold rows × dim floats and do not overlap; param holds
// RelationParamSize(kOp, dim) floats (may be null for kNone).
template <Operator kOp>
void OpForward(const float* param, const float* x, int rows, int dim,
               float* out) {
  using vec::F8;
  const int h = dim / 2;
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<int64_t>(r) * dim;
    float* o = out + static_cast<int64_t>(r) * dim;
    if constexpr (kOp == Operator::kNone) {
      std::copy(xr, xr + dim, o);
    } else if constexpr (kOp == Operator::kTranslation) {
      vec::Map(
          dim, o, [](F8 a, F8 t) { return a + t; }, xr, param);
    } else if constexpr (kOp == Operator::kDiagonal) {
      vec::Map(
          dim, o, [](F8 a, F8 w) { return a * w; }, xr, param);
    } else {
      static_assert(kOp == Operator::kComplexDiagonal);
      const float* wr = param;
      const float* wi = param + h;
      vec::Map(
          h, o,
          [](F8 re, F8 im, F8 w_re, F8 w_im) { return re * w_re - im * w_im; },
          xr, xr + h, wr, wi);
      vec::Map(
          h, o + h,
          [](F8 re, F8 im, F8 w_re, F8 w_im) { return re * w_im + im * w_re; },
          xr, xr + h, wr, wi);
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
  using vec::F8;
  const int h = dim / 2;
  for (int r = 0; r < rows; ++r) {
    const int64_t off = static_cast<int64_t>(r) * dim;
    const float* xr = x + off;
    const float* g = d_out + off;
    float* dx = d_x + off;
    if constexpr (kOp == Operator::kNone) {
      vec::Add(g, dim, dx);
    } else if constexpr (kOp == Operator::kTranslation) {
      vec::Add(g, dim, dx);
      vec::Add(g, dim, d_param);
    } else if constexpr (kOp == Operator::kDiagonal) {
      auto fma = [](F8 acc, F8 u, F8 v) { return acc + u * v; };
      vec::Map(dim, dx, fma, dx, g, param);
      vec::Map(dim, d_param, fma, d_param, g, xr);
    } else {
      static_assert(kOp == Operator::kComplexDiagonal);
      const float *wr = param, *wi = param + h;
      const float *gr = g, *gi = g + h;
      const float *x_re = xr, *x_im = xr + h;
      // With o = x * w (complex): dx = g * conj(w), dw = g * conj(x).
      auto re = [](F8 acc, F8 g_re, F8 g_im, F8 v_re, F8 v_im) {
        return acc + g_re * v_re + g_im * v_im;
      };
      auto im = [](F8 acc, F8 g_re, F8 g_im, F8 v_re, F8 v_im) {
        return acc + g_im * v_re - g_re * v_im;
      };
      vec::Map(h, dx, re, dx, gr, gi, wr, wi);
      vec::Map(h, dx + h, im, dx + h, gr, gi, wr, wi);
      vec::Map(h, d_param, re, d_param, gr, gi, x_re, x_im);
      vec::Map(h, d_param + h, im, d_param + h, gr, gi, x_re, x_im);
    }
  }
}

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_OPERATORS_H_
