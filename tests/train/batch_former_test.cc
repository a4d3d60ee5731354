#include "train/batch/batch_former.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "storage/base/splitmix.h"

namespace ember {
namespace {

constexpr size_t kEdges = 100000;
constexpr uint32_t kBatch = 256;

// nnz ~ discrete Pareto (P(X >= k) = k^-alpha), clamped to [1, max_nnz].
uint32_t ParetoNnz(SplitMix64& rng, double alpha, uint32_t max_nnz) {
  const double x = std::floor(std::pow(rng.NextOpenUnit(), -1.0 / alpha));
  return uint32_t(std::clamp(x, 1.0, double(max_nnz)));
}

// Work of `edges` edges between nodes with heavy-tailed feature counts.
std::vector<uint32_t> HeavyTailedWork(size_t edges, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<uint32_t> work(edges);
  for (auto& w : work) {
    const uint32_t s = ParetoNnz(rng, 1.2, 4096);
    const uint32_t d = ParetoNnz(rng, 1.2, 4096);
    w = EdgeWork(s, d);
  }
  return work;
}

// The plan is a permutation of [0, n), its batches tile it and their work is
// the sum of their edges' work.
void ExpectValidPlan(const BatchPlan& plan, std::span<const uint32_t> work) {
  const size_t n = work.size();
  ASSERT_EQ(plan.order.size(), n);
  std::vector<uint8_t> seen(n, 0);
  for (uint32_t e : plan.order) {
    ASSERT_LT(e, n);
    ASSERT_EQ(seen[e], 0) << "edge " << e << " twice";
    seen[e] = 1;
  }
  ASSERT_EQ(plan.batch_start.size(), plan.num_batches() + 1);
  EXPECT_EQ(plan.batch_start.front(), 0u);
  EXPECT_EQ(plan.batch_start.back(), n);
  for (size_t b = 0; b < plan.num_batches(); ++b) {
    ASSERT_LT(plan.batch_start[b], plan.batch_start[b + 1]) << "empty batch " << b;
    uint64_t sum = 0;
    for (uint64_t i = plan.batch_start[b]; i < plan.batch_start[b + 1]; ++i)
      sum += work[plan.order[i]];
    EXPECT_EQ(plan.batch_work[b], sum) << "batch " << b;
  }
}

// Work of the batches the bound covers: all but heavy singletons and the
// last batch.
std::vector<double> RegularWork(const BatchPlan& plan) {
  std::vector<double> out;
  for (size_t b = 0; b + 1 < plan.num_batches(); ++b) {
    const bool heavy = plan.batch_size(b) == 1 && plan.window_hi > 0 &&
                       double(plan.batch_work[b]) > plan.window_hi;
    if (!heavy) out.push_back(double(plan.batch_work[b]));
  }
  return out;
}

std::vector<double> AllWork(const BatchPlan& plan) {
  return std::vector<double>(plan.batch_work.begin(), plan.batch_work.end());
}

class BatchFormerHeavyTailed : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = new std::vector<uint32_t>(HeavyTailedWork(kEdges, 42));
    fixed_ = new BatchPlan(FixedBatches(*work_, kBatch, 7));
    aware_ = new BatchPlan(VarianceAwareBatches(*work_, kBatch, 7).value());
  }
  static void TearDownTestSuite() {
    delete work_;
    delete fixed_;
    delete aware_;
  }
  static std::vector<uint32_t>* work_;
  static BatchPlan* fixed_;
  static BatchPlan* aware_;
};
std::vector<uint32_t>* BatchFormerHeavyTailed::work_ = nullptr;
BatchPlan* BatchFormerHeavyTailed::fixed_ = nullptr;
BatchPlan* BatchFormerHeavyTailed::aware_ = nullptr;

