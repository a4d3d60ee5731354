// `ember inspect`: a description of a graph directory, for people or as JSON.
#ifndef EMBER_TOOLS_EXPORT_INSPECT_H_
#define EMBER_TOOLS_EXPORT_INSPECT_H_

#include <string>

#include "absl/status/statusor.h"
#include "storage/graph.h"

namespace ember::tools {

// The graph as a JSON object (pretty-printed, ends with a newline). Keys:
//   dir, format_version, edge_weights ({min, mean, max} of a weighted
//   graph's edge weights, else null), nodes, integer_ids, edges {train, valid, test,
//   total}, relations [names], num_relations, partitions, partitions_auto
//   ({dim, memory_budget} when import --partitions auto chose P, else null),
//   partitioner, seed,
//   partition_sizes [P], buckets [P][P] train edges per bucket (row: source
//   partition; null when the manifest has no bucket counts), num_features,
//   degree {min, max, mean, p50, p90, p99}, bytes_on_disk [P] (per shard),
//   bytes_on_disk_total, training {checkpoint_version, epochs_done, dim,
//   state}.
absl::StatusOr<std::string> InspectJson(const Graph& graph);

// The same facts for people. Matrices and per-partition lists are printed
// in full when P <= 16 and summarised (min / max / mean) otherwise.
std::string InspectText(const Graph& graph);

}  // namespace ember::tools

#endif  // EMBER_TOOLS_EXPORT_INSPECT_H_
