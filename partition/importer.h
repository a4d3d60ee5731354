// `ember import`: turns edge-list text files into a partitioned graph
// directory in bounded memory.
//
// Phases (the files they write: docs/storage-format.md):
//  1. read + parse (oneTBB pipeline, parallel parse, in-order spill): edges
//     go to a spill file as (src key, dst key, relation, split); nodes are
//     aggregated with their degrees in a NodeAggregator (spilling runs).
//  2. merge nodes in key order, assign partitions and dense offsets, write
//     the shards' node tables, the node dictionary and a key -> slot file.
//  3. translate edge endpoints to (partition, offset) with as much of the
//     slot table in memory as the budget allows (key ranges otherwise),
//     group them into P x P buckets and write edge blocks as sorted runs.
//  4. ingest the runs, write MANIFEST.json, rename the staging directory
//     into place. Any failure before that leaves nothing at --out.
#ifndef EMBER_PARTITION_IMPORTER_H_
#define EMBER_PARTITION_IMPORTER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/feature_import.h"
#include "partition/line_parser.h"
#include "partition/partitioner.h"
#include "storage/manifest.h"

namespace ember {

struct ImportProgress {
  std::string phase;         // "read", "nodes", "edges", "commit"
  uint64_t done = 0;         // units of this phase done ...
  uint64_t total = 0;        // ... out of total (0: unknown)
  std::string unit;          // "bytes", "nodes", "edges"
  uint64_t edges_read = 0;   // edge lines accepted so far
  double elapsed_seconds = 0;
};

struct ImportOptions {
  std::string out;                       // graph directory to create (or,
                                         // with `append`, to extend)
  // Add the files' edges and new nodes to the existing graph at `out`:
  // existing nodes keep their (partition, offset); new nodes get new
  // offsets at the end of their hash partition; new edges form a new edge
  // generation. num_partitions, partitioner and integer_ids come from the
  // graph. The training checkpoint is kept; epochs restart at 0.
  bool append = false;
  // Inputs (plain or gzip; "-" is standard input and named pipes work,
  // each read once; "-" may be named once in all).
  std::vector<std::string> files;        // split by `split` fractions
  std::vector<std::string> valid_files;  // all edges -> valid
  std::vector<std::string> test_files;   // all edges -> test
  // Sparse node features (partition/feature_import.h), imported after the
  // nodes are placed. Not supported with `append`. Default: none.
  std::vector<std::string> node_feature_files;
  // Node partitions P in [1, 4096], or 0 to choose P after reading the
  // input: AutoPartitions(distinct nodes, auto_dim, memory_budget)
  // (partition/train_memory.h), the smallest P that `ember train
  // --memory-budget` at that dim can train with enough partitions in
  // memory; the manifest records the choice (Manifest::partitions_auto).
  // Must be 1 with `append` (P is the graph's). Default: 1.
  uint32_t num_partitions = 1;
  // The embedding dimension training will use; read only when
  // num_partitions is 0. Default: 100.
  int auto_dim = 100;
  // Node types (partition/schema.h): a schema file or its inline form.
  // Every node gets its type from the relation and column it appears in; a
  // node of two types is an error naming both places. Each type fills its
  // own partitions (Manifest::node_types). Not with `append` (the graph
  // keeps its schema). Default: "" (one untyped kind of node).
  std::string schema;
  // Partitions of the named types (0: auto), overriding num_partitions for
  // them. With auto, a type gets as many partitions as its nodes fill at the
  // size auto chooses for all nodes, at least one. Default: none.
  std::vector<std::pair<std::string, uint32_t>> type_partitions;
  PartitionerKind partitioner = PartitionerKind::kHash;
  SplitFractions split;                  // Default: all train.
  char delimiter = '\0';                 // '\0': detect per file
  std::vector<int> columns;              // empty: 2 fields -> src dst,
                                         // 3 -> src rel dst, more refused
  // 0-based column of each edge's weight (a finite number above 0), or -1
  // for an unweighted graph. Without `columns` the ids are read from the
  // other fields as above. A weighted graph stores an f32 per edge
  // (Manifest::edge_weights). Not with `dedupe` or `append`. Lines whose
  // weight is not a number, is negative or is 0 are bad lines
  // (RejectReason::kBadWeight, kNegativeWeight, kZeroWeight). Default: -1.
  int weight_column = -1;
  bool header = false;                   // skip each file's first line
  bool integer_ids = false;              // ids are non-negative integers
  bool dedupe = false;                   // drop repeated (src, rel, dst)
                                         // within a split
  bool drop_self_loops = false;          // Default: keep them
  bool skip_bad_lines = false;           // count bad lines instead of failing
  // Keep valid/test edges whose nodes have no train edge in their split
  // (instead of moving them to train and counting them in
  // ImportSummary::moved_to_train); such nodes get an embedding row that
  // only features can train — for `--featurized` models evaluated on unseen
  // nodes. With `append` nothing is moved either way: every node counts as
  // having a train edge. Default: false.
  bool inductive = false;
  uint64_t seed = 0;
  int threads = 0;                       // 0: all hardware threads
  // Peak RSS target, bytes; with num_partitions 0 also the training budget
  // P is chosen for. At least 64 MiB. Default: 2 GiB.
  uint64_t memory_budget = 2ull << 30;
  bool overwrite = false;
  // Called from one thread at a time, often; throttle in the callee.
  std::function<void(const ImportProgress&)> progress;

  absl::Status Validate() const;
};

struct ImportSummary {
  uint64_t nodes = 0;
  SplitCounts edges;
  uint32_t relations = 0;
  uint32_t partitions = 0;
  // Set when num_partitions was 0: the inputs P was chosen from.
  std::optional<PartitionsAuto> partitions_auto;
  double node_count_seconds = 0;  // counting distinct nodes for auto
  uint64_t lines = 0;                 // data lines read (not comments/blank)
  std::array<uint64_t, kNumRejectReasons> rejected{};  // by reason
  uint64_t self_loops_dropped = 0;
  uint64_t duplicates_dropped = 0;
  uint64_t moved_to_train = 0;  // valid/test edges with a node seen only
                                // outside train, moved to train (0 with
                                // `inductive`)
  uint64_t input_bytes = 0;
  uint64_t node_runs_spilled = 0;
  uint32_t key_ranges = 1;      // >1: the slot table did not fit the budget
  uint64_t new_nodes = 0;       // with append: nodes not in the graph before
  FeatureImportSummary features;  // with node_feature_files
  EdgeWeightStats weights;        // with weight_column: over the edges read
  // Nodes and partitions of each type (one entry, named "", when untyped).
  struct TypeCount {
    std::string name;
    uint64_t nodes = 0;
    uint32_t partitions = 0;
  };
  std::vector<TypeCount> types;
  // What the import went on past but the user should hear of ("file:line:
  // ... looks like a header ..."), one sentence each.
  std::vector<std::string> warnings;
  double seconds = 0;
};

absl::StatusOr<ImportSummary> ImportGraph(const ImportOptions& options);

// Parses "512M", "4G", "1.5GiB", "1000000" into bytes (K, M, G, T and their
// -iB forms are powers of 1024; fractions round down). InvalidArgument for
// anything else, for negative, NaN or infinite numbers, and for sizes of
// 2^64 bytes or more.
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);

}  // namespace ember

#endif  // EMBER_PARTITION_IMPORTER_H_
