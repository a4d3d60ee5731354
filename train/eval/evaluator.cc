#include "train/eval/evaluator.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "partition/train_memory.h"
#include "storage/base/parallel.h"
#include "storage/base/status_macros.h"
#include "tbb/enumerable_thread_specific.h"
#include "tbb/task_arena.h"
#include "train/eval/internal/one_blas_thread.h"
#include "train/eval/rank_metrics.h"
#include "train/model/candidate_scorer.h"

namespace ember {
namespace {

// Queries scored together (one GEMM's rows) and candidates per GEMM. Fixed,
// so that every score is computed by the same GEMM shapes whatever the
// number of threads.
constexpr int kQueryChunk = 128;
constexpr int kCandidateBlock = 2048;
// Default batch: its endpoint rows take about this many bytes.
constexpr uint64_t kBatchRowBytes = uint64_t{256} << 20;

using EmbeddingFn = std::function<absl::StatusOr<const float*>(uint32_t)>;

// One evaluated edge, with both endpoints located.
struct EvalEdge {
  uint32_t src_part, src_off, rel, dst_part, dst_off;
  uint64_t src_id, dst_id;  // global ids
};

// A key of a filter set: (query node's global id, relation).
using NodeRel = std::pair<uint64_t, uint32_t>;
// Sorted, distinct global ids of the true answers of a (node, relation).
using FilterMap = absl::flat_hash_map<NodeRel, std::vector<uint64_t>>;

// Counters of one query, summed over candidate blocks (integers, so the sum
// does not depend on the order the blocks finish in).
enum Counter {
  kAllGreater = 0,  // candidates scoring > the true score
  kAllEqual,        // ... == the true score
  kSelfGreater,     // of those, candidates that are the true node itself
  kSelfEqual,
  kSelfCount,       // candidates that are the true node itself
  kFilterGreater,   // candidates in the filter set (other than the true node)
  kFilterEqual,
  kFilterCount,
  kNumCounters
};

// A set of candidate rows with their global ids, ascending. `ids == null`
// means the ids are first_id, first_id + 1, ...
struct CandidateSet {
  const float* rows = nullptr;
  uint64_t size = 0;
  const uint64_t* ids = nullptr;
  uint64_t first_id = 0;
  uint32_t type = 0;  // the node type of every candidate (0: untyped)

  uint64_t IdAt(uint64_t k) const { return ids ? ids[k] : first_id + k; }
  // Positions in [lo, hi) holding `id`.
  std::pair<uint64_t, uint64_t> Find(uint64_t id, uint64_t lo,
                                     uint64_t hi) const {
    if (ids == nullptr) {
      if (id < first_id + lo || id >= first_id + hi) return {lo, lo};
      return {id - first_id, id - first_id + 1};
    }
    auto range = std::equal_range(ids + lo, ids + hi, id);
    return {static_cast<uint64_t>(range.first - ids),
            static_cast<uint64_t>(range.second - ids)};
  }
};

// Per-thread buffers.
struct Scratch {
  CandidateWorkspace ws;
  std::vector<float> queries, trues, scores;
};

// `count` distinct positions in [0, total), sorted (Floyd's algorithm).
std::vector<uint64_t> SamplePositions(uint64_t total, uint64_t count,
                                      uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5eed0fed6e5a11ULL);
  absl::flat_hash_set<uint64_t> chosen;
  chosen.reserve(count);
  for (uint64_t j = total - count; j < total; ++j) {
    const uint64_t t = rng() % (j + 1);
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  std::vector<uint64_t> out(chosen.begin(), chosen.end());
  std::sort(out.begin(), out.end());
  return out;
}

class EvalRun {
 public:
  EvalRun(const Graph& graph, const ModelOptions& model, const RelationParams& relations,
          const EmbeddingFn& embeddings, const EvalOptions& options, tbb::task_arena* arena)
      : graph_(graph),
        manifest_(graph.manifest()),
        model_(model),
        relations_(relations),
        embeddings_(embeddings),
        options_(options),
        arena_(arena),
        dim_(model.dim),
        op_size_(RelationParamSize(model.op, model.dim)),
        adjoint_(SupportsMixedChunks(model)) {
    for (uint32_t p = 0; p < manifest_.num_partitions; ++p) {
      bases_.push_back(manifest_.PartitionBase(p));
    }
    const uint32_t types = std::max<size_t>(1, manifest_.node_types.size());
    for (uint32_t t = 0; t < types; ++t) {
      type_base_.push_back(bases_[manifest_.FirstPartitionOf(t)]);
      type_nodes_.push_back(manifest_.NodesOf(t));
    }
    scoring_model_ = model;
    if (adjoint_) {
      // Queries carry their relation (LoadQueries): candidates are scored
      // as plain tail candidates.
      scoring_model_.op = Operator::kNone;
      scoring_model_.reciprocal = false;
      if (!model.reciprocal) {
        const size_t p = op_size_;
        adjoint_params_.resize(size_t{relations_.num_relations} * p);
        for (uint32_t r = 0; r < relations_.num_relations; ++r) {
          AdjointRelationParams(model.op, relations_.Of(r), static_cast<int>(p),
                                adjoint_params_.data() + r * p);
        }
      }
    }
  }

