// FaultInjectingFileSystem: a test file system over DefaultFileSystem() that
// counts the operations ember and RocksDB make through the seam
// (storage/base/file_system.h) and fails one of them: the k-th write, sync,
// rename, ... whose path contains a pattern, with an errno (ENOSPC, EIO), as
// a short write, or as a crash; once (a transient error) or from then on (a
// full disk). A crash fails that operation and every later
// one that changes the disk; DropUnsyncedData() then cuts every file written
// through it back to what was synced, as a machine that lost power would
// (leveldb's FaultInjectionTestEnv, RocksDB's FaultInjectionTestFS).
//
// The crash model is files' contents only: directory entries (creations,
// renames, removals) are taken as durable when made. Files written outside
// the seam (RocksDB's LOCK and info LOG) are not tracked.
//
// Syncs are counted and tracked but not done: the crash model is
// DropUnsyncedData's, and a test's fsyncs on a busy disk would cost it most
// of its time. Install with ScopedFileSystem; thread-safe (RocksDB's
// background threads write through it).
#ifndef EMBER_TESTS_STORAGE_FAULT_INJECTION_FS_H_
#define EMBER_TESTS_STORAGE_FAULT_INJECTION_FS_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "storage/base/mutex.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"

namespace ember::testing {

// The operations counted. kSync covers WritableFile::Sync and SyncPath (of
// files and directories); kCreate covers OpenForWrite, CreateDir and
// LockFile; kRename covers Rename, RenameNoReplace and Link; kRead covers
// OpenForRead and ReadAt.
enum class FsOp { kWrite, kSync, kRename, kCreate, kRemove, kRead };

inline const char* FsOpName(FsOp op) {
  switch (op) {
    case FsOp::kWrite: return "write";
    case FsOp::kSync: return "sync";
    case FsOp::kRename: return "rename";
    case FsOp::kCreate: return "create";
    case FsOp::kRemove: return "remove";
    case FsOp::kRead: return "read";
  }
  return "?";
}

// One fault: the `nth` (1-based) operation `op` whose path contains
// `path_contains` ("" matches every path) fails.
struct Fault {
  enum class Kind {
    kError,       // fails with `err`, changing nothing
    kShortWrite,  // (writes) writes half of the data, then fails with `err`
    kCrash,       // fails with EIO, and so does every later change to the disk
  };
  FsOp op = FsOp::kWrite;
  std::string path_contains;
  int nth = 1;
  Kind kind = Kind::kError;
  int err = EIO;
  // Once fired, every later `op` on a matching path fails the same way (a
  // full disk stays full); otherwise the fault fires once. Default: sticky
  // for ENOSPC.
  std::optional<bool> sticky;
  bool IsSticky() const { return sticky.value_or(err == ENOSPC); }
};

// One operation seen.
struct FsOpRecord {
  FsOp op;
  std::string path;
};

// Inside FaultInjectingFileSystem: returns the injected failure from the calling function when `op` on
// `path` is the one to fail.
#define RETURN_IF_FAULT(op, path, what)                                         \
  do {                                                                          \
    const std::optional<Fault> fault_hit = Hit(op, path);                       \
    if (fault_hit.has_value()) return FaultStatus(*fault_hit, what, path);      \
  } while (false)

class FaultInjectingFileSystem : public FileSystemWrapper {
 public:
  FaultInjectingFileSystem() : FileSystemWrapper(DefaultFileSystem()) {}

  // Arms `fault` (replacing any other) and restarts its count.
  void Inject(const Fault& fault) {
    MutexLock lock(&mu_);
    fault_ = fault;
    matched_ = 0;
    fired_path_.reset();
    fired_paths_.clear();
  }
  // Disarms the fault and ends a crash (the disk is writable again).
  void Reset() {
    MutexLock lock(&mu_);
    fault_.reset();
    matched_ = 0;
    crashed_ = false;
  }
  // The path of the operation the fault hit; nullopt if it has not fired.
  std::optional<std::string> fired_path() const {
    MutexLock lock(&mu_);
    return fired_path_;
  }
  // Every path a fault hit (more than one for a sticky fault), in order.
  std::vector<std::string> fired_paths() const {
    MutexLock lock(&mu_);
    return fired_paths_;
  }
  // Whether `message` names (by file name) a file that a fault hit.
  bool NamesAFiredFile(absl::string_view message) const {
    for (const std::string& path : fired_paths()) {
      if (absl::StrContains(message, std::filesystem::path(path).filename().string())) {
        return true;
      }
    }
    return false;
  }
  bool crashed() const {
    MutexLock lock(&mu_);
    return crashed_;
  }
  // Every operation seen (read operations only when `record_reads`), in
  // order; cleared by ClearLog.
  std::vector<FsOpRecord> log() const {
    MutexLock lock(&mu_);
    return log_;
  }
  void ClearLog(bool record_reads = false) {
    MutexLock lock(&mu_);
    log_.clear();
    record_reads_ = record_reads;
  }

