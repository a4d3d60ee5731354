#include "storage/checkpoint_space.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "storage/base/file_system.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

// docs/storage-format.md: chunks of about 4 MiB; a chunk value is
// [rows u32][width u32] then the floats; keys are [version u64][chunk u32];
// a 16-byte shape record follows the chunks.
constexpr uint64_t kChunkBytes = 4 << 20;
constexpr uint64_t kKeyBytes = 12;
constexpr uint64_t kChunkHeaderBytes = 8;
constexpr uint64_t kShapeRecordBytes = 16;

}  // namespace

uint64_t TableVersionBytes(uint64_t rows, uint32_t width) {
  const uint64_t row_bytes = uint64_t{4} * std::max<uint32_t>(width, 1);
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, kChunkBytes / row_bytes);
  const uint64_t chunks = std::max<uint64_t>(1, (rows + rows_per_chunk - 1) / rows_per_chunk);
  const uint64_t raw = rows * uint64_t{4} * width + chunks * (kKeyBytes + kChunkHeaderBytes) +
                       kKeyBytes + kShapeRecordBytes;
  return raw + raw / 32;
}

absl::StatusOr<uint64_t> NextCheckpointBytes(const Graph& graph, uint32_t dim, bool id_rows) {
  const Manifest& m = graph.manifest();
  uint64_t bytes = 0;
  if (id_rows) {
    for (uint64_t rows : m.partition_sizes) {
      bytes += TableVersionBytes(rows, dim) + TableVersionBytes(rows, 1);
    }
  }
  const uint64_t version = m.training.checkpoint_version;
  if (version == 0) return bytes;
  const std::string suffix = absl::StrCat("-", version);
  ASSIGN_OR_RETURN(const std::vector<std::string> blobs, graph.ListBlobs());
  for (const std::string& name : blobs) {
    if (!absl::EndsWith(name, suffix)) continue;
    ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                     CurrentFileSystem()->OpenForRead(absl::StrCat(graph.dir(), "/blobs/", name)));
    ASSIGN_OR_RETURN(const uint64_t size, file->Size());
    bytes += size;
  }
  return bytes;
}

absl::Status CheckFreeSpace(const std::string& dir, uint64_t needed) {
  ASSIGN_OR_RETURN(const uint64_t free, CurrentFileSystem()->FreeBytes(dir));
  if (free >= needed) return absl::OkStatus();
  constexpr uint64_t kMib = 1 << 20;
  return absl::ResourceExhaustedError(absl::StrCat(
      dir, ": the next checkpoint needs about ", needed, " bytes (", (needed + kMib - 1) / kMib,
      " MiB) of disk, but only ", free, " bytes (", free / kMib, " MiB) are free"));
}

}  // namespace ember
