#include "storage/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "storage/base/file_util.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

// Write buffer; larger appends bypass it.
constexpr size_t kWriteBufferBytes = 1 << 20;

// Tells apart the temporaries of one process that write the same path.
std::atomic<uint64_t> temp_counter{0};

absl::Status AlreadyExists(const std::string& path) {
  return absl::AlreadyExistsError(
      absl::StrCat(path, " already exists (pass --overwrite to replace it)"));
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AtomicOutputFile>> AtomicOutputFile::Create(
    const std::string& path, bool overwrite) {
  if (path.empty()) return absl::InvalidArgumentError("output path is empty");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(path, " is a directory"));
    }
    if (!overwrite) return AlreadyExists(path);
  }
  std::string temp = absl::StrCat(path, internal::kAtomicWriteTempInfix, ::getpid(), "-",
                                  temp_counter.fetch_add(1));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return internal::ErrnoStatus(errno, "cannot create", temp);
  return std::unique_ptr<AtomicOutputFile>(
      new AtomicOutputFile(path, std::move(temp), fd, overwrite));
}

AtomicOutputFile::AtomicOutputFile(std::string path, std::string temp, int fd,
                                   bool overwrite)
    : path_(std::move(path)), temp_(std::move(temp)), fd_(fd), overwrite_(overwrite) {}

AtomicOutputFile::~AtomicOutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

absl::Status AtomicOutputFile::Flush() {
  RETURN_IF_ERROR(WriteAll(buffer_));
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status AtomicOutputFile::WriteAll(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return internal::ErrnoStatus(errno, "cannot write", temp_);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status AtomicOutputFile::Append(std::string_view data) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(absl::StrCat(temp_, " is already closed"));
  }
  bytes_ += data.size();
  if (buffer_.size() + data.size() > kWriteBufferBytes) RETURN_IF_ERROR(Flush());
  if (data.size() >= kWriteBufferBytes) return WriteAll(data);
  if (buffer_.capacity() == 0) buffer_.reserve(kWriteBufferBytes);
  buffer_.append(data.data(), data.size());
  return absl::OkStatus();
}

absl::Status AtomicOutputFile::Close() {
  if (fd_ < 0) return absl::OkStatus();
  RETURN_IF_ERROR(Flush());
  if (::fsync(fd_) != 0) return internal::ErrnoStatus(errno, "cannot fsync", temp_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return internal::ErrnoStatus(errno, "cannot close", temp_);
  std::string().swap(buffer_);
  return absl::OkStatus();
}

absl::Status AtomicOutputFile::MoveIntoPlace() {
  if (overwrite_) {
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
      return internal::ErrnoStatus(errno, absl::StrCat("cannot rename ", temp_, " to"), path_);
    }
    return absl::OkStatus();
  }
  // link() fails with EEXIST instead of replacing, so a file that appeared
  // at path_ meanwhile is never clobbered.
  if (::link(temp_.c_str(), path_.c_str()) == 0) {
    ::unlink(temp_.c_str());
    return absl::OkStatus();
  }
  if (errno == EEXIST) return AlreadyExists(path_);
  // File systems without hard links: check, then rename.
  if (PathExists(path_)) return AlreadyExists(path_);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    return internal::ErrnoStatus(errno, absl::StrCat("cannot rename ", temp_, " to"), path_);
  }
  return absl::OkStatus();
}

absl::Status AtomicOutputFile::Commit() {
  if (committed_) {
    return absl::FailedPreconditionError(absl::StrCat(path_, " is already committed"));
  }
  RETURN_IF_ERROR(Close());
  RETURN_IF_ERROR(MoveIntoPlace());
  committed_ = true;
  return internal::FsyncPath(internal::ParentDir(path_));
}

}  // namespace ember
