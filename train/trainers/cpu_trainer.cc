#include "train/trainers/cpu_trainer.h"

#include <algorithm>
#include <cstring>

#include <tbb/enumerable_thread_specific.h>

#include "absl/base/attributes.h"
#include "storage/base/node_hash.h"
#include "storage/base/splitmix.h"
#include "storage/base/status_macros.h"
#include "train/model/adagrad.h"
#include "train/model/bf16_gemm.h"
#include "train/model/chunk_scorer.h"
#include "train/model/featurized.h"

namespace ember {
namespace {

using BatchRng = SplitMix64;  // seeded per batch for determinism

// Per-thread buffers, sized once; the hot path allocates nothing.
struct Scratch {
  Scratch(int dim, int chunk, int negs, int rel_size, uint32_t num_features)
      : ws(dim, chunk, negs),
        lhs(size_t(chunk + negs) * dim), rhs(size_t(chunk + negs) * dim),
        g_lhs(size_t(chunk) * dim), g_rhs(size_t(chunk) * dim),
        g_src_negs(size_t(negs) * dim), g_dst_negs(size_t(negs) * dim),
        rel(size_t(rel_size) * chunk), g_rel(size_t(rel_size) * chunk),
        src_neg_ids(negs), dst_neg_ids(negs), next_src_neg_ids(negs), next_dst_neg_ids(negs),
        src_nodes(chunk), dst_nodes(chunk),
        rel_slot(chunk) {
    chunk_rels.reserve(chunk);
    if (num_features > 0) feature_grads = std::make_unique<FeatureGradAccumulator>(dim, num_features);
  }
  ChunkWorkspace ws;
  std::vector<float> lhs, rhs;  // chunk rows, then its negatives
  std::vector<float> g_lhs, g_rhs, g_src_negs, g_dst_negs;
  std::vector<float> rel, g_rel;  // per slot: the chunk's relations' parameters
  std::vector<uint32_t> src_neg_ids, dst_neg_ids;
  std::vector<uint32_t> next_src_neg_ids, next_dst_neg_ids;  // drawn a chunk ahead
  std::vector<uint32_t> src_nodes, dst_nodes;  // the chunk's endpoints
  std::vector<uint32_t> rel_slot;    // mixed chunks: each edge's slot
  std::vector<uint32_t> chunk_rels;  // the relation of each slot
  std::unique_ptr<FeatureGradAccumulator> feature_grads;  // featurized only
};

class CpuTrainer final : public Trainer {
 public:
  CpuTrainer(const TrainOptions& options, int threads, const RelationParams& relations,
             FeatureTable* features)
      : options_(options),
        mode_(options.model.featurized),
        mixed_(UsesMixedChunks(options)),
        endpoints_(UsesEndpointNegatives(options, relations.num_relations)),
        features_(features),
        threads_(std::max(1, threads)),
        relations_(relations),
        rel_size_(relations.param_size),
        scratch_([this] {
          return std::make_unique<Scratch>(options_.model.dim, options_.pipeline.chunk_size,
                                           options_.pipeline.num_uniform_negs, rel_size_,
                                           features_ != nullptr ? features_->rows : 0);
        }) {
    if (relations_.state.size() != relations_.params.size()) {
      relations_.state.assign(relations_.params.size(), 0.0f);
    }
  }

  RelationParams& relations() override { return relations_; }

  std::string device() const override { return "cpu"; }
  int slots() const override { return threads_; }
  RowHome Home(uint32_t) const override { return RowHome::kHost; }
  absl::Status SyncToHost(PartitionData*) override { return absl::OkStatus(); }
  void Release(uint32_t) override {}

