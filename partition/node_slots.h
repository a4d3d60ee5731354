// An immutable map from node key to a packed (partition, offset, in_train)
// slot, built from keys in ascending order: two parallel arrays plus a radix
// index on the top key bits, so a lookup is one index read and a short scan
// (node keys are uniform). 16 bytes per node plus ~1 byte of index.
#ifndef EMBER_PARTITION_NODE_SLOTS_H_
#define EMBER_PARTITION_NODE_SLOTS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember {

// Slot packing: [partition u32][offset u31][in_train u1].
inline uint64_t PackSlot(uint32_t partition, uint32_t offset, bool in_train) {
  return (static_cast<uint64_t>(partition) << 32) |
         (static_cast<uint64_t>(offset) << 1) | (in_train ? 1 : 0);
}
inline uint32_t SlotPartition(uint64_t slot) { return slot >> 32; }
inline uint32_t SlotOffset(uint64_t slot) { return (slot >> 1) & 0x7fffffffu; }
inline bool SlotInTrain(uint64_t slot) { return slot & 1; }
inline constexpr uint32_t kMaxPartitionNodes = 0x7fffffffu;

// One record of the importer's key -> slot file (sorted by key).
struct SlotRecord {
  uint64_t key;
  uint64_t slot;
};

class NodeSlotTable {
 public:
  static constexpr uint64_t kBytesPerNode = 17;

  void Reserve(size_t n);
  // REQUIRES: keys strictly ascending across calls; then Seal() before Find.
  void Append(uint64_t key, uint64_t slot);
  void Seal();
  void Clear();
  size_t size() const { return keys_.size(); }

  // The slot of `key`, or nullptr if absent.
  const uint64_t* Find(uint64_t key) const;

 private:
  std::vector<uint64_t> keys_;
  std::vector<uint64_t> slots_;
  std::vector<uint32_t> index_;  // index_[t] = first i with top bits >= t
  int shift_ = 64;
};

}  // namespace ember

#endif  // EMBER_PARTITION_NODE_SLOTS_H_
