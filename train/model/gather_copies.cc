#include "train/model/gather_copies.h"

#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"
#include "storage/graph.h"
#include "train/model/featurized.h"
#include "train/model/train_state.h"

namespace ember {
namespace {

// A copy of rank copy_rank's, open read-only.
struct Copy {
  std::unique_ptr<Graph> graph;
  TrainState state;
};

// The copy at `path` as a source for `dest` (whose state is `want`).
absl::StatusOr<Copy> OpenCopy(const std::string& path, const Graph& dest, const TrainState& want) {
  Copy c;
  ASSIGN_OR_RETURN(c.graph, Graph::Open(path));
  const Manifest& m = c.graph->manifest();
  const Manifest& d = dest.manifest();
  if (m.num_partitions != d.num_partitions || m.partition_sizes != d.partition_sizes ||
      m.edge_generation != d.edge_generation) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is a copy of another graph than ", dest.dir(),
                     " (its partitions, their sizes or its edge generation differ)"));
  }
  if (m.training.checkpoint_version != d.training.checkpoint_version) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " holds checkpoint ", m.training.checkpoint_version, " and ", dest.dir(),
        " checkpoint ", d.training.checkpoint_version,
        "; gather copies of one checkpoint (a copy one behind is brought up to date by the "
        "next `mpirun ... ember train` of the same copies)"));
  }
  ASSIGN_OR_RETURN(c.state, ReadTrainState(*c.graph));
  if (c.state.partition_ranks != want.partition_ranks) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " places the partitions' rows on other ranks than ", dest.dir(),
                     " does: not a copy of the same run"));
  }
  return c;
}

}  // namespace

absl::StatusOr<GatherReport> GatherCopies(const std::string& dest,
                                          const std::vector<std::string>& copies) {
  GraphOpenOptions open;
  open.read_only = false;
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Open(dest, open));
  const Manifest& m = graph->manifest();
  GatherReport report;
  if (m.training.checkpoint_version == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(dest, " has no checkpoint to gather; run `ember train` first"));
  }
  ASSIGN_OR_RETURN(TrainState state, ReadTrainState(*graph));
  if (state.partition_ranks.empty()) {
    RETURN_IF_ERROR(graph->Close());
    return report;  // whole already
  }
  std::map<uint32_t, Copy> by_rank;
  for (const std::string& path : copies) {
    ASSIGN_OR_RETURN(Copy c, OpenCopy(path, *graph, state));
    const uint32_t rank = c.state.copy_rank;
    if (by_rank.count(rank) > 0 || rank == state.copy_rank) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " is rank ", rank, "'s copy, and so is ",
          rank == state.copy_rank ? dest : by_rank[rank].graph->dir(), "; name each copy once"));
    }
    by_rank.emplace(rank, std::move(c));
  }
  const uint32_t dim = static_cast<uint32_t>(state.model.dim);
  const bool id_rows = HasIdRows(state.model.featurized);
  std::vector<float> rows;
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    if (state.RowsHere(p)) continue;
    const uint32_t rank = state.partition_ranks[p];
    auto it = by_rank.find(rank);
    if (it == by_rank.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", p, "'s rows are in rank ", rank,
                       "'s copy, which is not among the "
                       "copies given; name every rank's copy (ember gather ",
                       dest, " COPY...)"));
    }
    const Graph& from = *it->second.graph;
    const uint64_t version = state.partition_versions[p];
    if (id_rows) {
      ASSIGN_OR_RETURN(const uint64_t n, from.TableRows(Table::kEmbeddings, p, version));
      for (const auto& [table, width] :
           {std::pair{Table::kEmbeddings, dim}, std::pair{Table::kOptimizer, 1u}}) {
        rows.resize(n * width);
        RETURN_IF_ERROR(from.ReadTable(table, p, version, rows.data(), n, width));
        RETURN_IF_ERROR(graph->WriteTable(table, p, version, rows.data(), n, width));
        report.bytes += rows.size() * sizeof(float);
      }
    }
    ++report.partitions;
  }
  RETURN_IF_ERROR(graph->SyncTables());
  state.partition_ranks.clear();
  state.copy_rank = 0;
  Manifest updated = m;
  StoreTrainState(state, m.training.checkpoint_version, &updated);
  RETURN_IF_ERROR(graph->CommitTraining(updated.training));
  RETURN_IF_ERROR(graph->Close());
  return report;
}

}  // namespace ember
