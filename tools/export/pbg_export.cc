#include "tools/export/pbg_export.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "storage/base/atomic_file.h"
#include "storage/base/file_system.h"
#include "storage/base/status_macros.h"

#ifdef EMBER_HAVE_HDF5
#include <hdf5.h>
#endif

namespace ember::tools {

bool PbgExportBuilt() {
#ifdef EMBER_HAVE_HDF5
  return true;
#else
  return false;
#endif
}

absl::Status PbgExportAvailable() {
  if (PbgExportBuilt()) return absl::OkStatus();
  return absl::UnimplementedError(
      "--format h5 is not built into this ember: it needs HDF5's C library at build time "
      "(libhdf5-dev; tools/install-deps.sh installs it)");
}

std::string PbgEntityName(const Manifest& manifest, uint32_t type) {
  return manifest.typed() ? manifest.node_types[type].name : std::string(kPbgUntypedEntity);
}

std::string PbgEmbeddingsFile(const std::string& entity, uint32_t part, uint64_t version) {
  return absl::StrCat("embeddings_", entity, "_", part, ".v", version, ".h5");
}
std::string PbgNamesFile(const std::string& entity, uint32_t part) {
  return absl::StrCat("entity_names_", entity, "_", part, ".json");
}
std::string PbgCountFile(const std::string& entity, uint32_t part) {
  return absl::StrCat("entity_count_", entity, "_", part, ".txt");
}

#ifdef EMBER_HAVE_HDF5
namespace {

constexpr char kMetaFile[] = "meta.json";
constexpr char kVersionFile[] = "checkpoint_version.txt";
constexpr char kRefusal[] =
    "; --format h5 writes a new or empty directory, and --overwrite replaces only an h5 "
    "export that ember made: remove it yourself or choose another path";

// Whether `name` is a file an h5 export holds.
bool IsExportFile(std::string_view name) {
  return name == kMetaFile || name == kVersionFile ||
         (name.starts_with("embeddings_") && name.ends_with(".h5")) ||
         (name.starts_with("entity_names_") && name.ends_with(".json")) ||
         (name.starts_with("entity_count_") && name.ends_with(".txt"));
}

std::string ParentOf(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}
std::string BaseOf(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// What stands at the output path.
enum class Target { kNew, kEmptyDir, kOldExport };

// "a, b, c and 4 more" of the sorted `names`.
std::string Listed(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  const size_t shown = std::min<size_t>(names.size(), 3);
  std::string out;
  for (size_t i = 0; i < shown; ++i) absl::StrAppend(&out, i ? ", " : "", names[i]);
  if (names.size() > shown) absl::StrAppend(&out, " and ", names.size() - shown, " more");
  return out;
}

absl::StatusOr<Target> CheckTarget(const std::string& out, bool overwrite) {
  FileSystem* fs = CurrentFileSystem();
  ASSIGN_OR_RETURN(const PathKind kind, fs->Stat(out));
  switch (kind) {
    case PathKind::kMissing:
      return Target::kNew;
    case PathKind::kFile:
    case PathKind::kOther:
      return absl::FailedPreconditionError(absl::StrCat(out, " is a file", kRefusal));
    case PathKind::kDirectory:
      break;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(out));
  if (names.empty()) return Target::kEmptyDir;
  if (!overwrite) {
    return absl::AlreadyExistsError(
        absl::StrCat(out, " exists and is not empty (it holds ", Listed(names),
                     "); pass --overwrite to replace an h5 export ember made"));
  }
  std::vector<std::string> foreign;
  for (const std::string& name : names) {
    if (!IsExportFile(name)) foreign.push_back(name);
  }
  if (!foreign.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        out, " is not an h5 export of ember's (it holds ", Listed(foreign), ")", kRefusal));
  }
  const std::string meta_path = absl::StrCat(out, "/", kMetaFile);
  std::string text;
  if (absl::StatusOr<std::unique_ptr<ReadableFile>> meta_file = fs->OpenForRead(meta_path);
      meta_file.ok()) {
    const uint64_t size = (*meta_file)->Size().value_or(0);
    text.resize(std::min<uint64_t>(size, uint64_t{64} << 20));
    const absl::StatusOr<size_t> read = (*meta_file)->ReadAt(0, std::span<char>(text));
    text.resize(read.ok() ? *read : 0);
  }
  const nlohmann::json meta = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object() || meta.value("format", "") != "h5" || meta.value("layout", "") != "pbg") {
    return absl::FailedPreconditionError(absl::StrCat(out, " is not an h5 export of ember's (no ",
                                                      kMetaFile, " of ember's h5 export in it)",
                                                      kRefusal));
  }
  return Target::kOldExport;
}

