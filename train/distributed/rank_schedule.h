// The schedule of one epoch across MPI ranks, computed, not leased: every
// rank calls ComputeRankSchedule with the same inputs and gets the same
// rounds, so no lock server and no polling. Pure: no I/O, no threads, no
// MPI; deterministic in its arguments (vectors only, no hash-ordered
// containers).
//
// Why a value and not a new BucketScheduler: a rank must know the whole
// global round (what every other rank trains, which partitions move where)
// to drive its transfers, and every rank must agree on it bit for bit; the
// BucketScheduler seam hands one process its own rounds one at a time.
// RankRoundScheduler adapts one rank's view of the value to that seam.
//
// A global round is a set of buckets with pairwise disjoint partitions, each
// assigned to a (rank, trainer) slot. Rounds are formed exactly as the
// single-process scheduler forms them with every partition in memory
// (FormRounds over BucketOrder(kind, P, capacity, seed + epoch) with
// world_size * trainers_per_rank slots and the whole order as look-ahead),
// so the configured order is kept as far as disjointness allows, and world
// size 1 gives one process's rounds. Within a round, buckets go to ranks by edges,
// largest first: to a rank that already holds their partitions where that
// keeps the rank's load within `holder_slack` x the round's lower bound
// max(largest bucket, round edges / world_size), otherwise to the least
// loaded rank with a free slot (LPT).
//
// Partitions have one holder each. A partition stays with its holder until a
// bucket on another rank needs it; then it moves holder to holder at the
// boundary before that round (Transfer). A bucket known to hold no edges
// needs no rows: it goes to a holder of its source and moves nothing.
#ifndef EMBER_TRAIN_DISTRIBUTED_RANK_SCHEDULE_H_
#define EMBER_TRAIN_DISTRIBUTED_RANK_SCHEDULE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/bucket_order.h"
#include "train/schedule/bucket_scheduler.h"

namespace ember {

struct RankScheduleOptions {
  uint64_t seed = 0;   // the training seed; the order uses seed + epoch
  uint64_t epoch = 0;
  uint32_t num_partitions = 1;     // P; must be >= 1
  uint32_t world_size = 1;         // N ranks; must be >= 1
  uint32_t trainers_per_rank = 1;  // T; must be >= 1
  BucketOrderKind order = BucketOrderKind::kInsideOut;
  // The buffer capacity BucketOrder reads (kBeta only). Default: 2.
  uint32_t buffer_capacity = 2;
  // FormRounds' look-ahead window; 0: RoundLookahead(P, all resident), the
  // whole order (ranks hold their shares whatever their buffers, and every
  // rank must form the same rounds). Default: 0.
  uint32_t lookahead = 0;
  // Train edges per bucket, row-major (src * P + dst), as in
  // Manifest::train_bucket_edges; empty: unknown, every bucket counts 1
  // and needs its rows. REQUIRES: a 0 here means the bucket has nothing to
  // train (its rows are not moved for it).
  std::vector<uint64_t> bucket_edges;
  // The holder of each partition at the start of the epoch (size P, each
  // < world_size); empty: DefaultHolders. Chain epochs by passing the last
  // epoch's final_holders.
  std::vector<uint32_t> holders;
  // A holder is preferred while its load stays within holder_slack x the
  // round's lower bound. Must be >= 1. Default: 1.25.
  double holder_slack = 1.25;
};

// One bucket of a global round and the slot it trains in.
struct RankBucket {
  Bucket bucket;
  uint32_t rank = 0;
  uint32_t trainer = 0;  // slot on that rank, < trainers_per_rank
  uint64_t edges = 0;    // as weighed (1 per bucket when edges are unknown)
  friend bool operator==(const RankBucket&, const RankBucket&) = default;
};

// Partition `partition` moves from rank `from` (its holder) to rank `to`
// before the round that names it. `overlapped`: the partition is idle in the
// round before, so it can be sent while that round trains; otherwise it is
// sent once the round before has finished with it (on the critical path).
struct Transfer {
  uint32_t partition = 0;
  uint32_t from = 0;
  uint32_t to = 0;
  bool overlapped = false;
  friend bool operator==(const Transfer&, const Transfer&) = default;
};

struct GlobalRound {
  uint64_t index = 0;
  // In the configured order (as FormRounds keeps it); partitions disjoint.
  std::vector<RankBucket> buckets;
  // Moves due before this round, in partition order; at most one per
  // partition. Applying them to the holders before this round puts every
  // partition of every bucket with edges on that bucket's rank.
  std::vector<Transfer> transfers;
  friend bool operator==(const GlobalRound&, const GlobalRound&) = default;
};

struct RankSchedule {
  uint32_t num_partitions = 0;
  uint32_t world_size = 0;
  uint32_t trainers_per_rank = 0;
  std::vector<uint32_t> initial_holders;  // size P
  std::vector<uint32_t> final_holders;    // size P, after the last round
  std::vector<GlobalRound> rounds;

  // `rank`'s buckets in round `round`, in slot order (possibly none).
  std::vector<Bucket> BucketsOf(uint32_t rank, uint64_t round) const;
  // What `rank` must have resident for round `round`: the partitions it
  // receives (Transfer::to == rank) and the ones it already holds (local
  // loads for its partition buffer), each sorted. The prefetch list for the
  // next round is Prefetch(rank, current + 1).
  struct Prefetch {
    std::vector<Transfer> receive;
    std::vector<Transfer> send;     // Transfer::from == rank
    std::vector<uint32_t> local;    // held by `rank` already
  };
  Prefetch PrefetchFor(uint32_t rank, uint64_t round) const;
  // The holders at the start of round `round` (rounds.size(): the end).
  std::vector<uint32_t> HoldersBefore(uint64_t round) const;
  friend bool operator==(const RankSchedule&, const RankSchedule&) = default;
};

// Partition p starts on rank p * N / P (contiguous, counts within one).
std::vector<uint32_t> DefaultHolders(uint32_t num_partitions, uint32_t world_size);

// InvalidArgument names the field at fault (P, N or T of 0, a bucket_edges
// or holders vector of the wrong size, a holder >= N, a slack below 1).
absl::StatusOr<RankSchedule> ComputeRankSchedule(const RankScheduleOptions& options);

// `rank`'s rounds of `schedule` as a BucketScheduler, from global round
// `first_round`. Unlike the single-process scheduler, Next() yields every
// global round, empty ones included (the rank still takes part in the
// round's transfers and sync), with Round::index the global index. Buckets
// known to hold no edges are left out (their rows need not be on the rank).
class RankRoundScheduler final : public BucketScheduler {
 public:
  // REQUIRES: rank < schedule->world_size; `schedule` outlives the scheduler.
  RankRoundScheduler(const RankSchedule* schedule, uint32_t rank, uint64_t first_round);
  std::optional<Round> Next() override;
  std::vector<std::vector<uint32_t>> Upcoming(size_t n) const override;
  uint64_t buckets_per_epoch() const override { return buckets_; }
  uint64_t buckets_taken() const override { return taken_; }
  // For each of this rank's buckets in global round `g`, in their order:
  // its position in the global round (the ClusterSync key of the trainer
  // that trains it).
  std::vector<int32_t> KeysOf(uint64_t g) const;

 private:
  Round Make(uint64_t g, std::vector<int32_t>* keys) const;

  const RankSchedule* const schedule_;
  const uint32_t rank_;
  uint64_t next_;
  uint64_t buckets_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_RANK_SCHEDULE_H_
