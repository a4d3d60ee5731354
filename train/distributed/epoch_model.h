// The cost model of an epoch across ranks, and what it predicts for other
// rank counts (docs/distributed.md, "What more ranks buy"):
//
//   t(N) = E c(N) / R + steps(N) M / B + rounds(N) t_sync + t_ckpt(N)
//
// Each term is a rank's, on average (a rank that waits for a slower one in
// a round's parameter sum counts it in t_sync). E train edges; R one rank's training rate (edges/s
// while it trains); c(N) the share of E on the critical path: every rank waits for a round's
// busiest one, so c sums each round's busiest rank's edges (1/N when every
// round spreads evenly; more where the schedule cannot fill its rounds); M
// the bytes of one partition's rows and optimizer state; B the bandwidth
// of one rank's link each way; steps(N) the mean rank's move steps: over
// rounds, the moves it sends, or receives, whichever are more, at the
// boundary before the round (a link sends and receives at once; a move of
// a partition idle in the round before travels while that round trains,
// except in an epoch's first round); rounds(N) the global rounds; t_sync one round's
// parameter sum; t_ckpt(N) one checkpoint: through rank 0 the whole model
// whatever N; written by shares (own copies, or one shared graph) the
// hand-offs to the balanced writers (as
// many moves as their longest chain, at the rate measured for hand-offs,
// or at B where none was measured), the largest share's write
// (scaled from the measured one by its partitions) and the rest (commits,
// agreement) as measured.
// R, B, t_sync and the checkpoint's parts come from one measured epoch;
// c, steps, rounds, the hand-offs and the largest share from the schedule
// (ComputeRankSchedule for N ranks, BalancedWriters at its end).
// Pure: no I/O, no clock.
#ifndef EMBER_TRAIN_DISTRIBUTED_EPOCH_MODEL_H_
#define EMBER_TRAIN_DISTRIBUTED_EPOCH_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "train/distributed/rank_schedule.h"

namespace ember {

// What a schedule costs, in the units the model prices.
struct ScheduleCosts {
  uint64_t rounds = 0;
  // The busiest rank's sends and receives at round boundaries, all rounds.
  uint64_t moves_busiest_rank = 0;
  // The mean rank's move steps: over rounds, the moves it sends, or
  // receives, whichever are more, at the round's boundary.
  double move_steps = 0;
  // Sum over rounds of the busiest rank's edges, over the epoch's edges
  // (edges as the schedule weighs them).
  double critical_share = 0;
  // At the epoch's end, into own copies: the hand-offs to the
  // checkpoint's writers, in moves one after another (each pair's waits
  // for both ranks' earlier ones), and the most partitions one rank writes.
  uint64_t handoff_moves = 0;
  uint32_t largest_share = 0;
};
ScheduleCosts CostsOf(const RankSchedule& schedule);

// What one epoch measured, per rank on average (seconds are wall time).
struct EpochMeasure {
  uint32_t ranks = 1;
  uint64_t rounds = 0;              // global rounds of the epoch
  uint64_t train_edges = 0;         // E, the whole epoch's
  double train_seconds = 0;         // in the pipeline, per rank
  // Partition bytes sent, all ranks: at round boundaries, and while the
  // round before trained (hidden).
  uint64_t bytes_at_boundary = 0;
  uint64_t bytes_overlapped = 0;
  double transfer_seconds = 0;      // waiting at round boundaries, per rank
  // The sends and receives at round boundaries of the rank with most
  // (what BusiestRankMoves predicts, more where a checkpoint or a stop
  // kept the next round's moves from starting early).
  uint64_t moves_busiest_rank = 0;
  double sync_seconds = 0;          // parameter sums, per rank
  double checkpoint_seconds = 0;    // the epoch-end checkpoint
  uint64_t partition_bytes = 0;     // M: the mean partition's rows + state
  // Partition rows and state written by checkpoints this epoch, by every
  // rank and by rank 0 alone; whether each rank wrote its own share (into
  // its own copy, or beside one shared graph) rather than rank 0 all.
  uint64_t checkpoint_bytes = 0;
  uint64_t checkpoint_bytes_rank0 = 0;
  bool checkpoint_per_rank = false;
  // Written by shares, the hand-offs and share write of the rank slowest at
  // both together; the rest of checkpoint_seconds is commits and agreement.
  double checkpoint_handoff_seconds = 0;
  double checkpoint_write_seconds = 0;
  // The measured epoch's schedule, priced.
  ScheduleCosts schedule;
};

struct EpochPrediction {
  uint32_t ranks = 0;
  uint64_t rounds = 0;
  uint64_t moves_busiest_rank = 0;
  double train_seconds = 0;
  double transfer_seconds = 0;
  double sync_seconds = 0;
  double checkpoint_seconds = 0;
  double total() const {
    return train_seconds + transfer_seconds + sync_seconds + checkpoint_seconds;
  }
};

// Moves the busiest rank sends or receives at round boundaries in the
// epoch `schedule` plans (those not hidden behind the round before).
uint64_t BusiestRankMoves(const RankSchedule& schedule);

// The model above, with R, B, t_sync and the checkpoint's parts from
// `measured` and the rest from `schedule` (the schedule for
// `schedule.world_size` ranks). A measure without transfers takes B from a
// floor of 1 GB/s.
EpochPrediction PredictEpoch(const EpochMeasure& measured, const RankSchedule& schedule);

// The one-line report rank 0 prints: rate per rank, bandwidth, this N's and
// 2N's predicted epoch, and a warning when 2N would gain less than 20 %.
std::string DescribePrediction(const EpochMeasure& measured, const EpochPrediction& now,
                               const EpochPrediction& doubled);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_EPOCH_MODEL_H_