  absl::StatusOr<EvalResult> Run() {
    const absl::Time start = absl::Now();
    const uint64_t total = manifest_.edges[options_.split];
    if (total == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("split ", std::string(SplitName(options_.split)), " of ",
                       graph_.dir(), " has no edges"));
    }
    if (options_.max_edges > 0 && options_.max_edges < total) {
      positions_ = SamplePositions(total, options_.max_edges, options_.seed);
      sampled_ = true;
    }
    // Candidates per query: every node of the answer's type (or N sampled
    // ones); the estimate of an untyped graph's count for a typed one.
    pairs_total_ = (sampled_ ? positions_.size() : total) *
                   (options_.negatives > 0 ? options_.negatives : manifest_.num_nodes);
    if (options_.by_relation) by_relation_.resize(manifest_.relations.size());
    batch_edges_ = options_.batch_edges;  // set by PlanEvalMemory

    // Walk the split's buckets in order, picking sampled positions.
    uint64_t pos = 0;
    size_t next = 0;
    const uint32_t P = manifest_.num_partitions;
    for (uint32_t i = 0; i < P; ++i) {
      for (uint32_t j = 0; j < P; ++j) {
        if (sampled_ && next == positions_.size()) break;
        RETURN_IF_ERROR(graph_.ForEachEdgeBlock(
            options_.split, i, j,
            [&](std::span<const Edge> block) -> absl::Status {
              for (const Edge& e : block) {
                if (sampled_) {
                  if (next == positions_.size() || positions_[next] != pos) {
                    ++pos;
                    continue;
                  }
                  ++next;
                }
                ++pos;
                batch_.push_back(EvalEdge{i, e.src, e.rel, j, e.dst,
                                          bases_[i] + e.src,
                                          bases_[j] + e.dst});
                if (batch_.size() >= batch_edges_) RETURN_IF_ERROR(RunBatch());
              }
              return absl::OkStatus();
            }));
      }
    }
    if (!batch_.empty()) RETURN_IF_ERROR(RunBatch());
    if (edges_ == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("split ", std::string(SplitName(options_.split)), " of ",
                       graph_.dir(), " has no edges"));
    }
    EvalResult result;
    result.filtered = filtered_.Metrics();
    result.raw = raw_.Metrics();
    for (const RankSums& sums : by_relation_) {
      result.by_relation.push_back(sums.Metrics());
    }
    result.edge_rr = std::move(edge_rr_);
    result.edges = edges_;
    result.split_edges = total;
    result.num_nodes = manifest_.num_nodes;
    result.typed = manifest_.typed();
    result.negatives = options_.negatives;
    result.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    return result;
  }

 private:
  uint32_t PartitionOf(uint64_t id) const {
    return static_cast<uint32_t>(
        std::upper_bound(bases_.begin(), bases_.end(), id) - bases_.begin() -
        1);
  }

  absl::Status RunBatch();
  absl::Status GatherRows();
  absl::Status BuildFilters();
  void ScoreTrue();
  // Ranks the batch against `set` in slices of 65536 candidates
  // (CountCandidates), reporting progress after each.
  void RankAgainst(const CandidateSet& set);
  void CountCandidates(const CandidateSet& set);

