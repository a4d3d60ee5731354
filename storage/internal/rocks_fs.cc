#include "storage/internal/rocks_fs.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rocksdb/file_system.h"
#include "rocksdb/io_status.h"
#include "storage/base/file_util.h"

namespace ember::internal {
namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

// A seam status as RocksDB's: a full disk stays NoSpace (RocksDB treats it
// apart), a missing file NotFound (FileExists answers with it); the rest is
// an IOError. The message, which names the file and the cause, is kept.
IOStatus ToIOStatus(const absl::Status& s) {
  if (s.ok()) return IOStatus::OK();
  const std::string message(s.message());
  if (absl::IsResourceExhausted(s)) return IOStatus::NoSpace(message);
  if (absl::IsNotFound(s)) return IOStatus::PathNotFound(message);
  return IOStatus::IOError(message);
}

class SeamWritableFile final : public rocksdb::FSWritableFile {
 public:
  SeamWritableFile(std::unique_ptr<WritableFile> file, uint64_t size)
      : file_(std::move(file)), size_(size) {}

  IOStatus Append(const rocksdb::Slice& data, const IOOptions&, IODebugContext*) override {
    IOStatus s = ToIOStatus(file_->Append(std::string_view(data.data(), data.size())));
    if (s.ok()) size_ += data.size();
    return s;
  }
  IOStatus Append(const rocksdb::Slice& data, const IOOptions& options,
                  const rocksdb::DataVerificationInfo&, IODebugContext* dbg) override {
    return Append(data, options, dbg);
  }
  // RocksDB truncates away preallocated space; nothing is preallocated here.
  IOStatus Truncate(uint64_t size, const IOOptions&, IODebugContext*) override {
    if (size == size_) return IOStatus::OK();
    return IOStatus::NotSupported("truncating a file of the ember file system seam");
  }
  IOStatus Close(const IOOptions&, IODebugContext*) override {
    return ToIOStatus(file_->Close());
  }
  IOStatus Flush(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Sync(const IOOptions&, IODebugContext*) override { return ToIOStatus(file_->Sync()); }
  IOStatus Fsync(const IOOptions&, IODebugContext*) override { return ToIOStatus(file_->Sync()); }
  uint64_t GetFileSize(const IOOptions&, IODebugContext*) override { return size_; }
  // The seam allows Sync beside Append (RocksDB's SyncWAL needs it).
  bool IsSyncThreadSafe() const override { return true; }

 private:
  std::unique_ptr<WritableFile> file_;
  uint64_t size_;
};

class SeamSequentialFile final : public rocksdb::FSSequentialFile {
 public:
  explicit SeamSequentialFile(std::unique_ptr<ReadableFile> file) : file_(std::move(file)) {}

  IOStatus Read(size_t n, const IOOptions&, rocksdb::Slice* result, char* scratch,
                IODebugContext*) override {
    absl::StatusOr<size_t> got = file_->ReadAt(offset_, std::span<char>(scratch, n));
    if (!got.ok()) return ToIOStatus(got.status());
    offset_ += *got;
    *result = rocksdb::Slice(scratch, *got);
    return IOStatus::OK();
  }
  IOStatus Skip(uint64_t n) override {
    offset_ += n;
    return IOStatus::OK();
  }

 private:
  std::unique_ptr<ReadableFile> file_;
  uint64_t offset_ = 0;
};

class SeamRandomAccessFile final : public rocksdb::FSRandomAccessFile {
 public:
  explicit SeamRandomAccessFile(std::unique_ptr<ReadableFile> file) : file_(std::move(file)) {}

  IOStatus Read(uint64_t offset, size_t n, const IOOptions&, rocksdb::Slice* result,
                char* scratch, IODebugContext*) const override {
    absl::StatusOr<size_t> got = file_->ReadAt(offset, std::span<char>(scratch, n));
    if (!got.ok()) return ToIOStatus(got.status());
    *result = rocksdb::Slice(scratch, *got);
    return IOStatus::OK();
  }

 private:
  std::unique_ptr<ReadableFile> file_;
};

class SeamDirectory final : public rocksdb::FSDirectory {
 public:
  SeamDirectory(ember::FileSystem* fs, std::string path) : fs_(fs), path_(std::move(path)) {}

  IOStatus Fsync(const IOOptions&, IODebugContext*) override {
    return ToIOStatus(fs_->SyncPath(path_));
  }
  IOStatus Close(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }

 private:
  ember::FileSystem* fs_;
  std::string path_;
};

// RocksDB's default file system with every data-bearing operation sent
// through `fs`.
class SeamFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  explicit SeamFileSystem(ember::FileSystem* fs)
      : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()), fs_(fs) {}

  static const char* kClassName() { return "EmberSeamFileSystem"; }
  const char* Name() const override { return kClassName(); }

