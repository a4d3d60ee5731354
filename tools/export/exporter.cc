#include "tools/export/exporter.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "oneapi/tbb/task_arena.h"
#include "storage/base/file_system.h"
#include "storage/base/parallel.h"
#include "storage/base/progress.h"
#include "storage/base/status_macros.h"
#include "tools/export/pbg_export.h"

namespace ember::tools {
namespace {

static_assert(std::endian::native == std::endian::little,
              "npy/fvecs writers assume a little-endian host");

// Rows formatted and written per step (also the progress granularity): about
// 128K floats (<= 2.2 MB of text), at most 4096 rows.
uint32_t BatchRows(int dim) {
  return static_cast<uint32_t>(std::clamp(131072 / std::max(dim, 1), 16, 4096));
}
// Longest std::to_chars output of a float ("-1.17549435e-38").
constexpr size_t kMaxFloatChars = 16;

// Appends `name`, then for each value `sep` and its shortest round-trip
// decimal form, then '\n'.
void AppendTextRow(std::string_view name, const float* v, int dim, char sep,
                   std::string* out) {
  const size_t old = out->size();
  out->resize(old + name.size() + static_cast<size_t>(dim) * (kMaxFloatChars + 1) + 1);
  char* p = out->data() + old;
  char* const end = out->data() + out->size();
  std::memcpy(p, name.data(), name.size());
  p += name.size();
  for (int j = 0; j < dim; ++j) {
    *p++ = sep;
    p = std::to_chars(p, end, v[j]).ptr;
  }
  *p++ = '\n';
  out->resize(p - out->data());
}

std::string FormatFloat(float f) {
  char buf[kMaxFloatChars + 8];
  char* e = std::to_chars(buf, buf + sizeof buf, f).ptr;
  return std::string(buf, e);
}

std::string NpyHeader(uint64_t rows, int dim) {
  std::string dict = absl::StrFormat(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, dim);
  // magic(6) + version(2) + header length(2) + dict + padding + '\n' is a
  // multiple of 64 (NumPy aligns the data so).
  const size_t unpadded = 10 + dict.size() + 1;
  const size_t total = (unpadded + 63) / 64 * 64;
  dict.append(total - unpadded, ' ');
  dict.push_back('\n');
  const uint16_t len = static_cast<uint16_t>(dict.size());
  std::string h("\x93NUMPY\x01\x00", 8);
  h.push_back(static_cast<char>(len & 0xff));
  h.push_back(static_cast<char>(len >> 8));
  return h + dict;
}

// Names go to line-oriented text files: refuse what would break a line (and
// the field separators of the format).
absl::Status CheckName(std::string_view name, ExportFormat format, uint64_t global_id) {
  for (char c : name) {
    const bool bad = c == '\n' || c == '\r' || c == '\t' ||
                     (format == ExportFormat::kW2v && (c == ' ' || c == '\v' || c == '\f'));
    if (bad) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "node %d has name '%s' with whitespace that the %s format cannot hold",
          global_id, std::string(name), std::string(ExportFormatName(format))));
    }
  }
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("node %d has an empty name", global_id));
  }
  return absl::OkStatus();
}

}  // namespace

bool FormatHasNamesSidecar(ExportFormat format) {
  return format == ExportFormat::kNpy || format == ExportFormat::kFvecs;
}

std::string_view NearestNeighborMetric(Comparator comparator) {
  switch (comparator) {
    case Comparator::kDot:
      return "inner_product";
    case Comparator::kCos:
      return "cosine";
    case Comparator::kL2:
      return "l2";
  }
  return "?";
}

absl::Status ExportOptions::Validate() const {
  if (out.empty()) return absl::InvalidArgumentError("export needs an output path (--out)");
  if (format == ExportFormat::kH5) {
    if (!relations_out.empty()) {
      return absl::InvalidArgumentError(
          "--relations-out is not for --format h5: the relation parameters are in the "
          "export's meta.json");
    }
  } else if (out.back() == '/') {
    return absl::InvalidArgumentError(absl::StrCat("output path ", out, " names a directory"));
  }
  if (!relations_out.empty() && relations_out == out) {
    return absl::InvalidArgumentError("--relations-out must differ from --out");
  }
  if (threads < 0) return absl::InvalidArgumentError("threads must be >= 0");
  return absl::OkStatus();
}

