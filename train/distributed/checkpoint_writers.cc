#include "train/distributed/checkpoint_writers.h"

#include <algorithm>

namespace ember {

std::vector<uint32_t> BalancedWriters(std::span<const uint32_t> holders, uint32_t world_size) {
  const uint32_t P = static_cast<uint32_t>(holders.size());
  const uint32_t cap = (P + world_size - 1) / world_size;
  std::vector<uint32_t> writers(P), count(world_size, 0);
  std::vector<uint32_t> excess;
  for (uint32_t p = 0; p < P; ++p) {
    if (count[holders[p]] < cap) {
      writers[p] = holders[p];
      ++count[holders[p]];
    } else {
      excess.push_back(p);
    }
  }
  for (uint32_t p : excess) {
    const uint32_t r =
        static_cast<uint32_t>(std::min_element(count.begin(), count.end()) - count.begin());
    writers[p] = r;
    ++count[r];
  }
  return writers;
}

uint32_t LargestShare(std::span<const uint32_t> writers, uint32_t world_size) {
  std::vector<uint32_t> count(world_size, 0);
  for (uint32_t r : writers) ++count[r];
  return count.empty() ? 0 : *std::max_element(count.begin(), count.end());
}

}  // namespace ember
