// The training loop's checkpoints: restoring the committed one at the start
// of a run, and writing new ones — the buffer's rows, the relation
// parameters and feature table, then the manifest naming them with the
// TrainState (train/model/train_state.h) — dropping what only the one
// before used. The layout is checkpoint.h's.
#ifndef EMBER_TRAIN_CHECKPOINTER_H_
#define EMBER_TRAIN_CHECKPOINTER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "train/model/checkpoint.h"
#include "train/model/feature_table.h"
#include "train/model/train_state.h"
#include "train/options/train_options.h"
#include "train/schedule/partition_buffer.h"

namespace ember {

// What of a run a checkpoint stopped mid-epoch must match to resume.
struct RunShape {
  uint32_t buffer_partitions = 0;
  uint32_t round_size = 0;
  uint32_t world_size = 1;
  uint32_t round_lookahead = kOutOfCoreLookahead;  // RoundLookahead
};

// An epoch-end checkpoint copied off the buffer (every partition resident
// in host memory), for Checkpointer::WriteCopied to write while training
// goes on: what it holds no longer changes as training does.
struct CopiedCheckpoint {
  struct Rows {
    uint32_t partition = 0;
    uint64_t rows = 0;
    std::vector<float> embeddings, optimizer;  // empty without id rows
  };
  std::vector<Rows> partitions;  // every partition of the graph
  RelationParams relations;
  int epochs_done = 0;  // the checkpoint resumes at epoch epochs_done, round 0
  uint64_t bytes() const;
};

// Where a run starts.
struct RestoredCheckpoint {
  bool resumed = false;  // false: from scratch (none, --from-scratch, in memory)
  int start_epoch = 0;
  uint64_t start_round = 0;
  // Resumed runs: the stored relation parameters (as many relations as the
  // checkpoint had) and, for featurized models, the feature table.
  RelationParams relations;
  std::optional<FeatureTable> features;
  // Table version to load each partition's rows from (0: initialise them).
  std::vector<uint64_t> locations;
};

class Checkpointer {
 public:
  // `graph` must outlive this. `writer`: this process writes the
  // checkpoints (one process, or rank 0 across ranks).
  Checkpointer(Graph* graph, const TrainOptions& options, const RunShape& shape, bool writer);

  // Reads the committed checkpoint unless options.in_memory; the writer
  // first removes what interrupted checkpoints left. FailedPrecondition
  // naming the graph when the stored model or a mid-epoch position does not
  // match this run (without from_scratch); ReadTrainState's errors.
  absl::StatusOr<RestoredCheckpoint> Restore();

  // The writer only (OK for others and in memory): ResourceExhausted,
  // naming the bytes needed and free, when the disk cannot take the next
  // checkpoint beside the committed one.
  absl::Status CheckSpace() const;

  // Writes checkpoint write_version() — the buffer's resident rows,
  // `relations`, `features` (null: not featurized) and the state: epoch
  // `epoch`, resuming at round `next_round` (0: the next epoch), with
  // `epochs_done` — commits the manifest, then drops what only the
  // checkpoint before used, and checks the space for the next one when
  // more training follows. `rows_written`: every partition's rows are
  // written and durable at write_version() already (across ranks sharing
  // rank 0's graph: rank 0's share written, the others' taken in,
  // PartitionBuffer::TakeInStaged), and the buffer's locations() name them.
  absl::Status Write(PartitionBuffer* buffer, const RelationParams& relations,
                     const FeatureTable* features, int epoch, uint64_t next_round, int epochs_done,
                     bool rows_written = false);
  // Copies every partition's rows (REQUIRES: all resident, host copies
  // current, no batch in flight) and `relations` into *copy for
  // WriteCopied, reusing its memory: a copy kept from one checkpoint to the
  // next is not faulted in again.
  static void Copy(PartitionBuffer* buffer, uint32_t partitions, const RelationParams& relations,
                   int epochs_done, CopiedCheckpoint* copy);
  // Writes `copy` as checkpoint write_version() and commits it, as Write
  // does at an epoch end, without touching the buffer: the caller then
  // calls buffer->MarkWritten(committed_version()) and
  // buffer->set_write_version(write_version()). May run on another thread
  // while training goes on, provided that nothing else calls this
  // Checkpointer or writes the graph's tables until it returns. Models
  // without features only.
  absl::Status WriteCopied(const CopiedCheckpoint& copy);
  // Ranks that checkpoint into their own copies of the graph
  // (TrainOptions::rank_copies), in two phases. WriteShare, once the rank
  // has written the partitions of its share it holds in memory
  // (PartitionBuffer::WriteDurably): makes durable the tables of the rest
  // of its share, `unsynced` (partitions out of core, written at their
  // eviction), and writes the relations and the features (null: not
  // featurized) as checkpoint write_version(); other shards are left
  // alone, so a rank's checkpoint costs its share, not P.
  // CommitShare, once every rank's share is durable (rank 0
  // first: its commit is the checkpoint's): commits this copy's manifest
  // naming every partition at table version locations[p] (write_version(),
  // or older for a partition out of core since) in the copy of rank
  // partition_ranks[p], this copy being rank copy_rank's; then drops what
  // only the checkpoint before used and counts the new one as committed.
  absl::Status WriteShare(std::span<const uint32_t> unsynced, const RelationParams& relations,
                          const FeatureTable* features);
  // `in_use`: per partition, a table version of this copy that this rank's
  // buffer still reads (a partition it holds out of core and handed to
  // another rank to write), kept though the checkpoint names another; 0:
  // none.
  absl::Status CommitShare(const std::vector<uint32_t>& partition_ranks,
                           const std::vector<uint64_t>& locations,
                           const std::vector<uint64_t>& in_use, uint32_t copy_rank, int epoch,
                           uint64_t next_round, int epochs_done);
  // Counts checkpoint write_version() as committed (by Write, or on ranks
  // other than the writer, by the writer): the next is written one above.
  void CountCommitted(PartitionBuffer* buffer);

  uint64_t committed_version() const { return committed_version_; }
  uint64_t write_version() const { return write_version_; }

 private:
  // With every partition's tables written at write_version() (`locations`
  // naming them): WriteBlobs, every table durable, then CommitRecord.
  absl::Status Commit(const std::vector<uint64_t>& locations, const RelationParams& relations,
                      const FeatureTable* features, int epoch, uint64_t next_round,
                      int epochs_done);
  // Writes the relations and features as checkpoint write_version(),
  // durably (atomic files); FailedPrecondition, writing nothing, when a
  // relation parameter is NaN or infinite (a diverged model).
  absl::Status WriteBlobs(const RelationParams& relations, const FeatureTable* features);
  // Commits the manifest naming `locations` (and, across own copies,
  // `partition_ranks` and `copy_rank`: TrainState), drops what only the old
  // checkpoint used, counts the new one as committed, and checks the space
  // for the next one when more training follows.
  absl::Status CommitRecord(const std::vector<uint64_t>& locations, int epoch, uint64_t next_round,
                            int epochs_done, const std::vector<uint32_t>& partition_ranks = {},
                            uint32_t copy_rank = 0, const std::vector<uint64_t>& in_use = {});
  // FailedPrecondition unless `stored` may resume under this run's options.
  absl::Status CheckResumable(const StoredModel& stored) const;

  Graph* const graph_;
  const TrainOptions options_;
  const RunShape shape_;
  const bool writer_;
  std::vector<uint64_t> committed_locations_;  // what the manifest references
  uint64_t committed_version_ = 0;
  uint64_t write_version_ = 1;
};

}  // namespace ember

#endif  // EMBER_TRAIN_CHECKPOINTER_H_
