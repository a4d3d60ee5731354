// Reads a text file, plain or gzip (detected from its bytes, not its name),
// as chunks of whole lines, so that chunks can be parsed in parallel while
// line numbers stay exact.
#ifndef EMBER_PARTITION_LINE_READER_H_
#define EMBER_PARTITION_LINE_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ember {

struct LineChunk {
  std::string text;         // whole lines; the last one may lack '\n' at EOF
  uint64_t first_line = 0;  // 1-based number of the chunk's first line
  uint64_t num_lines = 0;
};

class LineReader {
 public:
  // `chunk_bytes`: read size per chunk. A line longer than `max_line_bytes`
  // is an error naming file and line (binary input without newlines).
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(
      const std::string& path, size_t chunk_bytes = 4 << 20,
      size_t max_line_bytes = 1 << 20);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Fills *chunk with the next lines; false at end of file. A truncated or
  // corrupt gzip stream is DataLoss naming file and line.
  absl::StatusOr<bool> Next(LineChunk* chunk);

  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return file_bytes_; }
  // Bytes of the file (compressed bytes for gzip) consumed so far.
  uint64_t bytes_read() const;

 private:
  LineReader(std::string path, void* gz, uint64_t file_bytes,
             size_t chunk_bytes, size_t max_line_bytes);
  std::string path_;
  void* gz_;  // gzFile; zlib reads plain files transparently
  uint64_t file_bytes_;
  size_t chunk_bytes_;
  size_t max_line_bytes_;
  std::string carry_;  // a partial line left over from the last read
  uint64_t next_line_ = 1;
  bool eof_ = false;
};

}  // namespace ember

#endif  // EMBER_PARTITION_LINE_READER_H_