TEST_F(BatchFormerHeavyTailed, EveryEdgeExactlyOnce) {
  ExpectValidPlan(*fixed_, *work_);
  ExpectValidPlan(*aware_, *work_);
  for (size_t b = 0; b + 1 < fixed_->num_batches(); ++b)
    EXPECT_EQ(fixed_->batch_size(b), kBatch);
}

TEST_F(BatchFormerHeavyTailed, SpreadBoundHolds) {
  // The stated bound: 1 + tolerance, tolerance = 0.1.
  const double bound = 1.1;
  const SpreadStats fixed = Spread(std::span<const double>(RegularWork(*fixed_)));
  const std::vector<double> regular = RegularWork(*aware_);
  const SpreadStats aware = Spread(std::span<const double>(regular));
  const SpreadStats fixed_all = Spread(std::span<const double>(AllWork(*fixed_)));
  const SpreadStats aware_all = Spread(std::span<const double>(AllWork(*aware_)));
  size_t heavy = 0;
  for (size_t b = 0; b < aware_->num_batches(); ++b)
    heavy += aware_->batch_size(b) == 1 && aware_->batch_work[b] > aware_->window_hi;
  std::printf(
      "target %.1f | fixed: %zu batches, max/mean %.3f cv %.3f | aware: %zu batches "
      "(%zu heavy singletons, %llu short), regular max/mean %.3f cv %.3f, "
      "all max/mean %.3f cv %.3f\n",
      aware_->target_work, fixed_->num_batches(), fixed.max_over_mean, fixed.cv,
      aware_->num_batches(), heavy, (unsigned long long)aware_->short_batches,
      aware.max_over_mean, aware.cv, aware_all.max_over_mean, aware_all.cv);
  EXPECT_LE(aware.max_over_mean, bound);
  EXPECT_GT(fixed.max_over_mean, 2.0);
  EXPECT_GT(fixed.max_over_mean, 2.0 * (aware.max_over_mean - 1.0) + 1.0);
  EXPECT_GT(fixed.cv, 5 * aware.cv);
  EXPECT_LE(aware_->short_batches, 3u);
  // Regular batches all lie in the window.
  size_t out_of_window = 0;
  for (double w : regular)
    out_of_window += w < aware_->window_lo || w > aware_->window_hi;
  EXPECT_LE(out_of_window, aware_->short_batches);
  (void)fixed_all;
}

TEST_F(BatchFormerHeavyTailed, BatchCountMatchesFixed) {
  const double ratio = double(aware_->num_batches()) / double(fixed_->num_batches());
  EXPECT_GT(ratio, 0.9);
  EXPECT_LT(ratio, 1.1);
  EXPECT_NEAR(aware_->target_work, fixed_->target_work, 1e-9);
}

TEST_F(BatchFormerHeavyTailed, DeterministicBySeed) {
  const BatchPlan again = VarianceAwareBatches(*work_, kBatch, 7).value();
  EXPECT_EQ(again.order, aware_->order);
  EXPECT_EQ(again.batch_start, aware_->batch_start);
  EXPECT_EQ(again.batch_work, aware_->batch_work);
  EXPECT_EQ(FixedBatches(*work_, kBatch, 7).order, fixed_->order);
  const BatchPlan other = VarianceAwareBatches(*work_, kBatch, 8).value();
  EXPECT_NE(other.order, aware_->order);
  EXPECT_NE(FixedBatches(*work_, kBatch, 8).order, fixed_->order);
  ExpectValidPlan(other, *work_);
}

