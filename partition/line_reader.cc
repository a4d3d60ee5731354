#include "partition/line_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ember {

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(
    const std::string& path, size_t chunk_bytes, size_t max_line_bytes) {
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot read: ", ec.message()));
  }
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  gzbuffer(gz, 1 << 20);
  return std::unique_ptr<LineReader>(
      new LineReader(path, gz, size, chunk_bytes, max_line_bytes));
}

LineReader::LineReader(std::string path, void* gz, uint64_t file_bytes,
                       size_t chunk_bytes, size_t max_line_bytes)
    : path_(std::move(path)),
      gz_(gz),
      file_bytes_(file_bytes),
      chunk_bytes_(chunk_bytes),
      max_line_bytes_(max_line_bytes) {}

LineReader::~LineReader() { gzclose(static_cast<gzFile>(gz_)); }

uint64_t LineReader::bytes_read() const {
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
      return absl::DataLossError(absl::StrCat(
          path_, ":", next_line_ + std::count(buf.begin(), buf.end(), '\n'),
          ": corrupt input: ", msg));
    }
    buf.resize(old + got);
    if (static_cast<size_t>(got) < want) {
      int err = Z_OK;
      const char* msg = gzerror(gz, &err);
      if (err != Z_OK) {
        return absl::DataLossError(absl::StrCat(
            path_, ":", next_line_ + std::count(buf.begin(), buf.end(), '\n'),
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
          absl::StrCat(path_, ":", next_line_ + std::count(buf.begin(), buf.end(), '\n'),
                       ": line longer than ", max_line_bytes_,
                       " bytes (binary input?)"));
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
