#include "train/eval/rank_metrics.h"

#include <cmath>

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

void RankSums::Values(const QueryRank& q, double out[kNumMetrics]) {
  const double rank = 1.0 + q.greater + 0.5 * q.equal;
  out[kRr] = 1.0 / rank;
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
