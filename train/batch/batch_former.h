// Batch formation for skewed work (DESIGN.md, "Variance-aware batching").
//
// With sparse node features an edge's cost, and the variance of its gradient,
// follow the non-zeros of its two endpoints, which are heavy-tailed. Cutting a
// shuffled bucket into runs of a fixed number of edges then yields batches
// whose work differs several-fold: some steps are slow and noisy, and trainers
// working side by side wait for the slowest. This file holds the pure cores
// that fix it: a batch former that evens out work per batch while keeping
// batch composition random, the step-size rule that goes with it, and a
// simulation of dealing batches to trainers of measured speed (dynamic list
// scheduling vs static round-robin), used by tests and benchmarks.
//
// Everything here is a pure function over plain arrays: no disk, no threads,
// deterministic for a given seed on every platform (SplitMix64).
#ifndef EMBER_TRAIN_BATCH_BATCH_FORMER_H_
#define EMBER_TRAIN_BATCH_BATCH_FORMER_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/base/enum_names.h"

namespace ember {

// How the trainer cuts a bucket into batches (`--batching`).
enum class BatchingKind : uint8_t {
  // batch_size edges per batch; each trainer takes a static share of the
  // round's buckets (FixedBatches).
  kFixed = 0,
  // Batches of nearly equal work (VarianceAwareBatches), with step sizes
  // scaled by StepScale, dealt dynamically to whichever trainer is free.
  kVarianceAware = 1,
};
template <>
struct EnumNames<BatchingKind> {
  static constexpr std::string_view kWhat = "batching";
  static constexpr EnumNameTable<BatchingKind, 2> kTable = {{
      {BatchingKind::kFixed, "fixed"},
      {BatchingKind::kVarianceAware, "variance-aware"},
  }};
};
// InvalidArgument naming the bad value and the accepted ones.
inline absl::StatusOr<BatchingKind> ParseBatchingKind(std::string_view name) {
  return EnumFromName<BatchingKind>(name);
}
inline std::string_view BatchingKindName(BatchingKind kind) { return EnumToName(kind); }

// The work of one edge is the cost units it adds to a batch, counted in
// feature non-zeros: nnz(src) + nnz(dst), plus `edge_cost` for what every
// edge costs regardless of its features (its rows' GEMM share, loss and
// negatives). edge_cost 1 counts rows touched; the trainer measures it
// (BatchCostModel in round_batches.h).
inline uint32_t EdgeWork(uint32_t src_nnz, uint32_t dst_nnz, uint32_t edge_cost = 1) {
  return edge_cost + src_nnz + dst_nnz;
}

// A batch plan: a permutation of edge indices cut into consecutive batches.
// Batch b is order[batch_start[b] .. batch_start[b + 1]); batch_start has
// num_batches() + 1 entries (the last is order.size()), or is empty when there
// are no edges.
struct BatchPlan {
  std::vector<uint32_t> order;        // edge indices, each exactly once
  std::vector<uint64_t> batch_start;  // num_batches() + 1 offsets into order
  std::vector<uint64_t> batch_work;   // total work of each batch
  // batch_size x mean edge work: the work of an average fixed-size batch.
  double target_work = 0;
  // Variance-aware plans only (0 for fixed plans): the window a regular batch
  // closes in, [window_lo, window_hi]. Edges heavier than window_hi form
  // singleton batches; `short_batches` counts non-singleton batches that
  // closed below window_lo (the end of the input, or a full deferral pool).
  double window_lo = 0;
  double window_hi = 0;
  uint64_t short_batches = 0;

  size_t num_batches() const { return batch_work.size(); }
  uint64_t batch_size(size_t b) const { return batch_start[b + 1] - batch_start[b]; }
};

// Fixed batching, the baseline (what the CPU trainer does today): a seeded
// shuffle of all edges cut into consecutive runs of `batch_size` edges (the
// last may be shorter). batch_size 0 is treated as 1.
BatchPlan FixedBatches(std::span<const uint32_t> edge_work, uint32_t batch_size,
                       uint64_t seed);

struct VarianceAwareOptions {
  // Width of the closing window relative to the target: a regular batch's
  // work lies in [T, T (1 + tolerance)], T = target_work; finite, >= 0.
  // Default: 0.1.
  double tolerance = 0.1;
  // Most edges held back at once because they would overshoot the window.
  // Reaching it closes the current batch early (counted as short).
  // Default: 64.
  uint32_t max_deferred = 64;

