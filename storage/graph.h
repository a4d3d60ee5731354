// A graph directory opened for reading (import results, training, export) or
// for writing training state. The only code in ember that touches RocksDB is
// in storage/; callers see edges, names and float tables.
//
// Layout (see docs/storage-format.md):
//   GRAPH/MANIFEST.json   root, replaced atomically
//   GRAPH/LOCK            flock()ed by a read-write opener, which writes
//                         its pid and command into it
//   GRAPH/dict/           RocksDB, column families by_name, by_id
//   GRAPH/shard-<p>/      RocksDB, column families nodes, edges, features,
//                         embeddings, optimizer
#ifndef EMBER_STORAGE_GRAPH_H_
#define EMBER_STORAGE_GRAPH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/edge_block.h"
#include "storage/manifest.h"
#include "storage/types.h"

namespace ember {

// The block cache of a graph opened with default options, which readers
// (eval, export) count in their memory plans.
inline constexpr uint64_t kDefaultBlockCacheBytes = uint64_t{64} << 20;

// One bucket's edge blocks, one at a time in key order (Graph::OpenEdgeBlocks),
// for a reader that stops between blocks. Used from one thread at a time;
// destroyed before its Graph is closed.
class EdgeBlockCursor {
 public:
  virtual ~EdgeBlockCursor() = default;
  // Moves to the bucket's next block (the first, on the first call); false
  // after the last. DataLoss names the shard and bucket on a malformed key
  // or block.
  virtual absl::StatusOr<bool> Next() = 0;
  // The current block's edges, valid until the next call of Next or the
  // cursor's end. REQUIRES: the last call of Next returned true.
  virtual EdgeBlockView block() const = 0;
};

struct GraphOpenOptions {
  // Read-write takes GRAPH/LOCK exclusively: a second read-write opener gets
  // FailedPrecondition naming the lock (and the writer holding it). It then
  // removes the temporaries of atomic writes (manifest, blobs) that a killed
  // writer left. Read-only openers take no lock and change nothing in the
  // graph; they may run beside a writer (see Graph::Open).
  // Default: true.
  bool read_only = true;
  // Memtable memory of all the graph's DBs together (dict/ and every
  // shard), in bytes: one RocksDB WriteBufferManager of this size is shared
  // by them all, and no column family's memtable is larger. A write that
  // finds the total over the cap flushes its own DB's memtables first
  // (RocksDB), and a WriteTable that leaves the total over the cap flushes
  // its table before returning, so the total stays within about the cap
  // plus one table write. 0: 256 MiB shared (a write flushes only its own
  // DB), memtables of up to 64 MiB per column family. Read-only openers write nothing, so it has
  // no effect there. Default: 0.
  uint64_t write_buffer_bytes = 0;
  // The block cache shared by the graph's DBs (index and filter blocks,
  // and point-lookup data blocks), in bytes. 0: kDefaultBlockCacheBytes.
  // Default: 0.
  uint64_t block_cache_bytes = 0;

  // InvalidArgument unless write_buffer_bytes is 0 or at least 1 MiB.
  absl::Status Validate() const;
};

class Graph {
 public:
  // NotFound if `dir` has no MANIFEST.json; errors name the path at fault.
  //
  // Readers beside a writer. A read-only graph is a snapshot of one
  // committed state, taken at Open and kept until the graph is destroyed:
  // manifest() and every table version, edge, name and blob it names, even
  // while a writer (`ember train`, `import --append`) commits newer
  // checkpoints and deletes the one this reader holds.
  //  - Each DB is opened as a RocksDB secondary instance (its own files in a
  //    temporary directory, removed on close) with max_open_files = -1. A
  //    secondary instance is RocksDB's supported way to read beside a
  //    running primary: unlike OpenForReadOnly it tolerates WALs the primary
  //    purges meanwhile. It never catches up (TryCatchUpWithPrimary is not
  //    called), and every table file is opened during Open and held, so the
  //    writer's compactions unlinking files later change nothing it reads.
  //  - Blobs are opened during Open and held too (ReadBlob, ListBlobs see
  //    the blobs as of the open, without in-flight temporaries).
  //  - Consistency: Open reads MANIFEST.json before opening the DBs and
  //    again after; a writer changes the manifest before it deletes anything
  //    the old one names (and never returns to an earlier manifest), so an
  //    unchanged manifest proves that everything opened holds the state it
  //    names. Otherwise, or when an open fails as a writer's file churn can
  //    make it (a MANIFEST-* or table file gone between listing and opening)
  //    while a live writer is recorded in GRAPH/LOCK, Open closes everything
  //    and starts over against the new manifest, at most 12 times over about
  //    2.6 s; then Unavailable "<dir> is being written by pid N (<command>)
  //    ...". Without a live writer and with the manifest unchanged, such
  //    an error is retried once (a writer may just have exited) and then
  //    returned (RocksDB's TryAgain as DataLoss: the graph is damaged).
  // The reader never writes into the graph directory and takes no lock.
  static absl::StatusOr<std::unique_ptr<Graph>> Open(
      const std::string& dir, const GraphOpenOptions& options = {});
  // Destroying a graph closes it as Close() does but drops the error.
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Closes every RocksDB of the graph and returns the first error of any
  // (e.g. background work that failed). Writers call it to learn that what
  // they wrote is safe. REQUIRES: no call but the destructor follows, and
  // no other thread is using the graph.
  absl::Status Close();

