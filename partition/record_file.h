// Buffered sequential binary files for the importer's spill data. Fixed
// records are written and read as raw bytes in host byte order: these files
// live only in a scratch directory for the duration of one import. Both go
// through CurrentFileSystem() (storage/base/file_system.h).
#ifndef EMBER_PARTITION_RECORD_FILE_H_
#define EMBER_PARTITION_RECORD_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/base/file_system.h"

namespace ember {

class RecordWriter {
 public:
  static absl::StatusOr<std::unique_ptr<RecordWriter>> Create(
      const std::string& path, size_t buffer_bytes = 1 << 20);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  absl::Status Append(const void* data, size_t bytes);
  // Flushes and closes; the file is complete only after an OK Close().
  absl::Status Close();
  uint64_t bytes_written() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  RecordWriter(std::string path, std::unique_ptr<WritableFile> file, size_t buffer_bytes);
  absl::Status Flush();

  std::string path_;
  std::unique_ptr<WritableFile> file_;  // null once closed
  size_t buffer_bytes_;
  std::string buffer_;
  uint64_t bytes_ = 0;
};

class RecordReader {
 public:
  static absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, size_t buffer_bytes = 1 << 20);
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // Reads up to `bytes`; returns the count read (0 at end of file).
  absl::StatusOr<size_t> Read(void* data, size_t bytes);
  // Reads exactly `bytes` or fails with DataLoss (truncated spill file).
  absl::Status ReadExactly(void* data, size_t bytes);
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  RecordReader(std::string path, std::unique_ptr<ReadableFile> file, uint64_t size,
               size_t buffer_bytes);

  std::string path_;
  std::unique_ptr<ReadableFile> file_;
  uint64_t file_bytes_;
  std::vector<char> buffer_;
  size_t buffer_start_ = 0;  // unread bytes: buffer_[buffer_start_, buffer_end_)
  size_t buffer_end_ = 0;
  uint64_t offset_ = 0;  // file offset of buffer_end_
};

}  // namespace ember

#endif  // EMBER_PARTITION_RECORD_FILE_H_