  // Cuts every file written through this file system (under directory
  // `under`, when given) back to the bytes last synced (0 for a file never
  // synced): what a crash keeps.
  void DropUnsyncedData(const std::string& under = "") {
    MutexLock lock(&mu_);
    for (const auto& [path, state] : files_) {
      if (!under.empty() && !absl::StartsWith(path, under + "/")) continue;
      if (state->size > state->synced) {
        // Best effort: a file removed meanwhile outside the seam is gone.
        [[maybe_unused]] int rc = ::truncate(path.c_str(), static_cast<off_t>(state->synced));
        state->size = state->synced;
      }
    }
  }

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                             WriteMode mode) override {
    RETURN_IF_FAULT(FsOp::kCreate, path, "cannot create");
    uint64_t existing = 0;
    if (mode == WriteMode::kAppend) {
      struct stat st;
      if (::stat(path.c_str(), &st) == 0) existing = static_cast<uint64_t>(st.st_size);
    }
    absl::StatusOr<std::unique_ptr<WritableFile>> file = target()->OpenForWrite(path, mode);
    if (!file.ok()) return file.status();
    auto state = std::make_shared<FileState>();
    // What an append finds was there before: taken as durable.
    state->size = state->synced = existing;
    {
      MutexLock lock(&mu_);
      files_[path] = state;
    }
    return std::unique_ptr<WritableFile>(new File(this, *std::move(file), std::move(state)));
  }

  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenForRead(const std::string& path) override {
    RETURN_IF_FAULT(FsOp::kRead, path, "cannot open");
    absl::StatusOr<std::unique_ptr<ReadableFile>> file = target()->OpenForRead(path);
    if (!file.ok()) return file.status();
    return std::unique_ptr<ReadableFile>(new Reader(this, *std::move(file)));
  }

