// Featurized node embeddings: a node's embedding is the weighted mean of the
// embeddings of its sparse features (`--featurized features`), or that mean
// plus the node's own id embedding (`--featurized id+features`).
//
// Layout: every matrix is row-major and compact; row i of an n × dim matrix x
// is x[i * dim .. i * dim + dim). A node set is a span of partition-local
// offsets `nodes` into one partition's feature CSR (Graph::
// ReadPartitionFeatures): node o's features are
// entries[row_start[o] .. row_start[o + 1]). Row i of every per-node matrix
// (composed rows, id rows, gradients) belongs to nodes[i].
//
// Semantics. For node i with entries (f_k, w_k), k = 1..m (a feature may
// repeat; its terms simply add up), let W_i = Σ_k w_k. Then
//   feat_i = Σ_k (w_k / W_i) · F[f_k]      if m > 0 and W_i != 0 (finite 1/W_i)
//   feat_i = 0                             otherwise (no features, or W_i == 0)
//   out_i  = feat_i                        (kFeatures)
//   out_i  = id_i + feat_i                 (kIdPlusFeatures)
// A node without features (or whose weights sum to zero) therefore embeds to
// the zero vector under kFeatures (as PBG's EmbeddingBag(mode="mean") does
// for an empty bag) and to its id row under kIdPlusFeatures; its features
// get no gradient. Weights are expected to be positive (counts, tf-idf);
// mixed signs are allowed but a sum near zero makes the mean ill-conditioned.
// Gradients, with g_i = dLoss/dout_i:
//   dLoss/dF[j] = Σ_i Σ_{k: f_k = j} (w_k / W_i) · g_i
//   dLoss/did_i = g_i                      (kIdPlusFeatures)
//
// Design note: feature rows are shared parameters.
// Unlike id rows, which belong to one partition and are trained only while
// that partition is in the partition buffer, a feature row F[j] is used by
// every node that has feature j, in every partition. Feature rows therefore
// live outside the partition buffer, in one in-memory table (V × dim floats
// plus one row-wise Adagrad state float per row, ~V·(dim+1)·4 bytes) that
// is loaded once, checkpointed with the model, and never swapped. Every
// trainer thread reads it while composing rows and writes it through
// AdagradRowUpdate after each chunk, lock-free (Hogwild, as the id rows
// already are). Why that is consistent enough and converges:
//  - Sparsity (Recht, Re, Wright, Niu, "Hogwild!: A Lock-Free Approach to
//    Parallelizing Stochastic Gradient Descent", NIPS 2011): when each step
//    touches a small fraction of the parameters, concurrent steps rarely
//    collide, and lock-free SGD converges at nearly the serial rate; a
//    collision costs at most a stale read or a lost update, which behaves
//    as bounded extra gradient noise. A chunk touches only the distinct
//    features of its few hundred nodes, a small fraction of V.
//  - Heavy features (the head of a heavy-tailed feature distribution) are
//    the exception: many concurrent steps touch them. But (a) their
//    gradient is summed within a step first (FeatureGradAccumulator calls
//    the update once per distinct feature per step, as PBG applies one
//    row-wise Adagrad step per row), and (b) their Adagrad state grows with
//    every update, so their effective step lr/sqrt(state) shrinks quickly:
//    they receive many small updates, and losing or reordering one changes
//    the row by a vanishing amount. The mean over a node's features also
//    scales each feature's gradient by w/W <= 1 for positive weights.
//  - Writes are never torn into non-finite values (AdagradRowUpdate's
//    contract), each float store is atomic on the platforms we target, so a
//    reader sees, per coordinate, some recent value.
//  - Across partitions, the bucket order changes which id rows are resident,
//    not which feature rows are: feature rows see one consistent table, with
//    no write-back races against the partition buffer.
//
// Threads: the free functions are pure. A FeatureGradAccumulator is not
// thread-safe: one per trainer thread (like ChunkWorkspace).
#ifndef EMBER_TRAIN_MODEL_FEATURIZED_H_
#define EMBER_TRAIN_MODEL_FEATURIZED_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "storage/base/enum_names.h"
#include "storage/types.h"

