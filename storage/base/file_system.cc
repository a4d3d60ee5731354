#include "storage/base/file_system.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/base/file_util.h"

namespace ember {
namespace {

using internal::ErrnoStatus;

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : WritableFile(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(std::string_view data) override {
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path(), " is closed"));
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "cannot write", path());
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path(), " is closed"));
    if (::fsync(fd_) != 0) return ErrnoStatus(errno, "cannot fsync", path());
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoStatus(errno, "cannot close", path());
    return absl::OkStatus();
  }

 private:
  int fd_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd) : ReadableFile(std::move(path)), fd_(fd) {}
  ~PosixReadableFile() override { ::close(fd_); }

  absl::StatusOr<size_t> ReadAt(uint64_t offset, std::span<char> buf) const override {
    size_t done = 0;
    while (done < buf.size()) {
      const ssize_t n =
          ::pread(fd_, buf.data() + done, buf.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "cannot read", path());
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  }

  absl::StatusOr<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoStatus(errno, "cannot stat", path());
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  int fd_;
};

class PosixFileLock final : public FileLock {
 public:
  PosixFileLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixFileLock() override { ::close(fd_); }  // releases the flock

  absl::Status Rewrite(std::string_view text) override {
    if (::ftruncate(fd_, 0) != 0) return ErrnoStatus(errno, "cannot truncate", path_);
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::pwrite(fd_, text.data() + done, text.size() - done,
                                 static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus(errno, "cannot write", path_);
      done += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                             WriteMode mode) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
    switch (mode) {
      case WriteMode::kCreateNew: flags |= O_EXCL; break;
      case WriteMode::kTruncate: flags |= O_TRUNC; break;
      case WriteMode::kAppend: flags |= O_APPEND; break;
    }
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return ErrnoStatus(errno, "cannot create", path);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenForRead(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
    return std::unique_ptr<ReadableFile>(new PosixReadableFile(path, fd));
  }

  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus(errno, "cannot open lock file", path);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "cannot lock", path);
    }
    return std::unique_ptr<FileLock>(new PosixFileLock(path, fd));
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoStatus(errno, absl::StrCat("cannot rename ", from, " to"), to);
    }
    return absl::OkStatus();
  }

  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
      return ErrnoStatus(errno, absl::StrCat("cannot rename ", from, " to"), to);
    }
    return absl::OkStatus();
  }

  absl::Status Link(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) != 0) {
      return ErrnoStatus(errno, absl::StrCat("cannot link ", from, " to"), to);
    }
    return absl::OkStatus();
  }

  absl::Status Remove(const std::string& path) override {
    if (::remove(path.c_str()) != 0) return ErrnoStatus(errno, "cannot remove", path);
    return absl::OkStatus();
  }

  absl::Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return ErrnoStatus(ec.value(), "cannot remove", path);
    return absl::OkStatus();
  }

  absl::Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0) {
      return ErrnoStatus(errno, "cannot create directory", path);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<PathKind> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return PathKind::kMissing;
      return ErrnoStatus(errno, "cannot stat", path);
    }
    if (S_ISREG(st.st_mode)) return PathKind::kFile;
    if (S_ISDIR(st.st_mode)) return PathKind::kDirectory;
    return PathKind::kOther;
  }

  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    std::vector<std::string> names;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) return ErrnoStatus(ec.value(), "cannot list", dir);
    return names;
  }

  absl::Status SyncPath(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "cannot open for fsync", path);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoStatus(err, "cannot fsync", path);
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> FreeBytes(const std::string& path) override {
    struct statvfs st;
    if (::statvfs(path.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot statvfs", path);
    return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  }
};

std::atomic<FileSystem*> current_fs{nullptr};

}  // namespace

FileSystem* DefaultFileSystem() {
  static FileSystem* const fs = new PosixFileSystem();
  return fs;
}

FileSystem* CurrentFileSystem() {
  FileSystem* fs = current_fs.load(std::memory_order_acquire);
  return fs != nullptr ? fs : DefaultFileSystem();
}

ScopedFileSystem::ScopedFileSystem(FileSystem* fs)
    : previous_(current_fs.exchange(fs, std::memory_order_acq_rel)) {}

ScopedFileSystem::~ScopedFileSystem() { current_fs.store(previous_, std::memory_order_release); }

absl::StatusOr<std::string> ReadWholeFile(const ReadableFile& file) {
  std::string contents;
  char buf[1 << 16];
  while (true) {
    absl::StatusOr<size_t> n = file.ReadAt(contents.size(), std::span<char>(buf, sizeof(buf)));
    if (!n.ok()) return n.status();
    contents.append(buf, *n);
    if (*n < sizeof(buf)) break;
  }
  return contents;
}

absl::Status ReadWholeFileInto(const ReadableFile& file, std::span<const std::span<char>> parts) {
  absl::StatusOr<uint64_t> size = file.Size();
  if (!size.ok()) return size.status();
  uint64_t want = 0;
  for (std::span<char> part : parts) want += part.size();
  if (*size != want) {
    return absl::DataLossError(
        absl::StrCat(file.path(), " has ", *size, " bytes, expected ", want));
  }
  uint64_t offset = 0;
  for (std::span<char> part : parts) {
    absl::StatusOr<size_t> n = file.ReadAt(offset, part);
    if (!n.ok()) return n.status();
    // Shrunk since Size(): as the read that found the end would say.
    if (*n != part.size()) return internal::ErrnoStatus(EIO, "cannot read", file.path());
    offset += part.size();
  }
  return absl::OkStatus();
}

absl::Status CreateDirs(const std::string& path) {
  FileSystem* fs = CurrentFileSystem();
  absl::StatusOr<PathKind> kind = fs->Stat(path);
  if (!kind.ok()) return kind.status();
  if (*kind == PathKind::kDirectory) return absl::OkStatus();
  const std::string parent = internal::ParentDir(path);
  if (parent != path && parent != "." && parent != "/") {
    absl::Status s = CreateDirs(parent);
    if (!s.ok()) return s;
  }
  absl::Status s = fs->CreateDir(path);
  // Created meanwhile by someone else: fine if it is a directory.
  if (absl::IsAlreadyExists(s) && fs->Stat(path).value_or(PathKind::kMissing) == PathKind::kDirectory) {
    return absl::OkStatus();
  }
  return s;
}

}  // namespace ember
