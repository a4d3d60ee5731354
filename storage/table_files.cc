#include "storage/table_files.h"

#include <memory>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "rocksdb/sst_file_writer.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"
#include "storage/base/status_macros.h"
#include "storage/internal/rocks_fs.h"
#include "storage/internal/rocks_util.h"
#include "storage/internal/table_records.h"

namespace ember {
namespace {

// Creates `dir` and its missing parents up to an existing one, syncing the
// parent of each directory created, so that the new entries are durable.
absl::Status CreateDurableDirs(const std::string& dir) {
  FileSystem* fs = CurrentFileSystem();
  ASSIGN_OR_RETURN(const PathKind kind, fs->Stat(dir));
  if (kind == PathKind::kDirectory) return absl::OkStatus();
  if (kind != PathKind::kMissing) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  RETURN_IF_ERROR(CreateDurableDirs(internal::ParentDir(dir)));
  const absl::Status made = fs->CreateDir(dir);
  if (!made.ok() && !absl::IsAlreadyExists(made)) return made;
  return fs->SyncPath(internal::ParentDir(dir));
}

}  // namespace

std::string IncomingDir(const std::string& graph_dir) {
  return absl::StrCat(graph_dir, "/incoming");
}

std::string IncomingTableFile(const std::string& graph_dir, uint64_t version, Table table,
                              uint32_t p) {
  return absl::StrCat(IncomingDir(graph_dir), "/", version, "/", internal::TableCfName(table), "-",
                      p, ".sst");
}

absl::Status WriteTableFile(const std::string& path, Table table, uint64_t version,
                            const float* rows, uint64_t num_rows, uint32_t width) {
  if (width == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": width must be positive"));
  }
  RETURN_IF_ERROR(CreateDurableDirs(internal::ParentDir(path)));
  std::shared_ptr<rocksdb::Env> env = internal::RocksEnvForCurrentFileSystem();
  rocksdb::Options options(rocksdb::DBOptions(),
                           internal::ColumnFamilyOptionsFor(internal::TableCfName(table), nullptr));
  options.env = env.get();
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options);
  RETURN_IF_ERROR(
      internal::FromRocks(writer.Open(path), absl::StrCat("cannot create table file ", path)));
  RETURN_IF_ERROR(internal::ForEachTableRecord(
      version, rows, num_rows, width, path, [&](const std::string& key, std::string_view value) {
        return internal::FromRocks(writer.Put(key, rocksdb::Slice(value.data(), value.size())),
                                   absl::StrCat("cannot write table file ", path));
      }));
  // Finish syncs the file before closing it.
  RETURN_IF_ERROR(
      internal::FromRocks(writer.Finish(), absl::StrCat("cannot finish table file ", path)));
  return CurrentFileSystem()->SyncPath(internal::ParentDir(path));
}

absl::Status WriteIncomingMarker(const std::string& graph_dir, const std::string& name) {
  const std::string dir = IncomingDir(graph_dir);
  RETURN_IF_ERROR(CreateDirs(dir));
  ASSIGN_OR_RETURN(
      std::unique_ptr<WritableFile> file,
      CurrentFileSystem()->OpenForWrite(absl::StrCat(dir, "/", name), WriteMode::kTruncate));
  return file->Close();
}

absl::StatusOr<bool> SeesIncomingMarker(const std::string& graph_dir, const std::string& name) {
  ASSIGN_OR_RETURN(const PathKind kind,
                   CurrentFileSystem()->Stat(absl::StrCat(IncomingDir(graph_dir), "/", name)));
  return kind == PathKind::kFile;
}

}  // namespace ember
