#include "partition/node_slots.h"

#include <algorithm>
#include <bit>

#include "storage/base/status_macros.h"

namespace ember {

void NodeSlotTable::Reserve(size_t n) {
  keys_.reserve(n);
  slots_.reserve(n);
}

void NodeSlotTable::Append(uint64_t key, uint64_t slot) {
  EMBER_CHECK(keys_.empty() || keys_.back() < key);
  keys_.push_back(key);
  slots_.push_back(slot);
}

void NodeSlotTable::Seal() {
  // About 4 keys per index bucket.
  int bits = std::max(1, static_cast<int>(std::bit_width(keys_.size() / 4 + 1)));
  bits = std::min(bits, 30);
  shift_ = 64 - bits;
  const size_t buckets = size_t{1} << bits;
  index_.assign(buckets + 1, 0);
  size_t i = 0;
  for (size_t t = 0; t <= buckets; ++t) {
    while (i < keys_.size() && (keys_[i] >> shift_) < t) ++i;
    index_[t] = static_cast<uint32_t>(i);
  }
}

void NodeSlotTable::Clear() {
  std::vector<uint64_t>().swap(keys_);
  std::vector<uint64_t>().swap(slots_);
  std::vector<uint32_t>().swap(index_);
}

const uint64_t* NodeSlotTable::Find(uint64_t key) const {
  if (index_.empty()) return nullptr;
  const uint64_t t = key >> shift_;
  const uint32_t lo = index_[t], hi = index_[t + 1];
  for (uint32_t i = lo; i < hi; ++i) {
    if (keys_[i] == key) return &slots_[i];
    if (keys_[i] > key) break;
  }
  return nullptr;
}

}  // namespace ember