  // Query q of the batch: edge q / 2; q even: tail query (corrupt the
  // destination), q odd: head query.
  static CorruptSide SideOf(uint64_t q) {
    return q % 2 == 0 ? CorruptSide::kTail : CorruptSide::kHead;
  }
  const float* QueryRow(uint64_t q) const {
    return (q % 2 == 0 ? src_rows_ : dst_rows_).data() + (q / 2) * dim_;
  }
  // Writes the rows of queries order_[begin, end) to `out` as ScoreChunk
  // scores them: with adjoint_, query q's row with its relation applied
  // (op_r(e_s) for a tail query; op*_r(e_d) for a head query, or
  // op_{r⁻¹}(e_d) for a reciprocal model: (?, r, d) as (d, r⁻¹, ?)), so
  // that score = cmp(row, candidate) on either side (every comparator is
  // symmetric); otherwise the query rows.
  void LoadQueries(size_t begin, size_t end, float* out) const;
  // Scores the queries of `rows` (LoadQueries of order_ from `begin`, nq
  // of them) against nc candidates into `scores` (nq × nc).
  void ScoreChunk(size_t begin, const float* rows, int nq, const float* candidates, int nc,
                  float* scores, CandidateWorkspace* ws) const;
  const float* TrueRow(uint64_t q) const {
    return (q % 2 == 0 ? dst_rows_ : src_rows_).data() + (q / 2) * dim_;
  }
  uint64_t TrueId(uint64_t q) const {
    const EvalEdge& e = batch_[q / 2];
    return q % 2 == 0 ? e.dst_id : e.src_id;
  }
  // The node type query q's candidates are of: the relation's destination
  // type for a tail query, its source type for a head query (0 untyped).
  uint32_t CandidateType(uint64_t q) const {
    if (!manifest_.typed()) return 0;
    const RelationTypes& t = manifest_.relation_types[batch_[q / 2].rel];
    return q % 2 == 0 ? t.dst : t.src;
  }

  const Graph& graph_;
  const Manifest& manifest_;
  const ModelOptions& model_;
  const RelationParams& relations_;
  const EmbeddingFn& embeddings_;
  const EvalOptions& options_;
  tbb::task_arena* arena_;
  const int dim_;
  const int op_size_;  // RelationParamSize: floats of w_r (and of w_{r⁻¹})
  // Where the model has an adjoint form or is reciprocal
  // (SupportsMixedChunks), queries of every relation and side share each
  // GEMM: scoring_model_ is the model with op none, and adjoint_params_
  // the relations' adjoint parameters (none for a reciprocal model, whose
  // head queries take w_{r⁻¹} from its relation records). Otherwise chunks
  // hold queries of one side and relation, scored with the model itself.
  const bool adjoint_;
  ModelOptions scoring_model_;
  std::vector<float> adjoint_params_;
  std::vector<uint64_t> bases_;
  // Per node type: the global id of its first node, and its nodes (one
  // type spanning every node when untyped).
  std::vector<uint64_t> type_base_, type_nodes_;

  std::vector<uint64_t> positions_;  // sampled positions in bucket order
  bool sampled_ = false;
  uint64_t batch_edges_ = 0;
  uint64_t batches_ = 0;
  uint64_t pairs_done_ = 0, pairs_total_ = 0;  // EvalOptions::progress
  uint64_t edges_ = 0;
  RankSums filtered_, raw_;
  std::vector<RankSums> by_relation_;  // filtered; sized when asked for
  std::vector<float> edge_rr_;         // EvalOptions::edge_rr

  // The current batch.
  std::vector<EvalEdge> batch_;
  std::vector<float> src_rows_, dst_rows_;  // batch size × dim
  // Sampled negatives, ascending within each type's run: type t's are
  // pool_ids_[pool_begin_[t], pool_begin_[t + 1]).
  std::vector<uint64_t> pool_ids_;
  std::vector<size_t> pool_begin_;
  std::vector<float> pool_rows_;
  FilterMap tails_, heads_;
  // Per query: its filter set (null: none), true score, counters.
  std::vector<const std::vector<uint64_t>*> filter_of_;
  std::vector<float> true_score_;
  std::unique_ptr<std::atomic<uint64_t>[]> counters_;
  // Chunks of at most kQueryChunk queries; without adjoint_, runs of
  // queries with the same side and relation.
  // Queries by (candidate type, then without adjoint_ side and relation,
  // then q); a chunk's queries share their candidate type.
  std::vector<uint64_t> order_;
  std::vector<size_t> chunk_begin_;     // into order_, plus the end
  tbb::enumerable_thread_specific<Scratch> scratch_;
};

