// The CPU trainer: batches of a bucket flow through a oneTBB pipeline with
// a bounded number in flight; each batch is cut into chunks by relation,
// scored against in-chunk and uniform negatives with GEMMs (chunk_scorer),
// and its rows are updated in place with row-wise Adagrad, lock-free across
// threads (Hogwild). Relation parameters are updated under a mutex.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include <cblas.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include "absl/synchronization/mutex.h"
#include "storage/node_hash.h"
#include "storage/splitmix.h"
#include "storage/status_macros.h"
#include "train/adagrad.h"
#include "train/chunk_scorer.h"
#include "train/trainer.h"

namespace ember {
namespace {

using BatchRng = SplitMix64;  // seeded per batch for determinism

// Per-thread buffers, sized once; the hot path allocates nothing.
struct Scratch {
  Scratch(int dim, int chunk, int negs, int rel_size)
      : ws(dim, chunk, negs),
        lhs(size_t(chunk + negs) * dim), rhs(size_t(chunk + negs) * dim),
        src_negs(size_t(negs) * dim), dst_negs(size_t(negs) * dim),
        g_lhs(size_t(chunk) * dim), g_rhs(size_t(chunk) * dim), g_src_negs(src_negs.size()),
        g_dst_negs(dst_negs.size()), rel(rel_size), g_rel(rel_size),
        src_neg_ids(negs), dst_neg_ids(negs) {}
  ChunkWorkspace ws;
  std::vector<float> lhs, rhs, src_negs, dst_negs;
  std::vector<float> g_lhs, g_rhs, g_src_negs, g_dst_negs;
  std::vector<float> rel, g_rel;
  std::vector<uint32_t> src_neg_ids, dst_neg_ids;
  std::vector<Edge> batch;
};

class CpuTrainer final : public Trainer {
 public:
  CpuTrainer(const TrainOptions& options, int threads, const RelationParams& relations)
      : options_(options),
        threads_(std::max(1, threads)),
        arena_(threads_),
        relations_(relations),
        rel_size_(relations.param_size),
        scratch_([this] {
          return std::make_unique<Scratch>(options_.model.dim, options_.chunk_size,
                                           options_.num_uniform_negs, rel_size_);
        }) {
    if (relations_.state.size() != relations_.params.size()) {
      relations_.state.assign(relations_.params.size(), 0.0f);
    }
  }

  RelationParams& relations() override { return relations_; }

  absl::StatusOr<BucketStats> TrainBucket(
      const BucketTask& task,
      const std::function<void(uint64_t, double)>& on_batch) override {
    const auto start = std::chrono::steady_clock::now();
    const uint64_t n = task.edges.size();
    const uint64_t batch = options_.batch_size;
    const uint64_t num_batches = (n + batch - 1) / batch;
    BucketStats stats;
    uint64_t next = 0;
    const size_t tokens = options_.deterministic ? 1 : 2 * threads_;
    arena_.execute([&] {
      tbb::parallel_pipeline(
          tokens,
          tbb::make_filter<void, uint64_t>(
              tbb::filter_mode::serial_in_order,
              [&](tbb::flow_control& fc) -> uint64_t {
                if (next >= num_batches) {
                  fc.stop();
                  return 0;
                }
                return next++;
              }) &
              tbb::make_filter<uint64_t, std::pair<uint64_t, double>>(
                  tbb::filter_mode::parallel,
                  [&](uint64_t b) {
                    const uint64_t lo = b * batch, hi = std::min(n, lo + batch);
                    return std::make_pair(hi - lo, TrainBatch(task, b, lo, hi));
                  }) &
              tbb::make_filter<std::pair<uint64_t, double>, void>(
                  tbb::filter_mode::serial_out_of_order,
                  [&](std::pair<uint64_t, double> r) {
                    stats.edges += r.first;
                    stats.loss_sum += r.second;
                    if (on_batch) on_batch(r.first, r.second);
                  }));
    });
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return stats;
  }