bool ProcessAlive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// Removes "<base>.staging-<pid>" and "<base>.old-<pid>" entries of `parent`
// that a killed export left (their pid is dead). Best effort.
void RemoveStale(const std::string& parent, const std::string& base) {
  FileSystem* fs = CurrentFileSystem();
  absl::StatusOr<std::vector<std::string>> names = fs->ListDir(parent);
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    for (const char* kind : {".staging-", ".old-"}) {
      const std::string prefix = absl::StrCat(base, kind);
      if (!absl::StartsWith(name, prefix)) continue;
      int pid = 0;
      if (!absl::SimpleAtoi(absl::string_view(name).substr(prefix.size()), &pid) ||
          ProcessAlive(pid)) {
        continue;
      }
      fs->RemoveAll(absl::StrCat(parent, "/", name)).IgnoreError();
    }
  }
}

// Removes the staging directory unless released.
class StagingDir {
 public:
  explicit StagingDir(std::string path) : path_(std::move(path)) {}
  ~StagingDir() {
    if (!path_.empty()) CurrentFileSystem()->RemoveAll(path_).IgnoreError();
  }
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

// A file name may not hold these; PBG puts the type name in file names.
absl::Status CheckEntityName(const std::string& entity) {
  if (entity.empty() || entity.find('/') != std::string::npos ||
      entity.find('\0') != std::string::npos || entity == "." || entity == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("type '", entity,
                     "' cannot be part of a file name (PBG's layout puts it in "
                     "embeddings_<type>_<part>.v<N>.h5)"));
  }
  return absl::OkStatus();
}

// HDF5's most specific message for the error just raised; clears the stack.
std::string Hdf5Error() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        auto* out = static_cast<std::string*>(data);
        if (out->empty()) {
          *out = absl::StrCat(e->func_name != nullptr ? e->func_name : "?", ": ",
                              e->desc != nullptr ? e->desc : "");
        }
        return 0;
      },
      &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "unknown HDF5 error" : message;
}

// An HDF5 identifier, closed when destroyed.
class Hdf5Id {
 public:
  Hdf5Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Hdf5Id() {
    if (id_ >= 0) close_(id_);
  }
  Hdf5Id(const Hdf5Id&) = delete;
  Hdf5Id& operator=(const Hdf5Id&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  // Closes now; false when HDF5 reports an error (for a file: its data
  // could not be written).
  bool Close() {
    const hid_t id = id_;
    id_ = -1;
    return close_(id) >= 0;
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// Writes `path` (new): attribute format_version = 1 (int64, as h5py writes
// PBG's Python int) and dataset "embeddings" of `rows` x `dim` float32 from
// `data`, C order; then fsyncs it.
absl::Status WriteEmbeddingsFile(const std::string& path, const float* data, uint64_t rows,
                                 int dim) {
  auto failed = [&](const char* what) {
    return absl::InternalError(absl::StrCat("HDF5 cannot ", what, " ", path, ": ", Hdf5Error()));
  };
  Hdf5Id file(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) return failed("create");
  {
    Hdf5Id scalar(H5Screate(H5S_SCALAR), H5Sclose);
    if (!scalar.ok()) return failed("describe the format_version of");
    Hdf5Id attr(H5Acreate2(file.get(), "format_version", H5T_STD_I64LE, scalar.get(), H5P_DEFAULT,
                           H5P_DEFAULT),
                H5Aclose);
    const int64_t version = 1;
    if (!attr.ok() || H5Awrite(attr.get(), H5T_NATIVE_INT64, &version) < 0) {
      return failed("write the format_version of");
    }
  }
  {
    const hsize_t dims[2] = {rows, static_cast<hsize_t>(dim)};
    Hdf5Id space(H5Screate_simple(2, dims, nullptr), H5Sclose);
    if (!space.ok()) return failed("describe the embeddings of");
    Hdf5Id dataset(H5Dcreate2(file.get(), "embeddings", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                              H5P_DEFAULT, H5P_DEFAULT),
                   H5Dclose);
    if (!dataset.ok()) return failed("create the embeddings of");
    if (rows > 0 &&
        H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
      return failed("write the embeddings of");
    }
    if (!dataset.Close()) return failed("close the embeddings of");
  }
  if (!file.Close()) return failed("write");
  return CurrentFileSystem()->SyncPath(path);
}

// One JSON string as Python's json.dump writes it (ensure_ascii).
absl::StatusOr<std::string> JsonString(std::string_view name, uint64_t global_id) {
  try {
    return nlohmann::json(std::string(name)).dump(-1, ' ', /*ensure_ascii=*/true);
  } catch (const nlohmann::json::exception&) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "node %d has a name that is not UTF-8, which PBG's entity_names_*.json (JSON) cannot "
        "hold",
        global_id));
  }
}