  absl::StatusOr<double> TrainBatch(const BucketTask& task, const BatchRange& b,
                                    std::span<const Edge> batch) override {
    Scratch& s = *scratch_.local();
    const int dim = options_.model.dim;
    const int max_chunk = options_.pipeline.chunk_size;
    const int negs = options_.pipeline.num_uniform_negs;
    const float lr = options_.optimizer.lr * b.lr_scale;
    BatchRng rng(Mix64(task.seed, b.index));
    PartitionData& src = *task.src;
    PartitionData& dst = *task.dst;
    const bool id_rows = HasIdRows(mode_);
    double loss = 0;
    // Negatives are drawn a chunk ahead, so that their rows load while the
    // chunk before computes; the draws keep their order (results unchanged).
    if (negs > 0) {
      DrawNegatives(src, negs, rng, s.next_src_neg_ids.data());
      DrawNegatives(dst, negs, rng, s.next_dst_neg_ids.data());
    }
    size_t begin = 0;
    while (begin < batch.size()) {
      // A grouped chunk ends where the relation changes.
      size_t end = begin;
      while (end < batch.size() && end - begin < size_t(max_chunk) &&
             (mixed_ || batch[end].rel == batch[begin].rel)) {
        ++end;
      }
      const int c = static_cast<int>(end - begin);
      if (negs > 0) {
        s.src_neg_ids.swap(s.next_src_neg_ids);
        s.dst_neg_ids.swap(s.next_dst_neg_ids);
        if (end < batch.size()) {
          DrawNegatives(src, negs, rng, s.next_src_neg_ids.data());
          DrawNegatives(dst, negs, rng, s.next_dst_neg_ids.data());
        }
      }
      // Start fetching the next chunk's rows while this one computes.
      if (id_rows) {
        if (negs > 0 && end < batch.size()) {
          PrefetchNegatives(src, s.next_src_neg_ids.data(), negs);
          PrefetchNegatives(dst, s.next_dst_neg_ids.data(), negs);
        }
        for (size_t k = end; k < std::min(batch.size(), end + max_chunk); ++k) {
          PrefetchNode(src, batch[k].src);
          PrefetchNode(dst, batch[k].dst);
        }
      }
      for (int k = 0; k < c; ++k) {
        s.src_nodes[k] = batch[begin + k].src;
        s.dst_nodes[k] = batch[begin + k].dst;
      }
      const std::span<const uint32_t> src_nodes(s.src_nodes.data(), c);
      const std::span<const uint32_t> dst_nodes(s.dst_nodes.data(), c);
      const std::span<const uint32_t> src_neg_ids(s.src_neg_ids.data(), negs);
      const std::span<const uint32_t> dst_neg_ids(s.dst_neg_ids.data(), negs);
      // Negatives go right after the chunk's rows: the scorer then reads
      // both as one stacked matrix, without copying them again.
      float* src_negs = &s.lhs[size_t(c) * dim];
      float* dst_negs = &s.rhs[size_t(c) * dim];
      GatherChunkRows(src, src_nodes, s.lhs.data());
      GatherChunkRows(dst, dst_nodes, s.rhs.data());
      if (negs > 0) {
        SampleNegativeRows(src, negs, s.src_neg_ids.data(), src_negs);
        SampleNegativeRows(dst, negs, s.dst_neg_ids.data(), dst_negs);
      }
      const float* rel_params = nullptr;
      if (rel_size_ > 0) {
        AssignRelationSlots(batch.subspan(begin, c), &s);
        GatherRelationSlots(&s);
        rel_params = s.rel.data();
        std::fill_n(s.g_rel.begin(), s.chunk_rels.size() * rel_size_, 0.0f);
      }
      ChunkInput in;
      in.lhs = s.lhs.data();
      in.rhs = s.rhs.data();
      in.src_negs = negs > 0 ? src_negs : nullptr;
      in.dst_negs = negs > 0 ? dst_negs : nullptr;
      in.chunk = c;
      in.num_src_negs = negs;
      in.num_dst_negs = negs;
      if (mixed_ && rel_size_ > 0) in.rel_slot = s.rel_slot.data();
      in.endpoint_negs = endpoints_ && task.same_type;
      in.lhs_nodes = s.src_nodes.data();
      in.rhs_nodes = s.dst_nodes.data();
      in.same_node_table = task.src == task.dst;
      in.weights = b.weights != nullptr ? b.weights + begin : nullptr;
      ChunkGrads g;
      g.lhs = s.g_lhs.data();
      g.rhs = s.g_rhs.data();
      g.src_negs = negs > 0 ? s.g_src_negs.data() : nullptr;
      g.dst_negs = negs > 0 ? s.g_dst_negs.data() : nullptr;
      g.rel = rel_size_ > 0 ? s.g_rel.data() : nullptr;
      g.overwrite_rows = true;  // no pass zeroes the four row buffers first
      loss += ChunkForwardBackward(options_.model, rel_params, in, g, &s.ws);
      // A composed row's gradient is also its id row's (featurized.h).
      if (id_rows) {
        UpdateRows(src, src_nodes, s.g_lhs.data(), lr);
        UpdateRows(dst, dst_nodes, s.g_rhs.data(), lr);
        UpdateRows(src, src_neg_ids, s.g_src_negs.data(), lr);
        UpdateRows(dst, dst_neg_ids, s.g_dst_negs.data(), lr);
      }
      if (mode_ != FeaturizedMode::kOff) {
        FeatureGradAccumulator& acc = *s.feature_grads;
        AddFeatureGrads(src, src_nodes, s.g_lhs.data(), &acc);
        AddFeatureGrads(dst, dst_nodes, s.g_rhs.data(), &acc);
        AddFeatureGrads(src, src_neg_ids, s.g_src_negs.data(), &acc);
        AddFeatureGrads(dst, dst_neg_ids, s.g_dst_negs.data(), &acc);
        // One step per chunk, like the id rows: each distinct feature of the
        // chunk gets its summed gradient once. (Per batch would merge more
        // repeats, but its accumulator outgrows the cache: measured 1.4x
        // slower.)
        FlushFeatureGrads(&acc, lr);
      }
      if (rel_size_ > 0 && !options_.only_new_edges) {
        UpdateRelationSlots(s, lr * options_.optimizer.relation_lr_scale);
      }
      begin = end;
    }
    return loss;
  }

