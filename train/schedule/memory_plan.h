// How `ember train --memory-budget` is spent (partition/train_memory.h has
// the shares): how many partitions the buffer holds, and how many edges a
// shuffled window holds so that every window the pipeline can have alive
// fits the edges share.
#ifndef EMBER_TRAIN_SCHEDULE_MEMORY_PLAN_H_
#define EMBER_TRAIN_SCHEDULE_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/train_memory.h"  // Mib
#include "storage/graph.h"

namespace ember {

struct TrainMemoryInput {
  std::string graph_dir;  // for messages
  uint64_t budget = 0;
  std::vector<uint64_t> partition_sizes;  // nodes per partition
  uint64_t num_nodes = 0;
  int dim = 100;
  bool id_rows = true;    // partitions hold embedding rows
  bool features = false;  // partitions hold a feature CSR
  // With features: each partition's feature entries (the CSR's entries
  // beside its row offsets); as many as partition_sizes.
  std::vector<uint64_t> partition_feature_entries;
  uint64_t feature_table_bytes = 0;  // shared table of featurized models
  uint32_t requested_buffer = 0;     // --buffer-partitions (0: as many as fit)
  size_t round_buckets = 1;          // buckets trained at once
  size_t tokens = 1;                 // batches in flight
  int reader_depth = 1;              // windows read ahead per bucket
  uint64_t window_edges = 0;         // forced window (0: from the budget)
};

struct TrainMemoryPlan {
  uint32_t buffer_partitions = 1;
  uint64_t window_edges = 0;
  // The largest partition's state: id rows and Adagrad floats, and with
  // features its CSR (row offsets and entries).
  uint64_t partition_bytes = 0;
  uint64_t rows_bytes = 0;       // what the rows share allows
  uint64_t storage_bytes = 0;    // RocksDB write buffers and caches
  // Windows the pipeline can hold at once: per bucket of the current and
  // the next round depth + 1 in its reader, one per bucket being cut into
  // batches, one per batch in flight.
  uint64_t max_windows = 0;
};

// FailedPrecondition naming the numbers and the fix when the buffer cannot
// hold the partitions a round needs (two, or one when P == 1), or fewer
// than --buffer-partitions asked for.
absl::StatusOr<TrainMemoryPlan> PlanTrainMemory(const TrainMemoryInput& in);

// Feature entries stored in each partition of `graph`, counted by reading
// every partition's features once (no record of them is kept; a run reads
// them again each time it loads a partition).
absl::StatusOr<std::vector<uint64_t>> PartitionFeatureEntries(const Graph& graph);

}  // namespace ember

#endif  // EMBER_TRAIN_SCHEDULE_MEMORY_PLAN_H_
