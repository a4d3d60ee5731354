// Builds a new graph directory from sorted runs. Everything is written into a
// staging directory beside the target (`<out>.staging-<pid>`); Commit()
// ingests the runs, writes the manifest, fsyncs and renames the staging
// directory to `out` as its last step. Abandon() (or destroying an
// uncommitted builder) removes the staging directory, so a failed import
// leaves nothing at `out`. A killed import leaves only a staging directory,
// which the next Create() for the same `out` removes.
#ifndef EMBER_STORAGE_GRAPH_BUILDER_H_
#define EMBER_STORAGE_GRAPH_BUILDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/graph_run_writers.h"
#include "storage/manifest.h"

namespace ember {

class Graph;

// Writes one sorted run (an SST file) for later ingestion.
// REQUIRES: keys strictly ascending in bytewise order. Not thread-safe; use
// one writer per thread. Sticky status: after an error every call fails.
class SortedRunWriter {
 public:
  virtual ~SortedRunWriter() = default;
  virtual absl::Status Add(std::string_view key, std::string_view value) = 0;
  // Finishes the file; an empty run is allowed (and dropped).
  virtual absl::Status Finish() = 0;
};

enum class RunTarget {
  kShardNodes,   // shard-<p>/nodes
  kShardEdges,   // shard-<p>/edges
  kShardFeatures,// shard-<p>/features
  kDictByName,   // dict/by_name (partition ignored)
  kDictById,     // dict/by_id (partition ignored)
};

struct GraphBuilderOptions {
  // Node partitions of the new graph, >= 1. Default: 1.
  uint32_t num_partitions = 1;
  // Replace what stands at `out`; else Create fails with AlreadyExists.
  // Only an ember graph (a directory whose MANIFEST.json reads as ember's,
  // with no live writer) or an empty directory is replaced: a file or a
  // directory of anything else is FailedPrecondition naming what is there,
  // checked at Create and again at Commit. Default: false.
  bool overwrite = false;

  // InvalidArgument for num_partitions 0.
  absl::Status Validate() const;
};

class GraphBuilder {
 public:
  static absl::StatusOr<std::unique_ptr<GraphBuilder>> Create(
      const std::string& out, const GraphBuilderOptions& options);
  ~GraphBuilder();  // Abandon() unless committed
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  // Runs to append to `graph` (opened read-write; the caller keeps it
  // open). ResourceExhausted when the graph has used every edge generation
  // (0xffff appends). The staging directory is GRAPH/append-<pid>. Commit ingests the
  // runs into the graph — dictionary by_id before by_name, node tables,
  // then edges — and commits `manifest` through Graph::CommitManifest: the
  // manifest is the commit point. What a crash before it leaves behind,
  // Graph::RemoveUncommittedAppend removes.
  static absl::StatusOr<std::unique_ptr<GraphBuilder>> CreateAppend(
      Graph* graph);

  // A directory for the caller's temporary files; removed with the staging
  // directory, never part of the graph.
  const std::string& scratch_dir() const;

  // Sets the partition count of a new graph whose count is decided after
  // reading the input (`import --partitions auto`). InvalidArgument for 0;
  // FailedPrecondition for an append builder or once a shard run (any
  // target but the dictionary's) exists. Not thread-safe with NewRun.
  absl::Status SetNumPartitions(uint32_t num_partitions);

  // Typed runs (storage/graph_run_writers.h): the way to write a graph
  // without knowing its key encodings. Thread-safe; each writer is used by
  // one thread. InvalidArgument for a partition at or above the partition
  // count; FailedPrecondition after Commit.
  //
  // The nodes of the whole graph (or of the append), in one writer.
  absl::StatusOr<std::unique_ptr<NodeWriter>> NewNodeWriter();
  // Edges with source in `src_partition`. Runs get consecutive chunk
  // numbers per partition in edge_generation(); ResourceExhausted past
  // kMaxEdgeChunk runs of one partition.
  absl::StatusOr<std::unique_ptr<EdgeRunWriter>> NewEdgeRun(uint32_t src_partition);
  // Feature lists of nodes in `partition`.
  absl::StatusOr<std::unique_ptr<FeatureRunWriter>> NewFeatureRun(uint32_t partition);

  // The edge generation that this builder's edge runs write: 0 for a new
  // graph, one above the graph's Manifest::edge_generation for an append.
  // The manifest given to Commit should carry it as edge_generation.
  uint32_t edge_generation() const;

  // A new sorted run for `target`, taking keys and values already encoded
  // as storage/internal/keys.h describes (for storage itself and its tests; other
  // modules use the typed runs above). Runs of one target may overlap in
  // key range; a key must not appear in two runs. Thread-safe.
  absl::StatusOr<std::unique_ptr<SortedRunWriter>> NewRun(RunTarget target,
                                                          uint32_t partition);

  // Writes the small file `name` into the staging directory's blobs/, so
  // that it becomes GRAPH/blobs/<name> (Graph::ReadBlob) when Commit
  // succeeds and disappears with the staging directory otherwise. Replaces
  // an earlier blob of the same name. Names are [A-Za-z0-9._-]{1,200}.
  // Unimplemented for CreateAppend builders. Not thread-safe with itself.
  absl::Status WriteBlob(std::string_view name, std::string_view bytes);
  // The feature vocabulary: `names` holds one line per feature id (line i,
  // ending in '\n', is the name of id i). Written as the blob
  // `feature-vocab` (storage/internal/keys.h kFeatureVocabBlob), as WriteBlob.
  absl::Status WriteFeatureVocabulary(std::string_view names);

  // Ingests every finished run, compacts nothing, writes MANIFEST.json,
  // fsyncs and renames into place (replacing `out` when overwrite is set).
  // FailedPrecondition while a run is still open (neither finished nor its
  // writer destroyed); InvalidArgument if the manifest is inconsistent or its
  // num_partitions differs from the builder's. On failure `out` is untouched
  // and the builder may be abandoned.
  absl::Status Commit(const Manifest& manifest);
  void Abandon();

 private:
  struct Rep;
  explicit GraphBuilder(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace ember

#endif  // EMBER_STORAGE_GRAPH_BUILDER_H_
