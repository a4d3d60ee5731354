// Buffered sequential binary files for the importer's spill data. Fixed
// records are written and read as raw bytes in host byte order: these files
// live only in a scratch directory for the duration of one import.
#ifndef EMBER_PARTITION_RECORD_FILE_H_
#define EMBER_PARTITION_RECORD_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

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
  RecordWriter(std::string path, std::FILE* f);
  std::string path_;
  std::FILE* f_;
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
  RecordReader(std::string path, std::FILE* f, uint64_t size);
  std::string path_;
  std::FILE* f_;
  uint64_t file_bytes_;
};

}  // namespace ember

#endif  // EMBER_PARTITION_RECORD_FILE_H_
