#include "train/eval/recommender.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "storage/base/parallel.h"
#include "storage/base/status_macros.h"
#include "tbb/enumerable_thread_specific.h"
#include "tbb/task_arena.h"
#include "train/eval/internal/one_blas_thread.h"
#include "train/model/candidate_scorer.h"

namespace ember {
namespace {

// Better: a higher score, then a lower id (deterministic ties).
bool Better(const Scored& a, const Scored& b) {
  return a.score > b.score || (a.score == b.score && a.id < b.id);
}

// The best `k` candidates seen, as a heap whose front is the worst kept.
class TopK {
 public:
  explicit TopK(uint32_t k) : k_(k) { heap_.reserve(k); }

  // Whether a candidate of this score could enter (ids aside).
  bool Admits(float score) const { return heap_.size() < k_ || score >= heap_.front().score; }
  void Offer(Scored s) {
    if (heap_.size() < k_) {
      heap_.push_back(s);
      std::push_heap(heap_.begin(), heap_.end(), Better);
    } else if (Better(s, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), Better);
      heap_.back() = s;
      std::push_heap(heap_.begin(), heap_.end(), Better);
    }
  }
  // Best first.
  std::vector<Scored> Sorted() && {
    std::sort(heap_.begin(), heap_.end(), Better);
    return std::move(heap_);
  }

 private:
  uint32_t k_;
  std::vector<Scored> heap_;  // a heap under Better: front is the worst
};

struct Scratch {
  CandidateWorkspace ws;
  std::vector<float> queries, scores;
};

// Candidate rows: partition q's, held once loaded (all of them when they
// fit, else the last one asked for).
class CandidateRows {
 public:
  CandidateRows(const Graph& graph, const StoredModel& model, bool keep_all)
      : graph_(graph), model_(model), keep_all_(keep_all) {}

  absl::StatusOr<const std::vector<float>*> Get(uint32_t q) {
    auto it = std::find_if(held_.begin(), held_.end(), [q](const auto& h) { return h.first == q; });
    if (it != held_.end()) return &it->second;
    if (!keep_all_) held_.clear();
    ASSIGN_OR_RETURN(std::vector<float> rows, LoadPartitionEmbeddings(graph_, model_, q));
    held_.emplace_back(q, std::move(rows));
    return &held_.back().second;
  }

 private:
  const Graph& graph_;
  const StoredModel& model_;
  const bool keep_all_;
  std::vector<std::pair<uint32_t, std::vector<float>>> held_;
};

}  // namespace

absl::Status RecommendOptions::Validate() const {
  if (k == 0) return absl::InvalidArgumentError("recommend: k must be at least 1");
  if (threads < 0) return absl::InvalidArgumentError("recommend: threads must be >= 0");
  if (!std::is_sorted(sources.begin(), sources.end())) {
    return absl::InvalidArgumentError("recommend: sources must be ascending");
  }
  return absl::OkStatus();
}

RelationTypes TypesOfRelation(const Manifest& m, uint32_t relation) {
  return m.typed() ? m.relation_types[relation] : RelationTypes{};
}