absl::Status EvalRun::GatherRows() {
  // Requests (partition, offset, destination row), served one partition at
  // a time in ascending order.
  struct Request {
    uint32_t part, off;
    float* dst;
  };
  const size_t n = batch_.size();
  src_rows_.resize(n * dim_);
  dst_rows_.resize(n * dim_);
  std::vector<Request> requests;
  requests.reserve(2 * n + pool_ids_.size());
  for (size_t e = 0; e < n; ++e) {
    requests.push_back({batch_[e].src_part, batch_[e].src_off,
                        src_rows_.data() + e * dim_});
    requests.push_back({batch_[e].dst_part, batch_[e].dst_off,
                        dst_rows_.data() + e * dim_});
  }
  pool_rows_.resize(pool_ids_.size() * dim_);
  for (size_t k = 0; k < pool_ids_.size(); ++k) {
    const uint32_t p = PartitionOf(pool_ids_[k]);
    requests.push_back({p, static_cast<uint32_t>(pool_ids_[k] - bases_[p]),
                        pool_rows_.data() + k * dim_});
  }
  std::stable_sort(requests.begin(), requests.end(),
                   [](const Request& a, const Request& b) {
                     return a.part < b.part;
                   });
  for (size_t r = 0; r < requests.size();) {
    const uint32_t p = requests[r].part;
    ASSIGN_OR_RETURN(const float* rows, embeddings_(p));
    for (; r < requests.size() && requests[r].part == p; ++r) {
      std::memcpy(requests[r].dst, rows + uint64_t{requests[r].off} * dim_,
                  sizeof(float) * dim_);
    }
  }
  return absl::OkStatus();
}

absl::Status EvalRun::BuildFilters() {
  tails_.clear();
  heads_.clear();
  const uint32_t P = manifest_.num_partitions;
  std::vector<char> tail_part(P, 0), head_part(P, 0);
  for (const EvalEdge& e : batch_) {
    tails_.try_emplace(NodeRel{e.src_id, e.rel});
    heads_.try_emplace(NodeRel{e.dst_id, e.rel});
    tail_part[e.src_part] = 1;
    head_part[e.dst_part] = 1;
  }
  // One scan over every bucket that can hold a true tail of a batch source
  // (row of a source partition) or a true head of a batch destination.
  for (Split split : kAllSplits) {
    for (uint32_t a = 0; a < P; ++a) {
      for (uint32_t b = 0; b < P; ++b) {
        if (!tail_part[a] && !head_part[b]) continue;
        const bool want_tails = tail_part[a], want_heads = head_part[b];
        RETURN_IF_ERROR(graph_.ForEachEdgeBlock(
            split, a, b, [&](std::span<const Edge> block) -> absl::Status {
              for (const Edge& e : block) {
                const uint64_t s = bases_[a] + e.src, d = bases_[b] + e.dst;
                if (want_tails) {
                  auto it = tails_.find(NodeRel{s, e.rel});
                  if (it != tails_.end()) it->second.push_back(d);
                }
                if (want_heads) {
                  auto it = heads_.find(NodeRel{d, e.rel});
                  if (it != heads_.end()) it->second.push_back(s);
                }
              }
              return absl::OkStatus();
            }));
      }
    }
  }
  std::vector<std::vector<uint64_t>*> lists;
  for (auto* m : {&tails_, &heads_}) {
    for (auto& [key, ids] : *m) lists.push_back(&ids);
  }
  arena_->execute([&] {
    ParallelFor(0, lists.size(), [&](size_t k) {
      std::vector<uint64_t>& ids = *lists[k];
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    });
  });
  const size_t q_count = 2 * batch_.size();
  filter_of_.assign(q_count, nullptr);
  for (size_t e = 0; e < batch_.size(); ++e) {
    const EvalEdge& edge = batch_[e];
    filter_of_[2 * e] = &tails_.find(NodeRel{edge.src_id, edge.rel})->second;
    filter_of_[2 * e + 1] =
        &heads_.find(NodeRel{edge.dst_id, edge.rel})->second;
  }
  return absl::OkStatus();
}

