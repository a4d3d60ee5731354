#include "partition/record_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ember {
namespace {
absl::Status IoError(const std::string& path, const char* what) {
  return absl::InternalError(
      absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}
}  // namespace

absl::StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Create(
    const std::string& path, size_t buffer_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return IoError(path, "cannot create");
  std::setvbuf(f, nullptr, _IOFBF, buffer_bytes);
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, f));
}

RecordWriter::RecordWriter(std::string path, std::FILE* f)
    : path_(std::move(path)), f_(f) {}

RecordWriter::~RecordWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

absl::Status RecordWriter::Append(const void* data, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (f_ == nullptr) return absl::FailedPreconditionError(path_ + ": closed");
  if (std::fwrite(data, 1, bytes, f_) != bytes) return IoError(path_, "write failed");
  bytes_ += bytes;
  return absl::OkStatus();
}

absl::Status RecordWriter::Close() {
  if (f_ == nullptr) return absl::OkStatus();
  int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) return IoError(path_, "close failed");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path, size_t buffer_bytes) {
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return absl::NotFoundError(absl::StrCat(path, ": ", ec.message()));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return IoError(path, "cannot open");
  std::setvbuf(f, nullptr, _IOFBF, buffer_bytes);
  return std::unique_ptr<RecordReader>(new RecordReader(path, f, size));
}

RecordReader::RecordReader(std::string path, std::FILE* f, uint64_t size)
    : path_(std::move(path)), f_(f), file_bytes_(size) {}

RecordReader::~RecordReader() { std::fclose(f_); }

absl::StatusOr<size_t> RecordReader::Read(void* data, size_t bytes) {
  size_t got = std::fread(data, 1, bytes, f_);
  if (got < bytes && std::ferror(f_)) return IoError(path_, "read failed");
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