  // InvalidArgument for a negative or non-finite tolerance.
  absl::Status Validate() const;
};

// Variance-aware batching: batches whose total work is close to
// T = batch_size x mean edge work, so that there are about as many batches as
// with fixed batching, but each does the same work.
//
// Algorithm (greedy, order-preserving, O(n + batches x max_deferred)):
// shuffle all edges (seeded), then fill one batch at a time. A new batch first
// takes the deferred edges that fit (oldest first), then edges in shuffled
// order. An edge that would push the batch above window_hi is deferred into a
// small pool instead; a batch closes as soon as its work reaches window_lo.
// An edge heavier than window_hi becomes a singleton batch where it stands.
// Edges are never sorted by work, so a batch's composition stays a random
// sample: a deferred edge moves to the next batch or so, not to a group of
// its peers.
//
// Bound: every batch except heavy singletons and short batches (normally only
// the last one; see BatchPlan::short_batches) has work in
// [window_lo, window_hi] = [T, T (1 + tolerance)], hence over those batches
//   max / mean <= max / min <= 1 + tolerance   (1.1 by default).
// Since batches close as soon as they reach T, their mean is just above T and
// there are slightly fewer regular batches than fixed ones; heavy singletons
// make up the difference. Measured on 100k heavy-tailed edges (nnz ~ Pareto
// alpha 1.2 in [1, 4096], batch_size 256; tests/train/batch_former_test.cc):
// regular max/mean 1.088 (cv 0.020) against 3.1 (cv 0.38) for fixed batching;
// 380 batches (14 heavy singletons) against 391.
// If total work is 0 the plan is FixedBatches'.
// InvalidArgument when `options` are not valid.
absl::StatusOr<BatchPlan> VarianceAwareBatches(std::span<const uint32_t> edge_work,
                                               uint32_t batch_size, uint64_t seed,
                                               const VarianceAwareOptions& options = {});

// Step-size scale of a batch: batch_work / target_work, clamped to
// [min_scale, max_scale] (0 target gives 1).
//
// Why: the trainer's step is tuned for a batch of target_work. A batch's
// effective size is its work, not its edge count: its gradient is a sum of
// per-row contributions, one per row touched, so it carries batch_work units
// of signal. By the linear scaling rule (lr proportional to effective batch
// size, Goyal et al. 2017) a batch with k times the target's work takes a
// k-times step for shared parameters whose gradient is normalised per batch;
// with variance-aware batches the scale stays in the closing window
// [1, 1 + tolerance], so steps are steady. Heavy singleton batches get a large
// scale; max_scale keeps one outlier from taking an outsized step.
double StepScale(uint64_t batch_work, double target_work, double min_scale = 0,
                 double max_scale = std::numeric_limits<double>::infinity());

// Result of dealing batches to trainers: who took each batch, when each
// trainer finished (seconds, all start at 0 and run back to back), the
// makespan (the last finish) and the idle share
//   1 - (sum of busy time) / (trainers x makespan),
// the fraction of trainer time spent waiting for the slowest.
struct DealResult {
  std::vector<uint32_t> trainer_of_batch;
  std::vector<double> finish_time;    // per trainer (= its busy time)
  std::vector<uint64_t> trainer_work; // per trainer, total work taken
  double makespan = 0;
  double idle_share = 0;
};

// Dynamic dealing (list scheduling in plan order): each batch goes to the
// trainer that becomes free first (ties to the lowest index); a batch of work
// w takes w / speed seconds on a trainer of `speed` work units per second.
// REQUIRES: every speed > 0. No trainers gives an empty result.
DealResult DealDynamic(std::span<const uint64_t> batch_work,
                       std::span<const double> trainer_speed);

// Static round-robin dealing, the baseline: batch b goes to trainer b mod T.
DealResult DealRoundRobin(std::span<const uint64_t> batch_work,
                          std::span<const double> trainer_speed);

// Summary of a series for reports: mean, coefficient of variation (population
// standard deviation / mean) and max / mean. Empty input or mean 0 gives cv
// and max_over_mean 0.
struct SpreadStats {
  double mean = 0;
  double cv = 0;
  double max_over_mean = 0;
};
SpreadStats Spread(std::span<const double> values);
SpreadStats Spread(std::span<const uint64_t> values);

// The same summary over a stream, in O(1) memory (Welford's update): for
// per-batch statistics of epochs with millions of batches.
class SpreadAccumulator {
 public:
  void Add(double value);
  SpreadStats Stats() const;  // equal to Spread over the values added
  uint64_t count() const { return n_; }

 private:
  uint64_t n_ = 0;
  double mean_ = 0, m2_ = 0, max_ = 0;
};

}  // namespace ember

#endif  // EMBER_TRAIN_BATCH_BATCH_FORMER_H_
