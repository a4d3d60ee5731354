#include "partition/record_file.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {

absl::StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Create(
    const std::string& path, size_t buffer_bytes) {
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                   CurrentFileSystem()->OpenForWrite(path, WriteMode::kTruncate));
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, std::move(file), buffer_bytes));
}

RecordWriter::RecordWriter(std::string path, std::unique_ptr<WritableFile> file,
                           size_t buffer_bytes)
    : path_(std::move(path)), file_(std::move(file)), buffer_bytes_(std::max<size_t>(buffer_bytes, 1)) {}

RecordWriter::~RecordWriter() = default;

absl::Status RecordWriter::Flush() {
  if (buffer_.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(file_->Append(buffer_));
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status RecordWriter::Append(const void* data, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (file_ == nullptr) return absl::FailedPreconditionError(path_ + ": closed");
  const std::string_view view(static_cast<const char*>(data), bytes);
  if (buffer_.size() + bytes > buffer_bytes_) RETURN_IF_ERROR(Flush());
  if (bytes >= buffer_bytes_) {
    RETURN_IF_ERROR(file_->Append(view));
  } else {
    if (buffer_.capacity() == 0) buffer_.reserve(buffer_bytes_);
    buffer_.append(view);
  }
  bytes_ += bytes;
  return absl::OkStatus();
}

absl::Status RecordWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  absl::Status status = Flush();
  const std::unique_ptr<WritableFile> file = std::move(file_);
  status.Update(file->Close());
  std::string().swap(buffer_);
  return status;
}

absl::StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path, size_t buffer_bytes) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, CurrentFileSystem()->OpenForRead(path));
  ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  return std::unique_ptr<RecordReader>(
      new RecordReader(path, std::move(file), size, std::max<size_t>(buffer_bytes, 1)));
}

RecordReader::RecordReader(std::string path, std::unique_ptr<ReadableFile> file, uint64_t size,
                           size_t buffer_bytes)
    : path_(std::move(path)), file_(std::move(file)), file_bytes_(size), buffer_(buffer_bytes) {}

RecordReader::~RecordReader() = default;

absl::StatusOr<size_t> RecordReader::Read(void* data, size_t bytes) {
  char* out = static_cast<char*>(data);
  size_t got = 0;
  while (got < bytes) {
    if (buffer_start_ == buffer_end_) {
      // Large reads bypass the buffer.
      if (bytes - got >= buffer_.size()) {
        ASSIGN_OR_RETURN(const size_t n,
                         file_->ReadAt(offset_, std::span<char>(out + got, bytes - got)));
        offset_ += n;
        got += n;
        break;
      }
      ASSIGN_OR_RETURN(const size_t n, file_->ReadAt(offset_, std::span<char>(buffer_)));
      if (n == 0) break;
      offset_ += n;
      buffer_start_ = 0;
      buffer_end_ = n;
    }
    const size_t take = std::min(bytes - got, buffer_end_ - buffer_start_);
    std::memcpy(out + got, buffer_.data() + buffer_start_, take);
    buffer_start_ += take;
    got += take;
  }
  return got;
}

absl::Status RecordReader::ReadExactly(void* data, size_t bytes) {
  auto got = Read(data, bytes);
  if (!got.ok()) return got.status();
  if (*got != bytes) {
    return absl::DataLossError(absl::StrCat(path_, ": truncated spill file"));
  }
  return absl::OkStatus();
}

}  // namespace ember
