#include "train/model/adagrad.h"

#include <algorithm>
#include <cmath>

#include "train/model/vec_math.h"

namespace ember {

void AdagradRowUpdate(float* row, float* row_state, const float* grad, int dim,
                      float lr, float eps) {
  const uint32_t only_row = 0;
  AdagradRowUpdates(row, row_state, &only_row, 1, grad, dim, lr, /*first_trainable=*/0, eps);
}

void AdagradRowUpdates(float* table, float* state, const uint32_t* ids, int n,
                       const float* grads, int dim, float lr,
                       uint64_t first_trainable, float eps) {
  constexpr int kBlock = 64;
  float step[kBlock];
  for (int begin = 0; begin < n; begin += kBlock) {
    const int count = std::min(kBlock, n - begin);
    const uint32_t* block_ids = ids + begin;
    const float* block_grads = grads + int64_t{begin} * dim;
    for (int k = 0; k < count; ++k) {
      const float* g = block_grads + int64_t{k} * dim;
      step[k] = vec::Dot(g, g, dim) / static_cast<float>(dim);
    }
    for (int k = 0; k < count; ++k) {
      const uint32_t r = block_ids[k];
      if (r < first_trainable) continue;
      const float s = state[r] + step[k];
      state[r] = s;
      step[k] = lr / (std::sqrt(s) + eps);
    }
    for (int k = 0; k < count; ++k) {
      const uint32_t r = block_ids[k];
      if (r < first_trainable) continue;
      float* row = table + int64_t{r} * dim;
      const float sk = step[k];
      vec::Map(
          dim, row, [sk](vec::F8 x, vec::F8 g) { return x - sk * g; }, row,
          block_grads + int64_t{k} * dim);
    }
  }
}

void AdagradDenseUpdate(float* params, float* state, const float* grad, int n, float lr,
                        float eps) {
  // Eight lanes at a time (a relation's parameters are updated after every
  // chunk that uses it; one sqrt and one division a float made this 5 % of a
  // knowledge graph's step, tools/bench/trainer_bench.cc).
  using vec::F8;
  vec::Map(
      n, state, [](F8 sk, F8 gk) { return sk + gk * gk; }, state, grad);
  vec::Map(
      n, params, [lr, eps](F8 pk, F8 gk, F8 sk) { return pk - lr * gk / (vec::Sqrt(sk) + eps); },
      params, grad, state);
}

}  // namespace ember