void EvalRun::LoadQueries(size_t begin, size_t end, float* out) const {
  for (size_t k = begin; k < end; ++k, out += dim_) {
    const uint64_t q = order_[k];
    if (!adjoint_) {
      std::memcpy(out, QueryRow(q), sizeof(float) * dim_);
      continue;
    }
    const uint32_t rel = batch_[q / 2].rel;
    const float* params = SideOf(q) == CorruptSide::kTail ? relations_.Of(rel)
                          : model_.reciprocal             ? relations_.Of(rel) + op_size_
                                              : adjoint_params_.data() + size_t(rel) * op_size_;
    ApplyOperator(model_.op, params, QueryRow(q), 1, dim_, out);
  }
}

void EvalRun::ScoreChunk(size_t begin, const float* rows, int nq, const float* candidates,
                         int nc, float* scores, CandidateWorkspace* ws) const {
  if (adjoint_) {
    ScoreCandidates(scoring_model_, nullptr, CorruptSide::kTail, rows, nq, candidates, nc,
                    scores, ws);
    return;
  }
  const uint64_t q0 = order_[begin];
  ScoreCandidates(model_, relations_.Of(batch_[q0 / 2].rel), SideOf(q0), rows, nq, candidates,
                  nc, scores, ws);
}

// The true answers' scores: per chunk, one ScoreCandidates call against the
// chunk's true rows, of which the diagonal is kept.
void EvalRun::ScoreTrue() {
  true_score_.assign(2 * batch_.size(), 0.0f);
  const size_t chunks = chunk_begin_.size() - 1;
  arena_->execute([&] {
    ParallelFor(0, chunks, [&](size_t c) {
      Scratch& s = scratch_.local();
      const size_t begin = chunk_begin_[c], end = chunk_begin_[c + 1];
      const int nq = static_cast<int>(end - begin);
      s.queries.resize(size_t(nq) * dim_);
      s.trues.resize(size_t(nq) * dim_);
      s.scores.resize(size_t(nq) * nq);
      LoadQueries(begin, end, s.queries.data());
      for (int i = 0; i < nq; ++i) {
        std::memcpy(s.trues.data() + size_t(i) * dim_,
                    TrueRow(order_[begin + i]), sizeof(float) * dim_);
      }
      ScoreChunk(begin, s.queries.data(), nq, s.trues.data(), nq, s.scores.data(), &s.ws);
      for (int i = 0; i < nq; ++i) {
        true_score_[order_[begin + i]] = s.scores[size_t(i) * nq + i];
      }
    });
  });
}

// Adds the counters of every query against every candidate of `set`.
void EvalRun::RankAgainst(const CandidateSet& set) {
  constexpr uint64_t kProgressSlice = 1 << 16;
  for (uint64_t lo = 0; lo < set.size; lo += kProgressSlice) {
    const uint64_t n = std::min(kProgressSlice, set.size - lo);
    CountCandidates(CandidateSet{set.rows + lo * dim_, n, set.ids ? set.ids + lo : nullptr,
                                 set.first_id + lo, set.type});
    pairs_done_ += batch_.size() * n;
    if (options_.progress) options_.progress(pairs_done_, pairs_total_);
  }
}

void EvalRun::CountCandidates(const CandidateSet& set) {
  if (set.size == 0) return;
  const size_t chunks = chunk_begin_.size() - 1;
  const size_t blocks = (set.size + kCandidateBlock - 1) / kCandidateBlock;
  arena_->execute([&] {
    ParallelFor(0, chunks * blocks, [&](size_t task) {
      const size_t c = task / blocks, b = task % blocks;
      // A chunk ranks only candidates of its queries' type.
      if (CandidateType(order_[chunk_begin_[c]]) != set.type) return;
      Scratch& s = scratch_.local();
      const size_t begin = chunk_begin_[c], end = chunk_begin_[c + 1];
      const int nq = static_cast<int>(end - begin);
      const uint64_t lo = b * kCandidateBlock;
      const uint64_t hi = std::min<uint64_t>(set.size, lo + kCandidateBlock);
      const int nc = static_cast<int>(hi - lo);
      s.queries.resize(size_t(nq) * dim_);
      s.scores.resize(size_t(nq) * nc);
      LoadQueries(begin, end, s.queries.data());
      ScoreChunk(begin, s.queries.data(), nq, set.rows + lo * dim_, nc, s.scores.data(), &s.ws);
      const uint64_t lo_id = set.IdAt(lo), hi_id = set.IdAt(hi - 1);
      for (int i = 0; i < nq; ++i) {
        const uint64_t q = order_[begin + i];
        const float t = true_score_[q];
        const float* row = s.scores.data() + size_t(i) * nc;
        uint64_t greater = 0, equal = 0;
        for (int k = 0; k < nc; ++k) {
          greater += row[k] > t;
          equal += row[k] == t;
        }
        uint64_t local[kNumCounters] = {greater, equal};
        auto tally = [&](uint64_t id, int g, int e, int n) {
          auto [first, last] = set.Find(id, lo, hi);
          for (uint64_t k = first; k < last; ++k) {
            const float v = row[k - lo];
            local[g] += v > t;
            local[e] += v == t;
            ++local[n];
          }
        };
        const uint64_t true_id = TrueId(q);
        tally(true_id, kSelfGreater, kSelfEqual, kSelfCount);
        const std::vector<uint64_t>& filter = *filter_of_[q];
        for (auto it = std::lower_bound(filter.begin(), filter.end(), lo_id);
             it != filter.end() && *it <= hi_id; ++it) {
          if (*it != true_id) {
            tally(*it, kFilterGreater, kFilterEqual, kFilterCount);
          }
        }
        std::atomic<uint64_t>* counters = &counters_[q * kNumCounters];
        for (int k = 0; k < kNumCounters; ++k) {
          if (local[k] != 0) {
            counters[k].fetch_add(local[k], std::memory_order_relaxed);
          }
        }
      }
    });
  });
}