std::string MetaJson(const Graph& graph, const StoredModel& model, std::string_view format,
                     const std::string& file, const std::string& names_file,
                     const std::string& type) {
  const Manifest& m = graph.manifest();
  const absl::StatusOr<uint32_t> type_index =
      type.empty() ? absl::StatusOr<uint32_t>(0) : m.FindType(type);
  const bool reciprocal = model.model.reciprocal;
  const int op_size = RelationParamSize(model.model.op, model.model.dim);
  nlohmann::json relations = nlohmann::json::array();
  for (uint32_t r = 0; r < m.relations.size(); ++r) {
    nlohmann::json params = nlohmann::json::array(), inverse = nlohmann::json::array();
    if (r < model.relations.num_relations) {
      const float* p = model.relations.Of(r);
      for (int j = 0; j < op_size; ++j) params.push_back(p[j]);
      if (reciprocal) {
        for (int j = 0; j < op_size; ++j) inverse.push_back(p[op_size + j]);
      }
    }
    nlohmann::json entry = {{"name", m.relations[r]}, {"parameters", params}};
    // A reciprocal model's head query (?, r, d) is the tail query
    // (d, r_inv, ?) with these.
    if (reciprocal) entry["inverse_parameters"] = inverse;
    relations.push_back(std::move(entry));
  }
  nlohmann::json j = {
      {"format", std::string(format)},
      {"file", file},
      {"names_file", names_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(names_file)},
      {"dimension", model.model.dim},
      {"count", type.empty() || !type_index.ok() ? m.num_nodes : m.NodesOf(*type_index)},
      {"operator", std::string(OperatorName(model.model.op))},
      // Featurized models export their composed rows (id and/or features).
      {"featurized", std::string(FeaturizedModeName(model.model.featurized))},
      {"comparator", std::string(ComparatorName(model.model.comparator))},
      {"metric", std::string(NearestNeighborMetric(model.model.comparator))},
      {"normalize", model.model.comparator == Comparator::kCos},
      {"checkpoint_version", model.version},
      // The table version each partition's rows were read from.
      {"partition_versions", model.partition_versions},
      {"epochs", model.epochs_done},
      {"graph", graph.dir()},
      {"reciprocal", reciprocal},
      {"relations", relations},
  };
  if (!type.empty() && type_index.ok()) {
    j["type"] = type;
    j["first_global_id"] = m.PartitionBase(m.FirstPartitionOf(*type_index));
  }
  return j.dump(2) + "\n";
}

