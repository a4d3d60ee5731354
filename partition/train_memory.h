// How `ember train` splits a memory budget, and the partition count that
// `ember import --partitions auto` derives from it. One home for the
// arithmetic, so that a graph imported with `--partitions auto
// --memory-budget B` is one that `ember train --memory-budget B` accepts.
//
// The budget is split into fixed shares (TrainMemoryShares): partition rows
// (the partition buffer, and the feature table of featurized models), edges
// in flight (the streaming pipeline's windows), and storage (RocksDB write
// buffers and block cache). The binary and its libraries are not part of the
// budget: measured RSS of `ember train` on a tiny graph is about 40 MiB.
//
// Pure functions; no I/O.
#ifndef EMBER_PARTITION_TRAIN_MEMORY_H_
#define EMBER_PARTITION_TRAIN_MEMORY_H_

#include <cstdint>
#include <string>

namespace ember {

struct TrainMemoryShares {
  uint64_t rows = 0;     // partition buffer (+ feature table)
  uint64_t edges = 0;    // edge windows in flight
  uint64_t storage = 0;  // RocksDB write buffers and caches
};

// rows 5/8, edges 1/4, storage 1/8 of `budget`.
TrainMemoryShares SplitTrainBudget(uint64_t budget);

// Bytes one node's trainable state takes in the partition buffer: an
// embedding row of `dim` floats and one row-wise Adagrad float.
inline uint64_t RowBytesPerNode(int dim) { return uint64_t(dim) * 4 + 4; }

// Partitions of `nodes` nodes (spread evenly) at `dim` for which training
// under `budget` keeps enough partitions in memory: 1 when every row fits
// in the rows share, otherwise the smallest P whose largest partition fits
// kAutoBufferPartitions times in it. Never more than kMaxAutoPartitions.
inline constexpr uint32_t kAutoBufferPartitions = 4;
inline constexpr uint32_t kMaxAutoPartitions = 4096;
uint32_t AutoPartitions(uint64_t nodes, int dim, uint64_t budget);

// `bytes` in whole MiB, rounded up ("133 MiB"), as memory errors name them.
std::string Mib(uint64_t bytes);

}  // namespace ember

#endif  // EMBER_PARTITION_TRAIN_MEMORY_H_