namespace ember {

enum class FeaturizedMode : uint8_t {
  kOff = 0,             // ids only: features are ignored
  kFeatures = 1,        // out_i = weighted mean of feature rows
  kIdPlusFeatures = 2,  // out_i = id row + weighted mean of feature rows
};

template <>
struct EnumNames<FeaturizedMode> {
  static constexpr std::string_view kWhat = "featurized mode";
  static constexpr EnumNameTable<FeaturizedMode, 3> kTable = {{
      {FeaturizedMode::kOff, "off"},
      {FeaturizedMode::kFeatures, "features"},
      {FeaturizedMode::kIdPlusFeatures, "id+features"},
  }};
};
// InvalidArgument naming the bad value and the accepted ones.
inline absl::StatusOr<FeaturizedMode> ParseFeaturizedMode(std::string_view name) {
  return EnumFromName<FeaturizedMode>(name);
}
inline std::string_view FeaturizedModeName(FeaturizedMode mode) { return EnumToName(mode); }

// Whether the mode has per-node id rows (kOff and kIdPlusFeatures).
inline bool HasIdRows(FeaturizedMode mode) {
  return mode != FeaturizedMode::kFeatures;
}

// Work of one node for variance-aware batching: its number of feature
// entries, plus one for the id row where the mode has one (kOff: 1).
// REQUIRES: row_start covers `node` (row_start[node + 1] readable) unless
// mode == kOff, where row_start may be null.
inline uint64_t NodeWork(FeaturizedMode mode, const uint64_t* row_start,
                         uint32_t node) {
  if (mode == FeaturizedMode::kOff) return 1;
  return row_start[node + 1] - row_start[node] +
         (mode == FeaturizedMode::kIdPlusFeatures ? 1 : 0);
}

// The coefficient w / W_i of node i's entries: 1 / Σ_k w_k, or 0 when the
// node has no features or the weights sum to 0 (see the file comment).
float FeatureMeanScale(std::span<const FeatureEntry> node_entries);

// Composes the rows of `nodes` into out (n × dim, n = nodes.size()).
// mode kFeatures: id_rows is ignored (may be null).
// mode kIdPlusFeatures: id_rows (n × dim) holds each node's id row.
// REQUIRES: mode != kOff; dim >= 1; every feature id < the number of rows of
// feature_table (V × dim); out does not overlap the inputs, except that
// out == id_rows is allowed (composes in place).
// Allocates nothing.
void ComposeEmbeddings(FeaturizedMode mode, int dim,
                       std::span<const uint32_t> nodes,
                       const uint64_t* row_start, const FeatureEntry* entries,
                       const float* feature_table, const float* id_rows,
                       float* out);

// Accumulates feature-row gradients over the node sets of one step (e.g. a
// chunk's lhs, rhs and negatives, possibly from different partitions), so
// that each distinct feature gets exactly one summed gradient per step, then
// hands them out with Flush. Scratch: a slot per vocabulary entry (4 bytes ×
// V, 1/dim of the feature table) and a gradient row per distinct feature of
// the step; both keep their capacity, so after warm-up (the largest step
// seen) Add and Flush allocate nothing.
class FeatureGradAccumulator {
 public:
  // REQUIRES: dim >= 1. num_features = V, the feature-table rows.
  FeatureGradAccumulator(int dim, uint32_t num_features);
  FeatureGradAccumulator(const FeatureGradAccumulator&) = delete;
  FeatureGradAccumulator& operator=(const FeatureGradAccumulator&) = delete;

  int dim() const { return dim_; }
  uint32_t num_features() const { return num_features_; }

  // Adds dLoss/dF for node gradients node_grads (n × dim) of `nodes`; in
  // kIdPlusFeatures also writes (=, not +=) dLoss/did_i = g_i into id_grads
  // (n × dim) unless id_grads is null (the caller may reuse node_grads for
  // the id rows, since they are equal). Nodes with FeatureMeanScale 0
  // contribute nothing to feature rows.
  // REQUIRES: mode != kOff; feature ids < num_features(); id_grads does not
  // overlap node_grads.
  void Add(FeaturizedMode mode, std::span<const uint32_t> nodes,
           const uint64_t* row_start, const FeatureEntry* entries,
           const float* node_grads, float* id_grads);

  // Distinct features with a pending gradient, in the order Flush hands
  // them out (callers may prefetch their rows ahead).
  size_t num_pending() const { return touched_.size(); }
  std::span<const uint32_t> pending() const { return touched_; }

  // Calls fn(feature, grad_row) once per distinct pending feature, in order
  // of first touch since the last Flush (deterministic), then clears. The
  // grad_row pointer is valid during the call only.
  void Flush(absl::FunctionRef<void(uint32_t, const float*)> fn);

  // Discards pending gradients.
  void Clear();

  // How often the scratch grew (for tests asserting a warm hot path).
  uint64_t num_growths() const { return num_growths_; }

 private:
  float* SlotRow(uint32_t feature);

  int dim_;
  uint32_t num_features_;
  std::vector<int32_t> slot_;     // feature -> slot in grads_, -1 if none
  std::vector<uint32_t> touched_;  // slot -> feature, in first-touch order
  std::vector<float> grads_;       // slot rows, capacity kept
  uint64_t num_growths_ = 0;
};

// One-shot form: Add for one node set, then Flush into update_feature (e.g.
// [&](uint32_t j, const float* g) { AdagradRowUpdate(F + j * dim,
// &F_state[j], g, dim, lr); }). Starts by discarding anything pending.
void BackpropFeatures(FeaturizedMode mode, std::span<const uint32_t> nodes,
                      const uint64_t* row_start, const FeatureEntry* entries,
                      const float* node_grads, FeatureGradAccumulator* scratch,
                      absl::FunctionRef<void(uint32_t, const float*)>
                          update_feature,
                      float* id_grads);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_FEATURIZED_H_
