// AtomicOutputFile: the one way ember writes a file that readers must see
// whole or not at all (manifests, blobs, exports, generated graphs, FAISS
// indexes), and the one place that decides whether an existing file may be
// replaced.
#ifndef EMBER_STORAGE_BASE_ATOMIC_FILE_H_
#define EMBER_STORAGE_BASE_ATOMIC_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ember {

class FileSystem;
class OutputHasher;
class WritableFile;

// Whether a file is written for the user or for ember itself; decides what
// `overwrite` may replace.
enum class OutputKind {
  // An output a user asked for (export, recommend --out, a saved index, a
  // generated graph): Commit() also writes its output record
  // (storage/base/output_record.h), and `overwrite` replaces only a file
  // ember made (CheckMadeByEmber), never the user's own.
  kUserOutput,
  // A file of ember's own (manifests, blobs, files staged inside a
  // directory of ember's): no record; `overwrite` replaces what is there.
  kInternal,
};

// A file written through a temporary beside it ("<path>.tmp-<pid>-<n>") and
// moved into place by Commit(). The temporary is fsynced before the move and
// the directory after it, so once Commit() returns OK the new contents
// survive a crash. Until then `path` is untouched; destroying an uncommitted
// file removes the temporary. Writes are buffered. All file operations go
// through CurrentFileSystem() as of Create(). Not copyable, not thread-safe.
class AtomicOutputFile {
 public:
  // Without `overwrite`, AlreadyExists naming `path` if it exists.
  // FailedPrecondition if `path` is a directory, or (kUserOutput, with
  // `overwrite`) a file that ember did not make or that changed since,
  // saying so. Errors of the file system name the temporary that could not
  // be created.
  static absl::StatusOr<std::unique_ptr<AtomicOutputFile>> Create(
      const std::string& path, bool overwrite, OutputKind kind = OutputKind::kUserOutput);
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_; }
  // Bytes appended so far.
  uint64_t bytes() const { return bytes_; }

  // FailedPrecondition after Close().
  absl::Status Append(std::string_view data);
  // Flushes, fsyncs and closes the temporary: the file is complete on disk
  // but not yet visible at path(). Idempotent.
  absl::Status Close();
  // Close() if needed, then (kUserOutput) writes the output record, moves
  // the temporary to path() and fsyncs the directory. With `overwrite` the
  // file that stood at path() at Create() is replaced (kUserOutput: only
  // the one CheckMadeByEmber accepted then); otherwise a file that appeared
  // at path() since Create() is never replaced (AlreadyExists, and the
  // temporary is removed when this is destroyed).
  // When only the directory's fsync fails, a new path() is removed again
  // (a replaced one stays replaced: its old contents are gone).
  absl::Status Commit();

 private:
  AtomicOutputFile(FileSystem* fs, std::string path, std::string temp,
                   std::unique_ptr<WritableFile> file, bool replace, OutputKind kind);
  absl::Status Flush();
  absl::Status WriteAll(std::string_view data);
  absl::Status MoveIntoPlace();

  FileSystem* fs_;  // CurrentFileSystem() as of Create()
  std::string path_;
  std::string temp_;
  std::unique_ptr<WritableFile> file_;  // null once closed
  bool overwrite_ = false;              // whether Commit() may replace a file at path_
  OutputKind kind_;
  std::unique_ptr<OutputHasher> hasher_;  // kUserOutput: what was written
  bool committed_ = false;
  uint64_t bytes_ = 0;
  std::string buffer_;
};

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_ATOMIC_FILE_H_
