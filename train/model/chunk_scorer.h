// Scoring and gradients for one chunk of positive edges against chunked
// batched negatives (PBG), on the CPU with OpenBLAS GEMMs.
//
// Layout: every matrix is row-major and compact; row i of an n × dim matrix x
// is x[i * dim .. i * dim + dim).
//
// A chunk holds `chunk` positive edges (s_i, r_i, d_i). Write
//   L = lhs rows (e_{s_i}),  R = rhs rows (e_{d_i}),
//   Us = src_negs (uniform candidate sources, from the lhs partition),
//   Ud = dst_negs (uniform candidate destinations, from the rhs partition),
//   E = the endpoint negatives: with `endpoint_negs` the chunk's sources also
//       serve as candidate destinations and its destinations as candidate
//       sources (so every h r t also meets h r h and t r t); empty otherwise.
// Each side is one GEMM of the chunk's queries against shared candidates:
//   dst scores  Sd(i, j) = cmp(op_{r_i}(L_i), Kd_j),   Kd = [R; Ud; L if E]
//   src scores  Ss(i, j) = score of (Ks_j, r_i, d_i),  Ks = [L; Us; R if E]
// A grouped chunk (one relation r for every row; `rel_slot` null) scores the
// src side as cmp(op_r(Ks_j), R_i), op_r applied to the candidates. A mixed
// chunk (rows of any relations; `rel_slot` set) cannot, as each row needs its
// own op on the shared candidates; it uses the adjoint instead:
// cmp(op_r(x), y) = cmp(x, op*_r(y)), with op* the conjugate for diagonal and
// complex_diagonal under dot, subtraction for translation under l2, and the
// identity for none (SupportsMixedChunks, model_options.h).
// A reciprocal model (ModelOptions::reciprocal) scores the src side of
// every chunk, grouped or mixed, as the dst side of the inverse edges
// (d_i, r_i⁻¹, s_i): Ss(i, j) = cmp(op_{r_i⁻¹}(R_i), Ks_j), with the
// inverse relation's own parameters, so no adjoint is needed.
// Column i of row i is edge i's positive score on both sides; every other
// entry of row i is one of its negatives (the in-chunk negatives j != i, the
// uniform ones, then E). An edge is never scored against itself, and an
// endpoint candidate that is the row's own answer (the same node, e.g. a
// self loop) is excluded: its score is set to kExcludedScore, which adds
// nothing to the loss (the logistic loss's mean over negatives still counts
// it). Row i contributes loss(pos_i, row i without its diagonal) once per
// side; the chunk's loss is the sum over rows and both sides, plus, with
// Regularizer::kN3, reg_weight · N3 of each row's positives on both sides:
// 2 N3(L_i) + 2 N3(R_i) + N3(w_{r_i}) + N3(w_{r_i⁻¹} or w_{r_i})
// (model_options.h), whose gradients join the rows' and relations'.
//
// Threads: calls on distinct workspaces may run concurrently. The scores go
// to SmallGemm (small_gemm.h) on AVX-512 CPUs, the other GEMMs to OpenBLAS,
// which should then be limited to one thread (ember's binaries do it once at
// start-up, train/blas/blas_startup.h): these matrices are too small to
// split, and nested threading oversubscribes the cores.
#ifndef EMBER_TRAIN_MODEL_CHUNK_SCORER_H_
#define EMBER_TRAIN_MODEL_CHUNK_SCORER_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "train/model/model_options.h"

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
  // Mixed chunk: row i's relation record is rel + rel_slot[i] · P (P =
  // RelationRecordSize: w_r, then w_{r⁻¹} for a reciprocal model) and its
  // relation gradients go to grads.rel + the same offset. Null: a grouped
  // chunk, every row uses the record at `rel`.
  // REQUIRES when set: SupportsMixedChunks(options).
  const uint32_t* rel_slot = nullptr;
  // Score the chunk's endpoints as negatives of the other side (E above).
  bool endpoint_negs = false;
  // With endpoint_negs: node ids of the lhs and rhs rows (chunk each), and
  // whether both index one node table (the same partition). When they do, a
  // candidate with the id of the row's answer is excluded. May be null when
  // same_node_table is false.
  const uint32_t* lhs_nodes = nullptr;
  const uint32_t* rhs_nodes = nullptr;
  bool same_node_table = false;
  // Edge weights (chunk floats, each > 0): row i's loss on both sides, and
  // so its gradients, is scaled by weights[i]. Null: every weight 1, which
  // a weight of exactly 1 reproduces bit for bit.
  const float* weights = nullptr;

  // Rows of Kd and Ks (the columns of Sd and Ss).
  int dst_candidates() const { return chunk + num_dst_negs + (endpoint_negs ? chunk : 0); }
  int src_candidates() const { return chunk + num_src_negs + (endpoint_negs ? chunk : 0); }
};