  absl::StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    RETURN_IF_FAULT(FsOp::kCreate, path, "cannot open lock file");
    return target()->LockFile(path);
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    RETURN_IF_FAULT(FsOp::kRename, to, absl::StrCat("cannot rename ", from, " to"));
    absl::Status s = target()->Rename(from, to);
    if (s.ok()) MoveState(from, to);
    return s;
  }
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override {
    RETURN_IF_FAULT(FsOp::kRename, to, absl::StrCat("cannot rename ", from, " to"));
    absl::Status s = target()->RenameNoReplace(from, to);
    if (s.ok()) MoveState(from, to);
    return s;
  }
  absl::Status Link(const std::string& from, const std::string& to) override {
    RETURN_IF_FAULT(FsOp::kRename, to, absl::StrCat("cannot link ", from, " to"));
    absl::Status s = target()->Link(from, to);
    if (s.ok()) {
      MutexLock lock(&mu_);
      auto it = files_.find(from);
      if (it != files_.end()) files_[to] = it->second;  // one inode, one state
    }
    return s;
  }
  absl::Status Remove(const std::string& path) override {
    RETURN_IF_FAULT(FsOp::kRemove, path, "cannot remove");
    absl::Status s = target()->Remove(path);
    if (s.ok()) ForgetUnder(path);
    return s;
  }
  absl::Status RemoveAll(const std::string& path) override {
    RETURN_IF_FAULT(FsOp::kRemove, path, "cannot remove");
    absl::Status s = target()->RemoveAll(path);
    if (s.ok()) ForgetUnder(path);
    return s;
  }
  absl::Status CreateDir(const std::string& path) override {
    RETURN_IF_FAULT(FsOp::kCreate, path, "cannot create directory");
    return target()->CreateDir(path);
  }
  absl::Status SyncPath(const std::string& path) override {
    RETURN_IF_FAULT(FsOp::kSync, path, "cannot fsync");
    // As File::Sync: counted and tracked, not done.
    absl::StatusOr<PathKind> kind = target()->Stat(path);
    absl::Status s = !kind.ok()                       ? kind.status()
                     : *kind == PathKind::kMissing ? internal::ErrnoStatus(ENOENT, "cannot open for fsync", path)
                                                   : absl::OkStatus();
    if (s.ok()) {
      MutexLock lock(&mu_);
      auto it = files_.find(path);
      if (it != files_.end()) it->second->synced = it->second->size;
    }
    return s;
  }

 private:
  struct FileState {
    uint64_t size = 0;    // bytes written
    uint64_t synced = 0;  // bytes that survive a crash
  };

  class File final : public WritableFile {
   public:
    File(FaultInjectingFileSystem* fs, std::unique_ptr<WritableFile> file,
         std::shared_ptr<FileState> state)
        : WritableFile(file->path()), fs_(fs), file_(std::move(file)), state_(std::move(state)) {}

    absl::Status Append(std::string_view data) override {
      const std::optional<Fault> fault = fs_->Hit(FsOp::kWrite, path());
      if (fault.has_value()) {
        if (fault->kind == Fault::Kind::kShortWrite && data.size() > 1) {
          const std::string_view half = data.substr(0, data.size() / 2);
          if (file_->Append(half).ok()) Grow(half.size());
        }
        return fs_->FaultStatus(*fault, "cannot write", path());
      }
      absl::Status s = file_->Append(data);
      if (s.ok()) Grow(data.size());
      return s;
    }
    absl::Status Sync() override {
      const std::optional<Fault> fault = fs_->Hit(FsOp::kSync, path());
      if (fault.has_value()) return fs_->FaultStatus(*fault, "cannot fsync", path());
      // No real fsync: the crash model is DropUnsyncedData's, and tests
      // never lose power (syncs on a busy disk would dominate their time).
      absl::Status s = absl::OkStatus();
      if (s.ok()) {
        MutexLock lock(&fs_->mu_);
        state_->synced = state_->size;
      }
      return s;
    }
    absl::Status Close() override { return file_->Close(); }

   private:
    void Grow(uint64_t bytes) {
      MutexLock lock(&fs_->mu_);
      state_->size += bytes;
    }

    FaultInjectingFileSystem* fs_;
    std::unique_ptr<WritableFile> file_;
    std::shared_ptr<FileState> state_;
  };

  class Reader final : public ReadableFile {
   public:
    Reader(FaultInjectingFileSystem* fs, std::unique_ptr<ReadableFile> file)
        : ReadableFile(file->path()), fs_(fs), file_(std::move(file)) {}

    absl::StatusOr<size_t> ReadAt(uint64_t offset, std::span<char> buf) const override {
      const std::optional<Fault> fault = fs_->Hit(FsOp::kRead, path());
      if (fault.has_value()) return fs_->FaultStatus(*fault, "cannot read", path());
      return file_->ReadAt(offset, buf);
    }
    absl::StatusOr<uint64_t> Size() const override { return file_->Size(); }

   private:
    FaultInjectingFileSystem* fs_;
    std::unique_ptr<ReadableFile> file_;
  };

  // Counts `op` on `path`; the fault to inject if this is the one (or the
  // disk has crashed and `op` changes it).
  std::optional<Fault> Hit(FsOp op, const std::string& path) {
    MutexLock lock(&mu_);
    if (op != FsOp::kRead || record_reads_) log_.push_back({op, path});
    if (crashed_ && op != FsOp::kRead) return fault_;
    if (!fault_.has_value() || fault_->op != op ||
        !absl::StrContains(path, fault_->path_contains)) {
      return std::nullopt;
    }
    if (fired_path_.has_value()) {
      if (!fault_->IsSticky()) return std::nullopt;
      fired_paths_.push_back(path);
      return fault_;
    }
    if (++matched_ != fault_->nth) return std::nullopt;
    fired_path_ = path;
    fired_paths_.push_back(path);
    if (fault_->kind == Fault::Kind::kCrash) crashed_ = true;
    return fault_;
  }

  absl::Status FaultStatus(const Fault& fault, std::string_view what, std::string_view path) {
    const int err = fault.kind == Fault::Kind::kCrash ? EIO : fault.err;
    return internal::ErrnoStatus(err, what, path);
  }

  void MoveState(const std::string& from, const std::string& to) {
    MutexLock lock(&mu_);
    auto it = files_.find(from);
    if (it == files_.end()) {
      files_.erase(to);
      return;
    }
    files_[to] = it->second;
    files_.erase(it);
  }

  void ForgetUnder(const std::string& path) {
    MutexLock lock(&mu_);
    const std::string dir = path + "/";
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->first == path || absl::StartsWith(it->first, dir)) {
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
  }

  mutable Mutex mu_;
  std::optional<Fault> fault_ ABSL_GUARDED_BY(mu_);
  int matched_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<std::string> fired_path_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> fired_paths_ ABSL_GUARDED_BY(mu_);
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  bool record_reads_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<FsOpRecord> log_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<FileState>> files_ ABSL_GUARDED_BY(mu_);
};