  const std::string& dir() const;
  const Manifest& manifest() const;
  // Atomically replaces MANIFEST.json. Partitions may grow (append), never
  // shrink or change in number. REQUIRES: opened read-write, and no other
  // thread is using the graph (it rewrites what every read consults).
  absl::Status CommitManifest(const Manifest& m);
  // Atomically replaces MANIFEST.json with one whose training record is
  // `training` and all else as before. Writes nothing but manifest().training
  // in memory, so other threads may go on reading edges, nodes, tables and
  // every other manifest() field meanwhile (a checkpoint taken while the
  // next round's edges stream in). REQUIRES: opened read-write; only this
  // thread reads manifest().training.
  absl::Status CommitTraining(const TrainingRecord& training);

  // For `import --append`: ingests finished SST runs (see GraphBuilder)
  // into column family `cf` ("by_name", "by_id", "nodes", "edges",
  // "features") of dict/ (partition ignored) or shard-<partition>/.
  // REQUIRES: opened read-write.
  absl::Status IngestRuns(std::string_view cf, uint32_t partition,
                          const std::vector<std::string>& files);
  // Removes what an append that never committed left behind: edge blocks
  // of generations above the manifest's, node-table and dictionary entries
  // at offsets at or beyond the partition sizes. REQUIRES: read-write.
  absl::Status RemoveUncommittedAppend();
  // The bracket around an append's ingestion and manifest commit
  // (GraphBuilder::Commit). BeginAppend copies every DB into
  // GRAPH/undo-append (RocksDB checkpoints: hard links to the table files;
  // storage/internal/append_undo.h says why). EndAppend reads MANIFEST.json:
  // if the append committed, it drops the copy; if not, it puts the copy
  // back and reopens, so the graph holds exactly what it held before
  // BeginAppend, even when a failed ingestion left a DB unopenable. A
  // writer's Open settles a killed append's copy the same way.
  // REQUIRES: opened read-write; no other thread uses the graph.
  absl::Status BeginAppend();
  absl::Status EndAppend();

  // Calls `fn` with each edge block of bucket (src_part, dst_part) of
  // `split`, in key order. The span is valid only during the call. Stops at
  // and returns the first non-OK status of `fn`; DataLoss names the shard
  // and bucket on a malformed key or block. Thread-safe.
  // Only blocks of edge generations in [min_generation,
  // manifest().edge_generation] are visited.
  absl::Status ForEachEdgeBlock(
      Split split, uint32_t src_part, uint32_t dst_part,
      const std::function<absl::Status(std::span<const Edge>)>& fn,
      uint32_t min_generation = 0) const;
  // The edge blocks ForEachEdgeBlock visits, as a cursor (edges not
  // copied out of the store: EdgeBlockView). Thread-safe.
  absl::StatusOr<std::unique_ptr<EdgeBlockCursor>> OpenEdgeBlocks(
      Split split, uint32_t src_part, uint32_t dst_part,
      uint32_t min_generation = 0) const;
  // Appends all edges of the bucket to *out.
  absl::Status ReadBucket(Split split, uint32_t src_part, uint32_t dst_part,
                          std::vector<Edge>* out,
                          uint32_t min_generation = 0) const;

  // Node dictionary. Names are external ids as imported (integers as text).
  // NotFound names the missing node.
  absl::StatusOr<NodeRef> LookupNode(std::string_view name) const;
  absl::StatusOr<std::string> NodeName(NodeRef node) const;
  absl::StatusOr<NodeRef> NodeFromGlobalId(uint64_t global_id) const;
  uint64_t GlobalId(NodeRef node) const;
  // Calls fn(offset, name) for every node of partition p in offset order.
  absl::Status ForEachNodeName(
      uint32_t p,
      const std::function<absl::Status(uint32_t, std::string_view)>& fn) const;

