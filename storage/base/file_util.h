// File helpers shared inside storage/ (not part of its public API):
// errno-to-status conversion, fsync of files and directories, atomic file
// replacement (through AtomicOutputFile, storage/base/atomic_file.h). File
// operations go through CurrentFileSystem() (storage/base/file_system.h).
#ifndef EMBER_STORAGE_BASE_FILE_UTIL_H_
#define EMBER_STORAGE_BASE_FILE_UTIL_H_

#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ember::internal {

// This Abseil build's absl::string_view is not std::string_view; convert at
// the boundary.
inline absl::string_view Sv(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// A status for a failed system call: "<what> <path>: <strerror(err)>", with
// the code absl::ErrnoToStatus gives `err` (ENOENT -> NotFound, EEXIST ->
// AlreadyExists, EACCES/EPERM/EROFS -> PermissionDenied, ENOSPC ->
// ResourceExhausted, ...).
absl::Status ErrnoStatus(int err, std::string_view what,
                         std::string_view path);

// Opens `path` (file or directory) read-only and fsyncs it
// (CurrentFileSystem()->SyncPath).
absl::Status FsyncPath(const std::string& path);

// The directory holding `path` ("." when it has no slash).
std::string ParentDir(const std::string& path);

// Every temporary of an atomic write holds this in its name
// ("<path>.tmp-<pid>-<n>").
inline constexpr char kAtomicWriteTempInfix[] = ".tmp-";

// Writes `contents` to a temporary beside `path`, fsyncs it, renames it over
// `path` and fsyncs the parent directory (an AtomicOutputFile). On error the
// temporary is removed and `path` is untouched.
absl::Status WriteFileAtomic(const std::string& path,
                             std::string_view contents);
// The same, with the file's contents the concatenation of `parts` (for
// large files, without first copying them into one buffer).
absl::Status WriteFileAtomic(const std::string& path,
                             std::span<const std::string_view> parts);

// Removes the temporaries that atomic writes into `dir` left when they were
// cut short (a crash or kill between create and rename). Only safe while no
// other process writes into `dir` (callers hold the graph's writer lock).
// A missing `dir` is fine.
absl::Status RemoveAtomicWriteLeftovers(const std::string& dir);

// Creates a new, empty directory "<system temp dir>/<prefix>-XXXXXX" (mkdtemp;
// TMPDIR or /tmp); its path.
absl::StatusOr<std::string> MakeTempDir(std::string_view prefix);

// Raises this process's soft limit on open files to its hard limit (once;
// best effort), for readers that hold every table file of a graph open.
void RaiseOpenFileLimit();

// Reads the whole file (through CurrentFileSystem()).
absl::StatusOr<std::string> ReadFile(const std::string& path);
// Reads the file into `parts`, in order, without an intermediate copy.
// DataLoss naming the file unless its size is exactly the parts' total.
absl::Status ReadFileInto(const std::string& path, std::span<const std::span<char>> parts);

}  // namespace ember::internal

#endif  // EMBER_STORAGE_BASE_FILE_UTIL_H_