#undef RETURN_IF_FAULT

// The kind of file `path` is, by its name: RocksDB's table files, WALs,
// MANIFEST-*, CURRENT, OPTIONS-*, and their temporaries; ember's manifest,
// blobs, metrics, spill files, exports, temporaries; "directory" for a
// name without a dot.
inline std::string FileKind(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  for (const char* kind : {"OPTIONS-", ".sst", ".log", ".dbtmp", "MANIFEST-", "CURRENT",
                           "MANIFEST.json", "relations-", "metrics.jsonl", "LOCK", ".tmp-",
                           "spill", "slots", ".part", "by-", ".meta.json", ".names.tsv",
                           ".relations"}) {
    if (name.find(kind) != std::string::npos) return kind;
  }
  return name.find('.') == std::string::npos ? "directory" : name;
}

// Whether RocksDB may absorb a failure on `path` so that the call that met
// it succeeds (the caller then checks that nothing was lost): it writes its
// OPTIONS-* files for information only (DBOptions::fail_if_options_file_error
// is false), ignores a failed fsync of a DB directory after deleting
// obsolete files, and recovers from a failed flush or MANIFEST-* write by
// retrying (with a new MANIFEST). Failures on ember's own files are always
// reported.
inline bool RocksDbMayAbsorb(const std::string& path) {
  const std::string kind = FileKind(path);
  const std::string name = std::filesystem::path(path).filename().string();
  return kind == "OPTIONS-" || kind == "MANIFEST-" || kind == ".sst" || kind == ".log" ||
         kind == ".dbtmp" || kind == "CURRENT" || name == "dict" || name.rfind("shard-", 0) == 0 ||
         name.rfind("LOG", 0) == 0;  // the info log's rotation
}

// Faults at the first (and, with `first_and_last`, the last) `op` on each
// kind of file in `log` (a fault-free run's) from record `from` on, each as
// a Fault of `kind` with `err` counting every `op` of the run (so the same
// run with it armed fails that operation).
inline std::vector<Fault> SampleFaults(const std::vector<FsOpRecord>& log, FsOp op,
                                       Fault::Kind kind, int err, size_t from = 0,
                                       bool first_and_last = true) {
  std::map<std::string, std::set<int>> picks;
  int nth = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    const FsOpRecord& r = log[i];
    if (r.op != op) continue;
    ++nth;
    if (i < from) continue;
    std::set<int>& p = picks[FileKind(r.path)];
    if (!first_and_last && !p.empty()) continue;
    if (p.size() == 2) p.erase(std::prev(p.end()));
    p.insert(nth);
  }
  std::set<int> all;
  for (const auto& [file_kind, ks] : picks) all.insert(ks.begin(), ks.end());
  std::vector<Fault> faults;
  for (int k : all) faults.push_back({.op = op, .nth = k, .kind = kind, .err = err});
  return faults;
}

// For each of `ops`, SampleFaults with ENOSPC and with EIO, and short
// writes where `ops` has kWrite: the faults each test of a call runs.
inline std::vector<Fault> DiskFullAndIoErrorFaults(const std::vector<FsOpRecord>& log,
                                                   std::initializer_list<FsOp> ops,
                                                   size_t from = 0, bool first_and_last = true) {
  std::vector<Fault> faults;
  for (FsOp op : ops) {
    for (int err : {ENOSPC, EIO}) {
      for (const Fault& f : SampleFaults(log, op, Fault::Kind::kError, err, from, first_and_last)) {
        faults.push_back(f);
      }
    }
    if (op != FsOp::kWrite) continue;
    for (const Fault& f :
         SampleFaults(log, op, Fault::Kind::kShortWrite, ENOSPC, from, first_and_last)) {
      faults.push_back(f);
    }
  }
  return faults;
}

}  // namespace ember::testing

#endif  // EMBER_TESTS_STORAGE_FAULT_INJECTION_FS_H_