namespace {

class Exporter {
 public:
  Exporter(const Graph& graph, const StoredModel& model, const ExportOptions& options)
      : graph_(graph),
        model_(model),
        options_(options),
        dim_(model.model.dim),
        threads_(options.threads > 0
                     ? options.threads
                     : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {}

  absl::StatusOr<ExportStats> Run() {
    const auto start = std::chrono::steady_clock::now();
    const Manifest& m = graph_.manifest();
    stats_.dim = dim_;
    if (!options_.type.empty()) {
      ASSIGN_OR_RETURN(const uint32_t t, m.FindType(options_.type));
      first_partition_ = m.FirstPartitionOf(t);
      end_partition_ = m.EndPartitionOf(t);
      rows_total_ = m.NodesOf(t);
    } else {
      first_partition_ = 0;
      end_partition_ = m.num_partitions;
      rows_total_ = m.num_nodes;
    }
    stats_.partitions = end_partition_ - first_partition_;
    stats_.checkpoint_version = model_.version;

    ASSIGN_OR_RETURN(main_, AtomicOutputFile::Create(options_.out, options_.overwrite));
    std::unique_ptr<AtomicOutputFile> rels;
    if (!options_.relations_out.empty()) {
      ASSIGN_OR_RETURN(rels, AtomicOutputFile::Create(options_.relations_out, options_.overwrite));
    }
    std::string names_path;
    if (FormatHasNamesSidecar(options_.format)) {
      names_path = options_.out + ".names.tsv";
      ASSIGN_OR_RETURN(names_, AtomicOutputFile::Create(names_path, options_.overwrite));
    }
    ASSIGN_OR_RETURN(auto meta,
                     AtomicOutputFile::Create(options_.out + ".meta.json", options_.overwrite));

    // Header.
    switch (options_.format) {
      case ExportFormat::kNpy:
        RETURN_IF_ERROR(main_->Append(NpyHeader(rows_total_, dim_)));
        break;
      case ExportFormat::kW2v:
        RETURN_IF_ERROR(main_->Append(absl::StrCat(rows_total_, " ", dim_, "\n")));
        break;
      default:
        break;
    }

    for (uint32_t p = first_partition_; p < end_partition_; ++p) {
      RETURN_IF_ERROR(ExportPartition(p));
    }
    if (rows_done_ != rows_total_) {
      return absl::DataLossError(
          absl::StrFormat("graph %s: exported %d rows but the manifest counts %d nodes",
                          graph_.dir(), rows_done_, rows_total_));
    }

    if (rels) RETURN_IF_ERROR(WriteRelations(rels.get()));
    RETURN_IF_ERROR(meta->Append(MetaJson(graph_, model_, ExportFormatName(options_.format),
                                          BaseName(options_.out),
                                          names_ ? BaseName(names_path) : "", options_.type)));
    // Everything complete on disk before anything becomes visible; PATH last.
    RETURN_IF_ERROR(main_->Close());
    if (names_) RETURN_IF_ERROR(names_->Close());
    if (rels) RETURN_IF_ERROR(rels->Close());
    RETURN_IF_ERROR(meta->Close());
    stats_.bytes = main_->bytes();
    stats_.total_bytes = main_->bytes() + meta->bytes() + (names_ ? names_->bytes() : 0) +
                         (rels ? rels->bytes() : 0);
    // Sidecars first, PATH last. A failure takes back what this export
    // already moved into place: no partial output.
    std::vector<AtomicOutputFile*> order;
    if (names_) order.push_back(names_.get());
    order.push_back(meta.get());
    if (rels) order.push_back(rels.get());
    order.push_back(main_.get());
    for (size_t i = 0; i < order.size(); ++i) {
      const absl::Status committed = order[i]->Commit();
      if (!committed.ok()) {
        for (size_t j = 0; j < i; ++j) CurrentFileSystem()->Remove(order[j]->path()).IgnoreError();
        return committed;
      }
    }
    stats_.files.push_back(options_.out);
    if (names_) stats_.files.push_back(names_->path());
    stats_.files.push_back(meta->path());
    if (rels) stats_.files.push_back(rels->path());
    stats_.rows = rows_done_;
    stats_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return stats_;
  }

 private:
  static std::string BaseName(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  }

  absl::Status ExportPartition(uint32_t p) {
    const uint64_t size = graph_.manifest().partition_sizes[p];
    const uint64_t base = graph_.manifest().PartitionBase(p);
    ASSIGN_OR_RETURN(std::vector<float> rows, LoadPartitionEmbeddings(graph_, model_, p));
    if (rows.size() != size * dim_) {
      return absl::DataLossError(absl::StrFormat(
          "graph %s: partition %d has %d embedding floats, expected %d x %d", graph_.dir(), p,
          rows.size(), size, dim_));
    }
    rows_held_ += size;
    stats_.peak_rows_held = std::max(stats_.peak_rows_held, rows_held_);

    std::vector<std::string> names;
    const uint32_t batch_rows = BatchRows(dim_);
    names.reserve(std::min<uint64_t>(size, batch_rows));
    uint64_t batch_first = 0;
    uint64_t next = 0;
    absl::Status s = graph_.ForEachNodeName(p, [&](uint32_t offset, std::string_view name) {
      if (offset != next || offset >= size) {
        return absl::DataLossError(absl::StrFormat(
            "graph %s: partition %d names out of order at offset %d (expected %d of %d)",
            graph_.dir(), p, offset, next, size));
      }
      RETURN_IF_ERROR(CheckName(name, options_.format, base + offset));
      ++next;
      names.emplace_back(name);
      if (names.size() == batch_rows) {
        RETURN_IF_ERROR(WriteBatch(p, rows.data() + batch_first * dim_, names));
        batch_first = next;
        names.clear();
      }
      return absl::OkStatus();
    });
    RETURN_IF_ERROR(s);
    if (!names.empty()) RETURN_IF_ERROR(WriteBatch(p, rows.data() + batch_first * dim_, names));
    if (next != size) {
      return absl::DataLossError(absl::StrFormat(
          "graph %s: partition %d lists %d node names, expected %d", graph_.dir(), p, next, size));
    }
    std::vector<float>().swap(rows);
    rows_held_ -= size;
    // Text buffers are re-grown per partition rather than kept while the
    // next partition loads.
    std::vector<std::string>().swap(pieces_);
    std::string().swap(text_);
    return absl::OkStatus();
  }

  // Writes rows [0, names.size()) of `x` (compact, dim_ floats each).
  absl::Status WriteBatch(uint32_t p, const float* x, const std::vector<std::string>& names) {
    const size_t n = names.size();
    if (names_) {
      text_.clear();
      for (const std::string& name : names) {
        text_.append(name);
        text_.push_back('\n');
      }
      RETURN_IF_ERROR(names_->Append(text_));
    }
    switch (options_.format) {
      case ExportFormat::kTsv:
      case ExportFormat::kW2v: {
        const char sep = options_.format == ExportFormat::kTsv ? '\t' : ' ';
        const int pieces = static_cast<int>(std::min<size_t>(threads_, (n + 255) / 256));
        if (pieces <= 1) {
          text_.clear();
          size_t bound = n * (static_cast<size_t>(dim_) * (kMaxFloatChars + 1) + 1);
          for (const std::string& name : names) bound += name.size();
          text_.reserve(bound);
          for (size_t i = 0; i < n; ++i) AppendTextRow(names[i], x + i * dim_, dim_, sep, &text_);
          RETURN_IF_ERROR(main_->Append(text_));
        } else {
          pieces_.resize(pieces);
          if (!arena_) arena_ = std::make_unique<tbb::task_arena>(threads_);
          arena_->execute([&] {
            ParallelFor(0, pieces, [&](int t) {
              const size_t lo = n * t / pieces, hi = n * (t + 1) / pieces;
              std::string& out = pieces_[t];
              out.clear();
              // Exact upper bound, so the piece never reallocates to 2x.
              size_t bound = (hi - lo) * (static_cast<size_t>(dim_) * (kMaxFloatChars + 1) + 1);
              for (size_t i = lo; i < hi; ++i) bound += names[i].size();
              out.reserve(bound);
              for (size_t i = lo; i < hi; ++i) {
                AppendTextRow(names[i], x + i * dim_, dim_, sep, &out);
              }
            });
          });
          for (const std::string& piece : pieces_) RETURN_IF_ERROR(main_->Append(piece));
        }
        break;
      }
      case ExportFormat::kNpy:
        RETURN_IF_ERROR(main_->Append(std::string_view(reinterpret_cast<const char*>(x),
                                                       n * dim_ * sizeof(float))));
        break;
      case ExportFormat::kFvecs: {
        text_.clear();
        const int32_t d = dim_;
        for (size_t i = 0; i < n; ++i) {
          text_.append(reinterpret_cast<const char*>(&d), sizeof d);
          text_.append(reinterpret_cast<const char*>(x + i * dim_), dim_ * sizeof(float));
        }
        RETURN_IF_ERROR(main_->Append(text_));
        break;
      }
      case ExportFormat::kH5:  // tools/export/pbg_export.cc
        return absl::InternalError("the h5 export does not write through Exporter");
    }
    rows_done_ += n;
    if (options_.progress) {
      options_.progress({p - first_partition_, end_partition_ - first_partition_, rows_done_,
                         rows_total_, main_->bytes()});
    }
    if (options_.fail_after_rows > 0 && rows_done_ >= options_.fail_after_rows) {
      return absl::AbortedError(
          absl::StrFormat("export stopped after %d rows (testing hook)", rows_done_));
    }
    return absl::OkStatus();
  }

  // One line per relation: name<TAB>p1..pk. A reciprocal model's inverse
  // relations follow, in the same order, as name_inv<TAB>p1..pk (line
  // R + r is relation r's inverse, whatever the names).
  absl::Status WriteRelations(AtomicOutputFile* out) {
    const Manifest& m = graph_.manifest();
    const int op_size = RelationParamSize(model_.model.op, model_.model.dim);
    std::string text;
    for (const bool inverse : {false, true}) {
      if (inverse && !model_.model.reciprocal) break;
      for (uint32_t r = 0; r < m.relations.size(); ++r) {
        RETURN_IF_ERROR(CheckName(m.relations[r], ExportFormat::kTsv, r));
        text.append(m.relations[r]);
        if (inverse) text.append(kInverseRelationSuffix);
        if (r < model_.relations.num_relations) {
          const float* p = model_.relations.Of(r) + (inverse ? op_size : 0);
          for (int j = 0; j < op_size; ++j) {
            text.push_back('\t');
            text.append(FormatFloat(p[j]));
          }
        }
        text.push_back('\n');
      }
    }
    return out->Append(text);
  }

  const Graph& graph_;
  const StoredModel& model_;
  const ExportOptions& options_;
  const int dim_;
  const int threads_;
  std::unique_ptr<AtomicOutputFile> main_;
  std::unique_ptr<AtomicOutputFile> names_;
  std::unique_ptr<tbb::task_arena> arena_;
  std::string text_;
  std::vector<std::string> pieces_;
  uint64_t rows_done_ = 0;
  uint64_t rows_held_ = 0;
  // The partitions exported (a type's, or all) and their rows.
  uint32_t first_partition_ = 0, end_partition_ = 0;
  uint64_t rows_total_ = 0;
  ExportStats stats_;
};

}  // namespace

uint64_t ExportMemoryBytes(const Manifest& manifest, int dim) {
  constexpr uint64_t kNameBytes = 64;
  const uint64_t d = static_cast<uint64_t>(std::max(dim, 1));
  return manifest.LargestPartition() * d * sizeof(float) +
         uint64_t{BatchRows(dim)} * (d * (kMaxFloatChars + 1) + 1 + 2 * kNameBytes) +
         kDefaultBlockCacheBytes;
}

absl::StatusOr<ExportStats> ExportEmbeddings(const Graph& graph, const ExportOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  if (options.format == ExportFormat::kH5) RETURN_IF_ERROR(PbgExportAvailable());
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(graph));
  if (const uint64_t need = ExportMemoryBytes(graph.manifest(), model.model.dim);
      options.memory_budget > 0 && need > options.memory_budget) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "exporting ", graph.dir(), " needs about ", HumanBytes(double(need)),
        " (its largest partition holds ", graph.manifest().LargestPartition(), " rows of ",
        model.model.dim, " dims, loaded whole), over the memory budget of ",
        HumanBytes(double(options.memory_budget)),
        "; raise --memory-budget, or import with more partitions"));
  }
  if (model.partition_versions.size() != graph.manifest().num_partitions) {
    return absl::DataLossError(absl::StrFormat(
        "graph %s: checkpoint %d lists %d partition versions for %d partitions", graph.dir(),
        model.version, model.partition_versions.size(), graph.manifest().num_partitions));
  }
  if (options.format == ExportFormat::kH5) return ExportPbgCheckpoint(graph, model, options);
  Exporter exporter(graph, model, options);
  return exporter.Run();
}

}  // namespace ember::tools
