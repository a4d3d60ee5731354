// Plain value types shared by storage, partition and train.
#ifndef EMBER_STORAGE_TYPES_H_
#define EMBER_STORAGE_TYPES_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "storage/base/enum_names.h"

namespace ember {

enum class Split : uint8_t { kTrain = 0, kValid = 1, kTest = 2 };
inline constexpr int kNumSplits = 3;
inline constexpr std::array<Split, kNumSplits> kAllSplits = {
    Split::kTrain, Split::kValid, Split::kTest};
template <>
struct EnumNames<Split> {
  static constexpr std::string_view kWhat = "split";
  static constexpr EnumNameTable<Split, kNumSplits> kTable = {{
      {Split::kTrain, "train"},
      {Split::kValid, "valid"},
      {Split::kTest, "test"},
  }};
};
inline std::string_view SplitName(Split split) { return EnumToName(split); }

// One edge inside a bucket (i, j): `src` is an offset in partition i, `dst`
// an offset in partition j, `rel` an index into Manifest::relations.
struct Edge {
  uint32_t src = 0;
  uint32_t rel = 0;
  uint32_t dst = 0;
  friend bool operator==(const Edge&, const Edge&) = default;
  friend auto operator<=>(const Edge&, const Edge&) = default;
};
static_assert(sizeof(Edge) == 12);

// A node inside training: partition and dense offset in it. Its global id is
// Manifest::PartitionBase(partition) + offset.
struct NodeRef {
  uint32_t partition = 0;
  uint32_t offset = 0;
  friend bool operator==(const NodeRef&, const NodeRef&) = default;
};
// A NodeRef as one integer: partition in the high 32 bits. Unlike global
// ids, packed refs never change when partitions grow (ember import --append).
inline uint64_t PackNodeRef(NodeRef n) {
  return (static_cast<uint64_t>(n.partition) << 32) | n.offset;
}
inline NodeRef UnpackNodeRef(uint64_t v) {
  return NodeRef{static_cast<uint32_t>(v >> 32), static_cast<uint32_t>(v)};
}

// One sparse feature of a node: an id into the graph's feature vocabulary
// and its weight. A node's list is sorted by feature id, each id at most once.
struct FeatureEntry {
  uint32_t feature = 0;
  float weight = 0;
  friend bool operator==(const FeatureEntry&, const FeatureEntry&) = default;
};

// Dense float tables kept per partition and checkpoint version.
enum class Table : uint8_t { kEmbeddings = 0, kOptimizer = 1 };

}  // namespace ember

#endif  // EMBER_STORAGE_TYPES_H_
