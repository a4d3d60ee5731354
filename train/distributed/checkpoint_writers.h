// Which rank writes each partition of a checkpoint (into its own copy of
// the graph, or beside rank 0's shared one). Pure: the cost model prices it
// (epoch_model.h) and every rank computes the same.
#ifndef EMBER_TRAIN_DISTRIBUTED_CHECKPOINT_WRITERS_H_
#define EMBER_TRAIN_DISTRIBUTED_CHECKPOINT_WRITERS_H_

#include <cstdint>
#include <span>
#include <vector>

namespace ember {

// Which rank writes each partition of a checkpoint into its copy, so that
// no rank writes more than ceil(P / N) partitions (a checkpoint costs the
// largest share): the holder, up to that many of its partitions (its
// lowest-numbered); each partition past it goes to the rank writing fewest
// so far (the lowest such rank). Every rank computes the same.
std::vector<uint32_t> BalancedWriters(std::span<const uint32_t> holders, uint32_t world_size);
// The most partitions one rank writes under `writers` (ranks below
// world_size).
uint32_t LargestShare(std::span<const uint32_t> writers, uint32_t world_size);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_CHECKPOINT_WRITERS_H_