 private:
  // Trains edges [lo, hi) of the task; returns their summed loss.
  double TrainBatch(const BucketTask& task, uint64_t index, uint64_t lo, uint64_t hi) {
    Scratch& s = *scratch_.local();
    const int dim = options_.model.dim;
    const int max_chunk = options_.chunk_size;
    const int negs = options_.num_uniform_negs;
    const float lr = options_.lr;
    s.batch.assign(task.edges.begin() + lo, task.edges.begin() + hi);
    if (relations_.num_relations > 1) {
      std::stable_sort(s.batch.begin(), s.batch.end(),
                       [](const Edge& a, const Edge& b) { return a.rel < b.rel; });
    }
    BatchRng rng(Mix64(task.seed, index));
    PartitionData& src = *task.src;
    PartitionData& dst = *task.dst;
    const size_t row_bytes = sizeof(float) * dim;
    double loss = 0;
    size_t begin = 0;
    while (begin < s.batch.size()) {
      const uint32_t rel = s.batch[begin].rel;
      size_t end = begin;
      while (end < s.batch.size() && end - begin < size_t(max_chunk) && s.batch[end].rel == rel) ++end;
      const int c = static_cast<int>(end - begin);
      // Start fetching the next chunk's rows while this one computes.
      for (size_t k = end; k < std::min(s.batch.size(), end + max_chunk); ++k) {
        Prefetch(src.Row(s.batch[k].src), row_bytes);
        Prefetch(dst.Row(s.batch[k].dst), row_bytes);
      }
      for (int k = 0; k < c; ++k) {
        const Edge& e = s.batch[begin + k];
        std::memcpy(&s.lhs[size_t(k) * dim], src.Row(e.src), row_bytes);
        std::memcpy(&s.rhs[size_t(k) * dim], dst.Row(e.dst), row_bytes);
      }
      // Negatives go right after the chunk's rows: the scorer then reads
      // both as one stacked matrix, without copying them again.
      float* src_negs = &s.lhs[size_t(c) * dim];
      float* dst_negs = &s.rhs[size_t(c) * dim];
      if (negs > 0) {
        std::memcpy(src_negs, SampleNegatives(src, negs, rng, s.src_negs.data(), s.src_neg_ids.data()),
                    size_t(negs) * row_bytes);
        std::memcpy(dst_negs, SampleNegatives(dst, negs, rng, s.dst_negs.data(), s.dst_neg_ids.data()),
                    size_t(negs) * row_bytes);
      }
      std::fill_n(s.g_lhs.begin(), size_t(c) * dim, 0.0f);
      std::fill_n(s.g_rhs.begin(), size_t(c) * dim, 0.0f);
      std::fill_n(s.g_src_negs.begin(), size_t(negs) * dim, 0.0f);
      std::fill_n(s.g_dst_negs.begin(), size_t(negs) * dim, 0.0f);
      const float* rel_params = nullptr;
      if (rel_size_ > 0) {
        absl::MutexLock lock(&rel_mu_);
        std::copy_n(relations_.Of(rel), rel_size_, s.rel.begin());
        rel_params = s.rel.data();
        std::fill(s.g_rel.begin(), s.g_rel.end(), 0.0f);
      }
      ChunkInput in;
      in.lhs = s.lhs.data();
      in.rhs = s.rhs.data();
      in.src_negs = negs > 0 ? src_negs : nullptr;
      in.dst_negs = negs > 0 ? dst_negs : nullptr;
      in.chunk = c;
      in.num_src_negs = negs;
      in.num_dst_negs = negs;
      ChunkGrads g;
      g.lhs = s.g_lhs.data();
      g.rhs = s.g_rhs.data();
      g.src_negs = negs > 0 ? s.g_src_negs.data() : nullptr;
      g.dst_negs = negs > 0 ? s.g_dst_negs.data() : nullptr;
      g.rel = rel_size_ > 0 ? s.g_rel.data() : nullptr;
      loss += ChunkForwardBackward(options_.model, rel_params, in, g, &s.ws);
      for (int k = 0; k < c; ++k) {
        const Edge& e = s.batch[begin + k];
        Update(src, e.src, &s.g_lhs[size_t(k) * dim], lr);
        Update(dst, e.dst, &s.g_rhs[size_t(k) * dim], lr);
      }
      for (int k = 0; k < negs; ++k) {
        Update(src, s.src_neg_ids[k], &s.g_src_negs[size_t(k) * dim], lr);
        Update(dst, s.dst_neg_ids[k], &s.g_dst_negs[size_t(k) * dim], lr);
      }
      if (rel_size_ > 0 && !options_.only_new_edges) {
        absl::MutexLock lock(&rel_mu_);
        AdagradDenseUpdate(relations_.Of(rel), relations_.state.data() + size_t(rel) * rel_size_,
                           s.g_rel.data(), rel_size_, lr);
      }
      begin = end;
    }
    return loss;
  }

  // Draws `n` uniform negatives from `part` into ids[0, n) and returns
  // their rows (n x dim). Offsets follow the hash order of node keys, so a
  // window of consecutive offsets at a uniform start is a uniform random
  // set of nodes: its rows are read in place, sequentially, instead of
  // gathered one cache miss at a time. Small partitions sample with
  // replacement into `gathered`.
  static const float* SampleNegatives(PartitionData& part, int n, BatchRng& rng,
                                      float* gathered, uint32_t* ids) {
    if (n == 0) return nullptr;
    if (part.rows >= uint64_t(4) * n) {
      const uint32_t start = rng.Below(part.rows - n + 1);
      for (int k = 0; k < n; ++k) ids[k] = start + k;
      return part.Row(start);
    }
    for (int k = 0; k < n; ++k) {
      ids[k] = rng.Below(part.rows);
      std::memcpy(gathered + size_t(k) * part.dim, part.Row(ids[k]), sizeof(float) * part.dim);
    }
    return gathered;
  }

  static void Prefetch(const float* row, size_t bytes) {
    const char* p = reinterpret_cast<const char*>(row);
    for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 1, 1);
  }

  // Row-wise Adagrad on one row unless the row is frozen.
  static void Update(PartitionData& part, uint32_t row, const float* grad, float lr) {
    if (row < part.frozen_rows) return;
    AdagradRowUpdate(part.Row(row), &part.optimizer[row], grad, part.dim, lr);
  }

  const TrainOptions options_;
  const int threads_;
  tbb::task_arena arena_;
  absl::Mutex rel_mu_;
  RelationParams relations_;  // params guarded by rel_mu_ during TrainBucket
  const int rel_size_;
  tbb::enumerable_thread_specific<std::unique_ptr<Scratch>> scratch_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Trainer>> MakeCpuTrainer(const TrainOptions& options, int threads,
                                                        const RelationParams& relations) {
  RETURN_IF_ERROR(options.Validate());
  if (relations.param_size != RelationParamSize(options.model.op, options.model.dim)) {
    return absl::InvalidArgumentError("relation parameters do not match the model");
  }
  // Chunk GEMMs are small and already run on every trainer thread; OpenBLAS'
  // own threads would only oversubscribe the cores.
  openblas_set_num_threads(1);
  return std::unique_ptr<Trainer>(new CpuTrainer(options, threads, relations));
}

}  // namespace ember
