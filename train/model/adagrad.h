// Adagrad updates as PBG applies them: row-wise (one state float per
// embedding row) for embeddings, element-wise for relation parameters.
#ifndef EMBER_TRAIN_MODEL_ADAGRAD_H_
#define EMBER_TRAIN_MODEL_ADAGRAD_H_

#include <cstdint>

namespace ember {

// Default eps of both updates (PBG's and torch's Adagrad).
inline constexpr float kAdagradEps = 1e-10f;

// PBG's RowAdagrad on one embedding row:
//   *row_state += mean_k grad[k]^2
//   row[k]     -= lr * grad[k] / (sqrt(*row_state) + eps)
// REQUIRES: row and grad hold dim floats and do not overlap. Concurrent calls
// on the same row (Hogwild) race benignly: an update may be lost, never torn
// into a non-finite value.
void AdagradRowUpdate(float* row, float* row_state, const float* grad, int dim,
                      float lr, float eps = kAdagradEps);

// AdagradRowUpdate on rows ids[0, n) of `table` (row r at table + r · dim,
// its state at state[r]) with gradients grads (n × dim), skipping rows below
// `first_trainable`; the same result as n calls in order (a repeated id
// takes both steps), but each pass runs over all n rows, so that the rows'
// latency chains (reduction, sqrt, division) overlap.
void AdagradRowUpdates(float* table, float* state, const uint32_t* ids, int n,
                       const float* grads, int dim, float lr,
                       uint64_t first_trainable = 0, float eps = kAdagradEps);

// Dense Adagrad (torch.optim.Adagrad without decay):
//   state[k] += grad[k]^2;  params[k] -= lr * grad[k] / (sqrt(state[k]) + eps)
// REQUIRES: params, state, grad hold n floats and do not overlap.
void AdagradDenseUpdate(float* params, float* state, const float* grad, int n, float lr,
                        float eps = kAdagradEps);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_ADAGRAD_H_
