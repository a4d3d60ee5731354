// Scoring and gradients for one chunk of positive edges against chunked
// batched negatives (PBG), on the CPU with OpenBLAS GEMMs.
//
// Layout: every matrix is row-major and compact; row i of an n × dim matrix x
// is x[i * dim .. i * dim + dim).
//
// A chunk holds `chunk` positive edges (s_i, r, d_i) that all share one
// relation r: the caller groups a batch by relation before cutting it into
// chunks, so that op_r is one set of parameters per call. Write
//   L = lhs rows (e_{s_i}),  R = rhs rows (e_{d_i}),
//   Us = src_negs (uniform candidate sources, from the lhs partition),
//   Ud = dst_negs (uniform candidate destinations, from the rhs partition),
//   A = [op_r(L); op_r(Us)]   ((chunk + num_src_negs) × dim),
//   B = [R; Ud]               ((chunk + num_dst_negs) × dim).
// Then
//   dst scores  Sd(i, j) = cmp(A_i, B_j)  i < chunk, j < chunk + num_dst_negs
//   src scores  Ss(i, j) = cmp(A_j, B_i)  i < chunk, j < chunk + num_src_negs
// Both are single GEMMs (the comparators are symmetric and op_r is applied
// to the source candidates themselves, so no inverse operator is needed).
// The diagonal Sd(i, i) = Ss(i, i) = cmp(op_r(L_i), R_i) is edge i's
// positive score; every other entry of row i is one of its negatives (the
// in-chunk negatives j != i, then the uniform ones). An edge is therefore
// never scored against itself as a negative. Row i contributes
// loss(pos_i, row i without its diagonal) once per side; the chunk's loss is
// the sum over rows and both sides.
//
// Threads: calls on distinct workspaces may run concurrently. The GEMMs go
// to OpenBLAS, which should then be limited to one thread
// (openblas_set_num_threads(1) or OPENBLAS_NUM_THREADS=1): these matrices are
// too small to split, and nested threading oversubscribes the cores.
#ifndef EMBER_TRAIN_CHUNK_SCORER_H_
#define EMBER_TRAIN_CHUNK_SCORER_H_

#include <vector>

#include "train/model_options.h"

namespace ember {

// Inputs of one chunk. Pointers are borrowed for the duration of the call and
// may alias one another (e.g. src_negs == dst_negs when both sides draw from
// the same partition). A caller that stacks the negatives right after the
// chunk (src_negs == lhs + chunk·dim, dst_negs == rhs + chunk·dim) saves the
// scorer a copy: stacked rows are read in place (for op none on the lhs).
struct ChunkInput {
  const float* lhs = nullptr;       // chunk × dim
  const float* rhs = nullptr;       // chunk × dim
  const float* src_negs = nullptr;  // num_src_negs × dim; null iff 0 rows
  const float* dst_negs = nullptr;  // num_dst_negs × dim; null iff 0 rows
  int chunk = 0;                    // >= 1
  int num_src_negs = 0;             // >= 0
  int num_dst_negs = 0;             // >= 0
};

// Gradient outputs, same shapes as the inputs (rel: RelationParamSize
// floats). Gradients are ADDED to what the buffers hold, so a caller zeroes
// them first or accumulates over chunks (relation parameters typically are).
// The buffers may alias one another (additions are sequential) but not the
// inputs or the workspace. Buffers for 0-row inputs and for kNone's `rel`
// may be null.
struct ChunkGrads {
  float* lhs = nullptr;
  float* rhs = nullptr;
  float* src_negs = nullptr;
  float* dst_negs = nullptr;
  float* rel = nullptr;
};

// Preallocated scratch for one chunk at a time; the scoring calls allocate
// nothing. Not thread-safe: one workspace per thread.
class ChunkWorkspace {
 public:
  // REQUIRES: dim >= 1, max_chunk >= 1, max_negs >= 0.
  ChunkWorkspace(int dim, int max_chunk, int max_negs);
  ChunkWorkspace(const ChunkWorkspace&) = delete;
  ChunkWorkspace& operator=(const ChunkWorkspace&) = delete;

  int dim() const { return dim_; }
  int max_chunk() const { return max_chunk_; }
  int max_negs() const { return max_negs_; }

  // Scores of the last call, valid until the next call on this workspace.
  // dst_scores: chunk × (chunk + num_dst_negs), entry (i, j) = Sd(i, j).
  // src_scores: chunk × (chunk + num_src_negs), entry (i, j) = Ss(i, j).
  // (See the file comment; the diagonal holds the positive scores.)
  const float* dst_scores() const { return s_dst_.data(); }
  const float* src_scores() const { return s_src_.data(); }

 private:
  friend class ChunkKernels;

  int dim_, max_chunk_, max_negs_;
  std::vector<float> a_, b_;            // A, B (raw)
  std::vector<float> a_hat_, b_hat_;    // A, B rows normalized (cos only)
  std::vector<float> a_aux_, b_aux_;    // per row: 1/|x| (cos) or |x|^2 (l2)
  std::vector<float> s_dst_, s_src_;    // scores
  std::vector<float> g_dst_, g_src_;    // dLoss/dscores
  std::vector<float> da_, db_;          // dLoss/dA, dLoss/dB
  std::vector<float> coef_a_, coef_b_;  // l2 only: row weights of x in dx
};

// Returns the chunk's loss (summed over edges and both sides) and leaves the
// scores in `ws`.
// REQUIRES: options.Validate() is OK; options.dim == ws->dim();
// 1 <= input.chunk <= ws->max_chunk(); 0 <= num_*_negs <= ws->max_negs();
// rel holds RelationParamSize(options.op, options.dim) floats.
float ChunkForward(const ModelOptions& options, const float* rel,
                   const ChunkInput& input, ChunkWorkspace* ws);

// As ChunkForward, and adds the loss's gradients to `grads`.
float ChunkForwardBackward(const ModelOptions& options, const float* rel,
                           const ChunkInput& input, const ChunkGrads& grads,
                           ChunkWorkspace* ws);

}  // namespace ember

#endif  // EMBER_TRAIN_CHUNK_SCORER_H_