TEST_F(BatchFormerHeavyTailed, CompositionStaysRandom) {
  // A former that sorted edges by work would put light edges in one end of
  // the epoch and heavy ones in the other: the mean work per edge (and so the
  // edges per batch) would differ between the first and last tenth.
  const BatchPlan& p = *aware_;
  const size_t tenth = p.num_batches() / 10;
  auto mean_edge_work = [&](size_t b0, size_t b1) {
    uint64_t work = 0, edges = 0;
    for (size_t b = b0; b < b1; ++b) {
      work += p.batch_work[b];
      edges += p.batch_size(b);
    }
    return double(work) / double(edges);
  };
  const double first = mean_edge_work(0, tenth);
  const double last = mean_edge_work(p.num_batches() - 1 - tenth, p.num_batches() - 1);
  double mean = 0;
  for (uint32_t w : *work_) mean += w;
  mean /= double(work_->size());
  std::printf("mean edge work %.2f: first tenth %.2f, last tenth %.2f\n", mean, first,
              last);
  EXPECT_NEAR(first / mean, 1.0, 0.3);
  EXPECT_NEAR(last / mean, 1.0, 0.3);
  // The median-work edge's position is spread over the whole epoch: the
  // light half of edges is no more than slightly ahead of the heavy half.
  std::vector<uint32_t> sorted(*work_);
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const uint32_t median = sorted[sorted.size() / 2];
  double pos_light = 0, pos_heavy = 0;
  size_t n_light = 0, n_heavy = 0;
  for (size_t i = 0; i < p.order.size(); ++i) {
    if ((*work_)[p.order[i]] <= median) {
      pos_light += double(i);
      ++n_light;
    } else {
      pos_heavy += double(i);
      ++n_heavy;
    }
  }
  const double n = double(p.order.size());
  EXPECT_NEAR(pos_light / double(n_light) / n, 0.5, 0.02);
  EXPECT_NEAR(pos_heavy / double(n_heavy) / n, 0.5, 0.02);
}

TEST(BatchFormer, EdgeCases) {
  std::vector<uint32_t> none;
  for (const BatchPlan& p : {FixedBatches(none, 4, 1), VarianceAwareBatches(none, 4, 1).value()}) {
    EXPECT_TRUE(p.order.empty());
    EXPECT_EQ(p.num_batches(), 0u);
  }
  std::vector<uint32_t> zeros(10, 0);
  const BatchPlan z = VarianceAwareBatches(zeros, 4, 1).value();
  ExpectValidPlan(z, zeros);
  EXPECT_EQ(z.num_batches(), 3u);  // falls back to fixed batches
  // Batch size 0 is treated as 1.
  std::vector<uint32_t> ones(5, 1);
  EXPECT_EQ(FixedBatches(ones, 0, 1).num_batches(), 5u);
  ExpectValidPlan(VarianceAwareBatches(ones, 0, 1).value(), ones);
  // Uniform work: variance-aware equals fixed in size (batch_size edges).
  std::vector<uint32_t> three(1000, 3);
  const BatchPlan u = VarianceAwareBatches(three, 10, 3).value();
  ExpectValidPlan(u, three);
  EXPECT_EQ(u.num_batches(), 100u);
  for (size_t b = 0; b < u.num_batches(); ++b) EXPECT_EQ(u.batch_work[b], 30u);
  // One edge heavier than everything else: a singleton batch; the rest fill.
  std::vector<uint32_t> spike(100, 1);
  spike[37] = 1000;
  const BatchPlan s = VarianceAwareBatches(spike, 10, 5).value();
  ExpectValidPlan(s, spike);
  size_t singles = 0;
  for (size_t b = 0; b < s.num_batches(); ++b) {
    if (s.batch_work[b] == 1000) {
      EXPECT_EQ(s.batch_size(b), 1u);
      ++singles;
    }
  }
  EXPECT_EQ(singles, 1u);
}

