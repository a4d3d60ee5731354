#include "train/model/adagrad.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

TEST(AdagradTest, RowUpdateFollowsPbgFormula) {
  std::vector<float> row = {1.0f, -2.0f, 0.5f};
  const std::vector<float> grad = {0.3f, -0.6f, 1.2f};
  float state = 0.25f;
  const float lr = 0.1f, eps = 1e-10f;

  const double mean_sq = (0.3 * 0.3 + 0.6 * 0.6 + 1.2 * 1.2) / 3;
  const double want_state = 0.25 + mean_sq;
  const double step = lr / (std::sqrt(want_state) + eps);
  const std::vector<double> want = {1.0 - step * 0.3, -2.0 + step * 0.6,
                                    0.5 - step * 1.2};

  AdagradRowUpdate(row.data(), &state, grad.data(), 3, lr, eps);
  EXPECT_NEAR(state, want_state, 1e-6);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(row[k], want[k], 1e-6) << k;

  // A second step sees the accumulated state.
  const double want_state2 = want_state + mean_sq;
  const double step2 = lr / (std::sqrt(want_state2) + eps);
  AdagradRowUpdate(row.data(), &state, grad.data(), 3, lr, eps);
  EXPECT_NEAR(state, want_state2, 1e-6);
  EXPECT_NEAR(row[0], want[0] - step2 * 0.3, 1e-6);
}

TEST(AdagradTest, ZeroGradientWithZeroStateIsFinite) {
  std::vector<float> row = {1.0f, 2.0f};
  const std::vector<float> grad = {0.0f, 0.0f};
  float state = 0.0f;
  AdagradRowUpdate(row.data(), &state, grad.data(), 2, 0.1f);
  EXPECT_EQ(row[0], 1.0f);
  EXPECT_EQ(row[1], 2.0f);
  EXPECT_EQ(state, 0.0f);
}

TEST(AdagradTest, RowUpdatesEqualOneCallPerRowInOrder) {
  // 150 ids (more than one block of the batched passes), with repeats and
  // rows below first_trainable.
  const int dim = 13, rows = 40, n = 150;
  const uint64_t first_trainable = 5;
  std::vector<float> table(rows * dim), state(rows), grads(n * dim);
  std::vector<uint32_t> ids(n);
  for (int i = 0; i < rows * dim; ++i) table[i] = std::sin(0.37f * i);
  for (int r = 0; r < rows; ++r) state[r] = 0.01f * r;
  for (int i = 0; i < n * dim; ++i) grads[i] = std::cos(0.11f * i);
  for (int k = 0; k < n; ++k) ids[k] = (k * 7) % rows;
  std::vector<float> want_table = table, want_state = state;
  for (int k = 0; k < n; ++k) {
    const uint32_t r = ids[k];
    if (r < first_trainable) continue;
    AdagradRowUpdate(&want_table[r * dim], &want_state[r], &grads[k * dim], dim, 0.1f);
  }
  AdagradRowUpdates(table.data(), state.data(), ids.data(), n, grads.data(), dim, 0.1f,
                    first_trainable);
  EXPECT_EQ(table, want_table);
  EXPECT_EQ(state, want_state);
  for (int r = 0; r < int(first_trainable); ++r) EXPECT_EQ(state[r], 0.01f * r) << r;
}

TEST(AdagradTest, DenseUpdateIsPerElement) {
  std::vector<float> p = {0.5f, -0.5f, 2.0f};
  std::vector<float> state = {0.0f, 1.0f, 4.0f};
  const std::vector<float> grad = {1.0f, -0.5f, 0.0f};
  const float lr = 0.2f, eps = 1e-10f;
  std::vector<double> want(3), want_state(3);
  for (int k = 0; k < 3; ++k) {
    want_state[k] = state[k] + double{grad[k]} * grad[k];
    want[k] = p[k] - lr * grad[k] / (std::sqrt(want_state[k]) + eps);
  }
  AdagradDenseUpdate(p.data(), state.data(), grad.data(), 3, lr, eps);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(state[k], want_state[k], 1e-6) << k;
    EXPECT_NEAR(p[k], want[k], 1e-6) << k;
  }
}

}  // namespace
}  // namespace ember
