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
#include <tuple>
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
constexpr char kConfigFile[] = "config.json";
constexpr char kRelCountFile[] = "dynamic_rel_count.txt";
constexpr char kRelNamesFile[] = "dynamic_rel_names.json";
constexpr char kRefusal[] =
    "; --format h5 writes a new or empty directory, and --overwrite replaces only an h5 "
    "export that ember made: remove it yourself or choose another path";

// Whether `name` is a file an h5 export holds.
bool IsExportFile(std::string_view name) {
  return name == kMetaFile || name == kVersionFile || name == kConfigFile ||
         name == kRelCountFile || name == kRelNamesFile ||
         (name.starts_with("model.v") && name.ends_with(".h5")) ||
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

// The file-level attribute format_version = 1 (int64, as h5py writes
// PBG's Python int); PBG's loaders refuse a file without it.
bool WriteFormatVersion(hid_t file) {
  Hdf5Id scalar(H5Screate(H5S_SCALAR), H5Sclose);
  if (!scalar.ok()) return false;
  Hdf5Id attr(
      H5Acreate2(file, "format_version", H5T_STD_I64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose);
  const int64_t version = 1;
  return attr.ok() && H5Awrite(attr.get(), H5T_NATIVE_INT64, &version) >= 0;
}

// A float32 dataset `name` (a path below `loc`; with `lcpl` its missing
// groups are created) of shape `dims` from `data`, C order; with a
// non-empty `state_dict_key`, that string attribute (as h5py writes a
// Python str: variable-length UTF-8).
bool WriteFloatDataset(hid_t loc, const std::string& name, std::span<const hsize_t> dims,
                       const float* data, hid_t lcpl = H5P_DEFAULT,
                       const std::string& state_dict_key = "") {
  Hdf5Id space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  if (!space.ok()) return false;
  Hdf5Id dataset(
      H5Dcreate2(loc, name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (!dataset.ok()) return false;
  hsize_t count = 1;
  for (hsize_t d : dims) count *= d;
  if (count > 0 &&
      H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    return false;
  }
  if (!state_dict_key.empty()) {
    Hdf5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!type.ok() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0) {
      return false;
    }
    Hdf5Id scalar(H5Screate(H5S_SCALAR), H5Sclose);
    Hdf5Id attr(H5Acreate2(dataset.get(), "state_dict_key", type.get(), scalar.get(), H5P_DEFAULT,
                           H5P_DEFAULT),
                H5Aclose);
    const char* text = state_dict_key.c_str();
    if (!scalar.ok() || !attr.ok() || H5Awrite(attr.get(), type.get(), &text) < 0) return false;
  }
  return dataset.Close();
}

// Writes `path` (new): format_version and the dataset "embeddings" of
// `rows` x `dim` float32 from `data`, C order; then fsyncs it.
absl::Status WriteEmbeddingsFile(const std::string& path, const float* data, uint64_t rows,
                                 int dim) {
  auto failed = [&](const char* what) {
    return absl::InternalError(absl::StrCat("HDF5 cannot ", what, " ", path, ": ", Hdf5Error()));
  };
  Hdf5Id file(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) return failed("create");
  if (!WriteFormatVersion(file.get())) return failed("write the format_version of");
  const hsize_t dims[2] = {rows, static_cast<hsize_t>(dim)};
  if (!WriteFloatDataset(file.get(), "embeddings", dims, data)) {
    return failed("write the embeddings of");
  }
  if (!file.Close()) return failed("write");
  return CurrentFileSystem()->SyncPath(path);
}

// One relation-operator parameter of PBG's model file: its public name
// (the dataset below "model/"), private name (the state_dict_key) and value.
struct PbgParam {
  std::string public_name;
  std::string private_name;
  std::vector<hsize_t> dims;
  std::vector<float> values;
};

// Writes PBG's model.v<N>.h5 at `path` (new), as its
// FileCheckpointStorage.save_model does: format_version, and a group
// "model" (links in creation order, h5py's track_order) holding `params`;
// no optimizer state (optional to PBG's loader). Then fsyncs it.
absl::Status WriteModelFile(const std::string& path, const std::vector<PbgParam>& params) {
  auto failed = [&](const std::string& what) {
    return absl::InternalError(absl::StrCat("HDF5 cannot ", what, " ", path, ": ", Hdf5Error()));
  };
  Hdf5Id file(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) return failed("create");
  if (!WriteFormatVersion(file.get())) return failed("write the format_version of");
  Hdf5Id gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  if (!gcpl.ok() ||
      H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0) {
    return failed("describe the model group of");
  }
  Hdf5Id group(H5Gcreate2(file.get(), "model", H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose);
  if (!group.ok()) return failed("create the model group of");
  Hdf5Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!lcpl.ok() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0) {
    return failed("describe the parameters of");
  }
  for (const PbgParam& p : params) {
    if (!WriteFloatDataset(group.get(), p.public_name, p.dims, p.values.data(), lcpl.get(),
                           p.private_name)) {
      return failed(absl::StrCat("write model/", p.public_name, " of"));
    }
  }
  if (!group.Close()) return failed("close the model group of");
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

// The parameters of one operator on `side` ("lhs" or "rhs") of PBG's
// config relation `idx`, as PBG's checkpoint manager names them
// (relations/<idx>/operator/<side>/<param>, private
// <side>_operators.<idx>.<param>): from `rows` vectors of
// RelationParamSize(op, dim) floats in `w`, one per relation type of a
// dynamic model (PBG's dynamic operators hold a row per relation type) or
// the one of a plain relation.
void AddOperatorParams(Operator op, int dim, bool dynamic, uint32_t idx, const std::string& side,
                       uint32_t rows, const std::vector<float>& w, std::vector<PbgParam>* out) {
  // (name, first float of the part, floats of the part) within one vector.
  std::vector<std::tuple<std::string, int, int>> parts;
  switch (op) {
    case Operator::kNone:
      return;
    case Operator::kTranslation:
      parts = {{dynamic ? "translations" : "translation", 0, dim}};
      break;
    case Operator::kDiagonal:
      parts = {{dynamic ? "diagonals" : "diagonal", 0, dim}};
      break;
    case Operator::kComplexDiagonal:
      parts = {{"real", 0, dim / 2}, {"imag", dim / 2, dim / 2}};
      break;
  }
  for (const auto& [name, first, count] : parts) {
    PbgParam p;
    p.public_name = absl::StrCat("relations/", idx, "/operator/", side, "/", name);
    p.private_name = absl::StrCat(side, "_operators.", idx, ".", name);
    p.dims = dynamic ? std::vector<hsize_t>{rows, static_cast<hsize_t>(count)}
                     : std::vector<hsize_t>{static_cast<hsize_t>(count)};
    for (uint32_t r = 0; r < rows; ++r) {
      const float* v = w.data() + size_t{r} * dim + first;
      p.values.insert(p.values.end(), v, v + count);
    }
    out->push_back(std::move(p));
  }
}

// ember's relations as PBG's model: which mode, and the parameters.
struct PbgModel {
  // PBG's dynamic_relations: one config relation for every relation type
  // (possible when they all join the same two types; always untyped).
  bool dynamic = false;
  // Whether the rhs operators are written: PBG scores c(lhs, rhs_op(rhs));
  // ember scores cmp(op_r(e_s), e_d). They agree where the adjoint exists
  // (op none; diagonal, complex_diagonal with dot; translation with l2:
  // AdjointRelationParams) and, dynamic, for a reciprocal model (rhs =
  // w_{r_inv}, which ember applies to the destination); otherwise they are
  // left out rather than written wrong.
  bool rhs_written = false;
  std::vector<PbgParam> params;
};

PbgModel PlanPbgModel(const Manifest& m, const StoredModel& model) {
  PbgModel out;
  const ModelOptions& options = model.model;
  const int dim = options.dim;
  const uint32_t num_relations = static_cast<uint32_t>(m.relations.size());
  out.dynamic = true;
  for (const RelationTypes& types : m.relation_types) {
    if (!(types == m.relation_types.front())) out.dynamic = false;
  }
  const bool adjoint = !options.reciprocal && SupportsMixedChunks(options);
  out.rhs_written = adjoint || (out.dynamic && options.reciprocal);
  const int ps = RelationParamSize(options.op, dim);
  // Relation r's w_r (or, inverse, w_{r_inv}) as PBG's rhs or lhs wants it.
  auto side_params = [&](uint32_t r, bool lhs) {
    const float* record = model.relations.Of(r);
    std::vector<float> w(ps);
    if (lhs) {
      std::copy(record, record + ps, w.begin());
    } else if (options.reciprocal) {
      std::copy(record + ps, record + 2 * ps, w.begin());
    } else {
      AdjointRelationParams(options.op, record, dim, w.data());
    }
    return w;
  };
  if (out.dynamic) {
    for (const bool lhs : {true, false}) {
      if (!lhs && !out.rhs_written) continue;
      std::vector<float> all;
      for (uint32_t r = 0; r < num_relations; ++r) {
        const std::vector<float> w = side_params(r, lhs);
        all.insert(all.end(), w.begin(), w.end());
      }
      AddOperatorParams(options.op, dim, true, 0, lhs ? "lhs" : "rhs", num_relations, all,
                        &out.params);
    }
  } else if (out.rhs_written) {
    for (uint32_t r = 0; r < num_relations; ++r) {
      AddOperatorParams(options.op, dim, false, r, "rhs", 1, side_params(r, false), &out.params);
    }
  }
  return out;
}

// PBG's config.json for this model, every field of its ConfigSchema in its
// order (json.dumps(config.to_dict(), indent=4)): what ember knows of the
// model, PBG's defaults for how PBG would train. entity_path and
// checkpoint_path are `dir`, the export's own directory.
std::string PbgConfigJson(const Manifest& m, const StoredModel& model, bool dynamic,
                          const std::string& dir) {
  using Json = nlohmann::ordered_json;
  const ModelOptions& options = model.model;
  Json entities = Json::object();
  for (uint32_t t = 0; t < std::max<size_t>(1, m.node_types.size()); ++t) {
    entities[PbgEntityName(m, t)] = {
        {"num_partitions", m.PartitionsOf(t)}, {"featurized", false}, {"dimension", nullptr}};
  }
  auto relation = [&](const std::string& name, uint32_t r) {
    const RelationTypes types = m.typed() ? m.relation_types[r] : RelationTypes{};
    return Json{{"name", name},
                {"lhs", PbgEntityName(m, types.src)},
                {"rhs", PbgEntityName(m, types.dst)},
                {"weight", 1.0},
                {"operator", std::string(OperatorName(options.op))},
                {"all_negs", false}};
  };
  Json relations = Json::array();
  if (dynamic) {
    relations.push_back(relation("all_edges", 0));
  } else {
    for (uint32_t r = 0; r < m.relations.size(); ++r)
      relations.push_back(relation(m.relations[r], r));
  }
  const bool n3 = options.regularizer == Regularizer::kN3;
  Json config = {
      {"entities", std::move(entities)},
      {"relations", std::move(relations)},
      {"dimension", options.dim},
      {"init_scale", 1e-3},
      {"max_norm", nullptr},
      {"global_emb", false},
      {"comparator", std::string(ComparatorName(options.comparator))},
      {"bias", false},
      {"loss_fn", std::string(LossName(options.loss))},
      {"margin", options.margin},
      {"regularization_coef", n3 ? options.reg_weight : 0.0f},
      {"regularizer", "N3"},
      {"entity_path", dir},
      {"edge_paths", Json::array()},
      {"checkpoint_path", dir},
      {"init_path", nullptr},
      {"checkpoint_preservation_interval", nullptr},
      {"num_epochs", std::max<uint32_t>(1, model.epochs_done)},
      {"num_edge_chunks", nullptr},
      {"max_edges_per_chunk", 1000000000},
      {"bucket_order", "inside_out"},
      {"workers", nullptr},
      {"batch_size", 1000},
      {"num_batch_negs", 50},
      {"num_uniform_negs", 50},
      {"disable_lhs_negs", false},
      {"disable_rhs_negs", false},
      {"lr", 0.01},
      {"relation_lr", nullptr},
      {"eval_fraction", 0.05},
      {"eval_num_batch_negs", 1000},
      {"eval_num_uniform_negs", 1000},
      {"background_io", false},
      {"verbose", 0},
      {"hogwild_delay", 2.0},
      {"dynamic_relations", dynamic},
      {"num_machines", 1},
      {"num_partition_servers", -1},
      {"distributed_init_method", nullptr},
      {"distributed_tree_init_order", true},
      {"num_gpus", 0},
      {"num_groups_for_partition_server", 16},
      {"num_groups_per_sharded_partition_server", 1},
      {"partition_shard_size", 250},
      {"half_precision", false},
  };
  return config.dump(4);
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
    // PBG's model file, config and relation-type names, so that its own
    // tools (export_to_tsv, its scoring recipe) open the export.
    const PbgModel pbg = PlanPbgModel(m, model_);
    const std::string model_file = absl::StrCat("model.v", model_.version, ".h5");
    RETURN_IF_ERROR(WriteModelFile(Staged(model_file), pbg.params));
    stats_.total_bytes += FileBytes(Staged(model_file));
    stats_.files.push_back(model_file);
    std::string rel_names = "[";
    for (size_t r = 0; r < m.relations.size(); ++r) {
      ASSIGN_OR_RETURN(const std::string quoted, JsonString(m.relations[r], r));
      absl::StrAppend(&rel_names, r ? ",\n    " : "\n    ", quoted);
    }
    rel_names += m.relations.empty() ? "]" : "\n]";
    RETURN_IF_ERROR(WriteSmallFile(kRelNamesFile, rel_names));
    RETURN_IF_ERROR(WriteSmallFile(kRelCountFile, absl::StrCat(m.relations.size(), "\n")));
    const std::string final_dir = std::filesystem::absolute(out_).lexically_normal().string();
    RETURN_IF_ERROR(WriteSmallFile(kConfigFile, PbgConfigJson(m, model_, pbg.dynamic, final_dir)));
    RETURN_IF_ERROR(WriteSmallFile(kVersionFile, absl::StrCat(model_.version, "\n")));
    nlohmann::json meta =
        nlohmann::json::parse(MetaJson(graph_, model_, "h5", BaseOf(out_), "", options_.type));
    meta["layout"] = "pbg";
    meta["version_file"] = kVersionFile;
    meta["entities"] = std::move(entities);
    meta["pbg_model"] = {{"file", model_file},
                         {"config", kConfigFile},
                         {"dynamic_relations", pbg.dynamic},
                         {"lhs_operators", pbg.dynamic ? "exact" : "none"},
                         {"rhs_operators", pbg.rhs_written ? "exact" : "omitted"}};
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
