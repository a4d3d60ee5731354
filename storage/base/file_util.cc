#include "storage/base/file_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "storage/base/atomic_file.h"
#include "storage/base/status_macros.h"

namespace ember::internal {

absl::Status ErrnoStatus(int err, std::string_view what,
                         std::string_view path) {
  return absl::ErrnoToStatus(err, absl::StrCat(Sv(what), " ", Sv(path)));
}

absl::Status FsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open for fsync", path);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus(err, "cannot fsync", path);
  return absl::OkStatus();
}

std::string ParentDir(const std::string& path) {
  std::string::size_type slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status WriteFileAtomic(const std::string& path,
                             std::string_view contents) {
  return WriteFileAtomic(path, std::span<const std::string_view>(&contents, 1));
}

absl::Status WriteFileAtomic(const std::string& path,
                             std::span<const std::string_view> parts) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicOutputFile> file,
                   AtomicOutputFile::Create(path, /*overwrite=*/true));
  for (std::string_view part : parts) RETURN_IF_ERROR(file->Append(part));
  return file->Commit();
}

absl::Status RemoveAtomicWriteLeftovers(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().find(kAtomicWriteTempInfix) == std::string::npos) continue;
    if (::unlink(e.path().c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, "cannot remove", e.path().string());
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return ErrnoStatus(ec.value(), "cannot list", dir);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> MakeTempDir(std::string_view prefix) {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string path = (base / absl::StrCat(Sv(prefix), "-XXXXXX")).string();
  if (::mkdtemp(path.data()) == nullptr) {
    return ErrnoStatus(errno, "cannot create a temporary directory", path);
  }
  return path;
}

void RaiseOpenFileLimit() {
  static const bool raised = [] {
    struct rlimit limit;
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return false;
    limit.rlim_cur = limit.rlim_max;
    return ::setrlimit(RLIMIT_NOFILE, &limit) == 0;
  }();
  (void)raised;
}

namespace {

// Closes the descriptor when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  FdCloser closer{fd};
  return ReadFd(fd, path);
}

absl::Status ReadFileInto(const std::string& path, std::span<const std::span<char>> parts) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  FdCloser closer{fd};
  return ReadFdInto(fd, path, parts);
}

absl::StatusOr<std::string> ReadFd(int fd, const std::string& path) {
  std::string contents;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::pread(fd, buf, sizeof(buf), static_cast<off_t>(contents.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read", path);
    }
    if (n == 0) break;
    contents.append(buf, static_cast<size_t>(n));
  }
  return contents;
}

absl::Status ReadFdInto(int fd, const std::string& path, std::span<const std::span<char>> parts) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "cannot stat", path);
  uint64_t want = 0;
  for (std::span<char> part : parts) want += part.size();
  if (static_cast<uint64_t>(st.st_size) != want) {
    return absl::DataLossError(
        absl::StrCat(path, " has ", st.st_size, " bytes, expected ", want));
  }
  uint64_t offset = 0;
  for (std::span<char> part : parts) {
    size_t done = 0;
    while (done < part.size()) {
      const ssize_t n = ::pread(fd, part.data() + done, part.size() - done,
                                static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ErrnoStatus(n < 0 ? errno : EIO, "cannot read", path);
      done += static_cast<size_t>(n);
    }
    offset += part.size();
  }
  return absl::OkStatus();
}

}  // namespace ember::internal