absl::Status EvalRun::RunBatch() {
  const uint64_t batch_index = batches_++;
  const size_t q_count = 2 * batch_.size();
  const size_t types = type_base_.size();
  pool_begin_.assign(types + 1, 0);
  if (options_.negatives > 0) {
    std::mt19937_64 rng(options_.seed * 0x9e3779b97f4a7c15ULL + batch_index +
                        1);
    // N per type, drawn among that type's nodes; none for a type without
    // nodes (a schema's type no edge uses), whose base may be one past the
    // last node, and which no query asks for.
    pool_ids_.clear();
    for (size_t t = 0; t < types; ++t) {
      pool_begin_[t] = pool_ids_.size();
      if (type_nodes_[t] == 0) continue;
      for (uint64_t k = 0; k < options_.negatives; ++k) {
        pool_ids_.push_back(type_base_[t] + rng() % type_nodes_[t]);
      }
      std::sort(pool_ids_.begin() + pool_begin_[t], pool_ids_.end());
    }
    pool_begin_[types] = pool_ids_.size();
  }
  RETURN_IF_ERROR(GatherRows());
  RETURN_IF_ERROR(BuildFilters());

  order_.resize(q_count);
  for (size_t q = 0; q < q_count; ++q) order_[q] = q;
  if (!adjoint_ || manifest_.typed()) {
    std::sort(order_.begin(), order_.end(), [&](uint64_t a, uint64_t b) {
      const uint32_t ra = adjoint_ ? 0 : batch_[a / 2].rel;
      const uint32_t rb = adjoint_ ? 0 : batch_[b / 2].rel;
      const uint64_t sa = adjoint_ ? 0 : a % 2, sb = adjoint_ ? 0 : b % 2;
      return std::tuple(CandidateType(a), sa, ra, a) < std::tuple(CandidateType(b), sb, rb, b);
    });
  }
  chunk_begin_.clear();
  std::vector<char> type_queried(types, 0);
  for (size_t k = 0; k < q_count; ++k) {
    const size_t start = chunk_begin_.empty() ? 0 : chunk_begin_.back();
    const uint64_t a = order_[start], b = order_[k];
    type_queried[CandidateType(b)] = 1;
    if (chunk_begin_.empty() || k - start == kQueryChunk || CandidateType(a) != CandidateType(b) ||
        (!adjoint_ && (a % 2 != b % 2 || batch_[a / 2].rel != batch_[b / 2].rel))) {
      chunk_begin_.push_back(k);
    }
  }
  chunk_begin_.push_back(q_count);

  ScoreTrue();
  counters_ = std::make_unique<std::atomic<uint64_t>[]>(q_count * kNumCounters);
  for (size_t k = 0; k < q_count * kNumCounters; ++k) counters_[k] = 0;

  // Candidates a query of each type meets.
  std::vector<uint64_t> candidates(types, 0);
  if (options_.negatives > 0) {
    for (uint32_t t = 0; t < types; ++t) {
      if (!type_queried[t]) continue;
      const size_t first = pool_begin_[t];
      RankAgainst(CandidateSet{pool_rows_.data() + first * dim_, pool_begin_[t + 1] - first,
                               pool_ids_.data() + first, 0, t});
      candidates[t] = pool_begin_[t + 1] - first;
    }
  } else {
    // Descending, so that a one-partition cache in `embeddings_` serves the
    // first partition from the gather and the next batch's gather from the
    // last.
    for (uint32_t p = manifest_.num_partitions; p-- > 0;) {
      const uint32_t type = manifest_.TypeOfPartition(p);
      if (manifest_.partition_sizes[p] == 0 || !type_queried[type]) continue;
      ASSIGN_OR_RETURN(const float* rows, embeddings_(p));
      RankAgainst(CandidateSet{rows, manifest_.partition_sizes[p], nullptr, bases_[p], type});
    }
    candidates = type_nodes_;
  }

  // Fold into the sums in edge order (deterministic).
  for (size_t e = 0; e < batch_.size(); ++e) {
    QueryRank raw[2], filtered[2];  // tail, head
    for (int side = 0; side < 2; ++side) {
      const std::atomic<uint64_t>* c = &counters_[(2 * e + side) * kNumCounters];
      const uint64_t candidates_of_query = candidates[CandidateType(2 * e + side)];
      raw[side].greater = double(c[kAllGreater] - c[kSelfGreater]);
      raw[side].equal = double(c[kAllEqual] - c[kSelfEqual]);
      raw[side].negatives = double(candidates_of_query - c[kSelfCount]);
      filtered[side].greater = raw[side].greater - double(c[kFilterGreater]);
      filtered[side].equal = raw[side].equal - double(c[kFilterEqual]);
      filtered[side].negatives = raw[side].negatives - double(c[kFilterCount]);
    }
    raw_.AddEdge(raw[0], raw[1]);
    filtered_.AddEdge(filtered[0], filtered[1]);
    if (options_.edge_rr) {
      edge_rr_.push_back(
          static_cast<float>(0.5 * (ReciprocalRank(filtered[0]) + ReciprocalRank(filtered[1]))));
    }
    if (!by_relation_.empty()) {
      by_relation_[batch_[e].rel].AddEdge(filtered[0], filtered[1]);
    }
  }
  edges_ += batch_.size();
  batch_.clear();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EvalMemoryPlan> PlanEvalMemory(const Manifest& m, const ModelOptions& model,
                                              uint64_t feature_table_bytes,
                                              const EvalOptions& options) {
  const uint64_t dim = static_cast<uint64_t>(model.dim);
  const uint64_t row = dim * sizeof(float);
  const uint64_t split_edges = m.edges[options.split];
  const uint64_t evaluated = options.max_edges > 0 ? std::min(options.max_edges, split_edges)
                                                   : split_edges;
  const uint64_t largest = m.LargestPartition();
  const uint64_t threads =
      options.threads > 0 ? options.threads : std::thread::hardware_concurrency();
  EvalMemoryPlan plan;
  plan.fixed_bytes =
      largest * row + feature_table_bytes + options.negatives * (row + sizeof(uint64_t)) +
      (evaluated < split_edges ? 3 * evaluated * sizeof(uint64_t) : 0) +  // sample
      std::max<uint64_t>(threads, 1) * sizeof(float) *
          (2 * kQueryChunk * dim + uint64_t{kQueryChunk} * kCandidateBlock +
           2 * kCandidateBlock * (dim + 1)) +
      kDefaultBlockCacheBytes;
  // Per edge: two endpoint rows and the edge; per query (two): counters,
  // order, true score, filter pointer, a filter map entry and its ids.
  const uint64_t mean_degree = m.num_nodes > 0 ? 2 * m.edges.total() / m.num_nodes : 0;
  plan.per_edge_bytes =
      2 * row + sizeof(EvalEdge) +
      2 * (kNumCounters * sizeof(uint64_t) + sizeof(uint64_t) + sizeof(float) + sizeof(void*) +
           64 + (mean_degree + 1) * sizeof(uint64_t));
  if (options.batch_edges > 0) {
    plan.batch_edges = options.batch_edges;
    return plan;
  }
  const uint64_t most = std::clamp<uint64_t>(kBatchRowBytes / (2 * row), 1024, 1u << 20);
  plan.batch_edges = std::max<uint64_t>(std::min(most, evaluated), 1);
  if (options.memory_budget == 0) return plan;
  const uint64_t least = std::min(kMinEvalBatchEdges, plan.batch_edges);
  if (options.memory_budget < plan.fixed_bytes + least * plan.per_edge_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "ranking needs about ", Mib(plan.fixed_bytes + least * plan.per_edge_bytes),
        " (the largest partition, ", largest, " nodes x ", dim, " dims, takes ",
        Mib(largest * row), ", and a batch of ", least, " edges ",
        Mib(least * plan.per_edge_bytes), "), over the memory budget of ",
        Mib(options.memory_budget),
        "; raise --memory-budget, or import with more partitions"));
  }
  plan.batch_edges =
      std::min(plan.batch_edges, (options.memory_budget - plan.fixed_bytes) / plan.per_edge_bytes);
  return plan;
}

