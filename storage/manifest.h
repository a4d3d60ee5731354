// MANIFEST.json: the root of a graph directory. Everything else in the
// directory is found through it; it is only ever replaced atomically
// (write temp file, fsync, rename, fsync dir).
#ifndef EMBER_STORAGE_MANIFEST_H_
#define EMBER_STORAGE_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// A kind of node (PBG's entity type: users, items, tags). A typed graph's
// partitions are typed: the nodes of type t fill partitions
// [first_partition, first_partition + num_partitions), so bucket (i, j)
// holds only edges from type(i) to type(j), and a partition's negatives are
// of its type. A type of one partition is "unpartitioned" in PBG's words:
// small, and resident in every bucket that needs it.
struct NodeType {
  std::string name;
  uint32_t first_partition = 0;
  uint32_t num_partitions = 1;
};

// The types of a relation's two sides (PBG's lhs and rhs), as indices into
// Manifest::node_types.
struct RelationTypes {
  uint32_t src = 0;
  uint32_t dst = 0;
  friend bool operator==(const RelationTypes&, const RelationTypes&) = default;
};

// The spread of a weighted graph's edge weights (all splits), as imported.
struct EdgeWeightStats {
  double min = 0;
  double mean = 0;
  double max = 0;
};

struct Manifest {
  // Version 1: unweighted edge blocks (12 bytes an edge). Version 2: a
  // weighted graph (edge_weights), whose blocks add an f32 weight an edge.
  // Version 3: a typed graph (node_types), its blocks weighted or not as
  // edge_weights says. Each version is what the graph needs
  // (RequiredFormatVersion), so a reader that knows only older versions
  // refuses the graph instead of misreading its blocks, training it
  // untyped, or rewriting its manifest without the types.
  static constexpr int kFormatVersion = 1;
  static constexpr int kWeightedFormatVersion = 2;
  static constexpr int kTypedFormatVersion = 3;
  // As read; a manifest is written with RequiredFormatVersion().
  int format_version = kFormatVersion;
  // Whether every edge block carries its edges' weights
  // (storage/internal/keys.h).
  bool edge_weights = false;
  EdgeWeightStats edge_weight_stats;  // with edge_weights
  void SetEdgeWeights(bool weighted) {
    edge_weights = weighted;
    format_version = RequiredFormatVersion();
  }
  // The lowest format version that describes this graph.
  int RequiredFormatVersion() const {
    if (typed()) return kTypedFormatVersion;
    return edge_weights ? kWeightedFormatVersion : kFormatVersion;
  }

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
  // The node types of a graph imported with a schema, in the order their
  // partitions follow each other; empty for an untyped graph (one kind of
  // node in every partition, as every graph before schemas).
  std::vector<NodeType> node_types;
  // With node_types: the types of each relation's sides, index = relation
  // id. Empty otherwise.
  std::vector<RelationTypes> relation_types;

  bool typed() const { return !node_types.empty(); }
  // The type of partition p: an index into node_types (0 when untyped).
  uint32_t TypeOfPartition(uint32_t p) const;
  // The partitions of type t, [FirstPartitionOf, EndPartitionOf): all of
  // them when untyped.
  uint32_t FirstPartitionOf(uint32_t type) const;
  uint32_t PartitionsOf(uint32_t type) const;
  uint32_t EndPartitionOf(uint32_t type) const {
    return FirstPartitionOf(type) + PartitionsOf(type);
  }
  // The nodes of type t (all nodes when untyped).
  uint64_t NodesOf(uint32_t type) const;
  // Index of the type named `name`; NotFound naming the known types.
  absl::StatusOr<uint32_t> FindType(std::string_view name) const;

  // Global id of offset 0 of partition p: the sum of the sizes before it.
  uint64_t PartitionBase(uint32_t p) const;
  // Rows of the largest partition (0 with none).
  uint64_t LargestPartition() const;
  // Checks internal consistency (sizes add up, vector lengths match P; the
  // types' partitions follow each other and cover [0, P); one
  // relation_types entry per relation, naming existing types).
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
