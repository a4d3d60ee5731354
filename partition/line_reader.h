// Reads a text file, plain or gzip (detected from its bytes, not its name),
// as chunks of whole lines, so that chunks can be parsed in parallel while
// line numbers stay exact. The file may be a stream read once: "-" is
// standard input, and a named pipe or /dev/fd/N (a shell's `<(...)`) is
// read as it comes.
#ifndef EMBER_PARTITION_LINE_READER_H_
#define EMBER_PARTITION_LINE_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace ember {

// The path that names standard input.
inline constexpr char kStdinPath[] = "-";

// How messages name an input: "<stdin>" for kStdinPath, else the path.
std::string InputName(const std::string& path);

// The size in bytes of a regular file; nullopt for a stream (standard
// input, a pipe, a character device), whose size is not known before it is
// read. NotFound naming the path when nothing is there, InvalidArgument
// for a directory.
absl::StatusOr<std::optional<uint64_t>> InputBytes(const std::string& path);

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
  // The size of a regular file (InputBytes); for a stream, the bytes read
  // so far (uncompressed), which is its size once Next() returned false.
  uint64_t file_bytes() const;
  // Bytes of the file (compressed bytes for gzip; uncompressed for a
  // stream) consumed so far.
  uint64_t bytes_read() const;

 private:
  LineReader(std::string path, void* gz, uint64_t file_bytes, bool stream, size_t chunk_bytes,
             size_t max_line_bytes);
  std::string path_;
  std::string name_;  // InputName(path_), for messages
  void* gz_;  // gzFile; zlib reads plain files transparently
  uint64_t file_bytes_;
  bool stream_;  // no size known: bytes_read() counts what was read
  uint64_t stream_bytes_ = 0;
  size_t chunk_bytes_;
  size_t max_line_bytes_;
  std::string carry_;  // a partial line left over from the last read
  uint64_t next_line_ = 1;
  bool eof_ = false;
};

}  // namespace ember

#endif  // EMBER_PARTITION_LINE_READER_H_