  IOStatus NewSequentialFile(const std::string& f, const rocksdb::FileOptions&,
                             std::unique_ptr<rocksdb::FSSequentialFile>* r,
                             IODebugContext*) override {
    absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs_->OpenForRead(f);
    if (!file.ok()) return ToIOStatus(file.status());
    *r = std::make_unique<SeamSequentialFile>(*std::move(file));
    return IOStatus::OK();
  }
  IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions&,
                               std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                               IODebugContext*) override {
    absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs_->OpenForRead(f);
    if (!file.ok()) return ToIOStatus(file.status());
    *r = std::make_unique<SeamRandomAccessFile>(*std::move(file));
    return IOStatus::OK();
  }
  IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions&,
                           std::unique_ptr<rocksdb::FSWritableFile>* r,
                           IODebugContext*) override {
    absl::StatusOr<std::unique_ptr<WritableFile>> file = fs_->OpenForWrite(f, WriteMode::kTruncate);
    if (!file.ok()) return ToIOStatus(file.status());
    *r = std::make_unique<SeamWritableFile>(*std::move(file), 0);
    return IOStatus::OK();
  }
  IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& options,
                              std::unique_ptr<rocksdb::FSWritableFile>* r,
                              IODebugContext* dbg) override {
    uint64_t size = 0;
    IOStatus s = target()->GetFileSize(f, IOOptions(), &size, dbg);
    if (s.IsPathNotFound() || s.IsNotFound()) {
      size = 0;
    } else if (!s.ok()) {
      return s;
    }
    absl::StatusOr<std::unique_ptr<WritableFile>> file = fs_->OpenForWrite(f, WriteMode::kAppend);
    if (!file.ok()) return ToIOStatus(file.status());
    *r = std::make_unique<SeamWritableFile>(*std::move(file), size);
    return IOStatus::OK();
  }
  IOStatus NewDirectory(const std::string& name, const IOOptions&,
                        std::unique_ptr<rocksdb::FSDirectory>* result,
                        IODebugContext*) override {
    absl::StatusOr<PathKind> kind = fs_->Stat(name);
    if (!kind.ok()) return ToIOStatus(kind.status());
    if (*kind != PathKind::kDirectory) {
      return IOStatus::PathNotFound(absl::StrCat(name, " is not a directory"));
    }
    *result = std::make_unique<SeamDirectory>(fs_, name);
    return IOStatus::OK();
  }
  IOStatus FileExists(const std::string& f, const IOOptions&, IODebugContext*) override {
    absl::StatusOr<PathKind> kind = fs_->Stat(f);
    if (!kind.ok()) return ToIOStatus(kind.status());
    return *kind == PathKind::kMissing ? IOStatus::NotFound() : IOStatus::OK();
  }
  IOStatus GetChildren(const std::string& dir, const IOOptions&, std::vector<std::string>* r,
                       IODebugContext*) override {
    absl::StatusOr<std::vector<std::string>> names = fs_->ListDir(dir);
    if (!names.ok()) return ToIOStatus(names.status());
    *r = *std::move(names);
    return IOStatus::OK();
  }
  IOStatus DeleteFile(const std::string& f, const IOOptions&, IODebugContext*) override {
    return ToIOStatus(fs_->Remove(f));
  }
  IOStatus CreateDir(const std::string& d, const IOOptions&, IODebugContext*) override {
    return ToIOStatus(fs_->CreateDir(d));
  }
  IOStatus CreateDirIfMissing(const std::string& d, const IOOptions&, IODebugContext*) override {
    const absl::Status s = fs_->CreateDir(d);
    if (absl::IsAlreadyExists(s) &&
        fs_->Stat(d).value_or(PathKind::kMissing) == PathKind::kDirectory) {
      return IOStatus::OK();
    }
    return ToIOStatus(s);
  }
  IOStatus DeleteDir(const std::string& d, const IOOptions&, IODebugContext*) override {
    return ToIOStatus(fs_->Remove(d));
  }
  IOStatus RenameFile(const std::string& s, const std::string& t, const IOOptions&,
                      IODebugContext*) override {
    return ToIOStatus(fs_->Rename(s, t));
  }
  IOStatus LinkFile(const std::string& s, const std::string& t, const IOOptions&,
                    IODebugContext*) override {
    return ToIOStatus(fs_->Link(s, t));
  }
  IOStatus GetFreeSpace(const std::string& path, const IOOptions&, uint64_t* diskfree,
                        IODebugContext*) override {
    absl::StatusOr<uint64_t> bytes = fs_->FreeBytes(path);
    if (!bytes.ok()) return ToIOStatus(bytes.status());
    *diskfree = *bytes;
    return IOStatus::OK();
  }

 private:
  ember::FileSystem* fs_;
};

}  // namespace

std::shared_ptr<rocksdb::Env> RocksEnvForCurrentFileSystem() {
  // Compactions (the default Env's LOW pool, which every Env here shares)
  // run at nice 19: on a machine whose cores train, they yield to the
  // trainers and catch up whenever the foreground waits. Flushes, which a
  // checkpoint waits on, keep their priority.
  static const bool lowered = [] {
    rocksdb::Env::Default()
        ->LowerThreadPoolCPUPriority(rocksdb::Env::Priority::LOW, rocksdb::CpuPriority::kLow)
        .PermitUncheckedError();
    return true;
  }();
  (void)lowered;
  FileSystem* fs = CurrentFileSystem();
  if (fs == DefaultFileSystem()) {
    // Not owned: RocksDB's default Env lives for the process.
    return std::shared_ptr<rocksdb::Env>(rocksdb::Env::Default(), [](rocksdb::Env*) {});
  }
  return rocksdb::NewCompositeEnv(std::make_shared<SeamFileSystem>(fs));
}

}  // namespace ember::internal