uint64_t FileBytes(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

class PbgExporter {
 public:
  PbgExporter(const Graph& graph, const StoredModel& model, const ExportOptions& options,
              std::string out)
      : graph_(graph), model_(model), options_(options), out_(std::move(out)) {}

  absl::StatusOr<ExportStats> Run() {
    const auto start = std::chrono::steady_clock::now();
    const Manifest& m = graph_.manifest();
    std::vector<uint32_t> types;
    if (!options_.type.empty()) {
      ASSIGN_OR_RETURN(const uint32_t t, m.FindType(options_.type));
      types.push_back(t);
    } else {
      for (uint32_t t = 0; t < std::max<size_t>(1, m.node_types.size()); ++t) types.push_back(t);
    }
    for (uint32_t t : types) {
      RETURN_IF_ERROR(CheckEntityName(PbgEntityName(m, t)));
      rows_total_ += m.NodesOf(t);
      partitions_total_ += m.PartitionsOf(t);
    }
    ASSIGN_OR_RETURN(const Target target, CheckTarget(out_, options_.overwrite));

    FileSystem* fs = CurrentFileSystem();
    const std::string parent = ParentOf(out_);
    RemoveStale(parent, BaseOf(out_));
    staging_ = absl::StrCat(out_, ".staging-", ::getpid());
    fs->RemoveAll(staging_).IgnoreError();
    if (const absl::Status made = fs->CreateDir(staging_); !made.ok()) {
      return absl::Status(made.code(), absl::StrCat("cannot create the staging directory ",
                                                    staging_, ": ", made.message()));
    }
    StagingDir cleanup(staging_);
    // Errors are reported through statuses (Hdf5Error), not printed.
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);

    stats_.dim = model_.model.dim;
    stats_.partitions = partitions_total_;
    stats_.checkpoint_version = model_.version;
    nlohmann::json entities = nlohmann::json::array();
    for (uint32_t t : types) {
      ASSIGN_OR_RETURN(nlohmann::json entity, ExportType(t));
      entities.push_back(std::move(entity));
    }
    if (rows_done_ != rows_total_) {
      return absl::DataLossError(
          absl::StrFormat("graph %s: exported %d rows but the manifest counts %d nodes",
                          graph_.dir(), rows_done_, rows_total_));
    }
    RETURN_IF_ERROR(WriteSmallFile(kVersionFile, absl::StrCat(model_.version, "\n")));
    nlohmann::json meta =
        nlohmann::json::parse(MetaJson(graph_, model_, "h5", BaseOf(out_), "", options_.type));
    meta["layout"] = "pbg";
    meta["version_file"] = kVersionFile;
    meta["entities"] = std::move(entities);
    RETURN_IF_ERROR(WriteSmallFile(kMetaFile, meta.dump(2) + "\n"));
    RETURN_IF_ERROR(fs->SyncPath(staging_));

    RETURN_IF_ERROR(MoveIntoPlace(target, parent));
    cleanup.Release();
    stats_.files.insert(stats_.files.begin(), out_);
    for (size_t i = 1; i < stats_.files.size(); ++i) {
      stats_.files[i] = absl::StrCat(out_, "/", stats_.files[i]);
    }
    stats_.rows = rows_done_;
    stats_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return stats_;
  }

 private:
  std::string Staged(const std::string& name) const { return absl::StrCat(staging_, "/", name); }

  absl::Status WriteSmallFile(const std::string& name, std::string_view text) {
    ASSIGN_OR_RETURN(auto file,
                     AtomicOutputFile::Create(Staged(name), false, OutputKind::kInternal));
    RETURN_IF_ERROR(file->Append(text));
    RETURN_IF_ERROR(file->Commit());
    stats_.total_bytes += text.size();
    stats_.files.push_back(name);
    return absl::OkStatus();
  }

  // The files of type t, one partition at a time; its entry of meta.json.
  absl::StatusOr<nlohmann::json> ExportType(uint32_t t) {
    const Manifest& m = graph_.manifest();
    const std::string entity = PbgEntityName(m, t);
    const uint32_t first = m.FirstPartitionOf(t);
    nlohmann::json parts = nlohmann::json::array();
    for (uint32_t j = 0; j < m.PartitionsOf(t); ++j) {
      const uint32_t p = first + j;
      const uint64_t size = m.partition_sizes[p];
      const uint64_t base = m.PartitionBase(p);
      const int dim = model_.model.dim;
      ASSIGN_OR_RETURN(std::vector<float> rows, LoadPartitionEmbeddings(graph_, model_, p));
      if (rows.size() != size * dim) {
        return absl::DataLossError(
            absl::StrFormat("graph %s: partition %d has %d embedding floats, expected %d x %d",
                            graph_.dir(), p, rows.size(), size, dim));
      }
      stats_.peak_rows_held = std::max(stats_.peak_rows_held, size);
      const std::string embeddings = PbgEmbeddingsFile(entity, j, model_.version);
      RETURN_IF_ERROR(WriteEmbeddingsFile(Staged(embeddings), rows.data(), size, dim));
      std::vector<float>().swap(rows);
      const uint64_t bytes = FileBytes(Staged(embeddings));
      stats_.bytes += bytes;
      stats_.total_bytes += bytes;
      stats_.files.push_back(embeddings);
      const std::string names = PbgNamesFile(entity, j);
      RETURN_IF_ERROR(WriteNames(p, names));
      const std::string count = PbgCountFile(entity, j);
      RETURN_IF_ERROR(WriteSmallFile(count, absl::StrCat(size, "\n")));
      parts.push_back({{"partition", j},
                       {"count", size},
                       {"first_global_id", base},
                       {"embeddings", embeddings},
                       {"names", names},
                       {"count_file", count}});
      rows_done_ += size;
      ++partitions_done_;
      if (options_.progress) {
        options_.progress(
            {partitions_done_ - 1, partitions_total_, rows_done_, rows_total_, stats_.bytes});
      }
      if (options_.fail_after_rows > 0 && rows_done_ >= options_.fail_after_rows) {
        return absl::AbortedError(
            absl::StrFormat("export stopped after %d rows (testing hook)", rows_done_));
      }
    }
    nlohmann::json entry = {{"entity", entity},
                            {"count", m.NodesOf(t)},
                            {"first_global_id", m.PartitionBase(first)},
                            {"partitions", std::move(parts)}};
    entry["type"] = m.typed() ? nlohmann::json(entity) : nlohmann::json(nullptr);
    return entry;
  }

  // entity_names_*.json of partition p, streamed: "[\n    \"a\",\n    \"b\"\n]"
  // as json.dump(names, f, indent=4) writes it ("[]" when empty).
  absl::Status WriteNames(uint32_t p, const std::string& name) {
    const uint64_t size = graph_.manifest().partition_sizes[p];
    const uint64_t base = graph_.manifest().PartitionBase(p);
    ASSIGN_OR_RETURN(auto file,
                     AtomicOutputFile::Create(Staged(name), false, OutputKind::kInternal));
    std::string text = "[";
    uint64_t next = 0;
    RETURN_IF_ERROR(graph_.ForEachNodeName(p, [&](uint32_t offset, std::string_view node) {
      if (offset != next || offset >= size) {
        return absl::DataLossError(absl::StrFormat(
            "graph %s: partition %d names out of order at offset %d (expected %d of %d)",
            graph_.dir(), p, offset, next, size));
      }
      ASSIGN_OR_RETURN(const std::string quoted, JsonString(node, base + offset));
      absl::StrAppend(&text, next == 0 ? "\n    " : ",\n    ", quoted);
      ++next;
      if (text.size() >= (1 << 20)) {
        RETURN_IF_ERROR(file->Append(text));
        text.clear();
      }
      return absl::OkStatus();
    }));
    if (next != size) {
      return absl::DataLossError(absl::StrFormat(
          "graph %s: partition %d lists %d node names, expected %d", graph_.dir(), p, next, size));
    }
    text.append(next == 0 ? "]" : "\n]");
    RETURN_IF_ERROR(file->Append(text));
    RETURN_IF_ERROR(file->Commit());
    stats_.total_bytes += file->bytes();
    stats_.files.push_back(name);
    return absl::OkStatus();
  }

  // The rename is the commit point: out is the old export (or nothing) or
  // the new one, never a mix.
  absl::Status MoveIntoPlace(Target target, const std::string& parent) {
    FileSystem* fs = CurrentFileSystem();
    if (target == Target::kOldExport) {
      // Again at the commit point: out may have changed since the start.
      ASSIGN_OR_RETURN(target, CheckTarget(out_, options_.overwrite));
    }
    switch (target) {
      case Target::kNew:
        // Never replaces what appeared since the start.
        RETURN_IF_ERROR(fs->RenameNoReplace(staging_, out_));
        break;
      case Target::kEmptyDir:
        // rename(2) replaces an empty directory, and fails on one that is
        // not empty any more.
        RETURN_IF_ERROR(fs->Rename(staging_, out_));
        break;
      case Target::kOldExport: {
        const std::string old = absl::StrCat(out_, ".old-", ::getpid());
        fs->RemoveAll(old).IgnoreError();
        if (const absl::Status aside = fs->Rename(out_, old); !aside.ok()) {
          return absl::Status(aside.code(), absl::StrCat("cannot move the old export aside to ",
                                                         old, ": ", aside.message()));
        }
        if (const absl::Status moved = fs->Rename(staging_, out_); !moved.ok()) {
          fs->Rename(old, out_).IgnoreError();  // the old export back
          return moved;
        }
        if (const absl::Status synced = fs->SyncPath(parent); !synced.ok()) {
          // The renames may not survive a crash: the old export back.
          fs->Rename(out_, staging_).IgnoreError();
          fs->Rename(old, out_).IgnoreError();
          return synced;
        }
        const absl::Status removed = fs->RemoveAll(old);
        if (!removed.ok()) {
          return absl::Status(removed.code(), absl::StrCat("exported to ", out_,
                                                           " but cannot remove the old "
                                                           "export ",
                                                           old, ": ", removed.message()));
        }
        return absl::OkStatus();
      }
    }
    if (const absl::Status synced = fs->SyncPath(parent); !synced.ok()) {
      fs->Rename(out_, staging_).IgnoreError();  // removed with the staging directory
      return synced;
    }
    return absl::OkStatus();
  }

  const Graph& graph_;
  const StoredModel& model_;
  const ExportOptions& options_;
  const std::string out_;
  std::string staging_;
  uint64_t rows_total_ = 0, rows_done_ = 0;
  uint32_t partitions_total_ = 0, partitions_done_ = 0;
  ExportStats stats_;
};

}  // namespace
#endif  // EMBER_HAVE_HDF5

absl::StatusOr<ExportStats> ExportPbgCheckpoint(const Graph& graph, const StoredModel& model,
                                                const ExportOptions& options) {
#ifdef EMBER_HAVE_HDF5
  std::string out = options.out;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  PbgExporter exporter(graph, model, options, std::move(out));
  return exporter.Run();
#else
  (void)graph;
  (void)model;
  (void)options;
  return PbgExportAvailable();
#endif
}

}  // namespace ember::tools
