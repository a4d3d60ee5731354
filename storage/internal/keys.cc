#include "storage/internal/keys.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

void PutBigEndian32(std::string* dst, uint32_t v) {
  char buf[4];
  for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>(v >> (24 - 8 * i));
  dst->append(buf, 4);
}

void PutBigEndian64(std::string* dst, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (56 - 8 * i));
  dst->append(buf, 8);
}

void PutLittleEndian32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}

uint32_t GetLittleEndian32(const char* src) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(src[i])) << (8 * i);
  }
  return v;
}

}  // namespace

std::string EdgeBlockKey(Split split, uint32_t dst_partition, uint64_t seq) {
  std::string key = EdgeBucketPrefix(split, dst_partition);
  PutBigEndian64(&key, seq);
  return key;
}

std::string EdgeBucketPrefix(Split split, uint32_t dst_partition) {
  std::string key;
  key.reserve(13);
  key.push_back(static_cast<char>(static_cast<uint8_t>(split)));
  PutBigEndian32(&key, dst_partition);
  return key;
}

namespace {

// The count and triples of a block; `weight_bytes` more bytes are left for
// the caller after them.
std::string EncodeEdgeTriples(std::span<const Edge> edges, size_t weight_bytes) {
  std::string value(4 + 12 * edges.size() + weight_bytes, '\0');
  char* p = value.data();
  PutLittleEndian32(p, static_cast<uint32_t>(edges.size()));
  p += 4;
  for (const Edge& e : edges) {
    PutLittleEndian32(p, e.src);
    PutLittleEndian32(p + 4, e.rel);
    PutLittleEndian32(p + 8, e.dst);
    p += 12;
  }
  return value;
}

}  // namespace

std::string EncodeEdgeBlock(std::span<const Edge> edges) { return EncodeEdgeTriples(edges, 0); }

std::string EncodeEdgeBlock(std::span<const Edge> edges, std::span<const float> weights) {
  EMBER_CHECK(weights.size() == edges.size());
  std::string value = EncodeEdgeTriples(edges, 4 * weights.size());
  char* p = value.data() + 4 + 12 * edges.size();
  for (float w : weights) {
    PutLittleEndian32(p, std::bit_cast<uint32_t>(w));
    p += 4;
  }
  return value;
}

absl::StatusOr<EdgeBlockView> ParseEdgeBlock(std::string_view value, bool weighted) {
  if (value.size() < 4) {
    return absl::DataLossError(absl::StrCat(
        "corrupt edge block: ", value.size(), " bytes, need at least 4"));
  }
  const uint32_t count = GetLittleEndian32(value.data());
  const uint64_t edge_bytes = EdgeBlockView::kEdgeBytes + (weighted ? 4 : 0);
  const uint64_t expected = 4 + edge_bytes * static_cast<uint64_t>(count);
  if (value.size() != expected) {
    return absl::DataLossError(absl::StrCat("corrupt edge block: header says ", count,
                                            weighted ? " weighted" : "", " edges (", expected,
                                            " bytes) but the value has ", value.size(), " bytes"));
  }
  const char* edges = value.data() + 4;
  return EdgeBlockView(edges, count,
                       weighted ? edges + EdgeBlockView::kEdgeBytes * uint64_t{count} : nullptr);
}

absl::Status DecodeEdgeBlock(std::string_view value, std::vector<Edge>* out,
                             std::vector<float>* weights) {
  absl::StatusOr<EdgeBlockView> block = ParseEdgeBlock(value, weights != nullptr);
  if (!block.ok()) return block.status();
  const size_t at = out->size();
  out->resize(at + block->size());
  block->CopyTo(0, block->size(), out->data() + at);
  if (weights != nullptr) {
    const size_t wat = weights->size();
    weights->resize(wat + block->size());
    block->CopyWeightsTo(0, block->size(), weights->data() + wat);
  }
  return absl::OkStatus();
}

std::string NodeOffsetKey(uint32_t offset) {
  std::string key;
  PutBigEndian32(&key, offset);
  return key;
}

std::string FeatureKey(uint32_t offset) { return NodeOffsetKey(offset); }

absl::Status DecodeFeatureKey(std::string_view key, uint32_t* offset) {
  if (key.size() != 4) {
    return absl::DataLossError(absl::StrCat(
        "corrupt features key: ", key.size(), " bytes, expected 4"));
  }
  const auto* b = reinterpret_cast<const unsigned char*>(key.data());
  *offset = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
            (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  return absl::OkStatus();
}

std::string EncodeFeatureList(std::span<const FeatureEntry> entries) {
  std::string value(4 + 8 * entries.size(), '\0');
  char* p = value.data();
  PutLittleEndian32(p, static_cast<uint32_t>(entries.size()));
  p += 4;
  for (const FeatureEntry& e : entries) {
    uint32_t bits;
    std::memcpy(&bits, &e.weight, 4);
    PutLittleEndian32(p, e.feature);
    PutLittleEndian32(p + 4, bits);
    p += 8;
  }
  return value;
}

absl::Status DecodeFeatureList(std::string_view value,
                               std::vector<FeatureEntry>* out) {
  if (value.size() < 4) {
    return absl::DataLossError(absl::StrCat(
        "corrupt feature list: ", value.size(), " bytes, need at least 4"));
  }
  const uint32_t count = GetLittleEndian32(value.data());
  const uint64_t expected = 4 + 8 * static_cast<uint64_t>(count);
  if (value.size() != expected) {
    return absl::DataLossError(
        absl::StrCat("corrupt feature list: header says ", count,
                     " entries (", expected, " bytes) but the value has ",
                     value.size(), " bytes"));
  }
  const char* p = value.data() + 4;
  out->reserve(out->size() + count);
  for (uint32_t i = 0; i < count; ++i, p += 8) {
    FeatureEntry e;
    e.feature = GetLittleEndian32(p);
    const uint32_t bits = GetLittleEndian32(p + 4);
    std::memcpy(&e.weight, &bits, 4);
    out->push_back(e);
  }
  return absl::OkStatus();
}

std::string DictNameKey(uint64_t node_key, std::string_view name) {
  std::string key;
  key.reserve(8 + name.size());
  PutBigEndian64(&key, node_key);
  key.append(name);
  return key;
}

std::string DictIdKey(uint64_t global_id) {
  std::string key;
  PutBigEndian64(&key, global_id);
  return key;
}

std::string TableChunkKey(uint64_t version, uint32_t chunk) {
  std::string key = TableVersionPrefix(version);
  PutBigEndian32(&key, chunk);
  return key;
}

std::string TableVersionPrefix(uint64_t version) {
  std::string key;
  key.reserve(12);
  PutBigEndian64(&key, version);
  return key;
}

std::string EncodeU64(uint64_t v) {
  std::string value(8, '\0');
  for (int i = 0; i < 8; ++i) value[i] = static_cast<char>(v >> (8 * i));
  return value;
}

absl::Status DecodeU64(std::string_view value, uint64_t* out) {
  if (value.size() != 8) {
    return absl::DataLossError(absl::StrCat(
        "corrupt u64 value: ", value.size(), " bytes, expected 8"));
  }
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(value[i])) << (8 * i);
  }
  *out = v;
  return absl::OkStatus();
}

}  // namespace ember
