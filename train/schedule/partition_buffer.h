// The partition buffer: up to `capacity` partitions' embeddings and
// optimizer state in memory. Partitions are loaded from the table version
// that holds them (or initialised), evicted by Belady's rule over the known
// future of the bucket schedule, and written back under the current write
// version. One background load/evict may run on the run's I/O executor
// while training goes on.
//
// Partitions that batches train are pinned (Pin): a pinned partition is
// never evicted, taken or replaced, however the buffer's loads and the
// batches in flight interleave; the pin is released when its holder (a
// bucket's task, shared by the bucket's batches) ends.
//
// Thread-safety: Acquire, Prefetch, WriteResident, Quiesce, Take, Put and
// Pin are called from one thread at a time (the scheduler's); Get and the
// release of a pin may come from any thread.
#ifndef EMBER_TRAIN_SCHEDULE_PARTITION_BUFFER_H_
#define EMBER_TRAIN_SCHEDULE_PARTITION_BUFFER_H_

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "storage/base/mutex.h"
#include "storage/graph.h"
#include "train/schedule/io_executor.h"
#include "train/trainers/row_residency.h"
#include "train/trainers/trainer.h"

namespace ember {

struct PartitionBufferOptions {
  // Partitions in memory; >= 1. Default: 2.
  uint32_t capacity = 2;
  // Floats per row; >= 1. Default: 100.
  int dim = 100;
  // Std-dev of the normal init of never-trained partitions; finite, >= 0.
  // Default: 1e-3.
  float init_scale = 1e-3f;
  // Seed of that init. Default: 0.
  uint64_t seed = 0;
  // Rows below frozen_rows[p] are never updated. Default: empty (none
  // frozen).
  std::vector<uint64_t> frozen_rows;
  // Whether partitions have id rows (kept in Table::kEmbeddings and
  // kOptimizer); false for FeaturizedMode::kFeatures, whose partitions
  // hold only their features and write no tables.
  bool id_rows = true;
  // Load each partition's node features with it (featurized models).
  // Default: false.
  bool features = false;
  // This process does not own the graph (a rank other than 0 sharing rank
  // 0's graph directory, opened read-only): a partition written for a
  // checkpoint (WriteDurably, WriteCopy) goes to table files beside the
  // graph (storage/table_files.h) for the graph's writer to take in
  // (TakeInStaged), not into its shards. REQUIRES: no partition is ever
  // evicted (every partition this process holds stays resident).
  // Default: false.
  bool stage_tables = false;

  // InvalidArgument naming the first field out of range.
  absl::Status Validate() const;
};

class PartitionBuffer;

// A hold on one resident partition (PartitionBuffer::Pin); releases it when
// destroyed. Move-only; must not outlive its buffer.
class PartitionPin {
 public:
  PartitionPin() = default;
  PartitionPin(PartitionPin&& other) noexcept;
  PartitionPin& operator=(PartitionPin&& other) noexcept;
  ~PartitionPin();
  PartitionData* data() const { return data_; }

 private:
  friend class PartitionBuffer;
  PartitionPin(PartitionBuffer* buffer, PartitionData* data) : buffer_(buffer), data_(data) {}
  void Release();

  PartitionBuffer* buffer_ = nullptr;
  PartitionData* data_ = nullptr;
};

class PartitionBuffer {
 public:
  // `locations[p]`: table version holding partition p, 0 = never written
  // (initialised on first load). New writes go to `write_version`.
  // InvalidArgument when `options` are not valid (checked first). Prefetches
  // run on `io`, which must outlive the buffer.
  static absl::StatusOr<std::unique_ptr<PartitionBuffer>> Make(
      Graph* graph, const PartitionBufferOptions& options, std::vector<uint64_t> locations,
      uint64_t write_version, IoExecutor* io);
  ~PartitionBuffer();  // waits for background work; writes nothing
  PartitionBuffer(const PartitionBuffer&) = delete;
  PartitionBuffer& operator=(const PartitionBuffer&) = delete;

  // Makes every partition of `needed` resident, synchronously, after any
  // background work. Victims are chosen outside `needed` by their next use
  // in `future` (upcoming needed sets, nearest first).
  absl::Status Acquire(std::span<const uint32_t> needed,
                       std::span<const std::vector<uint32_t>> future);
  // Evicts unpinned partitions outside `keep`, those used furthest in
  // `future` first, until no more than the capacity are resident (Put may
  // have installed more), after background work.
  absl::Status FitCapacity(std::span<const uint32_t> keep,
                           std::span<const std::vector<uint32_t>> future);
  // Starts loading `next` in the background, evicting only unpinned
  // partitions, as far as free or evictable slots allow. Errors surface at
  // the next Acquire, Quiesce or WriteResident. REQUIRES: no prefetch
  // pending (Quiesce since the last).
  void Prefetch(std::vector<uint32_t> next, std::vector<std::vector<uint32_t>> future);
  // Waits for background work; returns its status.
  absl::Status Quiesce();
  // After background work, whether every partition of `partitions` is
  // resident.
  absl::StatusOr<bool> AllResident(std::span<const uint32_t> partitions);
  // Trainers that may hold newer copies of rows than the buffer's
  // (row_residency.h): each is asked to sync a partition back before the
  // buffer writes it, and to release it before eviction. Call before
  // training starts; they must outlive the buffer's use.
  void AddResidency(RowResidency* residency) { residencies_.push_back(residency); }
  // REQUIRES: p resident (pinned, or no background work pending).
  PartitionData* Get(uint32_t p);
  // Pins resident partition p until the pin is destroyed. REQUIRES: p
  // resident and not being evicted (no prefetch pending, or p pinned).
  PartitionPin Pin(uint32_t p);
  // Pins held on p now.
  uint32_t pins(uint32_t p) const;
  // Makes every resident partition's host copy current (SyncToHost of every
  // residency holding newer rows), after background work; with `release`,
  // the residencies then drop their copies, so that any trainer may train
  // the host copy next. Call with no batch in flight. Cheap when no
  // residency holds newer rows.
  absl::Status SyncToHost(bool release);
  // Writes every resident partition, and the initial rows of every
  // partition never written before, under the write version (not synced):
  // afterwards locations() names a complete set of tables.
  absl::Status WriteResident();

