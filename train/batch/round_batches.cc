#include "train/batch/round_batches.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "storage/base/node_hash.h"
#include "storage/base/splitmix.h"
#include "storage/base/status_macros.h"

namespace ember {

void BatchCostModel::Add(const BatchRecord& r) {
  const double e = static_cast<double>(r.edges), n = static_cast<double>(r.nnz);
  if (r.nnz > 0) ++batches_;
  ee_ += e * e;
  en_ += e * n;
  nn_ += n * n;
  te_ += r.seconds * e;
  tn_ += r.seconds * n;
}

uint32_t BatchCostModel::EdgeCost() const {
  if (batches_ < 16) return kPriorEdgeCost;
  const double det = ee_ * nn_ - en_ * en_;
  if (!(det > 1e-9 * ee_ * nn_)) return kPriorEdgeCost;
  const double a = (te_ * nn_ - tn_ * en_) / det;
  const double b = (tn_ * ee_ - te_ * en_) / det;
  if (!(b > 0)) return kPriorEdgeCost;
  return static_cast<uint32_t>(std::clamp(std::round(a / b), 1.0, 100000.0));
}

std::vector<uint32_t> EdgeWorks(const BucketTask& task, std::span<const Edge> edges,
                                uint32_t edge_cost) {
  std::vector<uint32_t> work(edges.size());
  for (size_t i = 0; i < work.size(); ++i) {
    const Edge& e = edges[i];
    work[i] = EdgeWork(task.src->FeatureCount(e.src), task.dst->FeatureCount(e.dst), edge_cost);
  }
  return work;
}

void PermuteInPlace(std::span<Edge> edges, std::span<const uint32_t> order,
                    std::span<float> weights) {
  EMBER_CHECK(order.size() == edges.size());
  EMBER_CHECK(weights.empty() || weights.size() == edges.size());
  const bool weighted = !weights.empty();
  std::vector<bool> done(edges.size(), false);
  for (size_t i = 0; i < edges.size(); ++i) {
    if (done[i]) continue;
    // Follow the cycle through i: position j takes the edge at order[j].
    const Edge first = edges[i];
    const float first_weight = weighted ? weights[i] : 0.0f;
    size_t j = i;
    while (true) {
      done[j] = true;
      const size_t from = order[j];
      if (from == i) {
        edges[j] = first;
        if (weighted) weights[j] = first_weight;
        break;
      }
      edges[j] = edges[from];
      if (weighted) weights[j] = weights[from];
      j = from;
    }
  }
}

std::vector<BatchRange> PlanWindowBatches(BatchingKind kind, const BucketTask& task,
                                          std::span<Edge> edges, uint32_t batch_size, uint64_t seed,
                                          uint32_t edge_cost, bool group_by_relation,
                                          uint64_t first_index, std::span<float> weights) {
  EMBER_CHECK(edges.size() < (uint64_t{1} << 32));
  EMBER_CHECK(weights.empty() || weights.size() == edges.size());
  const std::vector<uint32_t> work = EdgeWorks(task, edges, edge_cost);
  std::vector<BatchRange> out;
  if (kind == BatchingKind::kFixed) {
    const uint64_t n = work.size();
    for (uint64_t lo = 0; lo < n; lo += batch_size) {
      BatchRange b;
      b.lo = lo;
      b.hi = std::min<uint64_t>(n, lo + batch_size);
      b.index = first_index + out.size();
      for (uint64_t i = b.lo; i < b.hi; ++i) b.work += work[i];
      b.nnz = b.work - uint64_t{edge_cost} * (b.hi - b.lo);
      out.push_back(b);
    }
  } else {
    // The default options, always valid.
    const BatchPlan plan = VarianceAwareBatches(work, batch_size, seed).value();
    PermuteInPlace(edges, plan.order, weights);
    for (size_t b = 0; b < plan.num_batches(); ++b) {
      // Deferred heavy edges open the next batch together; shuffled, they do
      // not all land in its first chunk (whose edges are each other's
      // negatives).
      const size_t lo = plan.batch_start[b], n = plan.batch_start[b + 1] - lo;
      SplitMix64(Mix64(seed, b))
          .ShuffleAlong(edges.subspan(lo, n),
                        weights.empty() ? std::span<float>() : weights.subspan(lo, n));
      BatchRange r;
      r.lo = plan.batch_start[b];
      r.hi = plan.batch_start[b + 1];
      r.index = first_index + b;
      r.work = plan.batch_work[b];
      r.nnz = r.work - uint64_t{edge_cost} * (r.hi - r.lo);
      r.lr_scale = static_cast<float>(StepScale(r.work, plan.target_work, 0.5, 2.0));
      out.push_back(r);
    }
  }
  if (group_by_relation) {
    std::vector<std::pair<Edge, float>> weighted;
    for (const BatchRange& b : out) {
      if (weights.empty()) {
        std::stable_sort(edges.begin() + b.lo, edges.begin() + b.hi,
                         [](const Edge& x, const Edge& y) { return x.rel < y.rel; });
        continue;
      }
      // The same order as the edges alone would take (a stable sort's
      // result depends only on the keys and their order), weights beside.
      weighted.clear();
      for (uint64_t i = b.lo; i < b.hi; ++i) weighted.emplace_back(edges[i], weights[i]);
      std::stable_sort(weighted.begin(), weighted.end(),
                       [](const auto& x, const auto& y) { return x.first.rel < y.first.rel; });
      for (uint64_t i = b.lo; i < b.hi; ++i) {
        edges[i] = weighted[i - b.lo].first;
        weights[i] = weighted[i - b.lo].second;
      }
    }
  }
  return out;
}

size_t FixedTrainerOf(size_t bucket, size_t buckets, uint64_t index, size_t trainers) {
  EMBER_CHECK(bucket < buckets && buckets <= trainers);
  const size_t sharers = (trainers - bucket + buckets - 1) / buckets;
  return bucket + buckets * (index % sharers);
}

}  // namespace ember
