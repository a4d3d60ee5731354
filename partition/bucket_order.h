// Pure bucket scheduling: the order in which an epoch visits the P x P edge
// buckets, the partition loads an order costs with a buffer of C slots, and
// the grouping of an order into rounds for several trainers. No I/O, no
// threads; every function here is deterministic in its arguments.
//
// Nodes are split into P partitions; bucket (i, j) holds the edges whose
// source lies in partition i and destination in partition j. Training bucket
// (i, j) needs partitions i and j resident in the partition buffer, which
// holds C partitions (2 <= C <= P; other values are clamped into that range,
// and C = 1 is meaningful only for P = 1).
#ifndef EMBER_PARTITION_BUCKET_ORDER_H_
#define EMBER_PARTITION_BUCKET_ORDER_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/base/enum_names.h"

namespace ember {

struct Bucket {
  uint32_t src = 0;  // source partition
  uint32_t dst = 0;  // destination partition
  friend bool operator==(const Bucket&, const Bucket&) = default;
};

enum class BucketOrderKind {
  // PBG's default (create_buckets_ordered_by_layer with INSIDE_OUT): layers
  // L_i = {(a, b) : min(a, b) == i} visited for i = P-1 down to 0; inside a
  // layer, the transposed pairs {(p, i), (i, p)} stay adjacent and the pairs
  // and the diagonal (i, i) are shuffled. One deliberate difference from PBG:
  // the diagonal never opens a layer other than the first, so that every
  // bucket after the first shares a partition with an earlier bucket (PBG's
  // shuffle lets (i, i) come first and break that property).
  kInsideOut,
  // Marius' BETA (Buffer-aware Edge Traversal Algorithm, OSDI '21): the
  // partitions (relabelled by a seeded permutation) are cut into groups of
  // C-1. Round k keeps group k fixed in C-1 slots and cycles every later
  // partition through the last slot, the last one cycled being a member of
  // group k+1; then group k+1 is brought in (its members meet each other on
  // the way) and round k+1 starts. Each load trains every bucket between the
  // loaded partition and the residents not trained yet. With C = 2 it meets
  // PartitionLoadLowerBound exactly; with C = P it needs exactly P loads;
  // see bucket_order_test.cc for the measured ratio to the bound.
  kBeta,
  kSequential,  // row-major: (0,0), (0,1), ..., (P-1,P-1); ignores the seed
  kRandom,      // a seeded uniform shuffle of all P*P buckets
};

template <>
struct EnumNames<BucketOrderKind> {
  static constexpr std::string_view kWhat = "bucket order";
  static constexpr EnumNameTable<BucketOrderKind, 4> kTable = {{
      {BucketOrderKind::kInsideOut, "inside-out"},
      {BucketOrderKind::kBeta, "beta"},
      {BucketOrderKind::kSequential, "sequential"},
      {BucketOrderKind::kRandom, "random"},
  }};
};
// Anything but the table's names is InvalidArgument.
inline absl::StatusOr<BucketOrderKind> ParseBucketOrderKind(std::string_view name) {
  return EnumFromName<BucketOrderKind>(name);
}
// The name ParseBucketOrderKind accepts for `kind`.
inline std::string_view BucketOrderName(BucketOrderKind kind) { return EnumToName(kind); }

// All P*P buckets, each exactly once, in training order for one epoch.
// Deterministic in (kind, num_partitions, buffer_capacity, seed); the caller
// passes seed + epoch to vary the order between epochs. Only kBeta reads
// buffer_capacity (clamped into [2, P]). num_partitions == 0 gives {}.
std::vector<Bucket> BucketOrder(BucketOrderKind kind, uint32_t num_partitions,
                                uint32_t buffer_capacity, uint64_t seed);

// `order` without the buckets that hold no edges (bucket_edges[src * P +
// dst] == 0), in the same order. For typed graphs, where most of the P x P
// grid joins types no relation joins (a user-item graph of P user
// partitions and one item partition trains P buckets): an empty bucket
// would still cost its partitions' loads.
std::vector<Bucket> WithoutEmptyBuckets(std::vector<Bucket> order,
                                        std::span<const uint64_t> bucket_edges,
                                        uint32_t num_partitions);

// The number of partition loads a buffer of `capacity` slots needs to train
// `order` bucket by bucket, starting empty, evicting by Belady's rule (when a
// slot is needed, evict the resident partition, other than the ones the
// current bucket needs, whose next use is furthest away or never). Counts
// every load, the initial ones included. A capacity below 2 is treated as 2
// (a bucket may need two partitions at once). Every bucket must name
// partitions below num_partitions.
uint64_t CountPartitionLoads(std::span<const Bucket> order,
                             uint32_t num_partitions, uint32_t capacity);

// A lower bound on the loads any order of all P*P buckets needs with a
// buffer of C slots (C clamped into [2, P]); it is the bound of the Marius
// paper (Mohoney et al., OSDI '21, Sec. 4), derived as follows. Every
// unordered pair {a, b}, a != b, must be resident together at some moment
// (bucket (a, b) needs both), and a pair becomes resident together only when
// one of its members is loaded. The first C loads bring together at most
// 0 + 1 + ... + (C-1) = C(C-1)/2 pairs; any later load brings the loaded
// partition together with at most C-1 residents. Hence for P > C:
//   loads >= C + ceil((P(P-1)/2 - C(C-1)/2) / (C-1)),
// and for P <= C the bound is P (each partition is loaded at least once).
uint64_t PartitionLoadLowerBound(uint32_t num_partitions, uint32_t capacity);

// Groups `order` into rounds for `num_trainers` trainers working at once.
// Promises: every bucket of `order` appears in exactly one round; each round
// holds between 1 and num_trainers buckets whose partition sets ({src, dst})
// are pairwise disjoint; buckets move ahead of earlier ones only within the
// look-ahead window, and inside a round keep their relative order. Greedy: a round starts with the earliest remaining bucket and is
// filled by scanning the next remaining buckets, at most `lookahead` of them
// in all (the first included), taking each one disjoint from those taken.
// num_trainers == 0 and lookahead == 0 are treated as 1; with one trainer
// each round is one bucket, in the order given.
std::vector<std::vector<Bucket>> FormRounds(std::span<const Bucket> order,
                                            uint32_t num_trainers,
                                            uint32_t lookahead = 64);

// FormRounds' look-ahead for a schedule of P partitions. Out of core,
// kOutOfCoreLookahead buckets, so that a round's partitions stay close to
// the order the buffer's loads follow. Where every partition is resident
// (one process holding them all, or ranks each holding their share), the
// whole order of P x P buckets, so that rounds fill their slots: with 64,
// inside-out rounds of an R-MAT graph of 128 partitions hold 1.6 buckets
// on average however many slots they have. A round still starts with the
// earliest bucket left.
inline constexpr uint32_t kOutOfCoreLookahead = 64;
uint32_t RoundLookahead(uint32_t num_partitions, bool all_resident);

}  // namespace ember

#endif  // EMBER_PARTITION_BUCKET_ORDER_H_
