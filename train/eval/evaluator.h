// Link-prediction evaluation: ranks every evaluated edge (s, r, d) of a split
// twice, d among tail candidates (s, r, ?) and s among head candidates
// (?, r, d) (for a reciprocal model, ModelOptions::reciprocal: as the tail
// query (d, r⁻¹, ?) with the inverse relation's parameters, which is how
// it trained), and reports MRR, MR, Hits@{1,3,10} and AUC, filtered and raw,
// with 95 % confidence intervals (rank_metrics.h), overall and optionally
// per relation.
//
// Ranks (OGB's convention for ties): with t the true answer's score and the
// candidates' scores computed by one kernel (candidate_scorer.h),
//   rank = 1 + #{negatives scoring > t} + 0.5 · #{negatives scoring == t},
// the mean of the optimistic and the pessimistic rank. MRR = mean 1/rank,
// MR = mean rank, Hits@k = share of ranks <= k, AUC = mean over queries of
// the share of negatives scoring below t (ties count 1/2). A query with no
// negatives has rank 1 and AUC 1.
//
// Negatives: the true answer itself is never its own negative (every
// candidate with its node id is skipped). Raw: every other candidate is a
// negative. Filtered: candidates that form a true edge with the query in ANY
// split (other (s, r, x) for a tail query, other (x, r, d) for a head query)
// are skipped too.
//
// Candidates: `negatives == 0`: every node of the graph (streamed partition
// by partition). `negatives == N`: N node ids drawn uniformly (with
// replacement) from the whole graph, shared by all queries of one batch of
// evaluated edges (PBG-style shared negatives; a batch is `batch_edges`
// edges in bucket order), plus the true answer. In a typed graph
// (Manifest::node_types) only nodes of the answer's type are candidates: a
// tail query (s, r, ?) ranks among r's destination type, a head query
// among its source type (N sampled per type). Sampled negatives flatter:
// they rarely include the hard negatives (the query's own entity, its close
// neighbours), so metrics used to compare or choose models rank against
// every node, on a sample of edges (`max_edges`) when the split is large.
//
// Cost against every node: each batch streams every partition's rows once,
// so the default batch (all of a 10,000-edge sample up to dim 3355) reads
// the embeddings once and does 2 · edges · nodes · dim multiply-adds.
//
// Memory: evaluated edges are processed in batches of `batch_edges`; a batch
// holds its edges' two endpoint rows, per-query counters, and the filter
// sets: true tails of the batch's (s, r) pairs and true heads of its (r, d)
// pairs, collected by one scan over the buckets of all splits that can hold
// them (never the whole edge list). Embedding partitions are held one at a
// time (the callback's contract below); N sampled negatives take N × dim
// floats. PlanEvalMemory adds these up and sizes the batch to a budget.
//
// Determinism: results depend on the graph, the model, and the options
// other than `threads` only.
#ifndef EMBER_TRAIN_EVAL_EVALUATOR_H_
#define EMBER_TRAIN_EVAL_EVALUATOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "storage/types.h"
#include "train/model/checkpoint.h"
#include "train/model/model_options.h"
#include "train/eval/rank_metrics.h"

namespace ember {

struct EvalOptions {
  // The split whose edges are ranked. Default: kTest.
  Split split = Split::kTest;
  // 0: rank against every node of the graph (O(edges × nodes) work).
  // N > 0: against N uniformly sampled nodes shared per batch of edges (see
  // the file comment), plus the true one. Default: 0.
  uint64_t negatives = 0;
  // 0: every edge of the split. M > 0: M edges drawn without replacement,
  // uniformly and deterministically (from `seed`), by their position in
  // bucket order. Default: 0.
  uint64_t max_edges = 0;
  // Seeds the edge sample and the negatives. Default: 0.
  uint64_t seed = 0;
  // Threads for scoring; 0: all hardware threads. Default: 0.
  int threads = 0;
  // Evaluated edges per batch; 0: chosen by PlanEvalMemory (rows of about
  // 256 MiB, less under memory_budget). Results with negatives == 0 do not
  // depend on it. Default: 0.
  uint64_t batch_edges = 0;
  // Peak-memory target in bytes for Evaluate on a stored model
  // (PlanEvalMemory); 0: none. Default: 0.
  uint64_t memory_budget = 0;
  // Also report filtered metrics per relation (EvalResult::by_relation).
  // Default: false.
  bool by_relation = false;
  // Also report each evaluated edge's filtered reciprocal rank
  // (EvalResult::edge_rr), so that two models evaluated on the same edges
  // can be compared edge by edge (PairedMrrDifference, rank_metrics.h).
  // Default: false.
  bool edge_rr = false;
  // Called on the calling thread as ranking advances (after each slice of
  // up to 65536 candidate nodes of a batch), with `done` and `total` in
  // edge-candidate pairs: total = evaluated edges × candidates per query
  // (every node, or `negatives`); the last call has done == total. Default:
  // none.
  std::function<void(uint64_t done, uint64_t total)> progress;

