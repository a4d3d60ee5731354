// Planted-partition (stochastic block model) generator (`ember gen sbm`).
//
// Nodes 0 .. N-1 are assigned round-robin: node i belongs to block i % K, so
// block sizes differ by at most one and the assignment needs no memory or
// seed. The graph has round(N * D / 2) undirected edges, each written once
// as "<src>\t<dst>\n", so a node has about D incident edges. Each edge picks
// a uniform source node; then, with probability 1 - M, a uniform destination
// among the *other* nodes of the source's block, else a uniform destination
// among all nodes outside that block. There are no self-loops; duplicate
// edges are possible (and rare for sparse graphs).
//
// The labels file has one "<node>\t<block>\n" line per node, in node order.
//
// Edges are produced in fixed-size chunks; chunk k is a pure function of
// (seed, k, the options), so the output is identical for any thread count.
#ifndef EMBER_TOOLS_GEN_SBM_GENERATOR_H_
#define EMBER_TOOLS_GEN_SBM_GENERATOR_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tools/gen/gen_output.h"

namespace ember::tools::gen {

struct SbmOptions {
  // Node count N, >= 2 and <= 2^48. Default: 1000.
  uint64_t nodes = 1000;

  // Block count K, in [1, N]. Every block needs >= 2 nodes when mixing < 1
  // (intra-block edges), and K >= 2 when mixing > 0 (inter-block edges).
  // Default: 10.
  uint64_t blocks = 10;

  // Average degree D > 0; the graph has round(N * D / 2) edges (<= 2^48).
  // Default: 10.
  double avg_degree = 10;

  // Fraction M in [0, 1] of edges whose endpoints lie in different blocks.
  // Default: 0.1.
  double mixing = 0.1;

  // Random seed; the same seed (and options) gives byte-identical output.
  // Default: 0.
  uint64_t seed = 0;

  // Edges per generation chunk (the unit of parallelism and of determinism).
  // Range [1, 2^24]. Default: 2^20.
  uint64_t chunk_edges = uint64_t{1} << 20;

  absl::Status Validate() const;

  uint64_t num_edges() const;
  uint64_t num_chunks() const {
    return (num_edges() + chunk_edges - 1) / chunk_edges;
  }
  // Edges in chunk `index`: chunk_edges, except for a shorter last chunk.
  uint64_t chunk_size(uint64_t index) const;
  // The block of `node`: node % blocks.
  uint64_t block_of(uint64_t node) const { return node % blocks; }
};

// Replaces `*out` with the (src, dst) edges of chunk `chunk_index`, in
// output order. Pure: depends only on its arguments.
// REQUIRES: options.Validate().ok() and chunk_index < options.num_chunks().
void SbmChunk(const SbmOptions& options, uint64_t chunk_index,
              std::vector<std::pair<uint64_t, uint64_t>>* out);

// Appends chunk `chunk_index` to `*text` as "src\tdst\n" lines. Pure.
// REQUIRES: as for SbmChunk.
void AppendSbmChunkText(const SbmOptions& options, uint64_t chunk_index,
                        std::string* text);

// Validates the options, then streams the edges to `output.path` and the
// labels to `labels.path` (same overwrite/threads/progress settings as
// `output`, a ".gz" suffix compresses either file). Both files are written
// to temporaries and renamed only after both are complete; on failure
// neither path changes (except in the unlikely case that the second rename
// fails after the first succeeded). Fills `*stats` (edge file) if non-null.
absl::Status GenerateSbm(const SbmOptions& options,
                         const GenOutputOptions& output,
                         const std::string& labels_path,
                         GenStats* stats = nullptr);

}  // namespace ember::tools::gen

#endif  // EMBER_TOOLS_GEN_SBM_GENERATOR_H_
