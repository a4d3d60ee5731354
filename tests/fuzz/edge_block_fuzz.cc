// libFuzzer target: the value decoders of storage/internal/keys.h, edge blocks
// first. Any bytes must decode or fail with a status; what decodes must
// encode back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "storage/internal/keys.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view value(reinterpret_cast<const char*>(data), size);
  std::vector<ember::Edge> edges;
  if (ember::DecodeEdgeBlock(value, &edges).ok()) {
    if (ember::EncodeEdgeBlock(edges) != value) std::abort();
  }
  std::vector<ember::FeatureEntry> entries;
  if (ember::DecodeFeatureList(value, &entries).ok()) {
    if (ember::EncodeFeatureList(entries).size() != value.size()) std::abort();
  }
  uint32_t offset = 0;
  if (ember::DecodeFeatureKey(value, &offset).ok()) {
    if (ember::FeatureKey(offset) != value) std::abort();
  }
  uint64_t u = 0;
  if (ember::DecodeU64(value, &u).ok()) {
    if (ember::EncodeU64(u) != value) std::abort();
  }
  return 0;
}
