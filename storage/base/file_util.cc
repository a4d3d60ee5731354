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
#include "storage/base/file_system.h"
#include "storage/base/status_macros.h"

namespace ember::internal {

absl::Status ErrnoStatus(int err, std::string_view what,
                         std::string_view path) {
  return absl::ErrnoToStatus(err, absl::StrCat(Sv(what), " ", Sv(path)));
}

absl::Status FsyncPath(const std::string& path) {
  return CurrentFileSystem()->SyncPath(path);
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
                   AtomicOutputFile::Create(path, /*overwrite=*/true, OutputKind::kInternal));
  for (std::string_view part : parts) RETURN_IF_ERROR(file->Append(part));
  return file->Commit();
}

absl::Status RemoveAtomicWriteLeftovers(const std::string& dir) {
  FileSystem* fs = CurrentFileSystem();
  absl::StatusOr<std::vector<std::string>> names = fs->ListDir(dir);
  if (absl::IsNotFound(names.status())) return absl::OkStatus();
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    if (name.find(kAtomicWriteTempInfix) == std::string::npos) continue;
    const absl::Status s = fs->Remove(absl::StrCat(dir, "/", name));
    if (!s.ok() && !absl::IsNotFound(s)) return s;
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

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, CurrentFileSystem()->OpenForRead(path));
  return ReadWholeFile(*file);
}

absl::Status ReadFileInto(const std::string& path, std::span<const std::span<char>> parts) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, CurrentFileSystem()->OpenForRead(path));
  return ReadWholeFileInto(*file, parts);
}

}  // namespace ember::internal
