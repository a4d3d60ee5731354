// The cost model of an epoch across ranks, and what it predicts for other
// rank counts (docs/distributed.md, "What more ranks buy"):
//
//   t(N) = E / (N R) + moves(N) M / B + rounds(N) t_sync + t_ckpt
//
// E train edges, R one rank's training rate (edges/s while training), M the
// bytes of one partition's rows and optimizer state, B the transfer
// bandwidth one rank achieves at round boundaries, moves(N) the partition
// moves of the busiest rank's epoch at round boundaries by the schedule
// (ComputeRankSchedule for N ranks: a move of a partition idle in the round
// before travels while that round trains, except in an epoch's first
// round), rounds(N) the global rounds, t_sync one round's parameter sum,
// t_ckpt one checkpoint.
// Pure: no I/O, no clock.
#ifndef EMBER_TRAIN_DISTRIBUTED_EPOCH_MODEL_H_
#define EMBER_TRAIN_DISTRIBUTED_EPOCH_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "train/distributed/rank_schedule.h"

namespace ember {

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
  double sync_seconds = 0;          // parameter sums, per rank
  double checkpoint_seconds = 0;    // the epoch-end checkpoint
  uint64_t partition_bytes = 0;     // M: the mean partition's rows + state
  // Partition rows and state written by checkpoints this epoch, by every
  // rank and by rank 0 alone; whether each rank wrote its own share into
  // its own copy (TrainOptions::rank_copies) rather than rank 0 all.
  uint64_t checkpoint_bytes = 0;
  uint64_t checkpoint_bytes_rank0 = 0;
  bool checkpoint_per_rank = false;
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

// The model above, with R, B and t_sync from `measured` and moves(N) and
// rounds(N) from `schedule` (the schedule for `schedule.world_size` ranks).
// A measure without transfers takes B from a floor of 1 GB/s.
EpochPrediction PredictEpoch(const EpochMeasure& measured, const RankSchedule& schedule);

// The one-line report rank 0 prints: rate per rank, bandwidth, this N's and
// 2N's predicted epoch, and a warning when 2N would gain less than 20 %.
std::string DescribePrediction(const EpochMeasure& measured, const EpochPrediction& now,
                               const EpochPrediction& doubled);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_EPOCH_MODEL_H_
