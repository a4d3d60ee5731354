#include "storage/internal/append_undo.h"

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"
#include "storage/base/status_macros.h"
#include "storage/internal/rocks_util.h"

namespace ember::internal {
namespace {

constexpr char kGenerationFile[] = "GENERATION";
// Where a live DB waits, inside the undo directory, while its copy takes
// its place; removed with the directory.
constexpr char kAsideSuffix[] = ".replaced";

// The sealed copy's generation; nullopt when unsealed (GENERATION is
// written atomically: it is there whole or not at all).
absl::StatusOr<std::optional<uint32_t>> SealedGeneration(const std::string& undo) {
  const std::string path = absl::StrCat(undo, "/", kGenerationFile);
  const absl::StatusOr<std::string> text = ReadFile(path);
  if (absl::IsNotFound(text.status())) return std::nullopt;
  if (!text.ok()) return text.status();
  uint32_t generation = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, generation);
  if (ec != std::errc() || ptr != end) {
    return absl::DataLossError(absl::StrCat(path, ": not an edge generation"));
  }
  return generation;
}

// "dict" or "shard-<p>": a copy to put back (not GENERATION, a live DB
// set aside, nor a checkpoint's "<name>.tmp").
bool IsDbName(std::string_view name) {
  if (name == DictDirName()) return true;
  constexpr std::string_view kShard = "shard-";
  if (name.substr(0, kShard.size()) != kShard || name.size() == kShard.size()) return false;
  return name.find_first_not_of("0123456789", kShard.size()) == std::string_view::npos;
}

}  // namespace

std::string AppendUndoDir(const std::string& graph_dir) {
  return absl::StrCat(graph_dir, "/undo-append");
}

absl::Status CopyDbForUndo(rocksdb::DB* db, const std::string& graph_dir,
                           const std::string& name) {
  const std::string context = absl::StrCat("cannot copy ", graph_dir, "/", name,
                                           " before an append (to undo it if it fails)");
  // CreateCheckpoint flushes memtables first, so the copy's state is in
  // table files and a short WAL.
  return CheckpointDb(db, absl::StrCat(AppendUndoDir(graph_dir), "/", name), context);
}

absl::Status SealAppendUndo(const std::string& graph_dir, uint32_t generation) {
  const std::string undo = AppendUndoDir(graph_dir);
  RETURN_IF_ERROR(FsyncPath(undo));
  return WriteFileAtomic(absl::StrCat(undo, "/", kGenerationFile), absl::StrCat(generation));
}

absl::StatusOr<bool> AppendUndoPending(const std::string& graph_dir,
                                       uint32_t committed_generation) {
  ASSIGN_OR_RETURN(const std::optional<uint32_t> sealed,
                   SealedGeneration(AppendUndoDir(graph_dir)));
  return sealed == committed_generation;
}

absl::Status PutBackAppendUndo(const std::string& graph_dir) {
  FileSystem* file_system = CurrentFileSystem();
  const std::string undo = AppendUndoDir(graph_dir);
  ASSIGN_OR_RETURN(std::vector<std::string> names, file_system->ListDir(undo));
  for (const std::string& name : names) {
    const std::string copy = absl::StrCat(undo, "/", name);
    if (!IsDbName(name) ||
        file_system->Stat(copy).value_or(PathKind::kMissing) != PathKind::kDirectory) {
      continue;  // not a copy, or already put back
    }
    // The live DB goes aside first, so that a failed rename (a full disk)
    // leaves a DB in place: the live one or the copy.
    const std::string live = absl::StrCat(graph_dir, "/", name);
    const std::string aside = absl::StrCat(copy, kAsideSuffix);
    if (file_system->Stat(live).value_or(PathKind::kMissing) != PathKind::kMissing) {
      RETURN_IF_ERROR(file_system->RemoveAll(aside));
      RETURN_IF_ERROR(file_system->Rename(live, aside));
    }
    const absl::Status moved = file_system->Rename(copy, live);
    if (!moved.ok()) {
      file_system->Rename(aside, live).IgnoreError();
      return moved;
    }
  }
  RETURN_IF_ERROR(FsyncPath(graph_dir));
  // Every copy is back: unseal before removing, so that a crash from here
  // on leaves nothing that could be put back a second time.
  RETURN_IF_ERROR(file_system->Remove(absl::StrCat(undo, "/", kGenerationFile)));
  RETURN_IF_ERROR(FsyncPath(undo));
  return DropAppendUndo(graph_dir);
}

absl::Status DropAppendUndo(const std::string& graph_dir) {
  RETURN_IF_ERROR(CurrentFileSystem()->RemoveAll(AppendUndoDir(graph_dir)));
  return FsyncPath(graph_dir);
}

}  // namespace ember::internal
