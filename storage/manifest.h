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
  // Percentiles: exact below 65536; above, the power of two below them
  // (older manifests hold that power of two at every degree).
  uint64_t p50 = 0;
  uint64_t p90 = 0;
  uint64_t p99 = 0;
};

// Where training stands, as storage keeps it. Storage owns two facts: the
// committed checkpoint version (whose tables and blobs are live) and the
// edge generation of the graph the record was written for (an append since
// leaves it behind Manifest::edge_generation; readers of the state see
// that). The rest is the trainer's (train/model/train_state.h), kept
// verbatim and never read here: `state`, a JSON object whose members are
// written into MANIFEST.json's `training` object beside storage's fields,
// in the trainer's format `state_version`.
struct TrainingRecord {
  uint64_t checkpoint_version = 0;  // 0: no checkpoint yet
  // Read as Manifest::edge_generation when absent (manifests written before
  // it was recorded: their appends reset the state themselves).
  uint32_t edge_generation = 0;
  uint32_t state_version = 0;  // 0: unversioned (written before versions)
  std::string state = "{}";
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
  TrainingRecord training;
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
