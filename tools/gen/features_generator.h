// Synthetic sparse node features for a planted-partition graph
// (`ember gen features --labels FILE --out FILE [--vocab V] [--seed S]`).
//
// Input: the labels file of `ember gen sbm` ("<node>\t<block>\n" lines,
// plain or gzip; blank and '#'/'%' lines skipped; blocks are non-negative
// integers). K = 1 + the largest block.
//
// Output: one "<node>\t<feat> <feat>:<w> ...\n" line per labelled node, in
// the labels' order, the format `ember import --node-features` reads.
// Feature names are "f<id>" with id in [0, V).
//
// Per node (the i-th data line of the labels file):
//  - nnz = floor(U^(-1/alpha)) for U uniform in (0, 1], a discrete Pareto
//    tail (P(nnz >= k) = k^-alpha), clamped to [1, min(max_nnz, V)]: with
//    alpha = 1.2 about 56% of nodes have 1 feature, 90% at most 6, and one
//    node in ~4000 has 1000 or more.
//  - each feature comes, with probability topic_fraction, from the node's
//    block's topic, else uniformly from [0, V). The topic of block b is the
//    slice [b*V/K, (b+1)*V/K) when V >= K, else {b mod V}; inside the slice
//    the draw is skewed towards its start (index = floor(size * u^2)) so
//    that topics have popular features. A node's features are distinct
//    (a few redraws; a very small vocabulary may give fewer than nnz).
//  - a weight is 1 (written as the bare name) with probability 1/2, else
//    k/4 for k uniform in 1..8 (written "name:w", exact in binary).
// Everything about node i is a pure function of (seed, i, options, K), so
// the output is byte-identical for a given seed.
#ifndef EMBER_TOOLS_GEN_FEATURES_GENERATOR_H_
#define EMBER_TOOLS_GEN_FEATURES_GENERATOR_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "tools/gen/gen_output.h"

namespace ember::tools::gen {

struct FeaturesOptions {
  // Vocabulary size V, in [1, 2^32 - 1]. Default: 100000.
  uint64_t vocab = 100000;
  // Tail exponent alpha > 0 of the non-zeros per node. Default: 1.2.
  double nnz_alpha = 1.2;
  // Upper clamp of non-zeros per node, >= 1. Default: 4096.
  uint32_t max_nnz = 4096;
  // Probability in [0, 1] that a feature comes from the block's topic.
  // Default: 0.8.
  double topic_fraction = 0.8;
  // Random seed. Default: 0.
  uint64_t seed = 0;

  absl::Status Validate() const;
};

// The topic slice [*begin, *begin + *size) of `block` among `blocks`.
void FeatureTopic(uint64_t vocab, uint64_t blocks, uint64_t block,
                  uint64_t* begin, uint64_t* size);

// Appends node `index`'s line ("<node>\t...\n") to *out; returns its nnz.
// Pure. REQUIRES: options.Validate().ok(), block < blocks.
uint64_t AppendFeatureLine(const FeaturesOptions& options, uint64_t blocks,
                           uint64_t index, std::string_view node,
                           uint64_t block, std::string* out);

// Reads `labels_path` twice (K, then the lines) and writes the feature file
// to `output.path` atomically (temporary + rename; ".gz" compresses). On
// failure `output.path` is unchanged. Errors in the labels file name
// file:line. stats: nodes = lines written, edges = total non-zeros.
absl::Status GenerateFeatures(const FeaturesOptions& options,
                              const std::string& labels_path,
                              const GenOutputOptions& output,
                              GenStats* stats = nullptr);

}  // namespace ember::tools::gen

#endif  // EMBER_TOOLS_GEN_FEATURES_GENERATOR_H_
