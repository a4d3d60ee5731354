// Collects the distinct nodes of an import with their degrees, in bounded
// memory: nodes are kept in 64 key-range shards; a shard that outgrows its
// share of the budget is sorted and spilled to a run file, and Finish()
// merges the runs. The merged result does not depend on the order of Add()
// calls, so parallel parsing stays deterministic.
#ifndef EMBER_PARTITION_NODE_AGGREGATOR_H_
#define EMBER_PARTITION_NODE_AGGREGATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ember {

struct NodeOccurrence {
  uint64_t key = 0;       // StringNodeKey / IntegerNodeKey
  std::string_view name;  // ignored when the aggregator has integer ids
  bool train = false;     // the occurrence is in a train edge
  uint16_t type = 0;      // the node's type there (0 in an untyped graph)
  uint64_t where = 0;     // where it occurs, for messages (the caller's code)
};

struct MergedNode {
  uint64_t key = 0;
  uint64_t degree = 0;    // occurrences, all splits
  bool in_train = false;  // at least one occurrence in a train edge
  uint16_t type = 0;      // the type of all its occurrences
  uint64_t where = 0;     // one of its occurrences' `where`
  std::string_view name;  // valid until the next Next(); empty for integers
};

struct NodeAggregatorOptions {
  // Nodes are integer ids (keys from IntegerNodeKey). Default: false.
  bool integer_ids = false;
  // Memory for the in-memory shards (the spill threshold). Default: 256 MiB.
  uint64_t memory_bytes = 256ull << 20;
  // Where run files go. Required: no default.
  std::string spill_dir;
  // For the message of a node that occurs as two types: a `where` as text
  // ("file:line") and a type's name. Default: the numbers themselves.
  std::function<std::string(uint64_t where)> describe_where;
  std::function<std::string(uint16_t type)> type_name;

  // InvalidArgument for a zero memory_bytes or a missing spill_dir.
  absl::Status Validate() const;
};

class NodeAggregator {
 public:
  static constexpr int kShardBits = 6;
  static constexpr int kNumShards = 1 << kShardBits;

  // InvalidArgument when `options` are not valid.
  static absl::StatusOr<std::unique_ptr<NodeAggregator>> Make(
      const NodeAggregatorOptions& options);
  ~NodeAggregator();
  NodeAggregator(const NodeAggregator&) = delete;
  NodeAggregator& operator=(const NodeAggregator&) = delete;

  // Thread-safe. Fails (sticky) on a key collision between two different
  // names, a node that occurs as two types (InvalidArgument naming where it
  // occurs as each), or a spill I/O error.
  absl::Status Add(std::span<const NodeOccurrence> occurrences);

  // The number of distinct keys added: what ForEachMerged will stream (it
  // fails instead on a name collision). Free for shards that never spilled;
  // a shard with runs is counted by a key-only merge that reads its runs
  // once. Leaves the aggregator as it was. REQUIRES: all Add()s done.
  absl::StatusOr<uint64_t> CountDistinct();
  // The same, by type: entry t counts the nodes of type t (as many entries
  // as the largest type seen, plus one). A node's type is that of any of its
  // occurrences (all agree unless ForEachMerged fails).
  absl::StatusOr<std::vector<uint64_t>> CountDistinctByType();

  // Streams all nodes in ascending key order. REQUIRES: all Add()s done.
  // Calls fn for each node; stops at the first non-OK status (or at a node
  // whose occurrences in two spilled runs have two types).
  absl::Status ForEachMerged(
      const std::function<absl::Status(const MergedNode&)>& fn);

  uint64_t runs_spilled() const;

 private:
  struct Shard;
  explicit NodeAggregator(const NodeAggregatorOptions& options);
  absl::Status SpillShard(Shard* shard, int index);
  NodeAggregatorOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace ember

#endif  // EMBER_PARTITION_NODE_AGGREGATOR_H_
