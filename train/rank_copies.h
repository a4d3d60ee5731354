// Ranks that each train their own copy of the graph
// (TrainOptions::rank_copies): what the copies must agree on before a run
// starts, and where a rank's share of the partitions comes from. The
// checkpoint itself is RankLayout's (two phases: every rank's share
// durable in its copy, then rank 0's manifest, then the others'). Private
// to train/.
#ifndef EMBER_TRAIN_RANK_COPIES_H_
#define EMBER_TRAIN_RANK_COPIES_H_

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "storage/graph.h"
#include "train/distributed/checkpoint_writers.h"
#include "train/distributed/cluster.h"
#include "train/schedule/partition_buffer.h"

namespace ember {

// Before the copies are read: a rank whose copy's committed checkpoint is
// older than rank 0's, because it stopped between rank 0's commit and its
// own, takes rank 0's (its own share of it is durable in its copy by the
// protocol; checked). Every rank calls it; the first rank's error on every
// rank. A copy that is neither rank 0's checkpoint nor the one before it is
// left alone, for CheckRanksAgree to refuse. REQUIRES: `graph` read-write.
absl::Status RollForwardToRankZero(Cluster& cluster, Graph& graph);

// At a run's start: makes resident in `buffer` every partition p with
// holders[p] == this rank, from this rank's copy where its committed rows
// are here (or start fresh: `locations`[p] == 0), otherwise from the first
// rank whose copy has them, which reads and sends it. One partition at a
// time; `progress` after each. FailedPrecondition on every rank, naming the
// partition and the rank whose copy holds it, when no rank of this run has
// it. Every rank calls it with the same `holders`.
absl::Status LoadShareFromCopies(Cluster& cluster, const Graph& graph, PartitionBuffer& buffer,
                                 std::span<const uint32_t> holders, absl::Duration timeout,
                                 const std::function<void()>& progress);

// This rank's part in handing checkpoint partitions to their writers: for
// each p with writers[p] != holders[p], in partition order, the holder sends
// a copy and the writer writes it durably (ReceiveAndWrite); `written` after
// each of this rank's. Pairs proceed independently (each rank takes its
// partitions in the same order, so none waits on a rank waiting on it).
absl::Status HandOffForWriting(Cluster& cluster, PartitionBuffer& buffer,
                               std::span<const uint32_t> holders, std::span<const uint32_t> writers,
                               absl::Duration timeout, const std::function<void()>& written);

}  // namespace ember

#endif  // EMBER_TRAIN_RANK_COPIES_H_
