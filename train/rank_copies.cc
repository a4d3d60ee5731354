#include "train/rank_copies.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"
#include "train/model/checkpoint.h"
#include "train/model/featurized.h"
#include "train/model/train_state.h"
#include "train/rank_exchange.h"

namespace ember {
namespace {

// A training record as one string: three numbers on their own lines, then
// the state.
std::string EncodeRecord(const TrainingRecord& t) {
  return absl::StrCat(t.checkpoint_version, "\n", t.edge_generation, "\n", t.state_version, "\n",
                      t.state);
}

bool DecodeRecord(const std::string& text, TrainingRecord* t) {
  size_t at = 0;
  uint64_t numbers[3];
  for (uint64_t& n : numbers) {
    const size_t end = text.find('\n', at);
    if (end == std::string::npos) return false;
    if (!absl::SimpleAtoi(absl::string_view(text).substr(at, end - at), &n)) return false;
    at = end + 1;
  }
  t->checkpoint_version = numbers[0];
  t->edge_generation = static_cast<uint32_t>(numbers[1]);
  t->state_version = static_cast<uint32_t>(numbers[2]);
  t->state = text.substr(at);
  return true;
}

// This copy (rank `rank`'s) takes rank 0's record `zero_text` when it is
// the checkpoint after this copy's, written by ranks with their own copies.
absl::Status AdoptIfBehind(Graph& graph, const std::string& zero_text, uint32_t rank) {
  const TrainingRecord& mine = graph.manifest().training;
  TrainingRecord zero;
  if (!DecodeRecord(zero_text, &zero)) {
    return absl::DataLossError("rank 0 sent a training record that does not parse");
  }
  if (rank == 0 || zero.checkpoint_version != mine.checkpoint_version + 1 ||
      zero.edge_generation != graph.manifest().edge_generation) {
    return absl::OkStatus();
  }
  Manifest m = graph.manifest();
  m.training = zero;
  absl::StatusOr<TrainState> state = ReadTrainState(m, graph.dir() + "/MANIFEST.json");
  if (!state.ok() || state->partition_ranks.empty()) return absl::OkStatus();
  const uint64_t v = zero.checkpoint_version;
  auto lacks = [&](const std::string& what) {
    return absl::FailedPreconditionError(
        absl::StrCat(graph.dir(), " (rank ", rank, "'s copy) is one checkpoint behind rank 0's (",
                     v, ") but lacks ", what, " of it; give this rank the copy it trained"));
  };
  for (uint32_t p = 0; p < state->partition_ranks.size(); ++p) {
    if (state->partition_ranks[p] != rank || !HasIdRows(state->model.featurized)) continue;
    absl::StatusOr<uint64_t> rows =
        graph.TableRows(Table::kEmbeddings, p, state->partition_versions[p]);
    if (!rows.ok() || *rows != m.partition_sizes[p]) {
      return lacks(absl::StrCat("partition ", p, "'s rows"));
    }
  }
  if (!graph.ReadBlob(RelationBlobName(v)).ok()) return lacks("the relation parameters");
  state->copy_rank = rank;
  StoreTrainState(*state, v, &m);
  return graph.CommitTraining(m.training);
}

}  // namespace

absl::Status RollForwardToRankZero(Cluster& cluster, Graph& graph) {
  ASSIGN_OR_RETURN(const std::vector<std::string> all,
                   cluster.AllGather(EncodeRecord(graph.manifest().training)));
  return AgreeOnStatus(cluster, AdoptIfBehind(graph, all[0], cluster.rank()));
}

absl::Status HandOffForWriting(Cluster& cluster, PartitionBuffer& buffer,
                               std::span<const uint32_t> holders, std::span<const uint32_t> writers,
                               absl::Duration timeout, const std::function<void()>& written) {
  const uint32_t me = cluster.rank();
  for (uint32_t p = 0; p < holders.size(); ++p) {
    if (writers[p] == holders[p]) continue;
    if (me == holders[p]) {
      // Out of core, its rows may be in this rank's copy only.
      RETURN_IF_ERROR(
          SendCopyForWriting(cluster, buffer, p, writers[p], timeout, /*read_absent=*/true));
    } else if (me == writers[p]) {
      RETURN_IF_ERROR(ReceiveAndWrite(cluster, buffer, p, holders[p], timeout));
    } else {
      continue;
    }
    if (written) written();
  }
  return absl::OkStatus();
}

absl::Status LoadShareFromCopies(Cluster& cluster, const Graph& graph, PartitionBuffer& buffer,
                                 std::span<const uint32_t> holders, absl::Duration timeout,
                                 const std::function<void()>& progress) {
  const uint32_t me = cluster.rank();
  const uint32_t P = static_cast<uint32_t>(holders.size());
  TrainState state;
  absl::Status read = absl::OkStatus();
  if (graph.manifest().training.checkpoint_version > 0) {
    absl::StatusOr<TrainState> s = ReadTrainState(graph);
    if (s.ok()) state = std::move(*s);
    read = s.status();
  }
  RETURN_IF_ERROR(AgreeOnStatus(cluster, read));
  // '1' where this copy has partition p's rows (or p starts fresh).
  std::string here(P, '0');
  for (uint32_t p = 0; p < P; ++p) {
    if (buffer.locations()[p] == 0 || state.RowsHere(p)) here[p] = '1';
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> all, cluster.AllGather(here));
  for (uint32_t p = 0; p < P; ++p) {
    const uint32_t holder = holders[p];
    uint32_t source = holder;
    if (all[holder][p] != '1') {
      source = 0;
      while (source < all.size() && all[source][p] != '1') ++source;
    }
    if (source == all.size()) {
      const std::string where = state.partition_ranks.empty()
                                    ? std::string("another copy")
                                    : absl::StrCat("the copy of rank ", state.partition_ranks[p]);
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", p, "'s checkpointed rows are in ", where,
                       ", and no rank of this run of ", all.size(),
                       " has them; run as many ranks as the run that wrote them, or bring every "
                       "copy up to date with `ember gather`"));
    }
    absl::Status loaded = absl::OkStatus();
    if (me == source) loaded = buffer.Acquire(std::span<const uint32_t>(&p, 1), {});
    RETURN_IF_ERROR(AgreeOnStatus(cluster, loaded));
    if (source != holder) {
      const Transfer move{p, source, holder, false};
      ASSIGN_OR_RETURN(PendingMoves moves,
                       StartMoves(cluster, buffer, std::span<const Transfer>(&move, 1)));
      RETURN_IF_ERROR(FinishMoves(buffer, moves, timeout));
    }
    if (progress) progress();
  }
  return absl::OkStatus();
}

}  // namespace ember
