// Output plumbing shared by the synthetic graph generators (`ember gen`):
// atomic file creation (storage/base/atomic_file.h), optional
// gzip, and an ordered parallel chunk writer.
#ifndef EMBER_TOOLS_GEN_GEN_OUTPUT_H_
#define EMBER_TOOLS_GEN_GEN_OUTPUT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/base/atomic_file.h"

namespace ember::tools::gen {

// Where and how a generator writes; independent of what it generates.
struct GenOutputOptions {
  // Output path. A name ending in ".gz" is written gzip-compressed (a
  // sequence of gzip members, one per chunk, which gzread/gunzip read as one
  // stream). Default: "" (invalid; must be set).
  std::string path;

  // Replace an existing file at `path`. When false an existing file is an
  // error and is left untouched. Default: false.
  bool overwrite = false;

  // Worker threads; 0 means all hardware threads. The output bytes never
  // depend on this. Default: 0.
  int threads = 0;

  // Print one progress line to stderr about every `progress_interval_s`
  // seconds. Default: false (the CLI turns it on unless --quiet).
  bool progress = false;
  double progress_interval_s = 2.0;

  // zlib level for ".gz" output, 1 (fast) .. 9 (small). Default: 1.
  int gzip_level = 1;

  absl::Status Validate() const;
};

// What a generator wrote.
struct GenStats {
  uint64_t nodes = 0;
  uint64_t edges = 0;
  uint64_t bytes_written = 0;  // bytes of the edge file (compressed if .gz)
  double seconds = 0;
};

// True when `path` names a gzip output (ends in ".gz").
bool IsGzipPath(std::string_view path);

// Decimal digits of v (1 for 0); generators size their line buffers with it.
inline int DecimalDigits(uint64_t v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}

// One output file under construction: an AtomicOutputFile (bytes go to a
// temporary beside `path`, fsynced and moved into place by Commit(), the
// directory fsynced after) plus the optional gzip encoding. Destroying an
// uncommitted file removes the temporary, so a failed run leaves neither a
// half-written output nor a changed pre-existing one. Not copyable;
// Write/Commit are not thread-safe, Encode is.
class GenOutputFile {
 public:
  // Fails with AlreadyExists if `path` exists and !overwrite, or with the
  // OS error (naming the path) if the temporary cannot be created.
  static absl::StatusOr<std::unique_ptr<GenOutputFile>> Create(
      const std::string& path, bool overwrite, int gzip_level);

  GenOutputFile(const GenOutputFile&) = delete;
  GenOutputFile& operator=(const GenOutputFile&) = delete;
  ~GenOutputFile();

  // Replaces the chunk of text in `*chunk` with the bytes to Write(): the
  // text itself (untouched, no copy), or one complete gzip member for a
  // ".gz" path. Pure and thread-safe.
  absl::Status Encode(std::string* chunk) const;

  // Appends encoded bytes to the temporary file.
  absl::Status Write(std::string_view bytes);

  // Fsyncs and closes the temporary and moves it to `path`, then fsyncs the
  // directory. Without `overwrite`, fails with AlreadyExists (and removes
  // the temporary) if `path` appeared meanwhile.
  absl::Status Commit();

  const std::string& path() const { return file_->path(); }
  uint64_t bytes_written() const { return file_->bytes(); }

 private:
  GenOutputFile(std::unique_ptr<AtomicOutputFile> file, int gzip_level);

  std::unique_ptr<AtomicOutputFile> file_;
  int gzip_level_;  // < 0: plain text
};

// Produces the text of chunk `index` into `*text` (cleared by the caller).
// Must be a pure function of `index`: it runs concurrently on many threads.
using ChunkTextFn = std::function<void(uint64_t index, std::string* text)>;

// Generates chunks [0, num_chunks) in parallel on `options.threads` threads
// (at most 2 chunks per thread in flight), encodes them, and writes them to
// `out` in index order. `items_per_chunk(i)` counts chunk i's items (edges)
// and `total_items` their sum, for the progress line, which reads
// "<label>: <done>/<total> <unit> (<rate>/s)". Stops at the first error.
absl::Status WriteChunksInOrder(
    uint64_t num_chunks, uint64_t total_items, const ChunkTextFn& produce,
    const std::function<uint64_t(uint64_t)>& items_per_chunk,
    const GenOutputOptions& options, std::string_view label,
    std::string_view unit, GenOutputFile* out);

}  // namespace ember::tools::gen

#endif  // EMBER_TOOLS_GEN_GEN_OUTPUT_H_
