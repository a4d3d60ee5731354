#include "storage/internal/table_records.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"
#include "storage/internal/keys.h"

namespace ember::internal {
namespace {

// Table rows are stored in chunks of about this many bytes.
constexpr uint64_t kTableChunkBytes = 4 << 20;

}  // namespace

const char* TableCfName(Table table) {
  return table == Table::kEmbeddings ? "embeddings" : "optimizer";
}

std::optional<uint64_t> FirstNonFiniteRow(const float* rows, uint64_t num_rows, uint32_t width) {
  // A float is NaN or infinite when its exponent bits are all ones; OR-ing
  // the test over a row vectorizes, where std::isfinite's branch does not.
  constexpr uint32_t kExponent = 0x7f800000u;
  for (uint64_t r = 0; r < num_rows; ++r) {
    const float* row = rows + r * width;
    bool bad = false;
    for (uint32_t i = 0; i < width; ++i) {
      uint32_t bits;
      std::memcpy(&bits, row + i, sizeof(bits));
      bad |= (bits & kExponent) == kExponent;
    }
    if (bad) return r;
  }
  return std::nullopt;
}

absl::Status ForEachTableRecord(
    uint64_t version, const float* rows, uint64_t num_rows, uint32_t width,
    const std::string& where,
    const std::function<absl::Status(const std::string& key, std::string_view value)>& put) {
  if (width == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": width must be positive"));
  }
  if (const std::optional<uint64_t> bad = FirstNonFiniteRow(rows, num_rows, width)) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": row ", *bad,
                     " holds a value that is not finite (NaN or "
                     "infinity); a table holds finite rows only, and nothing was written"));
  }
  const uint64_t row_bytes = uint64_t{width} * sizeof(float);
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, kTableChunkBytes / row_bytes);
  const uint64_t num_chunks =
      std::max<uint64_t>(1, (num_rows + rows_per_chunk - 1) / rows_per_chunk);
  if (num_chunks >= kTableMetaChunk) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": too many rows (", num_rows, ")"));
  }
  std::string value;
  for (uint64_t c = 0; c < num_chunks; ++c) {
    const uint64_t first = c * rows_per_chunk;
    const uint32_t n = static_cast<uint32_t>(std::min(rows_per_chunk, num_rows - first));
    value.resize(8 + n * row_bytes);
    std::memcpy(value.data(), &n, 4);
    std::memcpy(value.data() + 4, &width, 4);
    if (n > 0) std::memcpy(value.data() + 8, rows + first * width, n * row_bytes);
    RETURN_IF_ERROR(put(TableChunkKey(version, static_cast<uint32_t>(c)), value));
  }
  char meta[16];
  const uint32_t chunks32 = static_cast<uint32_t>(num_chunks);
  std::memcpy(meta, &num_rows, 8);
  std::memcpy(meta + 8, &width, 4);
  std::memcpy(meta + 12, &chunks32, 4);
  return put(TableChunkKey(version, kTableMetaChunk), std::string_view(meta, sizeof(meta)));
}

}  // namespace ember::internal