TEST(BatchFormer, VarianceAwareRefusesInvalidOptions) {
  const std::vector<uint32_t> work(10, 1);
  VarianceAwareOptions opt;
  opt.tolerance = -0.1;
  EXPECT_EQ(VarianceAwareBatches(work, 4, 1, opt).status().code(),
            absl::StatusCode::kInvalidArgument);
  opt.tolerance = std::numeric_limits<double>::infinity();
  EXPECT_EQ(VarianceAwareBatches(work, 4, 1, opt).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BatchFormer, NoDeferralPoolStillCoversEveryEdge) {
  const std::vector<uint32_t> work = HeavyTailedWork(20000, 9);
  VarianceAwareOptions opt;
  opt.max_deferred = 0;
  const BatchPlan p = VarianceAwareBatches(work, 64, 11, opt).value();
  ExpectValidPlan(p, work);
  for (double w : RegularWork(p)) EXPECT_LE(w, p.window_hi);
}

TEST(StepScale, RatioOfWorkToTarget) {
  EXPECT_DOUBLE_EQ(StepScale(1000, 1000.0), 1.0);
  EXPECT_DOUBLE_EQ(StepScale(1500, 1000.0), 1.5);
  EXPECT_DOUBLE_EQ(StepScale(250, 1000.0), 0.25);
  EXPECT_DOUBLE_EQ(StepScale(5000, 1000.0, 0.0, 2.0), 2.0);
  EXPECT_DOUBLE_EQ(StepScale(10, 1000.0, 0.5, 2.0), 0.5);
  EXPECT_DOUBLE_EQ(StepScale(10, 0.0), 1.0);
}

TEST_F(BatchFormerHeavyTailed, StepScaleSteadyForVarianceAware) {
  const std::vector<double> regular = RegularWork(*aware_);
  for (double w : regular) {
    const double s = StepScale(uint64_t(w), aware_->target_work);
    if (w >= aware_->window_lo) {
      EXPECT_GE(s, 1.0 - 1e-12);
      EXPECT_LE(s, 1.1 + 1e-12);
    }
  }
}

TEST(Deal, HandComputed) {
  const std::vector<uint64_t> work = {4, 1, 1, 1, 1};
  const std::vector<double> speed = {1.0, 1.0};
  const DealResult d = DealDynamic(work, speed);
  // t0 takes 4 (free at 4); t1 takes 1,1,1,1 (free at 1,2,3,4).
  EXPECT_EQ(d.trainer_of_batch, (std::vector<uint32_t>{0, 1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(d.makespan, 4.0);
  EXPECT_DOUBLE_EQ(d.idle_share, 0.0);
  const DealResult r = DealRoundRobin(work, speed);
  EXPECT_EQ(r.trainer_of_batch, (std::vector<uint32_t>{0, 1, 0, 1, 0}));
  EXPECT_DOUBLE_EQ(r.finish_time[0], 6.0);
  EXPECT_DOUBLE_EQ(r.finish_time[1], 2.0);
  EXPECT_DOUBLE_EQ(r.makespan, 6.0);
  EXPECT_DOUBLE_EQ(r.idle_share, 1.0 - 8.0 / 12.0);
  EXPECT_EQ(r.trainer_work, (std::vector<uint64_t>{6, 2}));
  EXPECT_TRUE(DealDynamic(work, std::vector<double>{}).finish_time.empty());
  EXPECT_DOUBLE_EQ(DealDynamic(std::vector<uint64_t>{}, speed).idle_share, 0.0);
}

TEST_F(BatchFormerHeavyTailed, DealEqualSpeeds) {
  const std::vector<double> speed = {1.0, 1.0};
  const DealResult aware_dyn = DealDynamic(aware_->batch_work, speed);
  const DealResult aware_rr = DealRoundRobin(aware_->batch_work, speed);
  const DealResult fixed_dyn = DealDynamic(fixed_->batch_work, speed);
  const DealResult fixed_rr = DealRoundRobin(fixed_->batch_work, speed);
  // A round: one bucket's batches, dealt to trainers who then wait for each
  // other. Measure the idle share per round of 16 batches too.
  auto per_round_idle = [](const BatchPlan& p, const std::vector<double>& sp, bool dyn) {
    double busy = 0, span = 0;
    for (size_t b0 = 0; b0 < p.num_batches(); b0 += 16) {
      const size_t b1 = std::min(p.num_batches(), b0 + 16);
      std::span<const uint64_t> round(p.batch_work.data() + b0, b1 - b0);
      const DealResult d = dyn ? DealDynamic(round, sp) : DealRoundRobin(round, sp);
      for (double f : d.finish_time) busy += f;
      span += d.makespan * double(sp.size());
    }
    return 1.0 - busy / span;
  };
  const double rr_fixed_round = per_round_idle(*fixed_, speed, false);
  const double rr_aware_round = per_round_idle(*aware_, speed, false);
  const double dyn_aware_round = per_round_idle(*aware_, speed, true);
  std::printf(
      "2 equal trainers, idle share | whole epoch: aware dyn %.4f rr %.4f, fixed dyn %.4f "
      "rr %.4f | rounds of 16: fixed rr %.4f, aware rr %.4f, aware dyn %.4f\n",
      aware_dyn.idle_share, aware_rr.idle_share, fixed_dyn.idle_share,
      fixed_rr.idle_share, rr_fixed_round, rr_aware_round, dyn_aware_round);
  EXPECT_LE(aware_dyn.idle_share, 0.05);
  EXPECT_LE(dyn_aware_round, 0.05);
  EXPECT_GT(rr_fixed_round, 2 * dyn_aware_round);
  EXPECT_GT(rr_fixed_round, 0.05);
}

TEST_F(BatchFormerHeavyTailed, DealUnequalSpeeds) {
  const std::vector<double> speed = {1.0, 0.5};
  const DealResult d = DealDynamic(aware_->batch_work, speed);
  const DealResult r = DealRoundRobin(aware_->batch_work, speed);
  const double share = double(d.trainer_work[0]) /
                       double(d.trainer_work[0] + d.trainer_work[1]);
  std::printf("speeds 1.0/0.5: dynamic fast share %.4f idle %.4f | round-robin idle %.4f\n",
              share, d.idle_share, r.idle_share);
  EXPECT_NEAR(share, 2.0 / 3.0, 0.02);
  EXPECT_LE(d.idle_share, 0.05);
  EXPECT_GT(r.idle_share, 0.2);
}

TEST(Spread, HandComputed) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};  // mean 5, sd 2
  const SpreadStats s = Spread(std::span<const double>(v));
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.cv, 0.4);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 1.8);
  const std::vector<uint64_t> u = {3, 3, 3};
  const SpreadStats t = Spread(std::span<const uint64_t>(u));
  EXPECT_DOUBLE_EQ(t.mean, 3.0);
  EXPECT_DOUBLE_EQ(t.cv, 0.0);
  EXPECT_DOUBLE_EQ(t.max_over_mean, 1.0);
  const SpreadStats e = Spread(std::span<const double>());
  EXPECT_EQ(e.mean, 0.0);
  EXPECT_EQ(e.max_over_mean, 0.0);
  const std::vector<double> z = {0, 0};
  EXPECT_EQ(Spread(std::span<const double>(z)).cv, 0.0);
}

// The streaming summary equals the batch one.
TEST(Spread, AccumulatorMatchesSpread) {
  SpreadAccumulator empty;
  EXPECT_EQ(empty.Stats().mean, 0.0);
  EXPECT_EQ(empty.Stats().cv, 0.0);
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> heavy(0.0, 1.5);
  std::vector<double> v(10000);
  SpreadAccumulator acc;
  for (double& x : v) {
    x = 1e3 * heavy(rng);
    acc.Add(x);
  }
  const SpreadStats want = Spread(std::span<const double>(v));
  const SpreadStats got = acc.Stats();
  EXPECT_EQ(acc.count(), v.size());
  EXPECT_NEAR(got.mean, want.mean, 1e-9 * want.mean);
  EXPECT_NEAR(got.cv, want.cv, 1e-9);
  EXPECT_NEAR(got.max_over_mean, want.max_over_mean, 1e-9);
  EXPECT_GT(got.cv, 1.0);  // heavy-tailed, so the check is not vacuous
}

}  // namespace
}  // namespace ember
