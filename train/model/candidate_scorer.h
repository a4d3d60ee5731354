// Scoring link-prediction queries against many candidate nodes at GEMM speed
// (evaluation, nearest neighbours under a relation). Pure: no I/O, no
// threads of its own.
//
// Layout: every matrix is row-major and compact; row i of an n × dim matrix
// x is x[i * dim .. i * dim + dim).
//
// With score(s, r, d) = cmp(op_r(e_s), e_d) (see model_options.h):
//   kTail (corrupt the destination): queries are source rows e_s,
//     scores(i, k) = cmp(op_r(q_i), c_k);
//   kHead (corrupt the source): queries are destination rows e_d,
//     scores(i, k) = cmp(op_r(c_k), q_i).
// Both are one GEMM after op_r is applied to the query rows (kTail) or to
// the candidate rows (kHead) and the comparator's per-row data (norms) is
// prepared. The l2 comparator uses the GEMM expansion
// |a - b|^2 = |a|^2 + |b|^2 - 2<a, b>, clamped below at 1e-30 before the
// square root, as the chunk scorer does for its negatives.
//
// Every entry of a call comes from the same kernel, so callers that compare
// a true answer's score against its negatives' should take all of them from
// ScoreCandidates (not from ScorePair, whose rounding differs).
//
// Threads: calls on distinct workspaces may run concurrently; the GEMM goes
// to OpenBLAS, which should then be limited to one thread (see
// chunk_scorer.h).
#ifndef EMBER_TRAIN_MODEL_CANDIDATE_SCORER_H_
#define EMBER_TRAIN_MODEL_CANDIDATE_SCORER_H_

#include <cstdint>
#include <vector>

#include "train/model/model_options.h"

namespace ember {

// Which end of an edge the candidates replace.
enum class CorruptSide : uint8_t {
  kTail = 0,  // candidates are destinations; queries are sources
  kHead = 1,  // candidates are sources; queries are destinations
};

// Scratch for ScoreCandidates; grows to the largest call and is reused.
// Not thread-safe: one workspace per thread.
class CandidateWorkspace {
 public:
  CandidateWorkspace() = default;
  CandidateWorkspace(const CandidateWorkspace&) = delete;
  CandidateWorkspace& operator=(const CandidateWorkspace&) = delete;

 private:
  friend class CandidateKernels;
  std::vector<float> a_, b_;          // op applied / normalized rows
  std::vector<float> a_aux_, b_aux_;  // l2: squared row norms
};

// Writes scores (num_queries × num_candidates, row-major) as defined in the
// file comment.
// REQUIRES: model.Validate() is OK; queries holds num_queries × model.dim
// floats, candidates num_candidates × model.dim, scores num_queries ×
// num_candidates; rel holds RelationParamSize(model.op, model.dim) floats
// (may be null for kNone); num_queries, num_candidates >= 0. scores does not
// overlap the inputs.
void ScoreCandidates(const ModelOptions& model, const float* rel,
                     CorruptSide side, const float* queries, int num_queries,
                     const float* candidates, int num_candidates, float* scores,
                     CandidateWorkspace* ws);

// out[r] = op_r(rows[r]) for each of num_rows rows of dim floats: the
// operator of model_options.h chosen at run time (for callers that score
// outside ScoreCandidates, e.g. a nearest-neighbour index).
// REQUIRES: rel holds RelationParamSize(op, dim) floats (may be null for
// kNone); rows and out hold num_rows × dim floats and do not overlap.
void ApplyOperator(Operator op, const float* rel, const float* rows,
                   int num_rows, int dim, float* out);

// The score of one edge, computed directly (double accumulation): the
// reference that ScoreCandidates is tested against.
// REQUIRES: as ScoreCandidates; src and dst hold model.dim floats.
float ScorePair(const ModelOptions& model, const float* rel, const float* src,
                const float* dst);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_CANDIDATE_SCORER_H_
