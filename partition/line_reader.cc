#include "partition/line_reader.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {

std::string InputName(const std::string& path) { return path == kStdinPath ? "<stdin>" : path; }

absl::StatusOr<std::optional<uint64_t>> InputBytes(const std::string& path) {
  if (path == kStdinPath) return std::nullopt;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not an input file"));
  }
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(
    const std::string& path, size_t chunk_bytes, size_t max_line_bytes) {
  ASSIGN_OR_RETURN(const std::optional<uint64_t> size, InputBytes(path));
  gzFile gz = nullptr;
  if (path == kStdinPath) {
    // A duplicate, so that gzclose leaves the process's stdin open.
    const int fd = ::dup(STDIN_FILENO);
    if (fd >= 0) {
      gz = gzdopen(fd, "rb");
      if (gz == nullptr) ::close(fd);
    }
  } else {
    gz = gzopen(path.c_str(), "rb");
  }
  if (gz == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(InputName(path), ": cannot open: ", std::strerror(errno)));
  }
  gzbuffer(gz, 1 << 20);
  return std::unique_ptr<LineReader>(
      new LineReader(path, gz, size.value_or(0), !size.has_value(), chunk_bytes, max_line_bytes));
}

LineReader::LineReader(std::string path, void* gz, uint64_t file_bytes, bool stream,
                       size_t chunk_bytes, size_t max_line_bytes)
    : path_(std::move(path)),
      name_(InputName(path_)),
      gz_(gz),
      file_bytes_(file_bytes),
      stream_(stream),
      chunk_bytes_(chunk_bytes),
      max_line_bytes_(max_line_bytes) {}

LineReader::~LineReader() { gzclose(static_cast<gzFile>(gz_)); }

uint64_t LineReader::file_bytes() const { return stream_ ? stream_bytes_ : file_bytes_; }

uint64_t LineReader::bytes_read() const {
  if (stream_) return stream_bytes_;
  if (eof_) return file_bytes_;
  z_off_t off = gzoffset(static_cast<gzFile>(gz_));
  return off < 0 ? 0 : std::min<uint64_t>(off, file_bytes_);
}

absl::StatusOr<bool> LineReader::Next(LineChunk* chunk) {
  chunk->text.clear();
  chunk->num_lines = 0;
  chunk->first_line = next_line_;
  if (eof_ && carry_.empty()) return false;
  gzFile gz = static_cast<gzFile>(gz_);
  std::string& buf = chunk->text;
  buf.swap(carry_);
  carry_.clear();
  // Read until the buffer holds at least one newline (or EOF).
  while (!eof_) {
    size_t old = buf.size();
    size_t want = std::max(chunk_bytes_, old / 2 + 1);
    buf.resize(old + want);
    int got = gzread(gz, buf.data() + old, static_cast<unsigned>(want));
    if (got < 0) {
      int err;
      const char* msg = gzerror(gz, &err);
      buf.resize(old);
      return absl::DataLossError(absl::StrCat(name_, ":",
                                              next_line_ + std::count(buf.begin(), buf.end(), '\n'),
                                              ": corrupt input: ", msg));
    }
    buf.resize(old + got);
    stream_bytes_ += got;
    if (static_cast<size_t>(got) < want) {
      int err = Z_OK;
      const char* msg = gzerror(gz, &err);
      if (err != Z_OK) {
        return absl::DataLossError(
            absl::StrCat(name_, ":", next_line_ + std::count(buf.begin(), buf.end(), '\n'),
                         ": truncated or corrupt gzip stream (", msg, ")"));
      }
      if (got == 0 && gzeof(gz)) eof_ = true;
      if (got == 0 && !gzeof(gz)) eof_ = true;  // nothing more to read
    }
    if (std::memchr(buf.data() + old, '\n', got) != nullptr) break;
    size_t line_len = buf.size() - (buf.rfind('\n') == std::string::npos
                                         ? 0
                                         : buf.rfind('\n') + 1);
    if (line_len > max_line_bytes_) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ":", next_line_ + std::count(buf.begin(), buf.end(), '\n'),
                       ": line longer than ", max_line_bytes_, " bytes (binary input?)"));
    }
  }
  size_t last_nl = buf.rfind('\n');
  if (!eof_ || last_nl + 1 == buf.size()) {
    // Keep whole lines only; the tail waits for the next read.
    if (last_nl == std::string::npos) {
      carry_.swap(buf);
      buf.clear();
    } else {
      carry_.assign(buf, last_nl + 1);
      buf.resize(last_nl + 1);
    }
  }
  chunk->num_lines = std::count(buf.begin(), buf.end(), '\n');
  if (!buf.empty() && buf.back() != '\n') ++chunk->num_lines;  // last line at EOF
  next_line_ += chunk->num_lines;
  if (buf.empty()) return !(eof_ && carry_.empty()) ? Next(chunk) : false;
  return true;
}

}  // namespace ember
