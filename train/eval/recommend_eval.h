// Recommender evaluation (`ember eval --protocol recommend`): for every
// source with held-out destinations of a relation in a split (a user's
// held-out items), its top-K recommendations (recommender.h) with what it
// links in any other split left out (train and the other held-out split:
// an item the source is known to have is no recommendation), scored against
// the held-out set:
//   Recall@K   = hits / |held out|
//   Recall@K capped = hits / min(K, |held out|) (1 is reachable at any K)
//   NDCG@K     = sum over hits at rank i (1-based) of 1/log2(i + 1), divided
//                by the same sum over ranks 1..min(K, |held out|)
//   hit rate@K = 1 when at least one held-out destination is in the top K
// each averaged over sources, with a 95 % interval (1.96 standard errors).
// A held-out pair the source also has in another split is left out of the
// ranking, so it is dropped from the held-out set (numerator and
// denominator); a source left with none is not evaluated.
// Beside the model, the same metrics for a popularity baseline computed in
// the same run: every source gets the destinations with the most train
// edges of the relation (ties: lower id), its known ones (every other
// split) left out. A model that loses to popularity is plainly visible.
#ifndef EMBER_TRAIN_EVAL_RECOMMEND_EVAL_H_
#define EMBER_TRAIN_EVAL_RECOMMEND_EVAL_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "storage/types.h"
#include "train/model/checkpoint.h"

namespace ember {

struct RecommendEvalOptions {
  // The relation evaluated. Default: 0.
  uint32_t relation = 0;
  // The cut-offs, each at least 1. Default: 10, 20, 100.
  std::vector<uint32_t> ks = {10, 20, 100};
  // The held-out split (valid or test). Default: kTest.
  Split split = Split::kTest;
  // At most this many sources, a seeded uniform sample of those with
  // held-out destinations; 0: all of them. Default: 0.
  uint64_t max_sources = 0;
  uint64_t seed = 0;
  int threads = 0;             // 0: all hardware threads
  uint64_t memory_budget = 0;  // RecommendOptions::memory_budget
  std::function<void(uint64_t done, uint64_t total)> progress;

  absl::Status Validate() const;
};

// One cut-off's metrics, means over sources with their 95 % half-widths.
struct RecommendMetrics {
  uint32_t k = 0;
  double recall = 0, recall_ci95 = 0;                // hits / |held out|
  double recall_capped = 0, recall_capped_ci95 = 0;  // hits / min(K, |held out|)
  double ndcg = 0, ndcg_ci95 = 0;
  double hit_rate = 0, hit_rate_ci95 = 0;
};

struct RecommendEvalResult {
  uint64_t sources = 0;           // sources evaluated
  uint64_t sources_held_out = 0;  // sources with held-out destinations
  uint64_t held_out = 0;          // held-out edges of the evaluated sources
  // Held-out pairs dropped because the source has them in another split
  // (of every source with held-out edges, before any sampling).
  uint64_t held_out_known = 0;
  std::vector<Split> left_out;                      // the splits whose links are left out
  uint64_t candidates = 0;                          // nodes of the destination type
  std::vector<RecommendMetrics> model, popularity;  // one per k, as asked
  double seconds = 0;
};

// FailedPrecondition when the graph has no checkpoint or no held-out edge of
// the relation in the split; InvalidArgument for bad options.
absl::StatusOr<RecommendEvalResult> EvaluateRecommendations(const Graph& graph,
                                                            const StoredModel& model,
                                                            const RecommendEvalOptions& options);

}  // namespace ember

#endif  // EMBER_TRAIN_EVAL_RECOMMEND_EVAL_H_
