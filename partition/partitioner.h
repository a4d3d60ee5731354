// Pure functions that place nodes in partitions and edges in splits. No I/O;
// everything here is deterministic in its inputs.
#ifndef EMBER_PARTITION_PARTITIONER_H_
#define EMBER_PARTITION_PARTITIONER_H_

#include <array>
#include <cstdint>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/base/enum_names.h"
#include "storage/types.h"

namespace ember {

enum class PartitionerKind { kHash, kDegree };
template <>
struct EnumNames<PartitionerKind> {
  static constexpr std::string_view kWhat = "partitioner";
  static constexpr EnumNameTable<PartitionerKind, 2> kTable = {{
      {PartitionerKind::kHash, "hash"},
      {PartitionerKind::kDegree, "degree"},
  }};
};
inline absl::StatusOr<PartitionerKind> ParsePartitionerKind(std::string_view name) {
  return EnumFromName<PartitionerKind>(name);
}
inline std::string_view PartitionerName(PartitionerKind kind) { return EnumToName(kind); }

// Partition of a node under the hash partitioner: uniform in [0, P) over
// node keys, independent of the key's range (see node_hash.h).
uint32_t HashPartition(uint64_t node_key, uint32_t num_partitions);

// Streaming greedy degree balancing: each node goes to the partition with
// the least total degree so far (ties: lowest index). The spread of edge
// endpoints per partition ends within one maximum degree of even.
class DegreeBalancer {
 public:
  explicit DegreeBalancer(uint32_t num_partitions);
  uint32_t Assign(uint64_t degree);
  const std::vector<uint64_t>& loads() const { return loads_; }

 private:
  using Entry = std::pair<uint64_t, uint32_t>;  // (load, partition)
  std::vector<uint64_t> loads_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

// Split fractions (train, valid, test); they sum to 1.
struct SplitFractions {
  std::array<double, kNumSplits> fraction = {1.0, 0.0, 0.0};
};
absl::StatusOr<SplitFractions> ParseSplitFractions(std::string_view text);

// Split of an edge, a function of (seed, src key, relation key, dst key)
// alone: duplicates of an edge always land in the same split.
Split SplitOfEdge(const SplitFractions& fractions, uint64_t seed,
                  uint64_t src_key, uint64_t rel_key, uint64_t dst_key);

}  // namespace ember

#endif  // EMBER_PARTITION_PARTITIONER_H_