  // Sparse node features (shard-<p>/features). Calls fn(offset, entries)
  // for every node of partition p that has features, in offset order;
  // entries are sorted by feature id (an index into the `feature-vocab`
  // blob, one name per line). The span is valid only during the call.
  // Stops at and returns the first non-OK status of `fn`; DataLoss names
  // the shard on a corrupt key or value. Thread-safe.
  absl::Status ForEachNodeFeatures(
      uint32_t p,
      const std::function<absl::Status(uint32_t offset,
                                       std::span<const FeatureEntry>)>& fn)
      const;
  // All features of partition p in CSR form: row_start has
  // partition_sizes[p] + 1 entries and node o's features are
  // entries[row_start[o] .. row_start[o+1]) (empty without features).
  absl::Status ReadPartitionFeatures(uint32_t p,
                                     std::vector<uint64_t>* row_start,
                                     std::vector<FeatureEntry>* entries) const;

  // Float tables: `rows` x `width` floats, row-major, for partition p under
  // checkpoint `version`. REQUIRES (write): opened read-write.
  absl::Status WriteTable(Table table, uint32_t p, uint64_t version,
                          const float* rows, uint64_t num_rows,
                          uint32_t width);
  // NotFound if that version was never written; InvalidArgument if its shape
  // differs from (num_rows, width).
  absl::Status ReadTable(Table table, uint32_t p, uint64_t version,
                         float* rows, uint64_t num_rows, uint32_t width) const;
  absl::Status DeleteTableVersion(Table table, uint32_t p, uint64_t version);
  // Deletes every version of partition p's table except `keep` (0: all).
  absl::Status DeleteTableVersionsExcept(Table table, uint32_t p, uint64_t keep);
  // Takes in the table file at `path` (WriteTableFile, storage/table_files.h)
  // as partition p's `table` at `version`, replacing whatever an earlier
  // write of that version left; the file is moved into the shard (a hard
  // link where the file system allows, else a copy) and is durable there
  // on return. InvalidArgument when the file holds records of another
  // version; errors name the file and the shard. REQUIRES: read-write.
  absl::Status IngestTableFile(Table table, uint32_t p, uint64_t version, const std::string& path);
  // Removes GRAPH/incoming: table files staged for checkpoints that were
  // taken in or never committed. OK when absent. REQUIRES: read-write.
  absl::Status RemoveIncomingTables();
  // Rows stored for that version (partitions may have grown since).
  absl::StatusOr<uint64_t> TableRows(Table table, uint32_t p,
                                     uint64_t version) const;
  // Makes every table write so far durable (flushes memtables), so that a
  // manifest naming the new version may be committed after it returns.
  absl::Status SyncTables();
  // The same for partition p's tables alone (its shard's): what a
  // checkpoint written one partition at a time makes durable as it goes.
  absl::Status SyncTables(uint32_t p);

  // Writes an independent copy of the graph to `dest`, which must not
  // exist: each DB through a RocksDB checkpoint (table files hard-linked
  // where the file system allows, so a copy costs little disk or time), the
  // manifest and the blobs copied. metrics.jsonl is not copied. On error
  // nothing is left at `dest`. REQUIRES: opened read-write (a RocksDB
  // checkpoint needs a writable DB).
  absl::Status CopyTo(const std::string& dest) const;

  // Small named files (GRAPH/blobs/<name>) for per-checkpoint state too
  // small for a table, e.g. relation parameters. Names are [A-Za-z0-9._-]+.
  // WriteBlob replaces atomically. REQUIRES (write/delete): read-write.
  // A read-only graph reads the blobs as they were at Open (see there).
  absl::Status WriteBlob(std::string_view name, std::string_view bytes);
  // A blob whose bytes are the concatenation of `parts`.
  absl::Status WriteBlob(std::string_view name, std::span<const std::string_view> parts);
  absl::StatusOr<std::string> ReadBlob(std::string_view name) const;
  // Reads a blob straight into `parts` (for large blobs); DataLoss unless
  // its size is exactly theirs in total.
  absl::Status ReadBlobInto(std::string_view name, std::span<const std::span<char>> parts) const;
  absl::Status DeleteBlob(std::string_view name);
  // Names of the files in GRAPH/blobs/, sorted; leftovers of interrupted
  // writes end in ".tmp-<pid>" (read-write only: a read-only graph lists the
  // blobs it holds, without them).
  absl::StatusOr<std::vector<std::string>> ListBlobs() const;

  // Bytes of files under shard-<p>/.
  uint64_t ShardBytesOnDisk(uint32_t p) const;
  // Bytes held in memtables (active and not yet flushed) by all the
  // graph's DBs together: what GraphOpenOptions::write_buffer_bytes caps.
  uint64_t MemTableBytes() const;

 private:
  struct Rep;
  explicit Graph(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace ember

#endif  // EMBER_STORAGE_GRAPH_H_
