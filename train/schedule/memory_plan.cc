#include "train/schedule/memory_plan.h"

#include <algorithm>
#include <span>

#include "absl/strings/str_cat.h"
#include "partition/train_memory.h"
#include "storage/base/status_macros.h"
#include "storage/types.h"

namespace ember {

absl::StatusOr<TrainMemoryPlan> PlanTrainMemory(const TrainMemoryInput& in) {
  const TrainMemoryShares shares = SplitTrainBudget(in.budget);
  const uint32_t P = static_cast<uint32_t>(in.partition_sizes.size());
  TrainMemoryPlan plan;
  plan.storage_bytes = shares.storage;
  for (uint32_t p = 0; p < P; ++p) {
    const uint64_t nodes = in.partition_sizes[p];
    uint64_t bytes = in.id_rows ? nodes * RowBytesPerNode(in.dim) : 0;
    if (in.features) {
      const uint64_t entries =
          p < in.partition_feature_entries.size() ? in.partition_feature_entries[p] : 0;
      bytes += (nodes + 1) * sizeof(uint64_t) + entries * sizeof(FeatureEntry);
    }
    plan.partition_bytes = std::max(plan.partition_bytes, bytes);
  }
  plan.partition_bytes = std::max<uint64_t>(plan.partition_bytes, 1);
  plan.rows_bytes = shares.rows > in.feature_table_bytes ? shares.rows - in.feature_table_bytes : 0;
  const uint64_t fit = std::min<uint64_t>(P, plan.rows_bytes / plan.partition_bytes);
  const uint32_t needed = std::min<uint32_t>(P, 2);
  if (in.requested_buffer > 0) {
    const uint32_t asked = std::clamp<uint32_t>(in.requested_buffer, needed, P);
    if (asked > fit) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--buffer-partitions ", asked, " needs ", Mib(asked * plan.partition_bytes),
          " for partition rows, but --memory-budget ", Mib(in.budget), " leaves ",
          Mib(plan.rows_bytes), " for them (5/8 of the budget",
          in.feature_table_bytes > 0 ? ", less the feature table" : "",
          "); lower --buffer-partitions to ", std::max<uint64_t>(fit, needed),
          " or raise --memory-budget"));
    }
    plan.buffer_partitions = asked;
  } else if (fit < needed) {
    const uint32_t auto_p = AutoPartitions(in.num_nodes, in.dim, in.budget);
    return absl::FailedPreconditionError(absl::StrCat(
        in.graph_dir, ": training needs ", needed, " partition", needed > 1 ? "s" : "",
        " of up to ", Mib(plan.partition_bytes), " in memory at once, but --memory-budget ",
        Mib(in.budget), " leaves ", Mib(plan.rows_bytes),
        " for partition rows (5/8 of the budget",
        in.feature_table_bytes > 0 ? ", less the feature table" : "", "). Re-import with "
        "--partitions ", std::max<uint32_t>(auto_p, P + 1), " (ember import --partitions auto "
        "--dim ", in.dim, " --memory-budget ", Mib(in.budget),
        " picks it), or raise --memory-budget to ",
        Mib((needed * plan.partition_bytes + in.feature_table_bytes) * 8 / 5 + 1)));
  } else {
    plan.buffer_partitions = static_cast<uint32_t>(fit);
  }
  const uint64_t depth = static_cast<uint64_t>(std::max(1, in.reader_depth));
  plan.max_windows = in.round_buckets * (2 * (depth + 1) + 1) + in.tokens;
  plan.window_edges =
      in.window_edges > 0
          ? in.window_edges
          : std::clamp<uint64_t>(shares.edges / (sizeof(Edge) * plan.max_windows), 1024,
                                 uint64_t{1} << 30);
  return plan;
}

absl::StatusOr<std::vector<uint64_t>> PartitionFeatureEntries(const Graph& graph) {
  const Manifest& m = graph.manifest();
  std::vector<uint64_t> entries(m.num_partitions, 0);
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    RETURN_IF_ERROR(graph.ForEachNodeFeatures(
        p, [&](uint32_t, std::span<const FeatureEntry> e) {
          entries[p] += e.size();
          return absl::OkStatus();
        }));
  }
  return entries;
}

}  // namespace ember
