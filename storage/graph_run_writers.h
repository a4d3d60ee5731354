// Typed writers of a GraphBuilder's sorted runs: callers hand over nodes,
// edges and feature lists; the key and value encodings (storage/internal/keys.h)
// stay inside storage. Made by GraphBuilder::NewNodeWriter, NewEdgeRun and
// NewFeatureRun.
//
// Every writer has a sticky status: after an error every call fails. Not
// thread-safe; use one writer per thread. A writer destroyed without
// Finish() drops what it wrote (the builder's Commit then fails while it
// is open, as for SortedRunWriter).
#ifndef EMBER_STORAGE_GRAPH_RUN_WRITERS_H_
#define EMBER_STORAGE_GRAPH_RUN_WRITERS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "storage/types.h"

namespace ember {

class SortedRunWriter;

// The nodes of a graph: shard-<p>/nodes (offset -> name) and the
// dictionary (name -> NodeRef, NodeRef -> name).
class NodeWriter {
 public:
  // `nodes` and `by_id` hold one run per partition; `by_name` one run.
  NodeWriter(std::vector<std::unique_ptr<SortedRunWriter>> nodes,
             std::vector<std::unique_ptr<SortedRunWriter>> by_id,
             std::unique_ptr<SortedRunWriter> by_name);
  ~NodeWriter();
  NodeWriter(const NodeWriter&) = delete;
  NodeWriter& operator=(const NodeWriter&) = delete;

  // Adds node `name` at `ref`; `node_key` is StringNodeKey(name) or
  // IntegerNodeKey(id) (storage/base/node_hash.h), as the graph's integer_ids
  // says. REQUIRES: (node_key, name) strictly ascending across calls (name
  // bytes break ties of equal keys); within a partition, offsets strictly
  // ascending; ref.partition below the builder's partition count.
  absl::Status AddNode(uint64_t node_key, std::string_view name, NodeRef ref);
  // Finishes every run; call once, after the last AddNode.
  absl::Status Finish();

 private:
  std::vector<std::unique_ptr<SortedRunWriter>> nodes_;
  std::vector<std::unique_ptr<SortedRunWriter>> by_id_;
  std::unique_ptr<SortedRunWriter> by_name_;
  absl::Status status_;
};

// Edges whose source lies in one partition: blocks of shard-<p>/edges. Each
// run of a builder writes its own block sequence numbers, so runs never
// share a key.
class EdgeRunWriter {
 public:
  // `seq_base` is EdgeBlockSeq(generation, chunk, 0) for this run.
  EdgeRunWriter(std::unique_ptr<SortedRunWriter> run, uint64_t seq_base);
  ~EdgeRunWriter();
  EdgeRunWriter(const EdgeRunWriter&) = delete;
  EdgeRunWriter& operator=(const EdgeRunWriter&) = delete;

  // Adds edges of bucket (this run's partition, dst_partition) in `split`,
  // in blocks of at most kMaxEdgesPerBlock edges (storage/internal/keys.h); an empty
  // span adds nothing. Edges keep their order. A second call for the same
  // (split, dst_partition) continues after the first one's blocks.
  // REQUIRES: (split, dst_partition) ascending across calls; edge offsets
  // inside their partitions.
  absl::Status AddEdges(Split split, uint32_t dst_partition,
                        std::span<const Edge> edges);
  // As AddEdges, for a weighted graph (Manifest::edge_weights): each block
  // carries its edges' weights. A run takes weighted or unweighted edges,
  // never both. REQUIRES: weights.size() == edges.size().
  absl::Status AddWeightedEdges(Split split, uint32_t dst_partition, std::span<const Edge> edges,
                                std::span<const float> weights);
  absl::Status Finish();

 private:
  absl::Status Add(Split split, uint32_t dst_partition, std::span<const Edge> edges,
                   const float* weights);

  std::unique_ptr<SortedRunWriter> run_;
  const uint64_t seq_base_;
  bool started_ = false;
  Split split_ = Split::kTrain;
  uint32_t dst_partition_ = 0;
  uint64_t next_block_ = 0;  // within (split_, dst_partition_)
  absl::Status status_;
};

// Sparse feature lists of one partition's nodes: shard-<p>/features.
class FeatureRunWriter {
 public:
  explicit FeatureRunWriter(std::unique_ptr<SortedRunWriter> run);
  ~FeatureRunWriter();
  FeatureRunWriter(const FeatureRunWriter&) = delete;
  FeatureRunWriter& operator=(const FeatureRunWriter&) = delete;

  // Stores the features of the node at `offset`. REQUIRES: offsets strictly
  // ascending across calls (and across runs of a partition, unique);
  // entries sorted by feature id, each id at most once, ids below the
  // vocabulary size.
  absl::Status AddFeatures(uint32_t offset,
                           std::span<const FeatureEntry> entries);
  absl::Status Finish();

 private:
  std::unique_ptr<SortedRunWriter> run_;
};

}  // namespace ember

#endif  // EMBER_STORAGE_GRAPH_RUN_WRITERS_H_