  absl::Status Validate() const;
};

struct EvalResult {
  RankMetrics filtered, raw;
  // With EvalOptions::by_relation: filtered metrics of the edges of relation
  // r at index r, one entry per relation of the graph (count 0 for a
  // relation without evaluated edges). Empty otherwise.
  std::vector<RankMetrics> by_relation;
  // With EvalOptions::edge_rr: per evaluated edge, in evaluation order
  // (bucket order, then position: the same for every model evaluated with
  // the same graph, split, max_edges and seed), (tail RR + head RR) / 2,
  // filtered; their mean is filtered.mrr. Empty otherwise.
  std::vector<float> edge_rr;
  uint64_t edges = 0;        // evaluated edges
  uint64_t split_edges = 0;  // edges of the split (edges < split_edges: a sample)
  uint64_t num_nodes = 0;    // nodes of the graph
  // A typed graph: each query ranked against the nodes (or N sampled
  // nodes) of its answer's type only.
  bool typed = false;
  uint64_t negatives = 0;    // EvalOptions::negatives (0: every node)
  double seconds = 0;
};

// One line naming the protocol and the sample size, e.g. "filtered ranking
// against all 6 nodes on all 3 edges (6 queries)", "filtered ranking against
// all 131072 nodes on a sample of 10000 of 104857 edges (20000 queries)" or
// "filtered ranking against 1000 sampled negatives (optimistic) on ...".
std::string DescribeProtocol(const EvalResult& result);

// What Evaluate on a stored model holds at once: fixed_bytes (the largest
// partition's rows, the feature table of a featurized model, sampled
// negatives, the edge sample's positions, per-thread scratch, RocksDB's
// block cache) and per_edge_bytes for each edge of a batch (its endpoint
// rows, counters, and filter sets of the graph's mean degree: an estimate,
// which a batch of hubs' queries exceeds).
struct EvalMemoryPlan {
  uint64_t batch_edges = 0;
  uint64_t fixed_bytes = 0;
  uint64_t per_edge_bytes = 0;
  uint64_t bytes() const { return fixed_bytes + batch_edges * per_edge_bytes; }
};

// Smallest batch a memory budget may leave: every batch streams every
// partition once, so smaller ones multiply the reads.
inline constexpr uint64_t kMinEvalBatchEdges = 1024;

// The batch: options.batch_edges when set; otherwise rows of about 256 MiB,
// no more edges than are evaluated, and under options.memory_budget (when
// set) as many as fit. ResourceExhausted, naming the need and the largest
// partition, when the budget cannot hold the fixed part and a batch of
// kMinEvalBatchEdges (or of all evaluated edges, if fewer).
// `feature_table_bytes`: the stored feature table of a featurized model.
absl::StatusOr<EvalMemoryPlan> PlanEvalMemory(const Manifest& manifest,
                                              const ModelOptions& model,
                                              uint64_t feature_table_bytes,
                                              const EvalOptions& options);

// Evaluates the graph's current checkpoint (LoadStoredModel). Errors:
// FailedPrecondition when the graph has no checkpoint, or when the split
// has no edges; ResourceExhausted from PlanEvalMemory; errors of storage as
// they come.
absl::StatusOr<EvalResult> Evaluate(const Graph& graph,
                                    const StoredModel& model,
                                    const EvalOptions& options);

// As above with in-memory embeddings (the trainer's per-epoch validation),
// whose rows are the caller's: options.memory_budget does not apply.
// `embeddings(p)` returns partition p's rows (partition size × model.dim
// floats); the pointer must stay valid until the next call of `embeddings`
// or until Evaluate returns. Evaluate calls it from one thread at a time and
// returns its first error. REQUIRES: relations match the graph's relations
// and model.op.
absl::StatusOr<EvalResult> Evaluate(
    const Graph& graph, const ModelOptions& model,
    const RelationParams& relations,
    const std::function<absl::StatusOr<const float*>(uint32_t)>& embeddings,
    const EvalOptions& options);

}  // namespace ember

#endif  // EMBER_TRAIN_EVAL_EVALUATOR_H_
