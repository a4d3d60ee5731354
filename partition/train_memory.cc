#include "partition/train_memory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ember {

std::string Mib(uint64_t bytes) { return absl::StrCat((bytes + (1 << 20) - 1) >> 20, " MiB"); }

TrainMemoryShares SplitTrainBudget(uint64_t budget) {
  TrainMemoryShares s;
  s.edges = budget / 4;
  s.storage = budget / 8;
  s.rows = budget - s.edges - s.storage;
  return s;
}

uint32_t AutoPartitions(uint64_t nodes, int dim, uint64_t budget) {
  const uint64_t rows = SplitTrainBudget(budget).rows;
  const uint64_t per_node = RowBytesPerNode(dim);
  if (nodes * per_node <= rows) return 1;
  for (uint32_t p = 2; p < kMaxAutoPartitions; ++p) {
    // Hash partitions are near even; 1/16 covers their spread.
    const uint64_t even = (nodes + p - 1) / p;
    const uint64_t largest = even + even / 16;
    if (largest * per_node * kAutoBufferPartitions <= rows) return p;
  }
  return kMaxAutoPartitions;
}

}  // namespace ember
