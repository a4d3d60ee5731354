// Top-K recommendation, exact: for each source node of a relation's source
// type, the K nodes of its destination type that the model scores highest
// (score(s, r, d) = cmp(op_r(e_s), e_d), model_options.h), leaving out what
// the source already links in the splits named (a user's items). The batch job behind
// `ember recommend` and the ranking behind `ember eval --protocol
// recommend`. A source is never its own recommendation.
//
// How: sources are taken one partition at a time; their rows, with the
// relation's operator applied, are scored against the candidates' rows in
// blocks of kRecommendSources x kRecommendCandidates (one GEMM each, the
// candidate scorer's kernels, in cache), and each source keeps a heap of
// its best K: a score enters only above the heap's least, so most of the
// work is the GEMM. Blocks of sources run in parallel (oneTBB), each
// source's heap owned by one thread.
//
// Memory (PlanRecommendMemory): one source partition's rows and the known
// destinations of its sources (the relation's edges from that partition in
// the splits left out); the candidate type's rows when they fit
// `memory_budget`'s half (else one candidate partition at a time, read
// again for each slice of sources); per thread a score block; and a top-K
// heap per source of a slice, 2 x min(K, candidates) entries of
// sizeof(Scored) = 16 bytes each: a slice is as many sources as the budget
// leaves room for (all of the partition's when it fits), and a budget
// without room for one is refused before any work. Sources asked for out
// of id order also hold each finished top K until the sources before it
// are done (at most sources x min(K, candidates) x 16 bytes, counted).
//
// Untyped graphs: every node is a candidate of every source.
//
// Determinism: the result depends on the graph, the model and the options,
// not on `threads`: ties are broken by the lower node id.
#ifndef EMBER_TRAIN_EVAL_RECOMMENDER_H_
#define EMBER_TRAIN_EVAL_RECOMMENDER_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "storage/types.h"
#include "train/model/checkpoint.h"

namespace ember {

// Sources and candidates per score block.
inline constexpr int kRecommendSources = 128;
inline constexpr int kRecommendCandidates = 2048;

struct RecommendOptions {
  // The relation whose destinations are recommended. Default: 0.
  uint32_t relation = 0;
  // Recommendations per source, at least 1. Default: 10.
  uint32_t k = 10;
  // Leave out every destination d that an edge (s, relation, d) of these
  // splits already holds (a user's items); empty: none. Default: every split.
  std::vector<Split> exclude_known = {kAllSplits.begin(), kAllSplits.end()};
  // Global ids of the sources, each of the relation's source type and none
  // twice, in the order the sink is to see them; empty: every node of that
  // type, ascending. Default: empty.
  std::vector<uint64_t> sources;
  // Threads; 0: all hardware threads. Default: 0.
  int threads = 0;
  // Peak-memory target in bytes (0: none): above, candidate partitions are
  // read one at a time (see the file comment). Default: 0.
  uint64_t memory_budget = 0;
  // Called after each source partition with (sources done, sources in
  // all), from the calling thread. Default: none.
  std::function<void(uint64_t done, uint64_t total)> progress;

  // InvalidArgument for k == 0, negative threads or a source given twice
  // (naming it).
  absl::Status Validate() const;
};

// What a Recommend run holds at its peak, planned from the manifest before
// any work (see the file comment).
struct RecommendMemory {
  uint32_t heap_k = 0;              // min(k, candidates): what a heap keeps
  uint64_t fixed_bytes = 0;         // rows, known lists, scratch, reordering
  uint64_t heap_bytes = 0;          // one source's heap: 2 x heap_k x 16 B
  uint64_t slice_sources = 0;       // sources whose heaps are held at once
  bool candidates_resident = true;  // every candidate row held at once
  uint64_t peak_bytes = 0;          // fixed_bytes + slice_sources x heap_bytes
};

// The plan for `options` on the graph `m` with rows of `dim` floats;
// ResourceExhausted naming the budget, what one source's heap needs and
// what else is held, when options.memory_budget leaves no room for one.
// REQUIRES: options.Validate() and options.relation of `m`.
absl::StatusOr<RecommendMemory> PlanRecommendMemory(const Manifest& m, int dim,
                                                    const RecommendOptions& options);

// One recommendation: a candidate's global id and its score.
struct Scored {
  uint64_t id = 0;
  float score = 0;
};

// Calls sink(source, top) for every source in the order of
// options.sources (ascending ids when empty), `top` holding its best
// min(K, candidates left) candidates, best first (ties: lower id first);
// stops at the sink's first error. FailedPrecondition when the graph has
// no checkpoint; InvalidArgument for a relation or a source out of range,
// or a source not of the relation's source type; PlanRecommendMemory's
// ResourceExhausted.
absl::Status Recommend(
    const Graph& graph, const StoredModel& model, const RecommendOptions& options,
    const std::function<absl::Status(uint64_t source, std::span<const Scored> top)>& sink);

// The relation's source and destination types (0, 0 for untyped graphs).
RelationTypes TypesOfRelation(const Manifest& m, uint32_t relation);

// The best `k` candidates offered (a higher score, then a lower id). It
// keeps up to 2k candidates unsorted (reserved at the first offer: callers
// clamp k to the candidates there are) and cuts them back to the best k by
// one selection (nth_element) when they reach 2k, so that an offer costs
// O(1) amortized; threshold() is then the least score kept, which a
// candidate must reach to be offered at all (-inf until the first cut).
class TopKHeap {
 public:
  explicit TopKHeap(uint32_t k) : k_(k) {}
  uint32_t k() const { return k_; }
  float threshold() const { return threshold_; }
  // Offers candidates (each at least threshold()); `candidates` is left
  // as it was.
  void OfferAll(std::span<const Scored> candidates);
  // Raises threshold() to `bar` once at least k candidates offered reach
  // it (the caller knows): nothing below can be among the best k.
  void RaiseThreshold(float bar) { threshold_ = std::max(threshold_, bar); }
  // The best min(k, offered), best first; the heap is left empty.
  std::vector<Scored> TakeSorted();

 private:
  void Cut();
  uint32_t k_;
  float threshold_ = -std::numeric_limits<float>::infinity();
  std::vector<Scored> kept_;
};

// One source of RankCandidates: its row (the operator not applied), its
// global id (never its own candidate) and the candidates to leave out
// (sorted global ids; null: none).
struct RankQuery {
  const float* row = nullptr;
  uint64_t id = 0;
  const std::vector<uint64_t>* skip = nullptr;
};

// The core of Recommend, on rows in memory: offers every candidate (`count`
// rows of model.dim floats, global ids first_id, first_id + 1, ...) to each
// query's heap, scored by GEMM blocks of kRecommendSources x
// kRecommendCandidates on the calling thread's task arena (ParallelFor over
// blocks of queries). REQUIRES: heaps.size() == queries.size(); OpenBLAS at
// one thread (the caller's OneBlasThread).
void RankCandidates(const ModelOptions& model, const float* rel, std::span<const RankQuery> queries,
                    const float* candidates, uint64_t count, uint64_t first_id,
                    std::span<TopKHeap> heaps);

}  // namespace ember

#endif  // EMBER_TRAIN_EVAL_RECOMMENDER_H_
