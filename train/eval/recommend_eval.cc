#include "train/eval/recommend_eval.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "storage/base/status_macros.h"
#include "train/eval/recommender.h"

namespace ember {
namespace {

// Running sums of one metric over sources.
struct MeanSum {
  double sum = 0, sum_sq = 0;
  void Add(double x) {
    sum += x;
    sum_sq += x * x;
  }
  // Mean and 95 % half-width over n values.
  std::pair<double, double> Of(uint64_t n) const {
    if (n == 0) return {0, 0};
    const double mean = sum / n;
    const double var = n > 1 ? std::max(0.0, (sum_sq - n * mean * mean) / (n - 1)) : 0;
    return {mean, 1.96 * std::sqrt(var / n)};
  }
};

struct CutSums {
  MeanSum recall, recall_capped, ndcg, hit;
};

// Adds one source's ranking (best first) against its held-out set (sorted)
// to the sums of every cut-off.
void Score(std::span<const uint64_t> ranked, const std::vector<uint64_t>& held_out,
           const std::vector<uint32_t>& ks, std::vector<CutSums>* sums) {
  for (size_t c = 0; c < ks.size(); ++c) {
    const uint32_t k = ks[c];
    double dcg = 0, ideal = 0;
    uint64_t hits = 0;
    for (size_t i = 0; i < ranked.size() && i < k; ++i) {
      if (std::binary_search(held_out.begin(), held_out.end(), ranked[i])) {
        ++hits;
        dcg += 1.0 / std::log2(double(i) + 2);
      }
    }
    for (size_t i = 0; i < std::min<size_t>(k, held_out.size()); ++i) {
      ideal += 1.0 / std::log2(double(i) + 2);
    }
    (*sums)[c].recall.Add(double(hits) / held_out.size());
    (*sums)[c].recall_capped.Add(double(hits) / std::min<size_t>(k, held_out.size()));
    (*sums)[c].ndcg.Add(ideal > 0 ? dcg / ideal : 0);
    (*sums)[c].hit.Add(hits > 0 ? 1 : 0);
  }
}

std::vector<RecommendMetrics> Metrics(const std::vector<uint32_t>& ks,
                                      const std::vector<CutSums>& sums, uint64_t n) {
  std::vector<RecommendMetrics> out;
  for (size_t c = 0; c < ks.size(); ++c) {
    RecommendMetrics r;
    r.k = ks[c];
    std::tie(r.recall, r.recall_ci95) = sums[c].recall.Of(n);
    std::tie(r.recall_capped, r.recall_capped_ci95) = sums[c].recall_capped.Of(n);
    std::tie(r.ndcg, r.ndcg_ci95) = sums[c].ndcg.Of(n);
    std::tie(r.hit_rate, r.hit_rate_ci95) = sums[c].hit.Of(n);
    out.push_back(r);
  }
  return out;
}

}  // namespace

absl::Status RecommendEvalOptions::Validate() const {
  if (ks.empty()) return absl::InvalidArgumentError("recommend eval: give at least one K");
  for (uint32_t k : ks) {
    if (k == 0) return absl::InvalidArgumentError("recommend eval: every K must be at least 1");
  }
  if (split == Split::kTrain) {
    return absl::InvalidArgumentError(
        "recommend eval: the train split is what is left out; evaluate valid or test");
  }
  if (threads < 0) return absl::InvalidArgumentError("recommend eval: threads must be >= 0");
  return absl::OkStatus();
}

absl::StatusOr<RecommendEvalResult> EvaluateRecommendations(const Graph& graph,
                                                            const StoredModel& model,
                                                            const RecommendEvalOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const absl::Time start = absl::Now();
  const Manifest& m = graph.manifest();
  if (options.relation >= m.relations.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("recommend eval: relation ", options.relation, " of ", m.relations.size()));
  }
  const RelationTypes types = TypesOfRelation(m, options.relation);
  const uint32_t src_first = m.FirstPartitionOf(types.src);
  const uint32_t src_end = m.EndPartitionOf(types.src);
  const uint32_t dst_first = m.FirstPartitionOf(types.dst);
  const uint32_t dst_end = m.EndPartitionOf(types.dst);
  const uint64_t dst_base = m.PartitionBase(dst_first);
  const uint64_t candidates = m.NodesOf(types.dst);
  // Each edge of the relation in the (src type, dst type) buckets of a split.
  auto for_each_edge = [&](Split split, auto&& fn) -> absl::Status {
    for (uint32_t p = src_first; p < src_end; ++p) {
      const uint64_t src_base = m.PartitionBase(p);
      for (uint32_t q = dst_first; q < dst_end; ++q) {
        const uint64_t base = m.PartitionBase(q);
        RETURN_IF_ERROR(
            graph.ForEachEdgeBlock(split, p, q, [&](std::span<const Edge> block) -> absl::Status {
              for (const Edge& e : block) {
                if (e.rel == options.relation) fn(src_base + e.src, base + e.dst);
              }
              return absl::OkStatus();
            }));
      }
    }
    return absl::OkStatus();
  };

  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> held_out;
  RETURN_IF_ERROR(
      for_each_edge(options.split, [&](uint64_t s, uint64_t d) { held_out[s].push_back(d); }));
  if (held_out.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("split ", std::string(SplitName(options.split)), " of ", graph.dir(),
                     " has no edge of relation '", m.relations[options.relation], "' to evaluate"));
  }
  RecommendEvalResult result;
  result.candidates = candidates;
  for (Split split : kAllSplits) {
    if (split != options.split) result.left_out.push_back(split);
  }
  for (auto& [s, d] : held_out) {
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
  }

  // Popularity (train edges into each destination) and each held-out
  // source's known destinations (every other split: what Recommend leaves
  // out), in one pass over each split's buckets.
  std::vector<uint64_t> train_count(candidates, 0);
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> known;
  for (const auto& [s, d] : held_out) known[s];
  for (Split split : result.left_out) {
    RETURN_IF_ERROR(for_each_edge(split, [&](uint64_t s, uint64_t d) {
      if (split == Split::kTrain) ++train_count[d - dst_base];
      if (auto it = known.find(s); it != known.end()) it->second.push_back(d);
    }));
  }
  for (auto& [s, d] : known) {
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
  }
  // A held-out pair the source already has elsewhere is left out of its
  // ranking: it can be neither hit nor missed.
  std::vector<uint64_t> sources;
  for (auto& [s, d] : held_out) {
    const std::vector<uint64_t>& skip = known[s];
    const size_t before = d.size();
    d.erase(
        std::remove_if(d.begin(), d.end(),
                       [&](uint64_t x) { return std::binary_search(skip.begin(), skip.end(), x); }),
        d.end());
    result.held_out_known += before - d.size();
    if (!d.empty()) sources.push_back(s);
  }
  if (sources.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("every held-out edge of relation '", m.relations[options.relation],
                     "' in split ", std::string(SplitName(options.split)), " of ", graph.dir(),
                     " is also in another split: nothing to evaluate"));
  }
  result.sources_held_out = sources.size();
  std::sort(sources.begin(), sources.end());
  if (options.max_sources > 0 && options.max_sources < sources.size()) {
    std::mt19937_64 rng(options.seed ^ 0x2ec0e11dULL);
    std::shuffle(sources.begin(), sources.end(), rng);
    sources.resize(options.max_sources);
    std::sort(sources.begin(), sources.end());
  }
  result.sources = sources.size();
  for (uint64_t s : sources) result.held_out += held_out[s].size();

  std::vector<uint64_t> by_popularity(candidates);
  for (uint64_t i = 0; i < candidates; ++i) by_popularity[i] = dst_base + i;
  std::stable_sort(by_popularity.begin(), by_popularity.end(), [&](uint64_t a, uint64_t b) {
    return train_count[a - dst_base] > train_count[b - dst_base];
  });

  const uint32_t max_k = *std::max_element(options.ks.begin(), options.ks.end());
  std::vector<CutSums> model_sums(options.ks.size()), popular_sums(options.ks.size());
  std::vector<uint64_t> ranked;
  for (uint64_t s : sources) {
    const std::vector<uint64_t>& skip = known[s];
    ranked.clear();
    for (uint64_t d : by_popularity) {
      if (ranked.size() == max_k) break;
      if (d != s && !std::binary_search(skip.begin(), skip.end(), d)) ranked.push_back(d);
    }
    Score(ranked, held_out[s], options.ks, &popular_sums);
  }

  RecommendOptions r;
  r.relation = options.relation;
  r.k = max_k;
  r.exclude_known = result.left_out;
  r.sources = sources;
  r.threads = options.threads;
  r.memory_budget = options.memory_budget;
  r.progress = options.progress;
  RETURN_IF_ERROR(
      Recommend(graph, model, r, [&](uint64_t source, std::span<const Scored> top) -> absl::Status {
        ranked.clear();
        for (const Scored& t : top) ranked.push_back(t.id);
        Score(ranked, held_out[source], options.ks, &model_sums);
        return absl::OkStatus();
      }));
  result.model = Metrics(options.ks, model_sums, sources.size());
  result.popularity = Metrics(options.ks, popular_sums, sources.size());
  result.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return result;
}

}  // namespace ember
