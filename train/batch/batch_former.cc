#include "train/batch/batch_former.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "storage/base/splitmix.h"
#include "storage/base/status_macros.h"

namespace ember {

absl::Status VarianceAwareOptions::Validate() const {
  if (!(tolerance >= 0) || std::isinf(tolerance)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variance-aware batching: tolerance must be finite and >= 0, got ", tolerance));
  }
  return absl::OkStatus();
}

namespace {

std::vector<uint32_t> ShuffledIndices(size_t n, uint64_t seed) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  SplitMix64 rng(seed);
  rng.Shuffle(order);
  return order;
}

uint64_t TotalWork(std::span<const uint32_t> edge_work) {
  uint64_t total = 0;
  for (uint32_t w : edge_work) total += w;
  return total;
}

double TargetWork(uint64_t total, size_t n, uint32_t batch_size) {
  return n == 0 ? 0.0 : double(batch_size) * double(total) / double(n);
}

// Shared by both dealers: assigns batches with `pick`, then fills in the
// summary. `pick(b, free_at)` returns the trainer for batch b.
template <typename Pick>
DealResult Deal(std::span<const uint64_t> batch_work, std::span<const double> speed,
                Pick pick) {
  DealResult r;
  const size_t t = speed.size();
  if (t == 0) return r;
  r.trainer_of_batch.resize(batch_work.size());
  r.finish_time.assign(t, 0.0);
  r.trainer_work.assign(t, 0);
  for (size_t b = 0; b < batch_work.size(); ++b) {
    const uint32_t k = pick(b, r.finish_time);
    r.trainer_of_batch[b] = k;
    r.finish_time[k] += double(batch_work[b]) / speed[k];
    r.trainer_work[k] += batch_work[b];
  }
  double busy = 0;
  for (double f : r.finish_time) {
    busy += f;
    r.makespan = std::max(r.makespan, f);
  }
  r.idle_share = r.makespan > 0 ? 1.0 - busy / (double(t) * r.makespan) : 0.0;
  return r;
}

}  // namespace

BatchPlan FixedBatches(std::span<const uint32_t> edge_work, uint32_t batch_size,
                       uint64_t seed) {
  const size_t n = edge_work.size();
  const uint64_t bs = std::max<uint32_t>(batch_size, 1);
  BatchPlan plan;
  plan.target_work = TargetWork(TotalWork(edge_work), n, uint32_t(bs));
  plan.order = ShuffledIndices(n, seed);
  if (n == 0) return plan;
  for (uint64_t lo = 0; lo < n; lo += bs) {
    const uint64_t hi = std::min<uint64_t>(n, lo + bs);
    uint64_t work = 0;
    for (uint64_t i = lo; i < hi; ++i) work += edge_work[plan.order[i]];
    plan.batch_start.push_back(lo);
    plan.batch_work.push_back(work);
  }
  plan.batch_start.push_back(n);
  return plan;
}

absl::StatusOr<BatchPlan> VarianceAwareBatches(std::span<const uint32_t> edge_work,
                                               uint32_t batch_size, uint64_t seed,
                                               const VarianceAwareOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const size_t n = edge_work.size();
  batch_size = std::max<uint32_t>(batch_size, 1);
  const uint64_t total = TotalWork(edge_work);
  if (total == 0) return FixedBatches(edge_work, batch_size, seed);

  BatchPlan plan;
  const double target = TargetWork(total, n, batch_size);
  const double lo = target;
  const double hi = target * (1.0 + options.tolerance);
  plan.target_work = target;
  plan.window_lo = lo;
  plan.window_hi = hi;

  const std::vector<uint32_t> shuffled = ShuffledIndices(n, seed);
  plan.order.reserve(n);
  plan.batch_start.push_back(0);
  auto emit = [&](std::span<const uint32_t> edges, uint64_t work) {
    plan.order.insert(plan.order.end(), edges.begin(), edges.end());
    plan.batch_start.push_back(plan.order.size());
    plan.batch_work.push_back(work);
  };

  std::vector<uint32_t> pool;  // deferred edges, oldest first
  std::vector<uint32_t> current;
  size_t next = 0;
  while (next < n || !pool.empty()) {
    current.clear();
    uint64_t work = 0;
    // Deferred edges first, oldest first, as many as fit. An empty batch
    // always takes the first one (every pooled edge is <= hi), so this loop
    // makes progress whenever the pool is not empty.
    size_t keep = 0;
    for (uint32_t e : pool) {
      const uint64_t w = edge_work[e];
      if (work < lo && double(work + w) <= hi) {
        current.push_back(e);
        work += w;
      } else {
        pool[keep++] = e;
      }
    }
    pool.resize(keep);
    bool full = double(work) >= lo;
    while (!full && next < n) {
      const uint32_t e = shuffled[next++];
      const uint64_t w = edge_work[e];
      if (double(w) > hi) {  // heavy: a batch of its own, where it stands
        const uint32_t one[1] = {e};
        emit(one, w);
      } else if (double(work + w) <= hi) {
        current.push_back(e);
        work += w;
        full = double(work) >= lo;
      } else {
        pool.push_back(e);
        full = pool.size() > options.max_deferred;  // close early (short)
      }
    }
    if (!current.empty()) {
      if (double(work) < lo) ++plan.short_batches;
      emit(current, work);
    }
  }
  if (plan.batch_work.empty()) plan.batch_start.clear();
  return plan;
}

double StepScale(uint64_t batch_work, double target_work, double min_scale,
                 double max_scale) {
  if (!(target_work > 0)) return 1.0;
  return std::clamp(double(batch_work) / target_work, min_scale, max_scale);
}

DealResult DealDynamic(std::span<const uint64_t> batch_work,
                       std::span<const double> trainer_speed) {
  return Deal(batch_work, trainer_speed,
              [](size_t, const std::vector<double>& free_at) {
                return uint32_t(std::min_element(free_at.begin(), free_at.end()) -
                                free_at.begin());
              });
}

DealResult DealRoundRobin(std::span<const uint64_t> batch_work,
                          std::span<const double> trainer_speed) {
  const size_t t = trainer_speed.size();
  return Deal(batch_work, trainer_speed,
              [t](size_t b, const std::vector<double>&) { return uint32_t(b % t); });
}

SpreadStats Spread(std::span<const double> values) {
  SpreadStats s;
  if (values.empty()) return s;
  double sum = 0, max = values[0];
  for (double v : values) {
    sum += v;
    max = std::max(max, v);
  }
  s.mean = sum / double(values.size());
  if (s.mean == 0) return s;
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.cv = std::sqrt(sq / double(values.size())) / std::abs(s.mean);
  s.max_over_mean = max / s.mean;
  return s;
}

void SpreadAccumulator::Add(double value) {
  max_ = n_ == 0 ? value : std::max(max_, value);
  ++n_;
  const double delta = value - mean_;
  mean_ += delta / double(n_);
  m2_ += delta * (value - mean_);
}

SpreadStats SpreadAccumulator::Stats() const {
  SpreadStats s;
  if (n_ == 0) return s;
  s.mean = mean_;
  if (s.mean == 0) return s;
  s.cv = std::sqrt(std::max(0.0, m2_) / double(n_)) / std::abs(s.mean);
  s.max_over_mean = max_ / s.mean;
  return s;
}

SpreadStats Spread(std::span<const uint64_t> values) {
  std::vector<double> d(values.begin(), values.end());
  return Spread(std::span<const double>(d));
}

}  // namespace ember