 private:
  // The chunk's distinct relations into s->chunk_rels (slots) and each
  // edge's slot into s->rel_slot. A grouped chunk has one slot.
  static void AssignRelationSlots(std::span<const Edge> chunk, Scratch* s) {
    s->chunk_rels.clear();
    for (size_t k = 0; k < chunk.size(); ++k) {
      const uint32_t rel = chunk[k].rel;
      const auto it = std::find(s->chunk_rels.begin(), s->chunk_rels.end(), rel);
      s->rel_slot[k] = static_cast<uint32_t>(it - s->chunk_rels.begin());
      if (it == s->chunk_rels.end()) s->chunk_rels.push_back(rel);
    }
  }

  // The parameters of the chunk's relations (s->chunk_rels) into its slots
  // (s->rel). Relation parameters are shared by the trainer's slots and
  // stepped without a lock, as PBG steps them (Hogwild, like the rows): two
  // chunks of 50 edges of a 30-relation graph share most relations, and a
  // lock around every chunk's reads and steps kept one slot waiting on the
  // other. Hogwild reads; not inlined, so that tools/tsan.supp can name it.
  ABSL_ATTRIBUTE_NOINLINE void GatherRelationSlots(Scratch* s) const {
    for (size_t k = 0; k < s->chunk_rels.size(); ++k) {
      std::copy_n(relations_.Of(s->chunk_rels[k]), rel_size_, &s->rel[k * rel_size_]);
    }
  }

  // Adagrad on the chunk's relations with their slots' gradients
  // (s.g_rel). Hogwild writes; not inlined, so that tools/tsan.supp can name
  // it.
  ABSL_ATTRIBUTE_NOINLINE void UpdateRelationSlots(const Scratch& s, float lr) {
    for (size_t k = 0; k < s.chunk_rels.size(); ++k) {
      const uint32_t rel = s.chunk_rels[k];
      AdagradDenseUpdate(relations_.Of(rel), relations_.state.data() + size_t(rel) * rel_size_,
                         &s.g_rel[k * rel_size_], rel_size_, lr);
    }
  }

  // The rows of `nodes` of `part` as the model scores them, into out
  // (n x dim): id rows, composed with feature rows for featurized models.
  // Hogwild reads; not inlined, so that tools/tsan.supp can name it.
  ABSL_ATTRIBUTE_NOINLINE void GatherChunkRows(const PartitionData& part,
                                               std::span<const uint32_t> nodes, float* out) const {
    const int dim = part.dim;
    if (HasIdRows(mode_)) {
      for (size_t k = 0; k < nodes.size(); ++k) {
        std::memcpy(out + k * dim, part.embeddings.data() + size_t{nodes[k]} * dim,
                    sizeof(float) * dim);
      }
    }
    if (mode_ == FeaturizedMode::kOff) return;
    ComposeEmbeddings(mode_, dim, nodes, part.feature_row_start.data(),
                      part.feature_entries.data(), features_->embeddings.data(), out, out);
  }

  // One Adagrad step on every feature row with a pending gradient; rows a
  // few steps ahead are prefetched, since they are scattered over the table.
  // Hogwild writes; not inlined, so that tools/tsan.supp can name it.
  ABSL_ATTRIBUTE_NOINLINE void FlushFeatureGrads(FeatureGradAccumulator* acc, float lr) {
    constexpr size_t kAhead = 8;
    const std::span<const uint32_t> pending = acc->pending();
    const int dim = features_->dim;
    size_t i = 0;
    acc->Flush([&](uint32_t f, const float* grad) {
      if (i + kAhead < pending.size()) {
        const uint32_t next = pending[i + kAhead];
        Prefetch(features_->Row(next), sizeof(float) * dim);
        __builtin_prefetch(&features_->optimizer[next], 1, 1);
      }
      ++i;
      AdagradRowUpdate(features_->Row(f), &features_->optimizer[f], grad, dim, lr);
    });
  }

  void AddFeatureGrads(const PartitionData& part, std::span<const uint32_t> nodes,
                       const float* grads, FeatureGradAccumulator* acc) const {
    acc->Add(mode_, nodes, part.feature_row_start.data(), part.feature_entries.data(), grads,
             /*id_grads=*/nullptr);
  }