std::string DescribeProtocol(const EvalResult& r) {
  const std::string against =
      r.negatives == 0
          ? (r.typed ? absl::StrCat("every node of the answer's type (of ", r.num_nodes, ")")
                     : absl::StrCat("all ", r.num_nodes, " nodes"))
          : absl::StrCat(r.negatives,
                         r.typed ? " sampled negatives of the answer's type" : " sampled negatives",
                         " (optimistic)");
  const std::string on =
      r.edges < r.split_edges
          ? absl::StrCat("a sample of ", r.edges, " of ", r.split_edges, " edges")
          : absl::StrCat("all ", r.edges, " edges");
  return absl::StrCat("filtered ranking against ", against, " on ", on, " (",
                      2 * r.edges, " queries)");
}

absl::Status EvalOptions::Validate() const {
  if (threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("eval: threads must be >= 0, got ", threads));
  }
  if (negatives > (uint64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        absl::StrCat("eval: negatives too large: ", negatives));
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> Evaluate(const Graph& graph,
                                    const ModelOptions& model,
                                    const RelationParams& relations,
                                    const EmbeddingFn& embeddings,
                                    const EvalOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(model.Validate());
  const Manifest& m = graph.manifest();
  if (relations.num_relations != m.relations.size() ||
      relations.param_size != RelationRecordSize(model) ||
      relations.params.size() != size_t{relations.num_relations} * relations.param_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval: relation parameters (", relations.num_relations, " x ",
        relations.param_size, ") do not match ", graph.dir(), " (",
        m.relations.size(), " relations) and operator ",
        std::string(OperatorName(model.op))));
  }
  if (m.num_nodes == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(graph.dir(), " has no nodes"));
  }
  EvalOptions planned = options;
  if (planned.batch_edges == 0) {
    planned.memory_budget = 0;  // the rows are the caller's
    ASSIGN_OR_RETURN(const EvalMemoryPlan plan, PlanEvalMemory(m, model, 0, planned));
    planned.batch_edges = plan.batch_edges;
  }
  internal::OneBlasThread one_blas_thread;
  tbb::task_arena arena(options.threads > 0 ? options.threads
                                            : tbb::task_arena::automatic);
  EvalRun run(graph, model, relations, embeddings, planned, &arena);
  return run.Run();
}

absl::StatusOr<EvalResult> Evaluate(const Graph& graph,
                                    const StoredModel& model,
                                    const EvalOptions& options) {
  if (model.version == 0 ||
      model.partition_versions.size() != graph.manifest().num_partitions) {
    return absl::FailedPreconditionError(absl::StrCat(
        graph.dir(), " has no trained embeddings yet; run `ember train ",
        graph.dir(), "` first"));
  }
  EvalOptions planned = options;
  ASSIGN_OR_RETURN(const EvalMemoryPlan plan,
                   PlanEvalMemory(graph.manifest(), model.model,
                                  model.features.embeddings.size() * sizeof(float), options));
  planned.batch_edges = plan.batch_edges;
  // One partition held at a time, kept until another is asked for.
  std::vector<float> rows;
  int64_t held = -1;
  EmbeddingFn load = [&](uint32_t p) -> absl::StatusOr<const float*> {
    if (held != int64_t{p}) {
      held = -1;
      rows.clear();
      rows.shrink_to_fit();
      ASSIGN_OR_RETURN(rows, LoadPartitionEmbeddings(graph, model, p));
      held = p;
    }
    return rows.data();
  };
  return Evaluate(graph, model.model, model.relations, load, planned);
}

}  // namespace ember
