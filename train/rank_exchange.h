// What the training loop exchanges with the other ranks of a run across
// processes (cluster.h): partitions moved holder to holder before a round,
// partitions handed to rank 0 for a checkpoint, the graph-identity check
// and agreement on errors. Every function is collective unless it says
// otherwise: all ranks call it with the same arguments, in the same order.
#ifndef EMBER_TRAIN_RANK_EXCHANGE_H_
#define EMBER_TRAIN_RANK_EXCHANGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "storage/graph.h"
#include "train/distributed/cluster.h"
#include "train/distributed/rank_schedule.h"
#include "train/schedule/bucket_scheduler.h"
#include "train/schedule/partition_buffer.h"

namespace ember {

// Partition moves under way on this rank: the receives it posted and the
// sends it made.
struct PendingMoves {
  std::vector<std::pair<uint32_t, TransportHandle>> receives;  // partition, handle
  std::vector<TransportHandle> sends;
  uint64_t bytes_sent = 0;
};

// Starts this rank's part of `transfers`: posts its receives, and sends
// each partition it holds, which leaves `buffer`. The partitions sent must
// not be in use (no batch in flight on them).
// With `read_absent` (a rank out of core in its own copy), a partition to
// send that is not resident is read from the graph (TakeOrRead); without,
// that is an internal error.
absl::StatusOr<PendingMoves> StartMoves(Cluster& cluster, PartitionBuffer& buffer,
                                        std::span<const Transfer> transfers,
                                        bool read_absent = false);
// Waits for every move of `moves`, each within `timeout`; each partition
// received enters `buffer`. Call with no batch in flight.
absl::Status FinishMoves(PartitionBuffer& buffer, PendingMoves& moves, absl::Duration timeout);

// The transfers of `round` that may start while the round before trains
// (`overlapped`), or the others.
std::vector<Transfer> TransfersOf(const GlobalRound& round, bool overlapped);

// One partition of a checkpoint written by another rank than its holder:
// the holder sends a copy of resident partition p to rank `to`
// (SendCopyForWriting), which writes it under its buffer's write version
// and makes it durable (ReceiveAndWrite: PartitionBuffer::WriteCopy).
// With `read_absent`, a partition that is not resident is read from the
// graph (TakeOrRead) rather than refused.
absl::Status SendCopyForWriting(Cluster& cluster, PartitionBuffer& buffer, uint32_t p, uint32_t to,
                                absl::Duration timeout, bool read_absent = false);
absl::Status ReceiveAndWrite(Cluster& cluster, PartitionBuffer& buffer, uint32_t p, uint32_t from,
                             absl::Duration timeout);

// For a checkpoint: rank 0 writes every partition, one at a time in
// partition order, under `buffer`'s write version, and makes each durable
// before the next (PartitionBuffer::WriteDurably, WriteCopy): its own
// (holders[p] == 0) from its buffer, the others' from a copy their holder
// sends it (the holders keep theirs; `timeout` bounds each send and
// receive, of one partition). After each partition every rank agrees on
// the status so far (an error on any rank stops every rank there, with
// it) and calls written(p): progress, on every rank, for the rank
// watchdog, the holders waiting their turn included. Afterwards rank 0's
// buffer's locations() name a complete set of tables at the write
// version.
absl::Status WritePartitionsAtRankZero(Cluster& cluster, PartitionBuffer& buffer,
                                       std::span<const uint32_t> holders, absl::Duration timeout,
                                       const std::function<void(uint32_t)>& written);

// Whether every rank's graph directory is rank 0's (one shared path,
// reached perhaps by other names): rank 0 leaves a marker of a new name in
// it (storage/table_files.h), each rank looks for it in its own, and rank
// 0 then removes it. False when any rank does not see it (a copy per
// machine, or a file system that does not show it to that rank yet): the
// ranks then checkpoint through rank 0. Every rank calls it; the first
// rank's error on every rank. REQUIRES: rank 0's graph read-write, nothing
// staged in it yet.
absl::StatusOr<bool> SharesRankZeroGraph(Cluster& cluster, Graph& graph);

// Every rank's `mine`; the first error by rank, naming the rank and where
// it runs, on every rank (OK when every rank is OK).
absl::Status AgreeOnStatus(Cluster& cluster, const absl::Status& mine);

// One setting of a run across ranks that every rank must share, because it
// shapes the schedule or the model (the training loop lists them).
struct RankSetting {
  // As a refusal names it: "--dim".
  std::string option;
  // Compared across ranks: "32".
  std::string value;
  // Shown after the value in a refusal, not compared: " partitions (from
  // --memory-budget 64 MiB)". Default: none.
  std::string detail;
  // What the refusal asks every rank to be given alike. Default (empty):
  // `option`.
  std::string fix;
};

// FailedPrecondition, on every rank, when the ranks' copies of the graph
// differ (nodes, partitions, edges per split, edge generation, relations,
// committed checkpoint) or a setting of `settings` differs (every rank
// passes the same settings in the same order, each with its own value); it
// names both ranks, where they run, their graph directories and what
// differs, with both values.
absl::Status CheckRanksAgree(Cluster& cluster, const Graph& graph,
                             std::span<const RankSetting> settings);

// The holders at the start of epoch `epoch` of a run whose epoch 0 starts
// from DefaultHolders: each epoch starts where the one before ended.
absl::StatusOr<std::vector<uint32_t>> HoldersAtEpoch(RankScheduleOptions options, int epoch);

}  // namespace ember

#endif  // EMBER_TRAIN_RANK_EXCHANGE_H_