absl::Status Recommend(
    const Graph& graph, const StoredModel& model, const RecommendOptions& options,
    const std::function<absl::Status(uint64_t source, std::span<const Scored> top)>& sink) {
  RETURN_IF_ERROR(options.Validate());
  const Manifest& m = graph.manifest();
  if (model.version == 0 || model.partition_versions.size() != m.num_partitions) {
    return absl::FailedPreconditionError(absl::StrCat(
        graph.dir(), " has no trained embeddings yet; run `ember train ", graph.dir(), "` first"));
  }
  if (options.relation >= m.relations.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("recommend: relation ", options.relation, " of ", m.relations.size()));
  }
  const RelationTypes types = TypesOfRelation(m, options.relation);
  const uint32_t src_first = m.FirstPartitionOf(types.src);
  const uint32_t src_end = src_first + m.PartitionsOf(types.src);
  const uint32_t dst_first = m.FirstPartitionOf(types.dst);
  const uint32_t dst_end = dst_first + m.PartitionsOf(types.dst);
  const uint64_t src_base = m.PartitionBase(src_first);
  const uint64_t src_limit = m.PartitionBase(src_end);
  for (uint64_t id : options.sources) {
    if (id < src_base || id >= src_limit) {
      return absl::InvalidArgumentError(absl::StrCat("recommend: node ", id,
                                                     " is not of the source type of relation '",
                                                     m.relations[options.relation], "'"));
    }
  }
  const uint64_t total = options.sources.empty() ? src_limit - src_base : options.sources.size();
  const int dim = model.model.dim;
  const float* rel =
      model.relations.param_size > 0 ? model.relations.Of(options.relation) : nullptr;
  // The candidates' rows stay loaded when they fit half the budget.
  uint64_t candidate_bytes = 0;
  for (uint32_t q = dst_first; q < dst_end; ++q) {
    candidate_bytes += m.partition_sizes[q] * uint64_t(dim) * sizeof(float);
  }
  CandidateRows candidates(
      graph, model, options.memory_budget == 0 || candidate_bytes <= options.memory_budget / 2);

  internal::OneBlasThread one_blas_thread;
  tbb::task_arena arena(options.threads > 0 ? options.threads : tbb::task_arena::automatic);
  tbb::enumerable_thread_specific<Scratch> scratch;
  uint64_t done = 0;
  size_t next_source = 0;  // into options.sources
  for (uint32_t p = src_first; p < src_end; ++p) {
    const uint64_t base = m.PartitionBase(p);
    // This partition's sources, as offsets.
    std::vector<uint32_t> offsets;
    if (options.sources.empty()) {
      offsets.resize(m.partition_sizes[p]);
      for (uint32_t i = 0; i < offsets.size(); ++i) offsets[i] = i;
    } else {
      for (; next_source < options.sources.size() &&
             options.sources[next_source] < base + m.partition_sizes[p];
           ++next_source) {
        offsets.push_back(static_cast<uint32_t>(options.sources[next_source] - base));
      }
    }
    if (offsets.empty()) continue;
    // Known destinations of each source offset (global ids, sorted).
    std::vector<std::vector<uint64_t>> known(options.exclude_known ? m.partition_sizes[p] : 0);
    if (options.exclude_known) {
      for (uint32_t q = dst_first; q < dst_end; ++q) {
        const uint64_t dst_base = m.PartitionBase(q);
        RETURN_IF_ERROR(graph.ForEachEdgeBlock(Split::kTrain, p, q,
                                               [&](std::span<const Edge> block) -> absl::Status {
                                                 for (const Edge& e : block) {
                                                   if (e.rel == options.relation)
                                                     known[e.src].push_back(dst_base + e.dst);
                                                 }
                                                 return absl::OkStatus();
                                               }));
      }
      for (std::vector<uint64_t>& k : known) std::sort(k.begin(), k.end());
    }
    ASSIGN_OR_RETURN(const std::vector<float> source_rows,
                     LoadPartitionEmbeddings(graph, model, p));
    std::vector<TopK> tops(offsets.size(), TopK(options.k));
    const size_t blocks = (offsets.size() + kRecommendSources - 1) / kRecommendSources;
    for (uint32_t q = dst_first; q < dst_end; ++q) {
      const uint64_t rows = m.partition_sizes[q];
      if (rows == 0) continue;
      ASSIGN_OR_RETURN(const std::vector<float>* candidate_rows, candidates.Get(q));
      const uint64_t dst_base = m.PartitionBase(q);
      arena.execute([&] {
        ParallelFor(0, blocks, [&](size_t b) {
          Scratch& s = scratch.local();
          const size_t first = b * kRecommendSources;
          const int n =
              static_cast<int>(std::min<size_t>(kRecommendSources, offsets.size() - first));
          s.queries.resize(size_t(n) * dim);
          for (int i = 0; i < n; ++i) {
            std::copy_n(source_rows.data() + uint64_t(offsets[first + i]) * dim, dim,
                        s.queries.data() + size_t(i) * dim);
          }
          for (uint64_t lo = 0; lo < rows; lo += kRecommendCandidates) {
            const int c = static_cast<int>(std::min<uint64_t>(kRecommendCandidates, rows - lo));
            s.scores.resize(size_t(n) * c);
            ScoreCandidates(model.model, rel, CorruptSide::kTail, s.queries.data(), n,
                            candidate_rows->data() + lo * dim, c, s.scores.data(), &s.ws);
            for (int i = 0; i < n; ++i) {
              TopK& top = tops[first + i];
              const float* row = s.scores.data() + size_t(i) * c;
              const std::vector<uint64_t>* skip =
                  options.exclude_known ? &known[offsets[first + i]] : nullptr;
              const uint64_t self = base + offsets[first + i];
              for (int j = 0; j < c; ++j) {
                if (!top.Admits(row[j])) continue;
                const uint64_t id = dst_base + lo + j;
                if (id == self ||
                    (skip != nullptr && std::binary_search(skip->begin(), skip->end(), id))) {
                  continue;
                }
                top.Offer({id, row[j]});
              }
            }
          }
        });
      });
    }
    for (size_t i = 0; i < offsets.size(); ++i) {
      const std::vector<Scored> best = std::move(tops[i]).Sorted();
      RETURN_IF_ERROR(sink(base + offsets[i], best));
    }
    done += offsets.size();
    if (options.progress) options.progress(done, total);
  }
  return absl::OkStatus();
}

}  // namespace ember
