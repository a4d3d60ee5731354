#include "train/model/adagrad.h"

#include <cmath>

#include "train/model/vec_math.h"

namespace ember {

void AdagradRowUpdate(float* row, float* row_state, const float* grad, int dim,
                      float lr, float eps) {
  const float mean_sq = vec::Dot(grad, grad, dim) / static_cast<float>(dim);
  const float state = *row_state + mean_sq;
  *row_state = state;
  const float step = lr / (std::sqrt(state) + eps);
  for (int k = 0; k < dim; ++k) row[k] -= step * grad[k];
}

void AdagradDenseUpdate(float* params, float* state, const float* grad,
                        int64_t n, float lr, float eps) {
  for (int64_t k = 0; k < n; ++k) {
    const float s = state[k] + grad[k] * grad[k];
    state[k] = s;
    params[k] -= lr * grad[k] / (std::sqrt(s) + eps);
  }
}

}  // namespace ember