// The score given to an excluded endpoint candidate.
inline constexpr float kExcludedScore = -1e30f;

// Gradient outputs, same shapes as the inputs (rel: RelationRecordSize
// floats, times the number of slots for a mixed chunk). Gradients are ADDED
// to what the buffers hold, so a caller zeroes them first or accumulates
// over chunks (relation parameters typically are), unless `overwrite_rows`.
// The buffers may alias one another (additions are sequential) but not the
// inputs or the workspace. Buffers for 0-row inputs and for kNone's `rel`
// may be null.
struct ChunkGrads {
  float* lhs = nullptr;
  float* rhs = nullptr;
  float* src_negs = nullptr;
  float* dst_negs = nullptr;
  float* rel = nullptr;
  // With true, lhs, rhs, src_negs and dst_negs receive the chunk's gradients
  // in place of what they held (rel is still added to), so the caller need
  // not zero them: under dot without an operator the first product into
  // each buffer writes it, and no pass zeroes it. REQUIRES then: those four
  // do not alias one another.
  bool overwrite_rows = false;
};

// Preallocated scratch for one chunk at a time; the scoring calls allocate
// nothing. Not thread-safe: one workspace per thread.
class ChunkWorkspace {
 public:
  // Holds chunks of up to max_chunk rows with up to max_negs uniform
  // negatives per side, with or without endpoint negatives.
  // REQUIRES: dim >= 1, max_chunk >= 1, max_negs >= 0.
  ChunkWorkspace(int dim, int max_chunk, int max_negs);
  ChunkWorkspace(const ChunkWorkspace&) = delete;
  ChunkWorkspace& operator=(const ChunkWorkspace&) = delete;

  int dim() const { return dim_; }
  int max_chunk() const { return max_chunk_; }
  int max_negs() const { return max_negs_; }

  // Scores of the last call, valid until the next call on this workspace.
  // dst_scores: chunk × dst_candidates(), entry (i, j) = Sd(i, j).
  // src_scores: chunk × src_candidates(), entry (i, j) = Ss(i, j).
  // (See the file comment; the diagonal holds the positive scores.)
  const float* dst_scores() const { return dst_.scores.data(); }
  const float* src_scores() const { return src_.scores.data(); }

 private:
  friend class ChunkKernels;

  // One side's queries Q (chunk rows) against its candidates K.
  struct Side {
    std::vector<float> q, k;              // Q, K when built here (raw)
    std::vector<float> q_hat, k_hat;      // rows normalized (cos only)
    std::vector<float> k_transposed;      // the scores' Kᵀ (small_gemm.h)
    std::vector<float> q_aux, k_aux;      // per row: 1/|x| (cos), |x|^2 (l2)
    std::vector<float> scores, g;         // S, dLoss/dS
    std::vector<float> dq, dk;            // dLoss/dQ, dLoss/dK
    std::vector<float> coef_q, coef_k;    // l2 only: row weights of x in dx
    std::vector<std::pair<int, int>> excluded;  // (row, column) pairs
  };

  int dim_, max_chunk_, max_negs_;
  Side dst_, src_;
  std::vector<float> conj_rel_, d_conj_rel_;  // mixed chunks: op* parameters
  std::vector<float> block_transposed_;        // chunk × chunk: a block's Gᵀ
  std::vector<uint32_t> pack_a_, pack_b_;      // bf16 products' operands
};

// Returns the chunk's loss (summed over edges and both sides) and leaves the
// scores in `ws`.
// REQUIRES: options.Validate() is OK; options.dim == ws->dim();
// 1 <= input.chunk <= ws->max_chunk(); 0 <= num_*_negs <= ws->max_negs();
// rel holds RelationRecordSize(options) floats (per slot for a mixed chunk).
float ChunkForward(const ModelOptions& options, const float* rel,
                   const ChunkInput& input, ChunkWorkspace* ws);

// As ChunkForward, and adds the loss's gradients to `grads`.
float ChunkForwardBackward(const ModelOptions& options, const float* rel,
                           const ChunkInput& input, const ChunkGrads& grads,
                           ChunkWorkspace* ws);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_CHUNK_SCORER_H_
