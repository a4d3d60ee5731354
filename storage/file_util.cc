#include "storage/file_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "storage/atomic_file.h"
#include "storage/status_macros.h"

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

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  std::string contents;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "cannot read", path);
    }
    if (n == 0) break;
    contents.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return contents;
}

absl::Status ReadFileInto(const std::string& path, std::span<const std::span<char>> parts) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "cannot stat", path);
  }
  uint64_t want = 0;
  for (std::span<char> part : parts) want += part.size();
  if (static_cast<uint64_t>(st.st_size) != want) {
    ::close(fd);
    return absl::DataLossError(
        absl::StrCat(path, " has ", st.st_size, " bytes, expected ", want));
  }
  for (std::span<char> part : parts) {
    size_t done = 0;
    while (done < part.size()) {
      const ssize_t n = ::read(fd, part.data() + done, part.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        return ErrnoStatus(err, "cannot read", path);
      }
      done += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  return absl::OkStatus();
}

}  // namespace ember::internal
