#include "train/model/featurized.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

// Most feature rows of one node prefetched ahead.
constexpr uint64_t kPrefetchEntries = 16;

void PrefetchRow(const float* row, size_t dim) {
  const char* p = reinterpret_cast<const char*>(row);
  for (size_t b = 0; b < dim * sizeof(float); b += 64) __builtin_prefetch(p + b, 0, 1);
}

// y += a * x over dim floats; vectorizable.
inline void Axpy(int dim, float a, const float* __restrict x,
                 float* __restrict y) {
  for (int k = 0; k < dim; ++k) y[k] += a * x[k];
}

// Calls fn(feature, w / W) for each entry of `node` (its coefficient in
// the weighted mean; see featurized.h); nothing when FeatureMeanScale is 0.
template <typename Fn>
inline void ForEachMeanTerm(const uint64_t* row_start, const FeatureEntry* entries,
                            uint32_t node, Fn fn) {
  const std::span<const FeatureEntry> list(entries + row_start[node],
                                           entries + row_start[node + 1]);
  const float scale = FeatureMeanScale(list);
  if (scale == 0) return;
  for (const FeatureEntry& e : list) fn(e.feature, e.weight * scale);
}

}  // namespace


float FeatureMeanScale(std::span<const FeatureEntry> node_entries) {
  double sum = 0;  // double: many small weights add up without drift
  for (const FeatureEntry& e : node_entries) sum += e.weight;
  if (sum == 0) return 0.0f;
  const float scale = static_cast<float>(1.0 / sum);
  return std::isfinite(scale) ? scale : 0.0f;
}

void ComposeEmbeddings(FeaturizedMode mode, int dim,
                       std::span<const uint32_t> nodes,
                       const uint64_t* row_start, const FeatureEntry* entries,
                       const float* feature_table, const float* id_rows,
                       float* out) {
  EMBER_CHECK(mode != FeaturizedMode::kOff);
  EMBER_CHECK(dim >= 1);
  const bool with_id = mode == FeaturizedMode::kIdPlusFeatures;
  EMBER_CHECK(!with_id || id_rows != nullptr);
  const size_t d = static_cast<size_t>(dim);
  for (size_t i = 0; i < nodes.size(); ++i) {
    // Feature rows are scattered over the table: start fetching the rows
    // of the node after next while this one composes.
    if (i + 2 < nodes.size()) {
      const uint32_t next = nodes[i + 2];
      const uint64_t end = std::min(row_start[next + 1], row_start[next] + kPrefetchEntries);
      for (uint64_t e = row_start[next]; e < end; ++e) {
        PrefetchRow(feature_table + size_t{entries[e].feature} * d, d);
      }
    }
    float* row = out + i * d;
    if (with_id) {
      const float* id = id_rows + i * d;
      if (row != id) std::memcpy(row, id, d * sizeof(float));
    } else {
      std::memset(row, 0, d * sizeof(float));
    }
    ForEachMeanTerm(row_start, entries, nodes[i], [&](uint32_t feature, float coef) {
      Axpy(dim, coef, feature_table + size_t{feature} * d, row);
    });
  }
}

FeatureGradAccumulator::FeatureGradAccumulator(int dim, uint32_t num_features)
    : dim_(dim), num_features_(num_features), slot_(num_features, -1) {
  EMBER_CHECK(dim >= 1);
}

float* FeatureGradAccumulator::SlotRow(uint32_t feature) {
  EMBER_CHECK(feature < num_features_);
  const size_t d = static_cast<size_t>(dim_);
  int32_t s = slot_[feature];
  if (s < 0) {
    s = static_cast<int32_t>(touched_.size());
    slot_[feature] = s;
    if (touched_.size() == touched_.capacity()) ++num_growths_;
    touched_.push_back(feature);
    const size_t need = (size_t(s) + 1) * d;
    if (grads_.size() < need) {
      if (need > grads_.capacity()) ++num_growths_;
      // Grow geometrically; rows past touched_.size() are stale and are
      // zeroed when claimed below.
      grads_.resize(std::max(need, grads_.size() * 2));
    }
    std::memset(grads_.data() + size_t(s) * d, 0, d * sizeof(float));
  }
  return grads_.data() + size_t(s) * d;
}

void FeatureGradAccumulator::Add(FeaturizedMode mode,
                                 std::span<const uint32_t> nodes,
                                 const uint64_t* row_start,
                                 const FeatureEntry* entries,
                                 const float* node_grads, float* id_grads) {
  EMBER_CHECK(mode != FeaturizedMode::kOff);
  const size_t d = static_cast<size_t>(dim_);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const float* g = node_grads + i * d;
    ForEachMeanTerm(row_start, entries, nodes[i], [&](uint32_t feature, float coef) {
      Axpy(dim_, coef, g, SlotRow(feature));
    });
  }
  if (mode == FeaturizedMode::kIdPlusFeatures && id_grads != nullptr) {
    std::memcpy(id_grads, node_grads, nodes.size() * d * sizeof(float));
  }
}

void FeatureGradAccumulator::Flush(
    absl::FunctionRef<void(uint32_t, const float*)> fn) {
  const size_t d = static_cast<size_t>(dim_);
  for (size_t s = 0; s < touched_.size(); ++s) {
    fn(touched_[s], grads_.data() + s * d);
  }
  Clear();
}

void FeatureGradAccumulator::Clear() {
  for (uint32_t f : touched_) slot_[f] = -1;
  touched_.clear();
}

void BackpropFeatures(FeaturizedMode mode, std::span<const uint32_t> nodes,
                      const uint64_t* row_start, const FeatureEntry* entries,
                      const float* node_grads, FeatureGradAccumulator* scratch,
                      absl::FunctionRef<void(uint32_t, const float*)>
                          update_feature,
                      float* id_grads) {
  scratch->Clear();
  scratch->Add(mode, nodes, row_start, entries, node_grads, id_grads);
  scratch->Flush(update_feature);
}

}  // namespace ember
