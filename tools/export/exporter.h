// `ember export`: the trained embeddings of a graph, written as one file in a
// format other tools read (PBG tsv, NumPy .npy, text word2vec, fvecs), plus
// sidecars, or as a directory in PBG's checkpoint layout (h5,
// tools/export/pbg_export.h). Rows are written in global-id order (partition 0 offset 0 first),
// streaming one partition at a time: memory is bounded by one partition's
// embedding rows (plus fixed-size write buffers), never by the graph.
//
// Layouts (n nodes, dimension d, row i = the node with global id i):
//   tsv    "name\tv1\t...\tvd\n" per row (PBG's export_to_tsv layout). Floats
//          are printed shortest-round-trip (std::to_chars), so parsing them
//          back as float gives the stored bits.
//   npy    NumPy format v1.0: "\x93NUMPY\x01\x00", uint16 LE header length,
//          header "{'descr': '<f4', 'fortran_order': False, 'shape': (n, d), }"
//          space-padded and '\n'-terminated so the data starts at a multiple
//          of 64 bytes; then n*d float32 little-endian, C order.
//          Names go to PATH.names.tsv (line i = name of row i).
//   w2v    word2vec text: "n d\n", then "name v1 ... vd\n" per row (space
//          separated; names containing whitespace are refused).
//   fvecs  per row: int32 LE d, then d float32 LE (the ANN-benchmarks /
//          TEXMEX layout). Names go to PATH.names.tsv.
//   h5     PATH is a directory in PBG's checkpoint layout, one set of files
//          per type and partition (see tools/export/pbg_export.h); its
//          meta.json is inside it.
// Every export also writes PATH.meta.json (see MetaJson) and, on request, a
// relation parameter file ("name\tp1\t...\tpk\n" per relation, k = 0 for the
// operator "none").
//
// Atomicity: every output is written to a temporary file beside its final
// path ("<path>.tmp-<pid>-<n>"), fsynced and renamed only after all outputs
// are complete; PATH itself is renamed last. On failure no temporary is left
// and nothing is created or replaced at PATH. An existing PATH, sidecar or
// relations file is refused unless `overwrite`; a directory at any of them
// is refused always.
#ifndef EMBER_TOOLS_EXPORT_EXPORTER_H_
#define EMBER_TOOLS_EXPORT_EXPORTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/base/atomic_file.h"
#include "storage/base/enum_names.h"
#include "storage/graph.h"
#include "train/model/checkpoint.h"

namespace ember::tools {

enum class ExportFormat : uint8_t { kTsv = 0, kNpy = 1, kW2v = 2, kFvecs = 3, kH5 = 4 };
using ::ember::AbslParseFlag;
using ::ember::AbslUnparseFlag;

}  // namespace ember::tools

template <>
struct ember::EnumNames<ember::tools::ExportFormat> {
  static constexpr std::string_view kWhat = "export format";
  static constexpr EnumNameTable<tools::ExportFormat, 5> kTable = {{
      {tools::ExportFormat::kTsv, "tsv"},
      {tools::ExportFormat::kNpy, "npy"},
      {tools::ExportFormat::kW2v, "w2v"},
      {tools::ExportFormat::kFvecs, "fvecs"},
      {tools::ExportFormat::kH5, "h5"},
  }};
};

namespace ember::tools {

// InvalidArgument lists the accepted names.
inline absl::StatusOr<ExportFormat> ParseExportFormat(std::string_view name) {
  return EnumFromName<ExportFormat>(name);
}
inline std::string_view ExportFormatName(ExportFormat format) { return EnumToName(format); }
// Whether the format carries no names and gets a PATH.names.tsv sidecar.
bool FormatHasNamesSidecar(ExportFormat format);

// The FAISS metric matching a comparator: "inner_product" (dot), "cosine"
// (cos: normalise, then inner product), "l2" (l2).
std::string_view NearestNeighborMetric(Comparator comparator);

struct ExportProgress {
  uint32_t partition = 0;   // partition being written
  uint32_t partitions = 0;
  uint64_t rows_done = 0;   // rows written so far (all partitions)
  uint64_t rows_total = 0;
  uint64_t bytes_written = 0;  // main file bytes so far
};

struct ExportOptions {
  // Output file; sidecars are PATH.meta.json and PATH.names.tsv. Required.
  // For kH5 a directory, new or empty (or, with `overwrite`, an h5 export
  // ember made).
  std::string out;
  // Default: kTsv.
  ExportFormat format = ExportFormat::kTsv;
  // Also write relation parameters here (tsv). Empty: none. Not with kH5,
  // whose meta.json holds them. Default: "".
  std::string relations_out;
  // Replace existing outputs. Default: false.
  bool overwrite = false;
  // Only the nodes of this type of a typed graph, in global-id order (its
  // partitions are consecutive); the meta file names it. NotFound for a type
  // the graph has not. Default: "" (every node; kH5: every type, each in its
  // own files).
  std::string type;
  // Threads formatting text rows (tsv, w2v); 0: all cores. Default: 0.
  int threads = 0;
  // Peak-memory target in bytes (ExportMemoryBytes); 0: none. An export
  // over it is refused before any output is created. Default: 0.
  uint64_t memory_budget = 0;
  // Called from the calling thread after each block of rows; throttle in the
  // callee.
  std::function<void(const ExportProgress&)> progress;
  // Testing hook: fail with Aborted once this many rows have been written
  // (0: never), to check that a failed export leaves nothing behind.
  uint64_t fail_after_rows = 0;

  absl::Status Validate() const;
};

struct ExportStats {
  uint64_t rows = 0;
  int dim = 0;
  uint32_t partitions = 0;
  uint64_t checkpoint_version = 0;
  uint64_t bytes = 0;        // main file
  uint64_t total_bytes = 0;  // all files written
  // Most embedding rows held in memory at once: the exporter's memory bound
  // (the largest partition) made observable.
  uint64_t peak_rows_held = 0;
  double seconds = 0;
  std::vector<std::string> files;  // final paths written, main file first
};

// What an export of `graph` at `dim` holds at once, in bytes: the largest
// partition's rows, one batch of formatted text (names at up to 64 bytes
// each, an allowance) and RocksDB's block cache.
uint64_t ExportMemoryBytes(const Manifest& manifest, int dim);

// Exports the current checkpoint of `graph`. FailedPrecondition when the
// graph has no checkpoint; AlreadyExists naming the path when an output
// exists and !overwrite; ResourceExhausted, naming the need, when
// ExportMemoryBytes exceeds options.memory_budget.
absl::StatusOr<ExportStats> ExportEmbeddings(const Graph& graph,
                                             const ExportOptions& options);

// PATH.meta.json contents: {"format", "file", "names_file" (or null),
// "dimension", "count", "operator", "comparator", "metric" (as
// NearestNeighborMetric), "normalize" (true for cos), "checkpoint_version",
// "partition_versions" (the table version each partition's rows were read
// from: the checkpoint's), "epochs", "graph", "relations": [{"name",
// "parameters": [...]}]}.
// With a `type` (ExportOptions::type), "count" is its nodes and "type" and
// "first_global_id" say which rows the file holds.
std::string MetaJson(const Graph& graph, const StoredModel& model, std::string_view format,
                     const std::string& file, const std::string& names_file,
                     const std::string& type = "");

}  // namespace ember::tools

#endif  // EMBER_TOOLS_EXPORT_EXPORTER_H_
