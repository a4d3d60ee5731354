// Graph500-style R-MAT edge-list generator (`ember gen rmat`).
//
// The graph has 2^scale nodes and edge_factor * 2^scale directed edges. Each
// edge descends `scale` levels of the adjacency matrix, choosing a quadrant
// per level with probabilities a=0.57 (top-left), b=0.19 (top-right),
// c=0.19 (bottom-left), d=0.05 (bottom-right); the source takes the row bit,
// the destination the column bit, most significant bit first. Like Graph500
// the generator keeps self-loops and duplicate edges and adds no per-level
// noise. Node ids are then passed through a seeded bijection of the
// scale-bit id space (RmatIdScrambler) so that high-degree nodes are spread
// over the id range.
//
// Hubs (optional): K = `hubs` of the nodes get a very high degree. Hub h
// (h < K) is node HubId(h), K distinct ids spread by a seeded bijection,
// and has an edge to each of hub_edges() = round(hub_fraction * 2^scale)
// distinct nodes (another seeded bijection of the id space, per hub): edges
// (src hub, dst node), hub by hub, after the R-MAT edges. A hub's targets may
// include the hub itself (a self-loop, as R-MAT keeps them) and nodes that
// R-MAT already links to it.
//
// Edges are produced in fixed-size chunks; chunk k is a pure function of
// (seed, k, the options), so the output is identical for any thread count.
// It does depend on `chunk_edges`, which is part of the stream's identity.
//
// Output format, one edge per line:
//   relations <= 1:  "<src>\t<dst>\n"
//   relations  > 1:  "<src>\tr<k>\t<dst>\n"   with k uniform in [0, relations)
#ifndef EMBER_TOOLS_GEN_RMAT_GENERATOR_H_
#define EMBER_TOOLS_GEN_RMAT_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/gen/gen_output.h"

namespace ember::tools::gen {

struct RmatOptions {
  // log2 of the node count; ids lie in [0, 2^scale). Range [1, 40].
  // Default: 16.
  int scale = 16;

  // Edges per node: the graph has edge_factor * 2^scale edges. >= 1, and the
  // edge count must not exceed 2^48. Default: 16.
  uint64_t edge_factor = 16;

  // Number of relation types. 1 writes two-column lines; R > 1 writes
  // three-column lines with relation names r0 .. r{R-1}. Range [1, 2^20].
  // Default: 1.
  uint32_t relations = 1;

  // Quadrant probabilities; d = 1 - a - b - c. Each in [0, 1] with
  // a + b + c <= 1. Default: Graph500's 0.57 / 0.19 / 0.19.
  double a = 0.57;
  double b = 0.19;
  double c = 0.19;

  // Random seed; the same seed (and options) gives byte-identical output.
  // Default: 0.
  uint64_t seed = 0;

  // Apply the id-scrambling bijection. Tests turn it off to see the raw
  // quadrant structure. Default: true.
  bool scramble = true;

  // Edges per generation chunk (the unit of parallelism and of determinism).
  // Range [1, 2^24]. Default: 2^20.
  uint64_t chunk_edges = uint64_t{1} << 20;

  // Hub nodes added on top of the R-MAT edges, in [0, 2^scale]. Default: 0.
  uint64_t hubs = 0;

  // Share of all nodes each hub links to, in (0, 1]; with hubs > 0 it must
  // give at least one edge per hub. Default: 0.02.
  double hub_fraction = 0.02;

  absl::Status Validate() const;

  uint64_t num_nodes() const { return uint64_t{1} << scale; }
  // The R-MAT edges, then hubs * hub_edges() hub edges.
  uint64_t num_rmat_edges() const { return edge_factor << scale; }
  uint64_t hub_edges() const;
  uint64_t num_edges() const { return num_rmat_edges() + hubs * hub_edges(); }
  // The node id of hub `h`. REQUIRES: h < hubs.
  uint64_t HubId(uint64_t h) const;
  uint64_t num_chunks() const {
    return (num_edges() + chunk_edges - 1) / chunk_edges;
  }
  // Edges in chunk `index`: chunk_edges, except for a shorter last chunk.
  uint64_t chunk_size(uint64_t index) const;
};

struct RmatEdge {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint32_t relation = 0;  // 0 when relations <= 1
};

// A seeded bijection of [0, 2^scale): two rounds of "multiply by an odd
// constant mod 2^scale, then xor-shift right". Immutable and thread-safe.
class RmatIdScrambler {
 public:
  // REQUIRES: 1 <= scale <= 63.
  RmatIdScrambler(int scale, uint64_t seed);

  // REQUIRES: id < 2^scale. The result is < 2^scale, and distinct ids map to
  // distinct results.
  uint64_t operator()(uint64_t id) const {
    id = (id * mul1_) & mask_;
    id ^= id >> shift_;
    id = ((id + add_) * mul2_) & mask_;
    id ^= id >> shift_;
    return id;
  }

 private:
  uint64_t mask_;
  uint64_t mul1_;
  uint64_t mul2_;
  uint64_t add_;
  int shift_;
};

// Replaces `*out` with the edges of chunk `chunk_index`, in output order.
// Pure: depends only on its arguments.
// REQUIRES: options.Validate().ok() and chunk_index < options.num_chunks().
void RmatChunk(const RmatOptions& options, uint64_t chunk_index,
               std::vector<RmatEdge>* out);

// Appends chunk `chunk_index` to `*text` in the output format above. Pure.
// REQUIRES: as for RmatChunk.
void AppendRmatChunkText(const RmatOptions& options, uint64_t chunk_index,
                         std::string* text);

// Validates both option sets, then streams the whole graph to
// `output.path` (atomically: nothing appears there on failure). Memory stays
// bounded by a few chunks per thread. Fills `*stats` if non-null.
absl::Status GenerateRmat(const RmatOptions& options,
                          const GenOutputOptions& output,
                          GenStats* stats = nullptr);

}  // namespace ember::tools::gen

#endif  // EMBER_TOOLS_GEN_RMAT_GENERATOR_H_
