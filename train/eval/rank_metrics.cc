#include "train/eval/rank_metrics.h"

#include <cmath>
#include <limits>

namespace ember {
namespace {

// Two-sided 95 % quantile of the standard normal distribution.
constexpr double kZ95 = 1.959963984540054;

// Half-width of the 95 % interval of a mean of `n` values whose squared
// deviations from their mean sum to `m2`.
double HalfWidth(double m2, uint64_t n) {
  if (n < 2) return 0;
  const double variance = m2 / static_cast<double>(n - 1);
  return kZ95 * std::sqrt(variance / static_cast<double>(n));
}

}  // namespace

double ReciprocalRank(const QueryRank& q) { return 1.0 / (1.0 + q.greater + 0.5 * q.equal); }

double RandomRankingMrr(uint64_t candidates) {
  if (candidates <= 1) return 1;
  const double n = static_cast<double>(candidates);
  if (candidates > 100000) return (std::log(n) + 0.5772156649015329 + 0.5 / n) / n;
  double h = 0;
  for (uint64_t k = 1; k <= candidates; ++k) h += 1.0 / static_cast<double>(k);
  return h / n;
}

PairedDifference PairedMrrDifference(std::span<const float> a, std::span<const float> b) {
  PairedDifference d;
  d.edges = a.size();
  double mean = 0, m2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = double(a[i]) - double(b[i]);
    const double delta = x - mean;
    mean += delta / static_cast<double>(i + 1);
    m2 += delta * (x - mean);
  }
  d.mean = mean;
  d.ci95 = HalfWidth(m2, d.edges);
  if (d.ci95 > 0) {
    d.z = d.mean / (d.ci95 / kZ95);
  } else if (d.mean != 0) {
    d.z = std::copysign(std::numeric_limits<double>::infinity(), d.mean);
  }
  return d;
}

void RankSums::Values(const QueryRank& q, double out[kNumMetrics]) {
  const double rank = 1.0 + q.greater + 0.5 * q.equal;
  out[kRr] = ReciprocalRank(q);
  out[kRank] = rank;
  out[kHits1] = rank <= 1.0;
  out[kHits3] = rank <= 3.0;
  out[kHits10] = rank <= 10.0;
  out[kAuc] = q.negatives > 0
                  ? (q.negatives - q.greater - 0.5 * q.equal) / q.negatives
                  : 1.0;
}

void RankSums::AddEdge(const QueryRank& tail, const QueryRank& head) {
  double t[kNumMetrics], h[kNumMetrics];
  Values(tail, t);
  Values(head, h);
  ++edges_;
  for (int k = 0; k < kNumMetrics; ++k) {
    sum_[k] += t[k];
    sum_[k] += h[k];
    const double x = 0.5 * (t[k] + h[k]);
    const double delta = x - edge_mean_[k];
    edge_mean_[k] += delta / static_cast<double>(edges_);
    edge_m2_[k] += delta * (x - edge_mean_[k]);
  }
}

RankMetrics RankSums::Metrics() const {
  RankMetrics m;
  m.edges = edges_;
  m.count = 2 * edges_;
  if (edges_ == 0) return m;
  const double n = static_cast<double>(m.count);
  m.mrr = sum_[kRr] / n;
  m.mr = sum_[kRank] / n;
  m.hits1 = sum_[kHits1] / n;
  m.hits3 = sum_[kHits3] / n;
  m.hits10 = sum_[kHits10] / n;
  m.auc = sum_[kAuc] / n;
  m.mrr_ci95 = HalfWidth(edge_m2_[kRr], edges_);
  m.hits1_ci95 = HalfWidth(edge_m2_[kHits1], edges_);
  m.hits3_ci95 = HalfWidth(edge_m2_[kHits3], edges_);
  m.hits10_ci95 = HalfWidth(edge_m2_[kHits10], edges_);
  return m;
}

}  // namespace ember
