// `ember import --node-features FILE`: sparse node features.
//
// A feature file (plain or gzip, detected from its bytes) has one line per
// node:
//
//   node<TAB>feat[:weight] feat[:weight] ...
//
// The node field ends at the first tab (or, in a line without tabs, at the
// first space); features are separated by runs of spaces and tabs. Feature
// names are strings (integers are names too: "17" is the name "17"); they
// are valid UTF-8 without control characters. A weight follows the *last*
// ':' of a token and defaults to 1, so a name containing ':' needs an
// explicit weight ("a:b:1"). Weights are finite floats (zero and negative
// allowed). Blank lines and comments ('#' or '%') are skipped as in edge
// files; a line with a node and no features is accepted and stores nothing.
//
// Rules:
//  - Feature ids are dense u32s in order of first appearance (files in
//    order, lines in order), so they are deterministic for given input.
//  - A feature repeated within one line is stored once with the weights
//    summed; a node's entries are stored sorted by feature id.
//  - A node not in the graph (no edge mentions it) is skipped and counted as
//    `unknown_nodes`; this is not an error, even without skip_bad_lines.
//  - A node listed on two lines is a bad line (`duplicate_node`) at the
//    second one: the first line wins. Merging is not supported because rows
//    may already have been written to a sorted run.
//  - Any other bad line fails the import with "file:line: reason in '...'",
//    or, with skip_bad_lines, is counted by reason and skipped.
//
// Memory: the key -> slot table of all nodes (17 bytes per node), one bit
// per node for duplicate detection, a hash map of feature names (about
// 2x the name bytes + 40 bytes per feature: fine up to tens of millions of
// features) and a row buffer of about a quarter of the memory budget, which
// is flushed as one sorted run per partition whenever it fills.
//
// Storage: rows go through GraphBuilder::NewFeatureRun and the vocabulary
// through GraphBuilder::WriteFeatureVocabulary (one name per line; line i is
// feature id i).
#ifndef EMBER_PARTITION_FEATURE_IMPORT_H_
#define EMBER_PARTITION_FEATURE_IMPORT_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ember {

class GraphBuilder;

// Why a feature line was rejected; reported as "file:line: <text>".
enum class FeatureRejectReason : uint8_t {
  kEmptyNode = 0,     // no node field
  kBadNodeId,         // not a non-negative 64-bit integer (--integer-ids)
  kInvalidNode,       // control bytes or invalid UTF-8 in the node name
  kBadFeature,        // empty feature name, control bytes or invalid UTF-8
  kBadWeight,         // the text after ':' is not a number
  kNonFiniteWeight,   // inf or nan
  kDuplicateNode,     // the node already had a feature line
  kCount,
};
inline constexpr int kNumFeatureRejectReasons =
    static_cast<int>(FeatureRejectReason::kCount);
// e.g. "bad_weight".
std::string_view FeatureRejectReasonName(FeatureRejectReason reason);

struct FeatureImportOptions {
  // Feature files, read in order. Default: none.
  std::vector<std::string> files;
  // Node fields are non-negative integers (as the edge import's).
  // Default: false.
  bool integer_ids = false;
  // Count bad lines by reason and go on instead of failing. Default: false.
  bool skip_bad_lines = false;
  // Peak memory target for the import as a whole; the row buffer takes
  // about a quarter of it. Default: 2 GiB.
  uint64_t memory_budget = 2ull << 30;
  // Row buffer size in bytes; 0: a quarter of memory_budget (at least
  // 1 MiB). Tests set it small to get several runs per partition.
  // Default: 0.
  uint64_t buffer_bytes = 0;

  // InvalidArgument for a zero memory_budget.
  absl::Status Validate() const;
};

struct FeatureImportSummary {
  uint64_t vocab_size = 0;           // distinct feature names (ids)
  uint64_t nodes_with_features = 0;  // accepted node lines
  uint64_t nonzeros = 0;             // stored (node, feature) entries
  uint64_t lines = 0;                // data lines read
  uint64_t unknown_nodes = 0;        // lines whose node is not in the graph
  std::array<uint64_t, kNumFeatureRejectReasons> rejected{};
  uint64_t runs_written = 0;         // sorted runs (buffer flushes x parts)
};

// Reads the feature files and writes shard-<p>/features runs and the
// `feature-vocab` blob through `builder`. `slot_file` holds the import's
// key -> slot records ({u64 key, u64 PackSlot}, host order, ascending key);
// `partition_sizes` are the graph's partition sizes.
// REQUIRES: the builder is not an append builder.
absl::StatusOr<FeatureImportSummary> ImportNodeFeatures(
    GraphBuilder* builder, const std::string& slot_file,
    const std::vector<uint64_t>& partition_sizes,
    const FeatureImportOptions& options);

}  // namespace ember

#endif  // EMBER_PARTITION_FEATURE_IMPORT_H_
