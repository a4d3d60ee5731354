// The bucket scheduler seam: which buckets train together, in what order.
//
// A round is a set of buckets with pairwise disjoint partitions, one per
// trainer at most, so trainers on different devices never share a
// partition's rows. The training loop pulls rounds one at a time and asks
// for the partitions of upcoming rounds (for the partition buffer's
// prefetch and eviction choice). Today's implementation cuts a precomputed
// bucket order into rounds; a lease server across processes is another.
#ifndef EMBER_TRAIN_SCHEDULE_BUCKET_SCHEDULER_H_
#define EMBER_TRAIN_SCHEDULE_BUCKET_SCHEDULER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "partition/bucket_order.h"

namespace ember {

struct Round {
  uint64_t index = 0;                // 0-based within the epoch
  std::vector<Bucket> buckets;       // disjoint partitions
  std::vector<uint32_t> partitions;  // every partition the buckets touch
};

class BucketScheduler {
 public:
  virtual ~BucketScheduler() = default;
  // The next round of the epoch, or nullopt when the epoch is done.
  virtual std::optional<Round> Next() = 0;
  // The partitions of the next `n` rounds not yet taken, nearest first.
  virtual std::vector<std::vector<uint32_t>> Upcoming(size_t n) const = 0;
  // Buckets in the whole epoch, and in the rounds taken so far.
  virtual uint64_t buckets_per_epoch() const = 0;
  virtual uint64_t buckets_taken() const = 0;
};

// Rounds of up to `round_size` buckets cut from BucketOrder(kind, P,
// capacity, seed) (FormRounds), starting at round `first_round` (a resumed
// epoch). With `skip_empty` (P x P train edges per bucket, as the manifest
// holds them), buckets without edges are left out (WithoutEmptyBuckets:
// typed graphs); empty: every bucket is visited. Rounds are formed with
// `lookahead` (FormRounds, RoundLookahead).
std::unique_ptr<BucketScheduler> MakeRoundScheduler(BucketOrderKind kind, uint32_t P,
                                                    uint32_t capacity, uint32_t round_size,
                                                    uint64_t seed, uint64_t first_round,
                                                    std::span<const uint64_t> skip_empty = {},
                                                    uint32_t lookahead = kOutOfCoreLookahead);

}  // namespace ember

#endif  // EMBER_TRAIN_SCHEDULE_BUCKET_SCHEDULER_H_
