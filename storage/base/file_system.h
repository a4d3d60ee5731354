// FileSystem: the one seam through which ember reads and writes the files it
// handles itself (manifests, blobs, the writer lock, spill and record files,
// metrics, exports), and, through storage's adapter
// (storage/internal/rocks_fs.h), RocksDB's files too. Production uses
// DefaultFileSystem(), plain POSIX; a test installs another (a fault
// injector) with ScopedFileSystem, so call sites take no new parameter.
//
// Errors name the file and the cause: "<what> <path>: <strerror>", with the
// code absl::ErrnoToStatus gives the errno (ENOSPC -> ResourceExhausted,
// EIO -> Unknown, ENOENT -> NotFound, EEXIST -> AlreadyExists, ...).
#ifndef EMBER_STORAGE_BASE_FILE_SYSTEM_H_
#define EMBER_STORAGE_BASE_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ember {

// A file open for writing. Not thread-safe, except that Sync may run on
// one thread while Append runs on another (RocksDB syncs its WAL so).
class WritableFile {
 public:
  virtual ~WritableFile() = default;  // closes (errors are lost: call Close)
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;

  // Writes all of `data` at the end of the file, or fails. After a failure
  // some prefix of `data` may have reached the file (a short write).
  virtual absl::Status Append(std::string_view data) = 0;
  // fsync: what was appended survives a crash once this returns OK.
  virtual absl::Status Sync() = 0;
  // Closes the file; OK when already closed. No sync.
  virtual absl::Status Close() = 0;

  const std::string& path() const { return path_; }

 protected:
  explicit WritableFile(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

// A file open for reading at offsets. ReadAt may be called from several
// threads at once.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;

  // Reads up to buf.size() bytes at `offset` into `buf`; the count read,
  // fewer only at the end of the file (0 at or past it).
  virtual absl::StatusOr<size_t> ReadAt(uint64_t offset, std::span<char> buf) const = 0;
  // The file's size now.
  virtual absl::StatusOr<uint64_t> Size() const = 0;

  const std::string& path() const { return path_; }

 protected:
  explicit ReadableFile(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

// An exclusive advisory lock on a file (flock), held until destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Replaces the locked file's contents with `text`, through the locked
  // descriptor (no sync).
  virtual absl::Status Rewrite(std::string_view text) = 0;

 protected:
  FileLock() = default;
};

// How OpenForWrite treats an existing file.
enum class WriteMode {
  kCreateNew,  // AlreadyExists if the path exists (O_EXCL)
  kTruncate,   // create or empty it
  kAppend,     // create, or write after its end
};

enum class PathKind { kMissing, kFile, kDirectory, kOther };

// The operations ember needs from a file system. Implementations must be
// thread-safe. Paths are passed through as given (relative to the working
// directory when relative).
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                                     WriteMode mode) = 0;
  virtual absl::StatusOr<std::unique_ptr<ReadableFile>> OpenForRead(const std::string& path) = 0;
  // Takes an exclusive, non-blocking lock on `path` (created if missing).
  // Unavailable (EWOULDBLOCK) when another holder has it.
  virtual absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;

  // rename(2): replaces `to` if it exists.
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  // Renames without replacing: AlreadyExists when `to` exists.
  virtual absl::Status RenameNoReplace(const std::string& from, const std::string& to) = 0;
  // link(2): AlreadyExists when `to` exists.
  virtual absl::Status Link(const std::string& from, const std::string& to) = 0;
  // Removes a file or an empty directory; NotFound when missing.
  virtual absl::Status Remove(const std::string& path) = 0;
  // Removes `path` and everything under it; OK when missing.
  virtual absl::Status RemoveAll(const std::string& path) = 0;
  // Creates one directory; AlreadyExists when the path exists.
  virtual absl::Status CreateDir(const std::string& path) = 0;

  // What is at `path` (symbolic links followed).
  virtual absl::StatusOr<PathKind> Stat(const std::string& path) = 0;
  // Names of the entries of `dir` (not "." and ".."), in no order.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  // Opens `path` (a file or a directory) and fsyncs it.
  virtual absl::Status SyncPath(const std::string& path) = 0;
  // Bytes free to an unprivileged writer on the file system holding `path`
  // (statvfs).
  virtual absl::StatusOr<uint64_t> FreeBytes(const std::string& path) = 0;
};

// Plain POSIX; lives for the whole process.
FileSystem* DefaultFileSystem();

// The file system every ember file operation goes through:
// DefaultFileSystem() unless a ScopedFileSystem is alive.
FileSystem* CurrentFileSystem();

// Installs `fs` as CurrentFileSystem() until destroyed, then restores the
// one before. For tests: install before opening graphs or starting work
// whose files should go through `fs`, not while other threads do file I/O.
// `fs` must outlive this object and everything opened through it.
class ScopedFileSystem {
 public:
  explicit ScopedFileSystem(FileSystem* fs);
  ~ScopedFileSystem();
  ScopedFileSystem(const ScopedFileSystem&) = delete;
  ScopedFileSystem& operator=(const ScopedFileSystem&) = delete;

 private:
  FileSystem* previous_;
};

// Forwards every call to another file system; a base for file systems that
// change a few operations (fault injectors, tracers).
class FileSystemWrapper : public FileSystem {
 public:
  explicit FileSystemWrapper(FileSystem* target) : target_(target) {}
  FileSystem* target() const { return target_; }

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                             WriteMode mode) override {
    return target_->OpenForWrite(path, mode);
  }
  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenForRead(const std::string& path) override {
    return target_->OpenForRead(path);
  }
  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return target_->LockFile(path);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    return target_->Rename(from, to);
  }
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override {
    return target_->RenameNoReplace(from, to);
  }
  absl::Status Link(const std::string& from, const std::string& to) override {
    return target_->Link(from, to);
  }
  absl::Status Remove(const std::string& path) override { return target_->Remove(path); }
  absl::Status RemoveAll(const std::string& path) override { return target_->RemoveAll(path); }
  absl::Status CreateDir(const std::string& path) override { return target_->CreateDir(path); }
  absl::StatusOr<PathKind> Stat(const std::string& path) override { return target_->Stat(path); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    return target_->ListDir(dir);
  }
  absl::Status SyncPath(const std::string& path) override { return target_->SyncPath(path); }
  absl::StatusOr<uint64_t> FreeBytes(const std::string& path) override {
    return target_->FreeBytes(path);
  }

 private:
  FileSystem* target_;
};

// Helpers over CurrentFileSystem().

// Reads the whole file.
absl::StatusOr<std::string> ReadWholeFile(const ReadableFile& file);
// Reads the file into `parts`, in order, without an intermediate copy.
// DataLoss naming the file unless its size is exactly the parts' total.
absl::Status ReadWholeFileInto(const ReadableFile& file, std::span<const std::span<char>> parts);

// Creates `path` and any missing parents; OK when it is a directory already.
absl::Status CreateDirs(const std::string& path);

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_FILE_SYSTEM_H_