  // Hand-offs between ranks (train/distributed/): the buffer is one rank's
  // share of the partitions, and a partition leaves with its holder.
  // Take removes resident partition p (after background work, its rows
  // synced back from and released by every residency) and returns it;
  // null when p is not resident, FailedPrecondition when it is pinned. Put installs a partition
  // received from another rank (its node features read from this buffer's graph, for featurized
  // models); FailedPrecondition when p is resident already, DataLoss naming both shapes when its
  // shape is not this buffer's (CheckReceived).
  absl::StatusOr<std::unique_ptr<PartitionData>> Take(uint32_t p);
  absl::Status Put(std::unique_ptr<PartitionData> data);
  // Take, or where p is not resident, its rows as the graph holds them
  // (locations()), read without entering the buffer: a partition out of
  // core leaving for another rank. Counts as a load.
  absl::StatusOr<std::unique_ptr<PartitionData>> TakeOrRead(uint32_t p);
  // Writes a partition that is not resident (a copy received for a
  // checkpoint) under the write version, as WriteResident would, and makes
  // its tables durable (Graph::SyncTables(p)); DataLoss as Put's when its
  // shape is not this buffer's.
  absl::Status WriteCopy(PartitionData& data);
  // Writes resident partition p under the write version and makes its
  // tables durable: one partition of a checkpoint written a partition at a
  // time. FailedPrecondition when p is not resident.
  absl::Status WriteDurably(uint32_t p);
  // The graph's writer, once another rank has written partition p for this
  // checkpoint (stage_tables on that rank): takes its table files for the
  // write version into the graph (Graph::IngestTableFile), checks that they
  // hold the partition's rows, and names them in locations(). DataLoss
  // naming the partition when the tables taken in have another number of
  // rows.
  absl::Status TakeInStaged(uint32_t p);
  // OK when `data` has the shape this buffer's partition of its index has:
  // the rows this graph gives it, this buffer's dim, and as many embedding
  // and optimizer floats (none without id rows); otherwise DataLoss naming
  // the partition and both shapes. What a partition from another rank must
  // pass before anything reads or writes its rows.
  absl::Status CheckReceived(const PartitionData& data) const;
  // The resident partitions, in order, after background work.
  absl::StatusOr<std::vector<uint32_t>> Resident();

  void set_write_version(uint64_t v) { write_version_ = v; }
  // Every partition's tables are written at `version` (by
  // Checkpointer::WriteCopied): locations() names it for all.
  void MarkWritten(uint64_t version) { locations_.assign(locations_.size(), version); }
  const std::vector<uint64_t>& locations() const { return locations_; }
  uint64_t loads() const { return loads_.load(std::memory_order_relaxed); }

 private:
  PartitionBuffer(Graph* graph, const PartitionBufferOptions& options,
                  std::vector<uint64_t> locations, uint64_t write_version, IoExecutor* io);

  friend class PartitionPin;
  void Unpin(uint32_t p);
  absl::Status Load(uint32_t p);
  // Partition p as the graph holds it (initialised rows where never written).
  absl::StatusOr<std::unique_ptr<PartitionData>> Read(uint32_t p) const;
  // Writes back and releases an evicted partition.
  absl::Status Evict(std::unique_ptr<PartitionData> data);
  absl::Status Install(std::unique_ptr<PartitionData> data);
  // Syncs data back from every residency, then writes its tables (if any)
  // under the write version.
  absl::Status WriteTables(PartitionData& data);
  // After WriteTables of p: its tables durable (a shard's flush; staged
  // files are durable as written).
  absl::Status MakeTablesDurable(uint32_t p);
  // Removes and returns the unpinned resident partition outside `keep`
  // used furthest in the future; null when there is none.
  std::unique_ptr<PartitionData> TakeVictim(std::span<const uint32_t> keep,
                                            std::span<const std::vector<uint32_t>> future);
  absl::Status MakeResident(std::span<const uint32_t> needed,
                            std::span<const std::vector<uint32_t>> future, bool best_effort);
  uint32_t resident_count() const;

  Graph* graph_;
  IoExecutor* const io_;
  const PartitionBufferOptions options_;
  std::vector<uint64_t> locations_;
  uint64_t write_version_;
  mutable Mutex mu_;  // guards the pointers in resident_, and the pins
  std::vector<std::unique_ptr<PartitionData>> resident_ ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> pins_ ABSL_GUARDED_BY(mu_);  // by partition
  std::future<absl::Status> pending_;
  // Counted on the prefetch thread and on the caller's.
  std::atomic<uint64_t> loads_{0};
  std::vector<RowResidency*> residencies_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_SCHEDULE_PARTITION_BUFFER_H_
