#include "train/round_batches.h"

#include <algorithm>
#include <cmath>

#include "storage/node_hash.h"
#include "storage/splitmix.h"

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

std::vector<uint32_t> EdgeWorks(const BucketTask& task, uint32_t edge_cost) {
  std::vector<uint32_t> work(task.edges.size());
  for (size_t i = 0; i < work.size(); ++i) {
    const Edge& e = task.edges[i];
    work[i] = EdgeWork(task.src->FeatureCount(e.src), task.dst->FeatureCount(e.dst), edge_cost);
  }
  return work;
}

std::vector<BatchRange> PlanBucketBatches(BatchingKind kind, uint32_t task_index,
                                          const BucketTask& task, std::vector<Edge>* edges,
                                          uint32_t batch_size, uint64_t seed,
                                          uint32_t edge_cost) {
  const std::vector<uint32_t> work = EdgeWorks(task, edge_cost);
  std::vector<BatchRange> out;
  if (kind == BatchingKind::kFixed) {
    const uint64_t n = work.size();
    for (uint64_t lo = 0; lo < n; lo += batch_size) {
      BatchRange b;
      b.task = task_index;
      b.lo = lo;
      b.hi = std::min<uint64_t>(n, lo + batch_size);
      b.index = out.size();
      for (uint64_t i = b.lo; i < b.hi; ++i) b.work += work[i];
      b.nnz = b.work - uint64_t{edge_cost} * (b.hi - b.lo);
      out.push_back(b);
    }
    return out;
  }
  const BatchPlan plan = VarianceAwareBatches(work, batch_size, seed);
  std::vector<Edge> ordered(edges->size());
  for (size_t i = 0; i < plan.order.size(); ++i) ordered[i] = (*edges)[plan.order[i]];
  std::copy(ordered.begin(), ordered.end(), edges->begin());  // keeps task.edges valid
  for (size_t b = 0; b < plan.num_batches(); ++b) {
    // Deferred heavy edges open the next batch together; shuffled, they do
    // not all land in its first chunk (whose edges are each other's
    // negatives).
    SplitMix64(Mix64(seed, b)).Shuffle(std::span<Edge>(
        edges->data() + plan.batch_start[b], plan.batch_start[b + 1] - plan.batch_start[b]));
    BatchRange r;
    r.task = task_index;
    r.lo = plan.batch_start[b];
    r.hi = plan.batch_start[b + 1];
    r.index = b;
    r.work = plan.batch_work[b];
    r.nnz = r.work - uint64_t{edge_cost} * (r.hi - r.lo);
    r.lr_scale = static_cast<float>(StepScale(r.work, plan.target_work, 0.5, 2.0));
    out.push_back(r);
  }
  return out;
}

RoundQueues DealRoundBatches(BatchingKind kind,
                             const std::vector<std::vector<BatchRange>>& per_bucket,
                             size_t trainers) {
  RoundQueues q;
  const size_t k = per_bucket.size();
  if (kind == BatchingKind::kVarianceAware) {
    std::vector<BatchRange> all;
    for (size_t i = 0;; ++i) {
      bool any = false;
      for (const auto& bucket : per_bucket) {
        if (i < bucket.size()) {
          all.push_back(bucket[i]);
          any = true;
        }
      }
      if (!any) break;
    }
    q.owned.push_back(std::make_unique<BatchQueue>(std::move(all)));
    q.of_trainer.assign(trainers, q.owned.back().get());
    return q;
  }
  for (size_t t = 0; t < trainers; ++t) {
    const size_t b = t % k;
    const size_t sharers = (trainers - b + k - 1) / k;  // trainers on bucket b
    const size_t share = t / k;
    const auto& bucket = per_bucket[b];
    const size_t lo = bucket.size() * share / sharers, hi = bucket.size() * (share + 1) / sharers;
    q.owned.push_back(std::make_unique<BatchQueue>(
        std::vector<BatchRange>(bucket.begin() + lo, bucket.begin() + hi)));
    q.of_trainer.push_back(q.owned.back().get());
  }
  return q;
}

}  // namespace ember
