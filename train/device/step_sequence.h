// The order of one device training step: the kernels of kernel_bodies.h and
// the three batched products between them. Shared by the CUDA launcher and
// the host launcher, so the host tests run the very sequence the GPU runs.
//
// A Launcher provides, all enqueued in order on one stream:
//   template <class F> void ForEach(const F& kernel);   // every index of kernel.size()
//   void Zero(float* p, int64_t floats);
//   void Gemm(bool trans_a, bool trans_b, int m, int n, int k,
//             const float* a, int lda, int64_t stride_a,
//             const float* b, int ldb, int64_t stride_b,
//             float* c, int ldc, int64_t stride_c, int64_t count);
// Gemm is row-major: C_i (m × n) = op(A_i) · op(B_i) for i < count, with
// X_i = X + i · stride_x and op(X) = Xᵀ when trans.
#ifndef EMBER_TRAIN_DEVICE_STEP_SEQUENCE_H_
#define EMBER_TRAIN_DEVICE_STEP_SEQUENCE_H_

#include "train/device/kernel_bodies.h"

namespace ember::device {

template <class Launcher>
void RunStepSequence(Launcher& launch, const StepShape& sh, const StepArgs& a) {
  const int c = sh.chunk, n = sh.candidates(), d = sh.dim;
  const int64_t count = sh.matrices();
  if (sh.rel_size > 0) launch.Zero(a.drel, a.slots * sh.rel_size);
  if (sh.cmp == kCmpL2) launch.Zero(a.coef_k, sh.candidate_rows());
  if (sh.has_features()) launch.Zero(a.dfeat, a.distinct_features * d);
  launch.ForEach(GatherDistinct{sh, a});
  launch.ForEach(Sequenced<GatherQueries, GatherCandidates>{{sh, a}, {sh, a}});
  if (sh.cmp != kCmpDot) launch.ForEach(PrepareRows{sh, a});
  // S_b = Q_b K_bᵀ (c × n).
  launch.Gemm(false, true, c, n, d, a.q, d, int64_t{c} * d, a.k, d, int64_t{n} * d, a.s, n,
              int64_t{c} * n, count);
  launch.ForEach(ScoreRows{sh, a});
  if (sh.n3 > 0) launch.ForEach(RegularizeRows{sh, a});
  // dQ_b = G_b K_b (c × d); dK_b = G_bᵀ Q_b (n × d).
  launch.Gemm(false, false, c, d, n, a.s, n, int64_t{c} * n, a.k, d, int64_t{n} * d, a.dq, d,
              int64_t{c} * d, count);
  launch.Gemm(true, false, n, d, c, a.s, n, int64_t{c} * n, a.q, d, int64_t{c} * d, a.dk, d,
              int64_t{n} * d, count);
  if (sh.cmp != kCmpDot) launch.ForEach(ComparatorBackward{sh, a});
  launch.ForEach(Sequenced<ScatterQueries, ScatterCandidates>{{sh, a}, {sh, a}});
  if (sh.has_features()) {
    launch.ForEach(ScatterFeatures{sh, a});
    launch.ForEach(AdagradFeatures{sh, a});
  }
  if (sh.has_id_rows()) launch.ForEach(AdagradRows{sh, a});
}

}  // namespace ember::device

#endif  // EMBER_TRAIN_DEVICE_STEP_SEQUENCE_H_
