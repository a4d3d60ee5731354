// Link-prediction metrics of a set of ranked queries, with 95 % confidence
// intervals. Pure: no I/O, no threads.
//
// Every evaluated edge is ranked twice, as a tail query and as a head query,
// and the two are added together (RankSums::AddEdge). A metric is the mean
// over queries; since each edge brings exactly two queries, that is also the
// mean over edges of x_e = (tail value + head value) / 2.
//
// Confidence intervals: normal approximation, half-width 1.96 · s / √E with
// s² the sample variance of the per-edge means x_e over the E edges. The
// edge, not the query, is the sampled unit: an edge's head and tail queries
// share its endpoints and are correlated, so treating the 2E queries as
// independent would understate the interval. The interval describes the
// uncertainty of the metric as an estimate over edges drawn like the
// evaluated ones; no finite-population correction is applied (so an
// evaluation of a whole split still reports the spread a fresh split of the
// same size would show), and with sampled negatives the spread of the
// negatives themselves is not included. With fewer than two edges the
// half-width is 0.
#ifndef EMBER_TRAIN_EVAL_RANK_METRICS_H_
#define EMBER_TRAIN_EVAL_RANK_METRICS_H_

#include <cstdint>
#include <span>

namespace ember {

struct RankMetrics {
  double mrr = 0, mr = 0, hits1 = 0, hits3 = 0, hits10 = 0, auc = 0;
  // 95 % confidence half-widths (the file comment): the interval of MRR is
  // mrr ± mrr_ci95.
  double mrr_ci95 = 0, hits1_ci95 = 0, hits3_ci95 = 0, hits10_ci95 = 0;
  uint64_t count = 0;  // ranked queries: 2 × edges
  uint64_t edges = 0;  // evaluated edges
};

// One query's rank against `negatives` candidates, of which `greater` scored
// above the true answer and `equal` tied with it (OGB's tie rule:
// rank = 1 + greater + equal / 2).
struct QueryRank {
  double greater = 0, equal = 0, negatives = 0;
};

// 1 / rank of a query (OGB's tie rule above).
double ReciprocalRank(const QueryRank& q);

// MRR of a ranking at random among `candidates` (the true answer uniform
// in 1..n): H_n / n, about (ln n + 0.577) / n. 1 for n <= 1.
double RandomRankingMrr(uint64_t candidates);

// The difference of two models' MRR on the same evaluated edges, paired
// edge by edge: `a` and `b` hold each edge's (tail RR + head RR) / 2 in the
// same order (EvalResult::edge_rr of two evaluations with the same split,
// sample and seed). mean = MRR(a) - MRR(b); ci95 its 95 % half-width from
// the per-edge differences (the file comment's normal approximation, with
// the differences as the sampled values). Edges hard for one model are
// mostly hard for the other, so this interval is far narrower than the two
// marginal intervals combined, which treat the models' errors as
// independent.
struct PairedDifference {
  double mean = 0;
  double ci95 = 0;
  uint64_t edges = 0;
  // mean / (ci95 / 1.96): the difference in standard errors (0 when the
  // differences are all equal and zero; +-infinity when equal and not).
  double z = 0;
};
// REQUIRES: a.size() == b.size().
PairedDifference PairedMrrDifference(std::span<const float> a, std::span<const float> b);

// Accumulates edges in a fixed order; the result depends on that order only
// through floating-point rounding of the sums.
class RankSums {
 public:
  void AddEdge(const QueryRank& tail, const QueryRank& head);
  RankMetrics Metrics() const;

 private:
  enum Metric { kRr = 0, kRank, kHits1, kHits3, kHits10, kAuc, kNumMetrics };
  static void Values(const QueryRank& q, double out[kNumMetrics]);

  uint64_t edges_ = 0;
  // Per metric: the sum over queries, and Welford's running mean and sum of
  // squared deviations of the per-edge means (exactly 0 for equal values).
  double sum_[kNumMetrics] = {};
  double edge_mean_[kNumMetrics] = {};
  double edge_m2_[kNumMetrics] = {};
};

}  // namespace ember

#endif  // EMBER_TRAIN_EVAL_RANK_METRICS_H_