  // Whether `n` negatives from `part` are one window of consecutive rows.
  static bool NegativeWindow(const PartitionData& part, int n) {
    return part.rows >= uint64_t(4) * n;
  }

  // Draws `n` uniform negatives from `part` into ids[0, n). Offsets follow
  // the hash order of node keys, so a window of consecutive offsets at a
  // uniform start is a uniform random set of nodes: for id-only models its
  // rows are then copied in one sequential run instead of gathered one cache
  // miss at a time. Small partitions sample with replacement.
  static void DrawNegatives(const PartitionData& part, int n, BatchRng& rng, uint32_t* ids) {
    if (NegativeWindow(part, n)) {
      const uint32_t start = rng.Below(part.rows - n + 1);
      for (int k = 0; k < n; ++k) ids[k] = start + k;
    } else {
      for (int k = 0; k < n; ++k) ids[k] = rng.Below(part.rows);
    }
  }

  // Starts loading the id rows and optimizer states of negatives `ids`.
  static void PrefetchNegatives(const PartitionData& part, const uint32_t* ids, int n) {
    if (NegativeWindow(part, n)) {
      Prefetch(part.embeddings.data() + size_t{ids[0]} * part.dim, sizeof(float) * part.dim * n);
      if (!part.optimizer.empty()) Prefetch(part.optimizer.data() + ids[0], sizeof(float) * n);
      return;
    }
    for (int k = 0; k < n; ++k) PrefetchNode(part, ids[k]);
  }

  // Starts loading node `id`'s id row and optimizer state.
  static void PrefetchNode(const PartitionData& part, uint32_t id) {
    Prefetch(part.embeddings.data() + size_t{id} * part.dim, sizeof(float) * part.dim);
    if (!part.optimizer.empty()) __builtin_prefetch(&part.optimizer[id], 1, 1);
  }

  // Writes the rows of the `n` negatives `ids` (from DrawNegatives) to out
  // (n x dim). Hogwild reads; not inlined, so that tools/tsan.supp can name
  // it.
  ABSL_ATTRIBUTE_NOINLINE void SampleNegativeRows(const PartitionData& part, int n,
                                                  const uint32_t* ids, float* out) const {
    if (NegativeWindow(part, n) && mode_ == FeaturizedMode::kOff) {
      std::memcpy(out, part.embeddings.data() + size_t{ids[0]} * part.dim,
                  sizeof(float) * part.dim * n);
      return;
    }
    GatherChunkRows(part, std::span<const uint32_t>(ids, n), out);
  }

  static void Prefetch(const float* row, size_t bytes) {
    const char* p = reinterpret_cast<const char*>(row);
    for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 1, 1);
  }

  // Row-wise Adagrad on the id rows of `nodes` (grads: n x dim), except
  // frozen rows. Hogwild writes; not inlined, so that tools/tsan.supp can
  // name it.
  ABSL_ATTRIBUTE_NOINLINE static void UpdateRows(PartitionData& part,
                                                 std::span<const uint32_t> nodes,
                                                 const float* grads, float lr) {
    AdagradRowUpdates(part.embeddings.data(), part.optimizer.data(), nodes.data(),
                      static_cast<int>(nodes.size()), grads, part.dim, lr, part.frozen_rows);
  }

  const TrainOptions options_;
  const FeaturizedMode mode_;
  const bool mixed_;      // chunks of any relations
  const bool endpoints_;  // endpoint negatives
  FeatureTable* const features_;  // shared by all trainers; Hogwild
  const int threads_;  // slots
  RelationParams relations_;  // stepped Hogwild by the slots (GatherRelationSlots)
  const int rel_size_;
  tbb::enumerable_thread_specific<std::unique_ptr<Scratch>> scratch_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Trainer>> MakeCpuTrainer(const TrainOptions& options, int threads,
                                                        const RelationParams& relations,
                                                        FeatureTable* features) {
  RETURN_IF_ERROR(options.Validate());
  if (relations.param_size != RelationRecordSize(options.model)) {
    return absl::InvalidArgumentError("relation parameters do not match the model");
  }
  if ((options.model.featurized != FeaturizedMode::kOff) !=
      (features != nullptr && features->dim == options.model.dim)) {
    return absl::InvalidArgumentError("feature table does not match the model");
  }
  if (options.model.precision == Precision::kBf16 && !Bf16GemmAvailable()) {
    return absl::FailedPreconditionError(
        "--precision bf16 needs a CPU with AVX512-BF16, and this one has none; train with "
        "--precision fp32");
  }
  // OpenBLAS' thread count is not set here: it is process-wide, decided once
  // at start-up (train/blas/blas_startup.h), not by constructing a trainer.
  return std::unique_ptr<Trainer>(new CpuTrainer(options, threads, relations, features));
}

}  // namespace ember
