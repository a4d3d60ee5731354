// Stable 64-bit node keys. The importer, the node dictionary and the on-disk
// format all depend on these functions: changing them is a format change.
#ifndef EMBER_STORAGE_BASE_NODE_HASH_H_
#define EMBER_STORAGE_BASE_NODE_HASH_H_

#include <cstdint>
#include <string_view>

namespace ember {

// Key of a node named by a string: XXH3-64 of its bytes, seed 0.
// Distinct names collide with probability ~n^2 / 2^65; the importer detects
// a collision and fails rather than merging two nodes.
uint64_t StringNodeKey(std::string_view name);

// Key of a node named by a non-negative integer (`--integer-ids`): a
// bijective mix of the integer, so integer keys never collide and the integer
// is recovered by IntegerFromNodeKey.
uint64_t IntegerNodeKey(uint64_t id);
uint64_t IntegerFromNodeKey(uint64_t key);

// A well-mixed 64-bit hash of (a, b); used for partitioning and splits.
uint64_t Mix64(uint64_t a, uint64_t b);

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_NODE_HASH_H_
