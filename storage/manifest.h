// MANIFEST.json: the root of a graph directory. Everything else in the
// directory is found through it; it is only ever replaced atomically
// (write temp file, fsync, rename, fsync dir).
#ifndef EMBER_STORAGE_MANIFEST_H_
#define EMBER_STORAGE_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/types.h"

namespace ember {

struct SplitCounts {
  uint64_t train = 0;
  uint64_t valid = 0;
  uint64_t test = 0;
  uint64_t& operator[](Split s);
  uint64_t operator[](Split s) const;
  uint64_t total() const { return train + valid + test; }
};

// Degree (edges touching a node, all splits, both directions) statistics.
struct DegreeStats {
  uint64_t min = 0;
  uint64_t max = 0;
  double mean = 0;
  uint64_t p50 = 0;  // percentiles are exact to the power of two below them
  uint64_t p90 = 0;
  uint64_t p99 = 0;
};

// Where training stands. The trainer owns `state_json` (options, position in
// the epoch, RNG state); storage keeps it and knows one field of it:
// `trainer.next_round`, the round the next run resumes at within its epoch.
struct TrainingState {
  uint64_t checkpoint_version = 0;  // 0: no checkpoint yet
  uint32_t epochs_done = 0;
  uint32_t dim = 0;
  std::string state_json = "{}";

  // Keeps the checkpoint but starts the epoch count over: epochs_done = 0
  // and, where the state has a `trainer` object, trainer.next_round = 0 (a
  // grown graph's bucket rounds no longer match the saved position). Other
  // fields are kept. DataLoss naming `manifest_path` when `trainer` is not
  // an object; then nothing changes.
  absl::Status RestartEpochs(const std::string& manifest_path);
};

// How `ember import --partitions auto` chose num_partitions: the smallest P
// at which training at `dim` under `memory_budget` keeps enough partitions
// in memory (partition/train_memory.h).
struct PartitionsAuto {
  uint32_t dim = 0;            // the --dim given to import
  uint64_t memory_budget = 0;  // the --memory-budget given to import, bytes
};

struct Manifest {
  static constexpr int kFormatVersion = 1;
  int format_version = kFormatVersion;

  uint64_t num_nodes = 0;
  uint32_t num_partitions = 1;
  std::vector<uint64_t> partition_sizes;  // num_partitions entries
  std::vector<std::string> relations;     // index = relation id
  SplitCounts edges;
  // Train edges per bucket, row-major: [src_part * P + dst_part].
  std::vector<uint64_t> train_bucket_edges;
  std::string partitioner = "hash";  // "hash" or "degree"
  uint64_t seed = 0;
  bool integer_ids = false;
  uint64_t num_features = 0;  // feature vocabulary size; 0: no features
  // Edge blocks of generations above this are not part of the graph.
  uint32_t edge_generation = 0;
  // Partition sizes before the latest `import --append` (empty if none):
  // rows below them are the "old" nodes that --only-new-edges freezes.
  std::vector<uint64_t> previous_partition_sizes;
  DegreeStats degree;
  TrainingState training;
  // Set when num_partitions was chosen by `import --partitions auto`;
  // absent when it was given. `import --append` keeps it.
  std::optional<PartitionsAuto> partitions_auto;

  // Global id of offset 0 of partition p: the sum of the sizes before it.
  uint64_t PartitionBase(uint32_t p) const;
  // Rows of the largest partition (0 with none).
  uint64_t LargestPartition() const;
  // Checks internal consistency (sizes add up, vector lengths match P).
  absl::Status Validate() const;
};

// InvalidArgument naming `path` and the field for a malformed or
// inconsistent manifest; DataLoss naming `path` for a malformed
// partitions_auto record.
absl::StatusOr<Manifest> ReadManifest(const std::string& path);
// Atomic: readers see the old or the new manifest, never a torn one.
absl::Status WriteManifestAtomic(const std::string& path, const Manifest& m);

}  // namespace ember

#endif  // EMBER_STORAGE_MANIFEST_H_
