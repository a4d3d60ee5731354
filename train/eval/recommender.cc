#include "train/eval/recommender.h"

#include <immintrin.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "storage/base/parallel.h"
#include "storage/base/progress.h"
#include "storage/base/status_macros.h"
#include "tbb/enumerable_thread_specific.h"
#include "tbb/task_arena.h"
#include "train/eval/internal/one_blas_thread.h"
#include "train/model/candidate_scorer.h"

namespace ember {
namespace {

// Better: a higher score, then a lower id (deterministic ties). A function
// object, so that the standard algorithms inline it.
struct BetterFn {
  bool operator()(const Scored& a, const Scored& b) const {
    return a.score > b.score || (a.score == b.score && a.id < b.id);
  }
};
constexpr BetterFn Better;

struct Scratch {
  CandidateWorkspace ws;
  std::vector<float> queries, scores;
  std::vector<Scored> passed;     // one row's candidates at or above its bar
  std::vector<float> sample;      // FirstBar's
  std::vector<uint32_t> columns;  // a row's columns at or above its bar
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

void TopKHeap::OfferAll(std::span<const Scored> candidates) {
  if (kept_.capacity() < 2 * size_t{k_}) kept_.reserve(2 * size_t{k_});
  for (const Scored& c : candidates) {
    kept_.push_back(c);
    if (kept_.size() == 2 * size_t{k_}) Cut();
  }
}

void TopKHeap::Cut() {
  std::nth_element(kept_.begin(), kept_.begin() + (k_ - 1), kept_.end(), Better);
  kept_.resize(k_);
  threshold_ = kept_[k_ - 1].score;
  for (const Scored& s : kept_) threshold_ = std::min(threshold_, s.score);
}

std::vector<Scored> TopKHeap::TakeSorted() {
  std::sort(kept_.begin(), kept_.end(), Better);
  if (kept_.size() > k_) kept_.resize(k_);
  std::vector<Scored> out;
  out.swap(kept_);
  return out;
}

namespace {

// A score that at least `need` of the row's scores reach, estimated from a
// strided sample (about 1.5 `need` of them reach it), or -inf when the row
// has fewer than 4 `need` scores or the estimate leaves fewer than `need`:
// a first bar for a fresh heap, so that its first row does not offer
// everything. (With `need` = k plus the candidates the source may not
// take, at least k candidates it may take reach the bar, so nothing below
// it can be among the best k.)
float FirstBar(const float* row, int n, uint64_t need, std::vector<float>* sample) {
  constexpr int kStride = 8;
  const float none = -std::numeric_limits<float>::infinity();
  const uint64_t k = need;
  if (n < 4 * int64_t(k)) return none;
  sample->clear();
  for (int j = 0; j < n; j += kStride) sample->push_back(row[j]);
  const size_t rank = std::min(sample->size() - 1, size_t(k) * 3 / (2 * kStride) + 4);
  std::nth_element(sample->begin(), sample->begin() + rank, sample->end(), std::greater<float>());
  const float bar = (*sample)[rank];
  int reach = 0;
  for (int j = 0; j < n; ++j) reach += row[j] >= bar;
  return reach >= int64_t(k) ? bar : none;
}

// Writes the columns j < n with row[j] >= bar to `out`, ascending; their
// count. AVX-512: 16 compares and one compressed store a step.
size_t ColumnsReaching(const float* row, int n, float bar, uint32_t* out) {
  size_t passed = 0;
  int j = 0;
#if defined(__AVX512F__)
  const __m512 b = _mm512_set1_ps(bar);
  __m512i columns = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i step = _mm512_set1_epi32(16);
  for (; j + 16 <= n; j += 16) {
    const __mmask16 reach = _mm512_cmp_ps_mask(_mm512_loadu_ps(row + j), b, _CMP_GE_OQ);
    _mm512_mask_compressstoreu_epi32(out + passed, reach, columns);
    passed += __builtin_popcount(reach);
    columns = _mm512_add_epi32(columns, step);
  }
#endif
  // Without branches: every column is written, the count advances for
  // those at or above the bar.
  for (; j < n; ++j) {
    out[passed] = j;
    passed += row[j] >= bar;
  }
  return passed;
}

}  // namespace

void RankCandidates(const ModelOptions& model, const float* rel, std::span<const RankQuery> queries,
                    const float* candidates, uint64_t count, uint64_t first_id,
                    std::span<TopKHeap> heaps) {
  tbb::enumerable_thread_specific<Scratch> scratch;
  const int dim = model.dim;
  const size_t blocks = (queries.size() + kRecommendSources - 1) / kRecommendSources;
  ParallelFor(0, blocks, [&](size_t b) {
    Scratch& s = scratch.local();
    const size_t first = b * kRecommendSources;
    const int n = static_cast<int>(std::min<size_t>(kRecommendSources, queries.size() - first));
    s.queries.resize(size_t(n) * dim);
    for (int i = 0; i < n; ++i) {
      std::copy_n(queries[first + i].row, dim, s.queries.data() + size_t(i) * dim);
    }
    for (uint64_t lo = 0; lo < count; lo += kRecommendCandidates) {
      const int c = static_cast<int>(std::min<uint64_t>(kRecommendCandidates, count - lo));
      s.scores.resize(size_t(n) * c);
      ScoreCandidates(model, rel, CorruptSide::kTail, s.queries.data(), n, candidates + lo * dim, c,
                      s.scores.data(), &s.ws);
      s.passed.resize(c);
      s.columns.resize(c);
      for (int i = 0; i < n; ++i) {
        const RankQuery& q = queries[first + i];
        TopKHeap& top = heaps[first + i];
        const float* row = s.scores.data() + size_t(i) * c;
        float bar = top.threshold();
        if (bar == -std::numeric_limits<float>::infinity()) {
          const uint64_t excluded = 1 + (q.skip != nullptr ? q.skip->size() : 0);
          bar = FirstBar(row, c, top.k() + excluded, &s.sample);
        }
        const size_t passed = ColumnsReaching(row, c, bar, s.columns.data());
        // The source itself and what it already has never pass.
        size_t kept = 0;
        const uint64_t id0 = first_id + lo;
        for (size_t t = 0; t < passed; ++t) {
          const uint64_t id = id0 + s.columns[t];
          if (id == q.id ||
              (q.skip != nullptr && std::binary_search(q.skip->begin(), q.skip->end(), id))) {
            continue;
          }
          s.passed[kept++] = {id, row[s.columns[t]]};
        }
        if (kept > 0) top.OfferAll(std::span<const Scored>(s.passed.data(), kept));
        // FirstBar's bar was reached by k candidates the source may take.
        if (bar > top.threshold()) top.RaiseThreshold(bar);
      }
    }
  });
}

absl::Status RecommendOptions::Validate() const {
  if (k == 0) return absl::InvalidArgumentError("recommend: k must be at least 1");
  if (threads < 0) return absl::InvalidArgumentError("recommend: threads must be >= 0");
  std::vector<uint64_t> sorted = sources;
  std::sort(sorted.begin(), sorted.end());
  if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("recommend: source ", *twice, " is given twice"));
  }
  return absl::OkStatus();
}

RelationTypes TypesOfRelation(const Manifest& m, uint32_t relation) {
  return m.typed() ? m.relation_types[relation] : RelationTypes{};
}

absl::StatusOr<RecommendMemory> PlanRecommendMemory(const Manifest& m, int dim,
                                                    const RecommendOptions& options) {
  const RelationTypes types = TypesOfRelation(m, options.relation);
  const uint32_t src_first = m.FirstPartitionOf(types.src);
  const uint32_t src_end = m.EndPartitionOf(types.src);
  const uint32_t dst_first = m.FirstPartitionOf(types.dst);
  const uint32_t dst_end = m.EndPartitionOf(types.dst);
  const uint64_t budget = options.memory_budget;
  const uint64_t row_bytes = uint64_t(dim) * sizeof(float);
  RecommendMemory plan;
  // A heap never keeps more than there are candidates.
  plan.heap_k = static_cast<uint32_t>(std::clamp<uint64_t>(m.NodesOf(types.dst), 1, options.k));
  plan.heap_bytes = 2 * uint64_t{plan.heap_k} * sizeof(Scored);

  uint64_t candidate_bytes = 0, largest_candidate = 0;
  for (uint32_t q = dst_first; q < dst_end; ++q) {
    candidate_bytes += m.partition_sizes[q] * row_bytes;
    largest_candidate = std::max(largest_candidate, m.partition_sizes[q] * row_bytes);
  }
  plan.candidates_resident = budget == 0 || candidate_bytes <= budget / 2;

  // A source partition's rows and known lists: a vector per source and a
  // global id per known edge. The manifest counts train edges per bucket
  // and the other splits' in all; theirs are scaled from train's.
  double known_per_train_edge = 0;
  for (Split split : options.exclude_known) {
    known_per_train_edge += split == Split::kTrain
                                ? 1.0
                                : double(m.edges[split]) / std::max<uint64_t>(1, m.edges.train);
  }
  uint64_t largest_source = 0, most_sources = 0;
  for (uint32_t p = src_first; p < src_end; ++p) {
    uint64_t bytes = m.partition_sizes[p] * row_bytes;
    if (!options.exclude_known.empty()) {
      uint64_t train_edges = 0;
      for (uint32_t q = dst_first; q < dst_end; ++q) {
        const size_t bucket = size_t{p} * m.num_partitions + q;
        if (bucket < m.train_bucket_edges.size()) train_edges += m.train_bucket_edges[bucket];
      }
      bytes += m.partition_sizes[p] * sizeof(std::vector<uint64_t>) +
               static_cast<uint64_t>(known_per_train_edge * double(train_edges)) * sizeof(uint64_t);
    }
    largest_source = std::max(largest_source, bytes);
    most_sources = std::max(most_sources, m.partition_sizes[p]);
  }
  if (!options.sources.empty())
    most_sources = std::min<uint64_t>(most_sources, options.sources.size());
  const uint64_t threads = options.threads > 0
                               ? uint64_t(options.threads)
                               : uint64_t{std::max(1u, std::thread::hardware_concurrency())};
  const uint64_t scratch =
      threads * (uint64_t{kRecommendSources} * kRecommendCandidates * sizeof(float) +
                 uint64_t{kRecommendCandidates} * (sizeof(Scored) + sizeof(uint32_t)) +
                 kRecommendSources * row_bytes);
  // Sources out of id order: finished top Ks wait for those before them.
  const uint64_t reorder = std::is_sorted(options.sources.begin(), options.sources.end())
                               ? 0
                               : options.sources.size() * uint64_t{plan.heap_k} * sizeof(Scored);
  plan.fixed_bytes = largest_source +
                     (plan.candidates_resident ? candidate_bytes : largest_candidate) + scratch +
                     reorder;
  plan.slice_sources = std::max<uint64_t>(1, most_sources);
  if (budget > 0) {
    if (plan.fixed_bytes + plan.heap_bytes > budget) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "recommend: --memory-budget ", tools::HumanBytes(budget),
          " leaves no room for a source's top ", options.k, " (",
          tools::HumanBytes(plan.heap_bytes), " a source: 2 x ", plan.heap_k, " candidates x ",
          sizeof(Scored), " B) beside the ", tools::HumanBytes(plan.fixed_bytes),
          " of rows, known items, score blocks", reorder > 0 ? " and reordering" : "",
          " it holds; raise --memory-budget to at least ",
          tools::HumanBytes(plan.fixed_bytes + plan.heap_bytes), " or lower --k"));
    }
    plan.slice_sources =
        std::min(plan.slice_sources, (budget - plan.fixed_bytes) / plan.heap_bytes);
  }
  plan.peak_bytes = plan.fixed_bytes + plan.slice_sources * plan.heap_bytes;
  return plan;
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
  const uint32_t src_end = m.EndPartitionOf(types.src);
  const uint32_t dst_first = m.FirstPartitionOf(types.dst);
  const uint32_t dst_end = m.EndPartitionOf(types.dst);
  const uint64_t src_base = m.PartitionBase(src_first);
  const uint64_t src_limit = m.PartitionBase(src_end);
  for (uint64_t id : options.sources) {
    if (id < src_base || id >= src_limit) {
      return absl::InvalidArgumentError(absl::StrCat("recommend: node ", id,
                                                     " is not of the source type of relation '",
                                                     m.relations[options.relation], "'"));
    }
  }
  const int dim = model.model.dim;
  ASSIGN_OR_RETURN(const RecommendMemory plan, PlanRecommendMemory(m, dim, options));
  const uint64_t total = options.sources.empty() ? src_limit - src_base : options.sources.size();
  const float* rel =
      model.relations.param_size > 0 ? model.relations.Of(options.relation) : nullptr;
  CandidateRows candidates(graph, model, plan.candidates_resident);

  // The sources by id, each with its place in the order asked for.
  std::vector<std::pair<uint64_t, size_t>> by_id(options.sources.size());
  for (size_t i = 0; i < options.sources.size(); ++i) by_id[i] = {options.sources[i], i};
  std::sort(by_id.begin(), by_id.end());
  // Out of id order: a finished top K waits in `waiting` until every
  // source before it in the order asked for has gone to the sink.
  std::vector<std::optional<std::vector<Scored>>> waiting(
      std::is_sorted(options.sources.begin(), options.sources.end()) ? 0 : options.sources.size());
  size_t next_out = 0;
  auto deliver = [&](size_t place, uint64_t source, std::vector<Scored> top) -> absl::Status {
    if (waiting.empty()) return sink(source, top);
    waiting[place] = std::move(top);
    for (; next_out < waiting.size() && waiting[next_out].has_value(); ++next_out) {
      RETURN_IF_ERROR(sink(options.sources[next_out], *waiting[next_out]));
      waiting[next_out].reset();  // sent: next_out has moved past it
    }
    return absl::OkStatus();
  };

  internal::OneBlasThread one_blas_thread;
  tbb::task_arena arena(options.threads > 0 ? options.threads : tbb::task_arena::automatic);
  uint64_t done = 0;
  size_t next_source = 0;  // into by_id
  for (uint32_t p = src_first; p < src_end; ++p) {
    const uint64_t base = m.PartitionBase(p);
    // This partition's sources, as offsets, with their places.
    std::vector<uint32_t> offsets;
    std::vector<size_t> places;
    if (options.sources.empty()) {
      offsets.resize(m.partition_sizes[p]);
      for (uint32_t i = 0; i < offsets.size(); ++i) offsets[i] = i;
    } else {
      for (; next_source < by_id.size() && by_id[next_source].first < base + m.partition_sizes[p];
           ++next_source) {
        offsets.push_back(static_cast<uint32_t>(by_id[next_source].first - base));
        places.push_back(by_id[next_source].second);
      }
    }
    if (offsets.empty()) continue;
    // Known destinations of each source offset (global ids, sorted).
    const bool exclude = !options.exclude_known.empty();
    std::vector<std::vector<uint64_t>> known(exclude ? m.partition_sizes[p] : 0);
    if (exclude) {
      for (Split split : options.exclude_known) {
        for (uint32_t q = dst_first; q < dst_end; ++q) {
          const uint64_t dst_base = m.PartitionBase(q);
          RETURN_IF_ERROR(
              graph.ForEachEdgeBlock(split, p, q, [&](std::span<const Edge> block) -> absl::Status {
                for (const Edge& e : block) {
                  if (e.rel == options.relation) known[e.src].push_back(dst_base + e.dst);
                }
                return absl::OkStatus();
              }));
        }
      }
      for (std::vector<uint64_t>& k : known) {
        std::sort(k.begin(), k.end());
        k.erase(std::unique(k.begin(), k.end()), k.end());
      }
    }
    ASSIGN_OR_RETURN(const std::vector<float> source_rows,
                     LoadPartitionEmbeddings(graph, model, p));
    // Slices of sources whose heaps fit the budget together.
    for (size_t lo = 0; lo < offsets.size(); lo += plan.slice_sources) {
      const size_t n = std::min<size_t>(plan.slice_sources, offsets.size() - lo);
      std::vector<RankQuery> queries(n);
      for (size_t i = 0; i < n; ++i) {
        queries[i].row = source_rows.data() + uint64_t(offsets[lo + i]) * dim;
        queries[i].id = base + offsets[lo + i];
        queries[i].skip = exclude ? &known[offsets[lo + i]] : nullptr;
      }
      std::vector<TopKHeap> tops(n, TopKHeap(plan.heap_k));
      for (uint32_t q = dst_first; q < dst_end; ++q) {
        if (m.partition_sizes[q] == 0) continue;
        ASSIGN_OR_RETURN(const std::vector<float>* candidate_rows, candidates.Get(q));
        arena.execute([&] {
          RankCandidates(model.model, rel, queries, candidate_rows->data(), m.partition_sizes[q],
                         m.PartitionBase(q), tops);
        });
      }
      for (size_t i = 0; i < n; ++i) {
        RETURN_IF_ERROR(deliver(places.empty() ? 0 : places[lo + i], base + offsets[lo + i],
                                tops[i].TakeSorted()));
      }
      done += n;
      if (options.progress) options.progress(done, total);
    }
  }
  return absl::OkStatus();
}

}  // namespace ember
