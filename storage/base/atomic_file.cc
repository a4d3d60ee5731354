#include "storage/base/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"
#include "storage/base/output_record.h"
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

}  // namespace

absl::StatusOr<std::unique_ptr<AtomicOutputFile>> AtomicOutputFile::Create(const std::string& path,
                                                                           bool overwrite,
                                                                           OutputKind output_kind) {
  if (path.empty()) return absl::InvalidArgumentError("output path is empty");
  FileSystem* fs = CurrentFileSystem();
  // A stat that fails (not ENOENT) leaves the decision to the create below.
  const PathKind kind = fs->Stat(path).value_or(PathKind::kMissing);
  if (kind == PathKind::kDirectory) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is a directory"));
  }
  if (kind != PathKind::kMissing && !overwrite) return AlreadyExists(path);
  // A user's output replaces only what ember made; one that was missing
  // here is never replaced at Commit (a file appearing meanwhile is kept).
  bool replace = overwrite;
  if (output_kind == OutputKind::kUserOutput) {
    if (kind != PathKind::kMissing) RETURN_IF_ERROR(CheckMadeByEmber(path));
    replace = kind != PathKind::kMissing;
  }
  std::string temp = absl::StrCat(path, internal::kAtomicWriteTempInfix, ::getpid(), "-",
                                  temp_counter.fetch_add(1));
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                   fs->OpenForWrite(temp, WriteMode::kCreateNew));
  return std::unique_ptr<AtomicOutputFile>(
      new AtomicOutputFile(fs, path, std::move(temp), std::move(file), replace, output_kind));
}

AtomicOutputFile::AtomicOutputFile(FileSystem* fs, std::string path, std::string temp,
                                   std::unique_ptr<WritableFile> file, bool replace,
                                   OutputKind kind)
    : fs_(fs),
      path_(std::move(path)),
      temp_(std::move(temp)),
      file_(std::move(file)),
      overwrite_(replace),
      kind_(kind) {
  if (kind_ == OutputKind::kUserOutput) hasher_ = std::make_unique<OutputHasher>();
}

AtomicOutputFile::~AtomicOutputFile() {
  file_.reset();
  if (!committed_) fs_->Remove(temp_).IgnoreError();
}

absl::Status AtomicOutputFile::Flush() {
  RETURN_IF_ERROR(WriteAll(buffer_));
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status AtomicOutputFile::WriteAll(std::string_view data) {
  if (data.empty()) return absl::OkStatus();
  if (hasher_ != nullptr) hasher_->Update(data);
  return file_->Append(data);
}

absl::Status AtomicOutputFile::Append(std::string_view data) {
  if (file_ == nullptr) {
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
  if (file_ == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(Flush());
  RETURN_IF_ERROR(file_->Sync());
  const std::unique_ptr<WritableFile> file = std::move(file_);
  RETURN_IF_ERROR(file->Close());
  std::string().swap(buffer_);
  return absl::OkStatus();
}

absl::Status AtomicOutputFile::MoveIntoPlace() {
  if (overwrite_) return fs_->Rename(temp_, path_);
  // link() fails with EEXIST instead of replacing, so a file that appeared
  // at path_ meanwhile is never clobbered.
  const absl::Status linked = fs_->Link(temp_, path_);
  if (linked.ok()) {
    fs_->Remove(temp_).IgnoreError();
    return absl::OkStatus();
  }
  if (absl::IsAlreadyExists(linked)) return AlreadyExists(path_);
  // Other failures (EIO, ENOSPC) are the disk's: report them.
  if (!absl::IsPermissionDenied(linked) && !absl::IsUnimplemented(linked)) return linked;
  // File systems without hard links (EPERM, EOPNOTSUPP): check, then rename.
  if (fs_->Stat(path_).value_or(PathKind::kMissing) != PathKind::kMissing) {
    return AlreadyExists(path_);
  }
  return fs_->Rename(temp_, path_);
}

absl::Status AtomicOutputFile::Commit() {
  if (committed_) {
    return absl::FailedPreconditionError(absl::StrCat(path_, " is already committed"));
  }
  RETURN_IF_ERROR(Close());
  if (kind_ == OutputKind::kUserOutput) {
    // The record first: a failure here leaves path_ as it was.
    ASSIGN_OR_RETURN(std::unique_ptr<AtomicOutputFile> record,
                     Create(OutputRecordPath(path_), /*overwrite=*/true, OutputKind::kInternal));
    RETURN_IF_ERROR(record->Append(OutputRecordText(hasher_->Finish())));
    RETURN_IF_ERROR(record->Commit());
  }
  // Whether the move replaces a file (only with overwrite_).
  const bool replaces =
      overwrite_ && fs_->Stat(path_).value_or(PathKind::kMissing) != PathKind::kMissing;
  // A record written for a file that does not take path_'s place (or is
  // taken back) goes again; one that replaced an older record describes
  // the new file whether or not it lands, which only makes a later
  // --overwrite refuse.
  const auto drop_new_record = [&] {
    if (kind_ == OutputKind::kUserOutput && !overwrite_) {
      fs_->Remove(OutputRecordPath(path_)).IgnoreError();
    }
  };
  if (const absl::Status moved = MoveIntoPlace(); !moved.ok()) {
    drop_new_record();
    return moved;
  }
  committed_ = true;
  const absl::Status synced = fs_->SyncPath(internal::ParentDir(path_));
  // The move may not survive a crash: a new file is taken back, so that a
  // failed Commit leaves path() as it was. A replaced file is gone already.
  if (!synced.ok() && !replaces) {
    fs_->Remove(path_).IgnoreError();
    drop_new_record();
  }
  return synced;
}

}  // namespace ember
