// Row residency: where a partition's trainable rows live while it trains.
//
// The partition buffer owns the host copy of every resident partition
// (PartitionData). A trainer may keep its own copy elsewhere (a GPU trainer
// keeps the partitions of its bucket in device memory); the host copy is then
// stale until the trainer syncs it back. The buffer asks every trainer to do
// so before it writes a partition (eviction, checkpoint) and to drop its copy
// before it evicts one. The CPU trainer trains the host copy in place, so for
// it both calls are no-ops.
#ifndef EMBER_TRAIN_TRAINERS_ROW_RESIDENCY_H_
#define EMBER_TRAIN_TRAINERS_ROW_RESIDENCY_H_

#include <cstdint>

#include "absl/status/status.h"

namespace ember {

struct PartitionData;

enum class RowHome : uint8_t {
  kHost = 0,    // the host copy is current
  kDevice = 1,  // the trainer's copy is newer than the host copy
};

class RowResidency {
 public:
  virtual ~RowResidency() = default;
  // Where the newest copy of partition p's rows (and optimizer state) is.
  virtual RowHome Home(uint32_t partition) const = 0;
  // Makes `host` (the buffer's copy of its partition) current: copies this
  // trainer's rows and optimizer state back into it. Afterwards
  // Home(host->partition) == kHost. Called with no batch of that partition
  // in flight.
  virtual absl::Status SyncToHost(PartitionData* host) = 0;
  // Drops any copy of the partition; the buffer is about to evict it.
  // Called after SyncToHost, with no batch of that partition in flight.
  virtual void Release(uint32_t partition) = 0;
};

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINERS_ROW_RESIDENCY_H_
