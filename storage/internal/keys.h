// Key and value encodings of the graph directory's RocksDB databases.
// docs/storage-format.md describes the same layout for people; keep both true.
// All integers in keys are big-endian so that byte order is numeric order;
// integers and floats in values are little-endian.
#ifndef EMBER_STORAGE_INTERNAL_KEYS_H_
#define EMBER_STORAGE_INTERNAL_KEYS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/edge_block.h"
#include "storage/types.h"

namespace ember {

// shard-<p> / `edges`: [split u8][dst partition u32][block seq u64] -> block.
// Bucket (p, j) of a split is the prefix [split][j] in shard p.
std::string EdgeBlockKey(Split split, uint32_t dst_partition, uint64_t seq);
std::string EdgeBucketPrefix(Split split, uint32_t dst_partition);

// Edge block value: [count u32][count x (src u32, rel u32, dst u32)], and
// in a weighted graph (Manifest::edge_weights, format version 2) then
// [count x weight f32]. Blocks hold at most kMaxEdgesPerBlock edges.
inline constexpr uint32_t kMaxEdgesPerBlock = 65536;
std::string EncodeEdgeBlock(std::span<const Edge> edges);
// A weighted block. REQUIRES: weights.size() == edges.size().
std::string EncodeEdgeBlock(std::span<const Edge> edges, std::span<const float> weights);
// The block's edges (and weights when `weighted`), viewing `value` (which
// must outlive the view); DataLoss if the size is inconsistent.
absl::StatusOr<EdgeBlockView> ParseEdgeBlock(std::string_view value, bool weighted = false);
// Appends the block's edges to *out (and, when `weights` is not null, its
// weights to *weights, the block being weighted); DataLoss if the size is
// inconsistent.
absl::Status DecodeEdgeBlock(std::string_view value, std::vector<Edge>* out,
                             std::vector<float>* weights = nullptr);

// shard-<p> / `nodes`: [offset u32] -> external id (UTF-8 text).
std::string NodeOffsetKey(uint32_t offset);

// shard-<p> / `features`: [offset u32] -> [count u32][count x (feature id
// u32, weight f32)] (values little-endian). Entries are sorted by feature id,
// each id at most once; a node without features has no key. Feature ids
// index the vocabulary blob `feature-vocab` (kFeatureVocabBlob). Entries
// are FeatureEntry (storage/types.h).
inline constexpr char kFeatureVocabBlob[] = "feature-vocab";
std::string FeatureKey(uint32_t offset);
// Inverse of FeatureKey; DataLoss unless the key has exactly 4 bytes.
absl::Status DecodeFeatureKey(std::string_view key, uint32_t* offset);
std::string EncodeFeatureList(std::span<const FeatureEntry> entries);
// Appends the value's entries to *out; DataLoss if the size is inconsistent.
absl::Status DecodeFeatureList(std::string_view value,
                               std::vector<FeatureEntry>* out);

// dict / `by_name`: [node key u64][name bytes] -> PackNodeRef (u64 LE),
// where node key is StringNodeKey(name) or IntegerNodeKey(id) (node_hash.h).
std::string DictNameKey(uint64_t node_key, std::string_view name);
// dict / `by_id`: [PackNodeRef u64] -> name.
std::string DictIdKey(uint64_t packed_ref);

// Edge block sequence numbers: [generation u16][chunk u28][block u20].
// Generation 0 is the initial import; each `import --append` adds one.
// Readers ignore generations above Manifest::edge_generation (an append
// that did not commit).
inline constexpr uint32_t kMaxEdgeGeneration = 0xffff;
inline constexpr uint64_t kMaxEdgeChunk = (uint64_t{1} << 28) - 1;
inline constexpr uint64_t kMaxEdgeBlock = (uint64_t{1} << 20) - 1;
inline uint64_t EdgeBlockSeq(uint32_t generation, uint64_t chunk, uint64_t block) {
  return (uint64_t{generation} << 48) | (chunk << 20) | block;
}
inline uint32_t EdgeSeqGeneration(uint64_t seq) { return static_cast<uint32_t>(seq >> 48); }

// shard-<p> / `embeddings` and `optimizer`:
// [version u64][chunk u32] -> [rows u32][width u32][rows x width f32].
std::string TableChunkKey(uint64_t version, uint32_t chunk);
std::string TableVersionPrefix(uint64_t version);
// The last key of a version, [version][0xffffffff], holds its shape:
// [num_rows u64][width u32][num_chunks u32]. Written after every chunk, so a
// version without it was never completely written.
inline constexpr uint32_t kTableMetaChunk = 0xffffffff;

std::string EncodeU64(uint64_t v);  // little-endian value
absl::Status DecodeU64(std::string_view value, uint64_t* out);

}  // namespace ember

#endif  // EMBER_STORAGE_INTERNAL_KEYS_H_
