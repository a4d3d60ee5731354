// Disk space for the next checkpoint: what a checkpoint writes beside the
// committed one, and a check against the space the file system has free,
// so that a run can refuse before it fills the disk instead of failing in
// the middle of a checkpoint.
#ifndef EMBER_STORAGE_CHECKPOINT_SPACE_H_
#define EMBER_STORAGE_CHECKPOINT_SPACE_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/graph.h"

namespace ember {

// Bytes that tables of `rows` rows of `width` floats take when written
// under a new version (docs/storage-format.md, "Tables"): chunk values with
// their headers, keys and the shape record, plus 1/32 for RocksDB's blocks,
// index and file metadata.
uint64_t TableVersionBytes(uint64_t rows, uint32_t width);

// Bytes the next checkpoint of `graph` needs on disk while the committed
// one is still there: a new version of every partition's embeddings
// (`dim` floats a row; none when !id_rows) and optimizer state (one float a
// row), at the partition sizes of the manifest, plus the committed
// checkpoint's blobs written again (those named "<name>-<checkpoint
// version>", e.g. relations-V and feature-table-V; none before the first
// checkpoint).
absl::StatusOr<uint64_t> NextCheckpointBytes(const Graph& graph, uint32_t dim, bool id_rows);

// OK when the file system holding `dir` has `needed` bytes free for an
// unprivileged writer (statvfs, through CurrentFileSystem()); otherwise
// ResourceExhausted naming `dir`, the bytes needed and the bytes free.
absl::Status CheckFreeSpace(const std::string& dir, uint64_t needed);

}  // namespace ember

#endif  // EMBER_STORAGE_CHECKPOINT_SPACE_H_
