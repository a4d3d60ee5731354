// `ember neighbors`: top-k nearest nodes of a node under the trained model,
// backed by a FAISS index over all node embeddings (row = global id), or
// over one type's (row i = global id first_id() + i).
//
// The index metric follows the model's comparator: inner product for dot,
// inner product over L2-normalised vectors for cos, L2 for l2. Scores are
// reported as the model scores them (dot product, cosine, or -|a - b|): FAISS
// proposes candidates, which are then rescored exactly against the stored
// vectors. With a relation r the query vector is op_r(e_NAME) (normalised
// for cos), i.e. "what would NAME link to through r", compared against all
// nodes as destinations. The query node itself is never among its results;
// with exclude_known, neither is what it already links to through r in the
// train split (what `ember recommend` leaves out).
//
// Memory: the index holds all n x d embedding floats (FAISS keeps its
// vectors in memory); this is the one ember tool not bounded by a
// partition, so Build checks IndexMemoryBytes against
// NeighborIndexOptions::memory_budget first. Building loads partitions one
// at a time (IVF reads them twice: once for a training sample, once to
// add).
#ifndef EMBER_TOOLS_EXPORT_NEIGHBORS_H_
#define EMBER_TOOLS_EXPORT_NEIGHBORS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/base/enum_names.h"
#include "storage/graph.h"
#include "train/model/model_options.h"

namespace ember::tools {

enum class IndexKind : uint8_t {
  kFlat = 0,  // exact (IndexFlatIP / IndexFlatL2): the reference
  kIvf = 1,   // IndexIVFFlat, nlist ~ 4 sqrt(n)
  kHnsw = 2,  // IndexHNSWFlat, M = 32
};
using ::ember::AbslParseFlag;
using ::ember::AbslUnparseFlag;

}  // namespace ember::tools

template <>
struct ember::EnumNames<ember::tools::IndexKind> {
  static constexpr std::string_view kWhat = "index";
  static constexpr EnumNameTable<tools::IndexKind, 3> kTable = {{
      {tools::IndexKind::kFlat, "flat"},
      {tools::IndexKind::kIvf, "ivf"},
      {tools::IndexKind::kHnsw, "hnsw"},
  }};
};

namespace ember::tools {

inline absl::StatusOr<IndexKind> ParseIndexKind(std::string_view name) {
  return EnumFromName<IndexKind>(name);
}
inline std::string_view IndexKindName(IndexKind kind) { return EnumToName(kind); }

struct NeighborIndexOptions {
  // Default: kFlat.
  IndexKind kind = IndexKind::kFlat;
  // IVF lists; 0: round(4 sqrt(n)), at least 1. Default: 0.
  int nlist = 0;
  // IVF lists probed per query; 0: max(8, nlist / 8), measured to give
  // recall@10 >= 0.9 against flat on trained embeddings. Default: 0.
  int nprobe = 0;
  // HNSW neighbours per node. Default: 32.
  int hnsw_m = 32;
  // HNSW search beam; 0: 256 (raised to k + 1 when k is larger). Default: 0.
  int ef_search = 0;
  // HNSW construction beam. Default: 80.
  int ef_construction = 80;
  // FAISS (OpenMP) threads, process-wide; 0: leave OpenMP's default
  // (OMP_NUM_THREADS or all cores). Default: 0.
  int threads = 0;
  // Seed of the IVF training sample and k-means. Default: 1234.
  uint64_t seed = 1234;
  // Only the nodes of this type of a typed graph (a type's partitions are
  // consecutive, so its rows are global ids [first_id(), first_id() +
  // size())). Queries may be of any type. NotFound naming the graph's types
  // for a type it has not. Default: "" (every node).
  std::string type;
  // Memory the index may take (IndexMemoryBytes); Build refuses, before
  // loading anything, an index that would need more. 0: no limit.
  // Default: 0 (the CLI passes --memory-budget).
  uint64_t memory_budget = 0;
  // Called after each partition is loaded; throttle in the callee.
  std::function<void(std::string_view phase, uint64_t done, uint64_t total)> progress;

  absl::Status Validate() const;
};

// What an index of `kind` over `n` rows of `dim` floats takes while built
// and searched, in bytes, as estimated for the budget: every vector
// (FAISS keeps them), the largest partition's rows while it is added, the
// cos norms, and per kind: HNSW's level-0 links (2 · hnsw_m int32 per row,
// plus a quarter for the upper levels), IVF's ids and direct map (2 int64
// per row) and its k-means sample (64 rows per list).
uint64_t IndexMemoryBytes(IndexKind kind, uint64_t n, int dim, uint64_t largest_partition,
                          bool cos, const NeighborIndexOptions& options);

struct Neighbor {
  std::string node;
  uint64_t global_id = 0;
  float score = 0;  // the model's comparator score, higher is closer
};

struct NeighborList {
  std::string node;  // the query node
  std::vector<Neighbor> neighbors;  // best first, at most k, query excluded
};

class NeighborIndex {
 public:
  // Builds the index over the current checkpoint of `graph`, which must
  // outlive the index. FailedPrecondition when the graph has no checkpoint.
  static absl::StatusOr<std::unique_ptr<NeighborIndex>> Build(
      const Graph& graph, const NeighborIndexOptions& options);
  ~NeighborIndex();
  NeighborIndex(const NeighborIndex&) = delete;
  NeighborIndex& operator=(const NeighborIndex&) = delete;

  // Top-k neighbours of each node in `nodes`, in order. `relation` empty: the
  // query is e_NAME; else op_relation(e_NAME). With `exclude_known`, the
  // nodes NAME links to through `relation` in the train split are left out
  // (read from NAME's partition's train edges, once per partition). A query
  // outside the index (another type) has its row read from the checkpoint,
  // one partition at a time. NotFound naming an unknown node or relation;
  // InvalidArgument for k < 1 or exclude_known without a relation.
  // Thread-compatible.
  absl::StatusOr<std::vector<NeighborList>> Search(const std::vector<std::string>& nodes,
                                                   const std::string& relation, int k,
                                                   bool exclude_known = false) const;

  // Writes the FAISS index (faiss::write_index; row i = global id
  // first_id() + i) to `path`, PATH.names.tsv (line i = name of row i) and
  // PATH.meta.json (metric, whether to normalise queries, model, and with a
  // type its name and first global id), each atomically.
  // AlreadyExists when `path` exists and !overwrite.
  absl::Status Save(const std::string& path, bool overwrite) const;

  uint64_t size() const;      // rows in the index
  uint64_t first_id() const;  // global id of row 0 (0 without a type)
  int dim() const;
  Comparator comparator() const;
  std::string_view metric() const;  // NearestNeighborMetric(comparator())
  int nlist() const;                // 0 unless IVF
  int nprobe() const;               // 0 unless IVF
  int ef_search() const;            // 0 unless HNSW
  double build_seconds() const;

 private:
  struct Rep;
  explicit NeighborIndex(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

// Query names from a file, one per line; '\r' is stripped and blank lines
// skipped. NotFound naming the file.
absl::StatusOr<std::vector<std::string>> ReadQueryFile(const std::string& path);

// {"node": NAME, "neighbors": [{"node": NAME, "score": S}, ...]} on one line.
std::string NeighborListJson(const NeighborList& list);

}  // namespace ember::tools

#endif  // EMBER_TOOLS_EXPORT_NEIGHBORS_H_
