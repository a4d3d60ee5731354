#include "storage/graph.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/write_buffer_manager.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"
#include "storage/base/freed_memory.h"
#include "storage/base/node_hash.h"
#include "storage/base/status_macros.h"
#include "storage/internal/append_undo.h"
#include "storage/internal/keys.h"
#include "storage/internal/rocks_fs.h"
#include "storage/internal/rocks_util.h"
#include "storage/internal/table_records.h"
#include "storage/internal/writer_lock.h"
#include "storage/table_files.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using internal::FromRocks;
using internal::Sv;

static_assert(std::endian::native == std::endian::little,
              "table values are little-endian floats copied as bytes");

// Handle indexes (0 is the default column family).
constexpr int kByName = 1;
constexpr int kById = 2;
constexpr int kNodes = 1;
constexpr int kEdges = 2;
constexpr int kFeatures = 3;
constexpr int kEmbeddings = 4;
constexpr int kOptimizer = 5;

constexpr size_t kWriteBufferBudget = 256 << 20;

// Graph::Open's bound on a reader's attempts while a writer churns the
// graph's files, and the pause after failed attempt `attempt` (1-based):
// 10 ms doubling up to 400 ms, about 2.6 s in all. Another process's
// RocksDB gives no event to wait on, so the reader backs off instead.
constexpr int kReaderOpenAttempts = 12;
std::chrono::milliseconds ReaderRetryDelay(int attempt) {
  return std::chrono::milliseconds(std::min(10 << std::min(attempt - 1, 6), 400));
}

// Errors a reader's open can get from a writer deleting or replacing files
// under it (RocksDB's MANIFEST-*, table files, WALs): RocksDB reports them as
// Corruption or IOError (DataLoss, Internal here) or NotFound. Others
// (a malformed manifest, a missing shard directory, permissions) are not
// transient.
bool MayBeWriterChurn(const absl::Status& s) {
  return absl::IsDataLoss(s) || absl::IsInternal(s) || absl::IsNotFound(s) ||
         absl::IsUnavailable(s);
}

// Read-only openers must not write (or rotate) LOG files in a graph that a
// writer may be using.
class NullLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

struct Db {
  std::string path;
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;

  absl::Status Close() { return internal::CloseDb(&db, &handles, path); }
};

uint32_t GetLittleEndian32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t GetLittleEndian64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Strict decimal parse: digits only, no sign, no spaces, no overflow.
bool ParseDecimal(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// What a killed append left (storage/internal/append_undo.h), settled
// against the committed manifest. REQUIRES: the writer lock; no DB open.
absl::Status SettleAppendUndo(const std::string& dir) {
  FileSystem* file_system = CurrentFileSystem();
  if (file_system->Stat(internal::AppendUndoDir(dir)).value_or(PathKind::kMissing) ==
      PathKind::kMissing) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const Manifest m, ReadManifest(dir + "/MANIFEST.json"));
  ASSIGN_OR_RETURN(const bool pending, internal::AppendUndoPending(dir, m.edge_generation));
  return pending ? internal::PutBackAppendUndo(dir) : internal::DropAppendUndo(dir);
}

}  // namespace

struct Graph::Rep {
  std::string dir;
  GraphOpenOptions options;
  Manifest manifest;
  std::vector<uint64_t> bases;  // P + 1 prefix sums of partition sizes
  std::unique_ptr<FileLock> lock;
  // Readers: the directory holding each DB's secondary-instance files
  // (under the system temp dir; removed on close), and every blob as of the
  // open, held open so that a writer's deletions cannot take it away.
  std::string secondary_dir;
  std::map<std::string, std::unique_ptr<ReadableFile>, std::less<>> blobs;
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers;
  std::shared_ptr<rocksdb::Logger> null_logger;
  // Every DB's Env: RocksDB's files through the file-system seam.
  std::shared_ptr<rocksdb::Env> env;
  Db dict;
  std::vector<Db> shards;

  ~Rep() {
    CloseDbs().IgnoreError();  // Graph::Close() is the way to see the error
    lock.reset();  // releases the flock
    blobs.clear();
    if (!secondary_dir.empty()) {
      std::error_code ec;
      fs::remove_all(secondary_dir, ec);
    }
  }

  // Closes every DB (those already closed are skipped); the first error.
  // A writer first flushes every memtable itself, as RocksDB's close would,
  // so that a failed flush is reported (RocksDB's close drops that error).
  // After a failed flush the close does not flush again: what the memtables
  // hold is either in the WAL or (tables, written without it) not committed,
  // and RocksDB 7.8 asserts when it flushes a memtable with range deletions
  // a second time.
  absl::Status CloseDbs() {
    absl::Status status;
    for (Db* db : AllDbs()) {
      if (!options.read_only && db->db != nullptr) {
        rocksdb::FlushOptions fo;
        fo.wait = true;
        const absl::Status flushed = FromRocks(
            db->db->Flush(fo, db->handles), absl::StrCat("cannot flush ", db->path, " before closing it"));
        if (!flushed.ok()) {
          db->db->SetDBOptions({{"avoid_flush_during_shutdown", "true"}}).PermitUncheckedError();
        }
        status.Update(flushed);
      }
      status.Update(db->Close());
    }
    return status;
  }
  std::vector<Db*> AllDbs() {
    std::vector<Db*> dbs;
    for (Db& s : shards) dbs.push_back(&s);
    dbs.push_back(&dict);
    return dbs;
  }

  // Reads the manifest and opens every DB (and, for readers, the blobs).
  absl::Status OpenAll();
  absl::Status OpenDb(const std::string& name,
                      const std::vector<std::string>& cfs, Db* out);
  absl::Status SnapshotBlobs();
  // Readers: blob `name` as of the open; NotFound naming `path` if it had
  // none.
  absl::StatusOr<const ReadableFile*> SnapshotBlob(std::string_view name,
                                                   const std::string& path) const {
    auto it = blobs.find(name);
    if (it != blobs.end()) return it->second.get();
    return internal::ErrnoStatus(ENOENT, "cannot open", path);
  }
  absl::Status CheckPartition(uint32_t p, std::string_view what) const;
  rocksdb::ColumnFamilyHandle* TableCf(Table t, uint32_t p) const {
    return shards[p].handles[t == Table::kEmbeddings ? kEmbeddings
                                                     : kOptimizer];
  }
  absl::Status RequireWritable(std::string_view what) const {
    if (!options.read_only) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        Sv(what), ": graph ", dir, " was opened read-only"));
  }
};

absl::Status Graph::Rep::OpenDb(const std::string& name,
                                const std::vector<std::string>& cfs,
                                Db* out) {
  out->path = absl::StrCat(dir, "/", name);
  if (CurrentFileSystem()->Stat(out->path).value_or(PathKind::kMissing) != PathKind::kDirectory) {
    return absl::DataLossError(absl::StrCat(
        out->path, " is missing: the graph directory is incomplete"));
  }
  rocksdb::DBOptions db_options;
  db_options.env = env.get();
  db_options.create_if_missing = false;
  db_options.create_missing_column_families = false;
  // Modest per-DB file handle budget: a graph has P + 1 DBs.
  const uint32_t num_dbs = manifest.num_partitions + 1;
  db_options.max_open_files =
      static_cast<int>(std::clamp<uint32_t>(2000 / num_dbs, 20, 256));
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 2;
  db_options.max_log_file_size = 4 << 20;
  if (options.read_only) {
    db_options.info_log = null_logger;
    // Every table file is opened now and held until close, so that a
    // writer's compactions, which delete files, cannot pull one away.
    db_options.max_open_files = -1;
  } else {
    db_options.write_buffer_manager = write_buffers;
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName,
                           rocksdb::ColumnFamilyOptions());
  for (const std::string& cf : cfs) {
    rocksdb::ColumnFamilyOptions cf_options =
        internal::ColumnFamilyOptionsFor(cf, cache);
    if (options.write_buffer_bytes > 0) {
      // A memtable larger than the cap would outgrow it on its own.
      cf_options.write_buffer_size = static_cast<size_t>(std::min<uint64_t>(
          cf_options.write_buffer_size, options.write_buffer_bytes));
    }
    descriptors.emplace_back(cf, std::move(cf_options));
  }
  rocksdb::Status s =
      options.read_only
          ? rocksdb::DB::OpenAsSecondary(db_options, out->path,
                                         absl::StrCat(secondary_dir, "/", name),
                                         descriptors, &out->handles, &out->db)
          : rocksdb::DB::Open(db_options, out->path, descriptors,
                              &out->handles, &out->db);
  return FromRocks(s, absl::StrCat("cannot open ", out->path));
}

absl::Status Graph::Rep::OpenAll() {
  ASSIGN_OR_RETURN(manifest, ReadManifest(dir + "/MANIFEST.json"));
  bases.assign(1, 0);
  for (uint64_t size : manifest.partition_sizes) bases.push_back(bases.back() + size);

  cache = rocksdb::NewLRUCache(
      options.block_cache_bytes > 0 ? options.block_cache_bytes : kDefaultBlockCacheBytes,
      /*num_shard_bits=*/4);
  if (options.read_only) {
    null_logger = std::make_shared<NullLogger>();
    ASSIGN_OR_RETURN(secondary_dir, internal::MakeTempDir("ember-reader"));
    internal::RaiseOpenFileLimit();  // max_open_files = -1 holds every table file
  } else {
    const uint64_t write_buffer_bytes =
        options.write_buffer_bytes > 0 ? options.write_buffer_bytes : kWriteBufferBudget;
    write_buffers = std::make_shared<rocksdb::WriteBufferManager>(write_buffer_bytes);
    // Memtables freed at each flush are allocated again by the next
    // checkpoint or import batch: keep their budget's worth mapped.
    RetainFreedMemory(write_buffer_bytes);
  }
  env = internal::RocksEnvForCurrentFileSystem();
  RETURN_IF_ERROR(OpenDb(internal::DictDirName(), internal::DictColumnFamilies(), &dict));
  shards.resize(manifest.num_partitions);
  for (uint32_t p = 0; p < manifest.num_partitions; ++p) {
    RETURN_IF_ERROR(OpenDb(internal::ShardDirName(p), internal::ShardColumnFamilies(), &shards[p]));
  }
  return options.read_only ? SnapshotBlobs() : absl::OkStatus();
}

absl::Status Graph::Rep::SnapshotBlobs() {
  const std::string blob_dir = dir + "/blobs";
  FileSystem* file_system = CurrentFileSystem();
  absl::StatusOr<std::vector<std::string>> names = file_system->ListDir(blob_dir);
  if (absl::IsNotFound(names.status())) return absl::OkStatus();
  if (!names.ok()) return names.status();
  for (std::string& name : *names) {
    // A write in progress, not part of any committed state.
    if (name.find(internal::kAtomicWriteTempInfix) != std::string::npos) continue;
    absl::StatusOr<std::unique_ptr<ReadableFile>> file =
        file_system->OpenForRead(absl::StrCat(blob_dir, "/", name));
    // Deleted since listed: only a writer does that, and Graph::Open then
    // finds the manifest changed and opens again.
    if (absl::IsNotFound(file.status())) continue;
    if (!file.ok()) return file.status();
    blobs.emplace(std::move(name), *std::move(file));
  }
  return absl::OkStatus();
}

absl::Status Graph::Rep::CheckPartition(uint32_t p,
                                        std::string_view what) const {
  if (p < manifest.num_partitions) return absl::OkStatus();
  return absl::OutOfRangeError(absl::StrCat(
      Sv(what), ": partition ", p, " out of range, graph ", dir, " has ",
      manifest.num_partitions, " partitions"));
}

absl::Status GraphOpenOptions::Validate() const {
  if (write_buffer_bytes != 0 && write_buffer_bytes < (1u << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "write_buffer_bytes ", write_buffer_bytes,
        " is below 1 MiB (0: the default of 256 MiB)"));
  }
  return absl::OkStatus();
}

Graph::Graph(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Graph::~Graph() = default;

absl::StatusOr<std::unique_ptr<Graph>> Graph::Open(
    const std::string& dir_arg, const GraphOpenOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  std::string dir = dir_arg;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string manifest_path = dir + "/MANIFEST.json";
  if (CurrentFileSystem()->Stat(manifest_path).value_or(PathKind::kMissing) ==
      PathKind::kMissing) {
    return absl::NotFoundError(absl::StrCat(
        manifest_path, " not found: ", dir, " is not a graph directory"));
  }
  auto new_rep = [&] {
    auto rep = std::make_unique<Rep>();
    rep->dir = dir;
    rep->options = options;
    return rep;
  };
  if (!options.read_only) {
    std::unique_ptr<Rep> rep = new_rep();
    // Lock before reading the manifest so that it cannot change under us.
    ASSIGN_OR_RETURN(rep->lock, internal::AcquireWriterLock(dir));
    // The lock makes us the only writer: what a killed writer's atomic
    // writes left half-done (manifest, blobs) can go.
    RETURN_IF_ERROR(internal::RemoveAtomicWriteLeftovers(dir));
    RETURN_IF_ERROR(internal::RemoveAtomicWriteLeftovers(dir + "/blobs"));
    RETURN_IF_ERROR(SettleAppendUndo(dir));
    RETURN_IF_ERROR(rep->OpenAll());
    return std::unique_ptr<Graph>(new Graph(std::move(rep)));
  }

  // A reader: what it opened is consistent when the manifest read before and
  // after opening is the same (graph.h says why).
  absl::Status last_failure;
  for (int attempt = 1;; ++attempt) {
    ASSIGN_OR_RETURN(const std::string before, internal::ReadFile(manifest_path));
    std::unique_ptr<Rep> rep = new_rep();
    const absl::Status opened = rep->OpenAll();
    const absl::StatusOr<std::string> after = internal::ReadFile(manifest_path);
    const bool same_manifest = after.ok() && *after == before;
    if (opened.ok() && same_manifest) return std::unique_ptr<Graph>(new Graph(std::move(rep)));
    rep.reset();
    const std::optional<std::string> writer = internal::LiveWriter(dir);
    if (same_manifest && !MayBeWriterChurn(opened)) return opened;
    if (same_manifest && !writer.has_value() && attempt > 1) {
      // Failed twice with nothing writing (the first try gave a writer that
      // has just exited the benefit of the doubt): the graph is damaged.
      // RocksDB's TryAgain here would only mislead.
      if (!absl::IsUnavailable(opened)) return opened;
      return absl::DataLossError(
          absl::StrCat(opened.message(), " (no writer is running: the graph is damaged)"));
    }
    last_failure = opened.ok() ? absl::AbortedError(absl::StrCat(manifest_path,
                                                                 " changed while opening"))
                               : opened;
    if (attempt == kReaderOpenAttempts) {
      return absl::UnavailableError(absl::StrCat(
          dir, " is being written by ", writer.value_or("another process"),
          ", whose changes to its files kept this read-only open from finishing (",
          kReaderOpenAttempts, " attempts; the last: ", last_failure.message(),
          "). Try again, or once the writer is done."));
    }
    std::this_thread::sleep_for(ReaderRetryDelay(attempt));
  }
}

absl::Status Graph::Close() { return rep_->CloseDbs(); }

const std::string& Graph::dir() const { return rep_->dir; }

const Manifest& Graph::manifest() const { return rep_->manifest; }

absl::Status Graph::CommitManifest(const Manifest& m) {
  RETURN_IF_ERROR(rep_->RequireWritable("CommitManifest"));
  const Manifest& cur = rep_->manifest;
  bool shrinks = m.num_partitions != cur.num_partitions || m.num_nodes < cur.num_nodes ||
                 m.partition_sizes.size() != cur.partition_sizes.size();
  for (size_t p = 0; !shrinks && p < m.partition_sizes.size(); ++p) {
    shrinks = m.partition_sizes[p] < cur.partition_sizes[p];
  }
  if (shrinks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CommitManifest for ", rep_->dir,
        ": the new manifest changes the node partitioning"));
  }
  RETURN_IF_ERROR(WriteManifestAtomic(rep_->dir + "/MANIFEST.json", m));
  rep_->manifest = m;
  return absl::OkStatus();
}

absl::Status Graph::CommitTraining(const TrainingRecord& training) {
  RETURN_IF_ERROR(rep_->RequireWritable("CommitTraining"));
  Manifest m = rep_->manifest;
  m.training = training;
  RETURN_IF_ERROR(WriteManifestAtomic(rep_->dir + "/MANIFEST.json", m));
  rep_->manifest.training = training;
  return absl::OkStatus();
}

namespace {

class RocksEdgeBlockCursor final : public EdgeBlockCursor {
 public:
  // Blocks of generations in [min_generation, max_generation] of `split`'s
  // bucket (src_part, dst_part), whose shard is `shard`; `weighted`: the
  // blocks carry weights (Manifest::edge_weights).
  RocksEdgeBlockCursor(const Db& shard, Split split, uint32_t src_part, uint32_t dst_part,
                       uint32_t min_generation, uint32_t max_generation, bool weighted)
      : shard_(shard),
        weighted_(weighted),
        split_(split),
        src_part_(src_part),
        dst_part_(dst_part),
        min_generation_(min_generation),
        max_generation_(max_generation),
        prefix_(EdgeBucketPrefix(split, dst_part)),
        upper_(internal::PrefixSuccessor(prefix_)),
        upper_slice_(upper_) {
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;
    ro.iterate_upper_bound = &upper_slice_;
    ro.readahead_size = 2 << 20;
    it_.reset(shard.db->NewIterator(ro, shard.handles[kEdges]));
  }

  absl::StatusOr<bool> Next() override {
    if (ended_) return false;
    if (started_) {
      it_->Next();
    } else {
      it_->Seek(prefix_);
      started_ = true;
    }
    for (; it_->Valid(); it_->Next()) {
      const rocksdb::Slice key = it_->key();
      // [prefix][block seq u64, big-endian; its top 16 bits the generation]
      if (key.size() != prefix_.size() + 8) {
        return absl::DataLossError(absl::StrCat(Where(), ": a key of ", key.size(),
                                                " bytes (expected ", prefix_.size() + 8, ")"));
      }
      const uint32_t generation = static_cast<uint32_t>(
          static_cast<unsigned char>(key[prefix_.size()]) << 8 |
          static_cast<unsigned char>(key[prefix_.size() + 1]));
      if (generation < min_generation_ || generation > max_generation_) continue;
      const rocksdb::Slice v = it_->value();
      absl::StatusOr<EdgeBlockView> block =
          ParseEdgeBlock(std::string_view(v.data(), v.size()), weighted_);
      if (!block.ok()) {
        return absl::DataLossError(absl::StrCat(Where(), ": ", block.status().message()));
      }
      block_ = *block;
      return true;
    }
    block_ = EdgeBlockView();
    RETURN_IF_ERROR(FromRocks(it_->status(), absl::StrCat("cannot scan edges of ", shard_.path)));
    ended_ = true;
    return false;
  }

  EdgeBlockView block() const override { return block_; }

 private:
  std::string Where() const {
    return absl::StrCat(shard_.path, " edges, bucket (", src_part_, ", ", dst_part_, ") of ",
                        Sv(SplitName(split_)));
  }

  const Db& shard_;
  const bool weighted_;
  const Split split_;
  const uint32_t src_part_, dst_part_;
  const uint32_t min_generation_, max_generation_;
  const std::string prefix_;
  const std::string upper_;
  const rocksdb::Slice upper_slice_;  // the iterator's bound: outlives it_
  std::unique_ptr<rocksdb::Iterator> it_;
  bool started_ = false;
  bool ended_ = false;  // past the last block: the iterator is invalid
  EdgeBlockView block_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<EdgeBlockCursor>> Graph::OpenEdgeBlocks(
    Split split, uint32_t src_part, uint32_t dst_part, uint32_t min_generation) const {
  RETURN_IF_ERROR(rep_->CheckPartition(src_part, "ForEachEdgeBlock"));
  RETURN_IF_ERROR(rep_->CheckPartition(dst_part, "ForEachEdgeBlock"));
  return std::make_unique<RocksEdgeBlockCursor>(rep_->shards[src_part], split, src_part, dst_part,
                                                min_generation, rep_->manifest.edge_generation,
                                                rep_->manifest.edge_weights);
}

absl::Status Graph::ForEachEdgeBlock(
    Split split, uint32_t src_part, uint32_t dst_part,
    const std::function<absl::Status(std::span<const Edge>)>& fn,
    uint32_t min_generation) const {
  ASSIGN_OR_RETURN(std::unique_ptr<EdgeBlockCursor> cursor,
                   OpenEdgeBlocks(split, src_part, dst_part, min_generation));
  std::vector<Edge> edges;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, cursor->Next());
    if (!more) return absl::OkStatus();
    const EdgeBlockView block = cursor->block();
    edges.resize(block.size());
    block.CopyTo(0, block.size(), edges.data());
    RETURN_IF_ERROR(fn(std::span<const Edge>(edges)));
  }
}

absl::Status Graph::ReadBucket(Split split, uint32_t src_part,
                               uint32_t dst_part, std::vector<Edge>* out,
                               uint32_t min_generation) const {
  return ForEachEdgeBlock(
      split, src_part, dst_part,
      [out](std::span<const Edge> block) {
        out->insert(out->end(), block.begin(), block.end());
        return absl::OkStatus();
      },
      min_generation);
}

absl::StatusOr<NodeRef> Graph::LookupNode(std::string_view name) const {
  const Db& dict = rep_->dict;
  std::string value;
  rocksdb::Status s;
  if (rep_->manifest.integer_ids) {
    uint64_t id = 0;
    if (!ParseDecimal(name, &id)) {
      return absl::NotFoundError(absl::StrCat(
          "node '", Sv(name), "' not found: graph ", rep_->dir,
          " has integer ids and this is not a non-negative integer"));
    }
    const uint64_t key = IntegerNodeKey(id);
    s = dict.db->Get(rocksdb::ReadOptions(), dict.handles[kByName],
                     DictNameKey(key, name), &value);
    // Names of integer nodes are stored in canonical decimal form.
    const std::string canonical = absl::StrCat(id);
    if (s.IsNotFound() && canonical != name) {
      s = dict.db->Get(rocksdb::ReadOptions(), dict.handles[kByName],
                       DictNameKey(key, canonical), &value);
    }
  } else {
    s = dict.db->Get(rocksdb::ReadOptions(), dict.handles[kByName],
                     DictNameKey(StringNodeKey(name), name), &value);
  }
  if (s.IsNotFound()) {
    return absl::NotFoundError(
        absl::StrCat("node '", Sv(name), "' not found in ", rep_->dir));
  }
  RETURN_IF_ERROR(FromRocks(
      s, absl::StrCat("cannot look up node '", Sv(name), "' in ", dict.path)));
  uint64_t packed = 0;
  absl::Status decoded = DecodeU64(value, &packed);
  if (!decoded.ok()) {
    return absl::DataLossError(absl::StrCat(dict.path, " by_name entry of '",
                                            Sv(name), "': ",
                                            decoded.message()));
  }
  const NodeRef ref = UnpackNodeRef(packed);
  // Entries beyond the partition sizes belong to an uncommitted append.
  if (ref.partition >= rep_->manifest.num_partitions ||
      ref.offset >= rep_->manifest.partition_sizes[ref.partition]) {
    return absl::NotFoundError(
        absl::StrCat("node '", Sv(name), "' not found in ", rep_->dir));
  }
  return ref;
}

absl::StatusOr<std::string> Graph::NodeName(NodeRef node) const {
  RETURN_IF_ERROR(rep_->CheckPartition(node.partition, "NodeName"));
  if (node.offset >= rep_->manifest.partition_sizes[node.partition]) {
    return absl::OutOfRangeError(absl::StrCat(
        "NodeName: offset ", node.offset, " out of range, partition ",
        node.partition, " has ",
        rep_->manifest.partition_sizes[node.partition], " nodes"));
  }
  const Db& shard = rep_->shards[node.partition];
  std::string name;
  rocksdb::Status s = shard.db->Get(rocksdb::ReadOptions(),
                                    shard.handles[kNodes],
                                    NodeOffsetKey(node.offset), &name);
  if (s.IsNotFound()) {
    return absl::NotFoundError(absl::StrCat("node (", node.partition, ", ",
                                            node.offset, ") has no name in ",
                                            shard.path, " nodes"));
  }
  RETURN_IF_ERROR(FromRocks(s, absl::StrCat("cannot read name of node (",
                                            node.partition, ", ", node.offset,
                                            ") from ", shard.path)));
  return name;
}

absl::StatusOr<NodeRef> Graph::NodeFromGlobalId(uint64_t global_id) const {
  const std::vector<uint64_t>& bases = rep_->bases;
  if (global_id >= bases.back()) {
    return absl::OutOfRangeError(absl::StrCat("global id ", global_id,
                                              " out of range, graph ",
                                              rep_->dir, " has ",
                                              bases.back(), " nodes"));
  }
  // The last partition whose base is <= global_id (empty partitions share
  // their base with the next one, so upper_bound skips them).
  auto it = std::upper_bound(bases.begin(), bases.end(), global_id);
  const uint32_t p = static_cast<uint32_t>(it - bases.begin() - 1);
  return NodeRef{p, static_cast<uint32_t>(global_id - bases[p])};
}

uint64_t Graph::GlobalId(NodeRef node) const {
  EMBER_CHECK(node.partition < rep_->manifest.num_partitions);
  return rep_->bases[node.partition] + node.offset;
}

absl::Status Graph::ForEachNodeName(
    uint32_t p,
    const std::function<absl::Status(uint32_t, std::string_view)>& fn) const {
  RETURN_IF_ERROR(rep_->CheckPartition(p, "ForEachNodeName"));
  const Db& shard = rep_->shards[p];
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.readahead_size = 2 << 20;
  std::unique_ptr<rocksdb::Iterator> it(
      shard.db->NewIterator(ro, shard.handles[kNodes]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::Slice k = it->key();
    if (k.size() != 4) {
      return absl::DataLossError(absl::StrCat(
          shard.path, " nodes: key of ", k.size(), " bytes, expected 4"));
    }
    const auto* b = reinterpret_cast<const unsigned char*>(k.data());
    const uint32_t offset = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
                            (uint32_t{b[2]} << 8) | uint32_t{b[3]};
    RETURN_IF_ERROR(
        fn(offset, std::string_view(it->value().data(), it->value().size())));
  }
  return FromRocks(it->status(),
                   absl::StrCat("cannot scan nodes of ", shard.path));
}

absl::Status Graph::ForEachNodeFeatures(
    uint32_t p,
    const std::function<absl::Status(uint32_t, std::span<const FeatureEntry>)>&
        fn) const {
  RETURN_IF_ERROR(rep_->CheckPartition(p, "ForEachNodeFeatures"));
  const Db& shard = rep_->shards[p];
  const uint64_t size = rep_->manifest.partition_sizes[p];
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.readahead_size = 2 << 20;
  std::unique_ptr<rocksdb::Iterator> it(
      shard.db->NewIterator(ro, shard.handles[kFeatures]));
  std::vector<FeatureEntry> entries;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint32_t offset;
    absl::Status s = DecodeFeatureKey(
        std::string_view(it->key().data(), it->key().size()), &offset);
    if (s.ok() && offset >= size) {
      s = absl::DataLossError(absl::StrCat("features of offset ", offset,
                                           " beyond the partition's ", size,
                                           " nodes"));
    }
    entries.clear();
    if (s.ok()) {
      s = DecodeFeatureList(
          std::string_view(it->value().data(), it->value().size()), &entries);
    }
    if (!s.ok()) {
      return absl::DataLossError(
          absl::StrCat(shard.path, " features: ", s.message()));
    }
    RETURN_IF_ERROR(fn(offset, entries));
  }
  return FromRocks(it->status(),
                   absl::StrCat("cannot scan features of ", shard.path));
}

absl::Status Graph::ReadPartitionFeatures(
    uint32_t p, std::vector<uint64_t>* row_start,
    std::vector<FeatureEntry>* entries) const {
  RETURN_IF_ERROR(rep_->CheckPartition(p, "ReadPartitionFeatures"));
  const uint64_t rows = rep_->manifest.partition_sizes[p];
  row_start->assign(rows + 1, 0);
  entries->clear();
  uint64_t next_row = 0;  // rows before it have their start set
  RETURN_IF_ERROR(ForEachNodeFeatures(
      p, [&](uint32_t offset, std::span<const FeatureEntry> list) {
        for (; next_row <= offset; ++next_row) {
          (*row_start)[next_row] = entries->size();
        }
        entries->insert(entries->end(), list.begin(), list.end());
        return absl::OkStatus();
      }));
  for (; next_row <= rows; ++next_row) (*row_start)[next_row] = entries->size();
  return absl::OkStatus();
}

absl::Status Graph::WriteTable(Table table, uint32_t p, uint64_t version,
                               const float* rows, uint64_t num_rows,
                               uint32_t width) {
  RETURN_IF_ERROR(rep_->RequireWritable("WriteTable"));
  RETURN_IF_ERROR(rep_->CheckPartition(p, "WriteTable"));
  if (width == 0) {
    return absl::InvalidArgumentError("WriteTable: width must be positive");
  }
  const Db& shard = rep_->shards[p];
  rocksdb::ColumnFamilyHandle* cf = rep_->TableCf(table, p);
  const std::string where =
      absl::StrCat(shard.path, " ", internal::TableCfName(table), " version ", version);
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // durable through SyncTables (a flush)

  // Drop whatever an earlier write of this version left.
  const std::string prefix = TableVersionPrefix(version);
  RETURN_IF_ERROR(FromRocks(
      shard.db->DeleteRange(wo, cf, prefix, internal::PrefixSuccessor(prefix)),
      absl::StrCat("cannot clear ", where)));
  RETURN_IF_ERROR(internal::ForEachTableRecord(
      version, rows, num_rows, width, where, [&](const std::string& key, std::string_view value) {
        return FromRocks(shard.db->Put(wo, cf, key, rocksdb::Slice(value.data(), value.size())),
                         absl::StrCat("cannot write ", where));
      }));
  // RocksDB's WriteBufferManager only makes the DB being written flush, so
  // every shard written after the cap is reached would keep its last
  // table; flushing the table that took the total over the cap keeps the
  // total within the cap plus one table write.
  if (rep_->options.write_buffer_bytes > 0 &&
      rep_->write_buffers->memory_usage() > rep_->options.write_buffer_bytes) {
    rocksdb::FlushOptions fo;
    fo.wait = true;
    RETURN_IF_ERROR(FromRocks(shard.db->Flush(fo, cf),
                              absl::StrCat("cannot flush ", where)));
  }
  return absl::OkStatus();
}

absl::Status Graph::ReadTable(Table table, uint32_t p, uint64_t version,
                              float* rows, uint64_t num_rows,
                              uint32_t width) const {
  RETURN_IF_ERROR(rep_->CheckPartition(p, "ReadTable"));
  const Db& shard = rep_->shards[p];
  rocksdb::ColumnFamilyHandle* cf = rep_->TableCf(table, p);
  const std::string where =
      absl::StrCat(shard.path, " ", internal::TableCfName(table), " version ", version);

  std::string meta;
  rocksdb::Status s = shard.db->Get(rocksdb::ReadOptions(), cf,
                                    TableChunkKey(version, kTableMetaChunk),
                                    &meta);
  if (s.IsNotFound()) {
    // Without its shape record a version is absent or was never finished.
    const std::string prefix = TableVersionPrefix(version);
    std::unique_ptr<rocksdb::Iterator> it(
        shard.db->NewIterator(rocksdb::ReadOptions(), cf));
    it->Seek(prefix);
    if (it->Valid() && it->key().starts_with(prefix)) {
      return absl::DataLossError(
          absl::StrCat(where, " is incomplete (no shape record)"));
    }
    RETURN_IF_ERROR(FromRocks(it->status(), absl::StrCat("cannot scan ",
                                                          where)));
    return absl::NotFoundError(absl::StrCat(where, " not found"));
  }
  RETURN_IF_ERROR(FromRocks(s, absl::StrCat("cannot read ", where)));
  if (meta.size() != 16) {
    return absl::DataLossError(absl::StrCat(where, ": shape record has ",
                                            meta.size(),
                                            " bytes, expected 16"));
  }
  const uint64_t stored_rows = GetLittleEndian64(meta.data());
  const uint32_t stored_width = GetLittleEndian32(meta.data() + 8);
  const uint32_t stored_chunks = GetLittleEndian32(meta.data() + 12);
  if (stored_rows != num_rows || stored_width != width) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " has shape ", stored_rows, " x ", stored_width,
        ", requested ", num_rows, " x ", width));
  }

  const std::string upper = TableChunkKey(version, kTableMetaChunk);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.iterate_upper_bound = &upper_slice;
  ro.readahead_size = 8 << 20;
  std::unique_ptr<rocksdb::Iterator> it(shard.db->NewIterator(ro, cf));
  const uint64_t row_bytes = uint64_t{width} * sizeof(float);
  uint64_t done = 0;
  uint32_t chunk = 0;
  for (it->Seek(TableVersionPrefix(version)); it->Valid();
       it->Next(), ++chunk) {
    if (it->key() != TableChunkKey(version, chunk)) {
      return absl::DataLossError(
          absl::StrCat(where, ": chunk ", chunk, " is missing"));
    }
    rocksdb::Slice v = it->value();
    if (v.size() < 8) {
      return absl::DataLossError(absl::StrCat(
          where, ": chunk ", chunk, " truncated (", v.size(), " bytes)"));
    }
    const uint32_t n = GetLittleEndian32(v.data());
    const uint32_t w = GetLittleEndian32(v.data() + 4);
    if (w != width || v.size() != 8 + n * row_bytes || done + n > num_rows) {
      return absl::DataLossError(absl::StrCat(
          where, ": chunk ", chunk, " truncated or inconsistent (", n,
          " rows of width ", w, " in ", v.size(), " bytes, ", done,
          " rows read before)"));
    }
    if (n > 0) std::memcpy(rows + done * width, v.data() + 8, n * row_bytes);
    done += n;
  }
  RETURN_IF_ERROR(FromRocks(it->status(), absl::StrCat("cannot read ", where)));
  if (chunk != stored_chunks || done != num_rows) {
    return absl::DataLossError(absl::StrCat(
        where, ": found ", chunk, " chunks with ", done, " rows, expected ",
        stored_chunks, " chunks with ", num_rows, " rows"));
  }
  return absl::OkStatus();
}

absl::Status Graph::DeleteTableVersion(Table table, uint32_t p,
                                       uint64_t version) {
  RETURN_IF_ERROR(rep_->RequireWritable("DeleteTableVersion"));
  RETURN_IF_ERROR(rep_->CheckPartition(p, "DeleteTableVersion"));
  const Db& shard = rep_->shards[p];
  const std::string prefix = TableVersionPrefix(version);
  return FromRocks(shard.db->DeleteRange(rocksdb::WriteOptions(), rep_->TableCf(table, p), prefix,
                                         internal::PrefixSuccessor(prefix)),
                   absl::StrCat("cannot delete ", shard.path, " ", internal::TableCfName(table),
                                " version ", version));
}

absl::Status Graph::DeleteTableVersionsExcept(Table table, uint32_t p, uint64_t keep) {
  RETURN_IF_ERROR(rep_->RequireWritable("DeleteTableVersionsExcept"));
  RETURN_IF_ERROR(rep_->CheckPartition(p, "DeleteTableVersionsExcept"));
  const Db& shard = rep_->shards[p];
  const std::string keep_prefix = TableVersionPrefix(keep);
  // Versions are big-endian u64 prefixes: [0, keep) and (keep, max].
  const std::pair<std::string, std::string> ranges[] = {
      {TableVersionPrefix(0), keep_prefix},
      {internal::PrefixSuccessor(keep_prefix), std::string(9, '\xff')}};
  for (const auto& [begin, end] : ranges) {
    if (begin.empty() || begin >= end) continue;
    RETURN_IF_ERROR(FromRocks(
        shard.db->DeleteRange(rocksdb::WriteOptions(), rep_->TableCf(table, p), begin, end),
        absl::StrCat("cannot delete ", shard.path, " ", internal::TableCfName(table),
                     " versions")));
  }
  return absl::OkStatus();
}

absl::Status Graph::SyncTables() {
  RETURN_IF_ERROR(rep_->RequireWritable("SyncTables"));
  for (uint32_t p = 0; p < rep_->shards.size(); ++p) RETURN_IF_ERROR(SyncTables(p));
  return absl::OkStatus();
}

absl::Status Graph::SyncTables(uint32_t p) {
  RETURN_IF_ERROR(rep_->RequireWritable("SyncTables"));
  RETURN_IF_ERROR(rep_->CheckPartition(p, "SyncTables"));
  const Db& shard = rep_->shards[p];
  rocksdb::FlushOptions fo;
  fo.wait = true;
  RETURN_IF_ERROR(
      FromRocks(shard.db->Flush(fo, {shard.handles[kEmbeddings], shard.handles[kOptimizer]}),
                absl::StrCat("cannot flush tables of ", shard.path)));
  return FromRocks(shard.db->SyncWAL(), absl::StrCat("cannot sync WAL of ", shard.path));
}

absl::Status Graph::CopyTo(const std::string& dest) const {
  RETURN_IF_ERROR(rep_->RequireWritable("CopyTo"));
  std::error_code ec;
  if (fs::exists(dest, ec)) {
    return absl::AlreadyExistsError(absl::StrCat("cannot copy the graph to ", dest, ": it exists"));
  }
  auto copy = [&]() -> absl::Status {
    fs::create_directories(dest, ec);
    if (ec) return internal::ErrnoStatus(ec.value(), "create directory", dest);
    std::vector<const Db*> dbs = {&rep_->dict};
    for (const Db& shard : rep_->shards) dbs.push_back(&shard);
    for (const Db* db : dbs) {
      const std::string to = absl::StrCat(dest, "/", fs::path(db->path).filename().string());
      RETURN_IF_ERROR(internal::CheckpointDb(db->db, to,
                                             absl::StrCat("cannot checkpoint ", db->path, " to ", to)));
    }
    for (const char* name : {"MANIFEST.json", "blobs"}) {
      const fs::path from = fs::path(rep_->dir) / name;
      if (!fs::exists(from, ec)) continue;
      fs::copy(from, fs::path(dest) / name, fs::copy_options::recursive, ec);
      if (ec) return internal::ErrnoStatus(ec.value(), "copy", from.string());
    }
    return absl::OkStatus();
  };
  absl::Status status = copy();
  if (!status.ok()) fs::remove_all(dest, ec);
  return status;
}

uint64_t Graph::ShardBytesOnDisk(uint32_t p) const {
  if (p >= rep_->shards.size()) return 0;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(rep_->shards[p].path, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (it->is_regular_file(file_ec)) {
      const uintmax_t size = it->file_size(file_ec);
      if (!file_ec) total += size;
    }
  }
  return total;
}

uint64_t Graph::MemTableBytes() const {
  uint64_t total = 0;
  auto add = [&total](const Db& d) {
    uint64_t bytes = 0;
    if (d.db != nullptr &&
        d.db->GetAggregatedIntProperty("rocksdb.cur-size-all-mem-tables", &bytes)) {
      total += bytes;
    }
  };
  add(rep_->dict);
  for (const Db& shard : rep_->shards) add(shard);
  return total;
}

}  // namespace ember

namespace ember {
namespace {

absl::Status CheckBlobName(std::string_view name) {
  if (name.empty() || name.size() > 200) {
    return absl::InvalidArgumentError("blob name must be 1..200 characters");
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
      return absl::InvalidArgumentError(
          absl::StrCat("blob name '", internal::Sv(name), "' has characters outside [A-Za-z0-9._-]"));
    }
  }
  if (name == "." || name == "..") return absl::InvalidArgumentError("bad blob name");
  return absl::OkStatus();
}

}  // namespace

absl::Status Graph::WriteBlob(std::string_view name, std::string_view bytes) {
  return WriteBlob(name, std::span<const std::string_view>(&bytes, 1));
}

absl::Status Graph::WriteBlob(std::string_view name, std::span<const std::string_view> parts) {
  RETURN_IF_ERROR(rep_->RequireWritable("WriteBlob"));
  RETURN_IF_ERROR(CheckBlobName(name));
  const std::string dir = rep_->dir + "/blobs";
  RETURN_IF_ERROR(CreateDirs(dir));
  return internal::WriteFileAtomic(absl::StrCat(dir, "/", internal::Sv(name)), parts);
}

absl::StatusOr<std::string> Graph::ReadBlob(std::string_view name) const {
  RETURN_IF_ERROR(CheckBlobName(name));
  const std::string path = absl::StrCat(rep_->dir, "/blobs/", internal::Sv(name));
  if (!rep_->options.read_only) return internal::ReadFile(path);
  ASSIGN_OR_RETURN(const ReadableFile* file, rep_->SnapshotBlob(name, path));
  return ReadWholeFile(*file);
}

absl::Status Graph::ReadBlobInto(std::string_view name,
                                 std::span<const std::span<char>> parts) const {
  RETURN_IF_ERROR(CheckBlobName(name));
  const std::string path = absl::StrCat(rep_->dir, "/blobs/", internal::Sv(name));
  if (!rep_->options.read_only) return internal::ReadFileInto(path, parts);
  ASSIGN_OR_RETURN(const ReadableFile* file, rep_->SnapshotBlob(name, path));
  return ReadWholeFileInto(*file, parts);
}

absl::StatusOr<std::vector<std::string>> Graph::ListBlobs() const {
  std::vector<std::string> names;
  if (rep_->options.read_only) {
    for (const auto& [name, file] : rep_->blobs) names.push_back(name);
    return names;  // the map is sorted
  }
  const std::string dir = rep_->dir + "/blobs";
  absl::StatusOr<std::vector<std::string>> listed = CurrentFileSystem()->ListDir(dir);
  if (absl::IsNotFound(listed.status())) return names;
  if (!listed.ok()) return listed.status();
  names = *std::move(listed);
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status Graph::DeleteBlob(std::string_view name) {
  RETURN_IF_ERROR(rep_->RequireWritable("DeleteBlob"));
  RETURN_IF_ERROR(CheckBlobName(name));
  const std::string path = absl::StrCat(rep_->dir, "/blobs/", internal::Sv(name));
  const absl::Status removed = CurrentFileSystem()->Remove(path);
  return absl::IsNotFound(removed) ? absl::OkStatus() : removed;
}

}  // namespace ember

namespace ember {

absl::StatusOr<uint64_t> Graph::TableRows(Table table, uint32_t p,
                                          uint64_t version) const {
  RETURN_IF_ERROR(rep_->CheckPartition(p, "TableRows"));
  const Db& shard = rep_->shards[p];
  std::string meta;
  rocksdb::Status s =
      shard.db->Get(rocksdb::ReadOptions(), rep_->TableCf(table, p),
                    TableChunkKey(version, kTableMetaChunk), &meta);
  const std::string where =
      absl::StrCat(shard.path, " ", internal::TableCfName(table), " version ", version);
  if (s.IsNotFound()) return absl::NotFoundError(absl::StrCat(where, " not found"));
  RETURN_IF_ERROR(FromRocks(s, absl::StrCat("cannot read ", where)));
  if (meta.size() != 16) {
    return absl::DataLossError(absl::StrCat(where, ": bad shape record"));
  }
  return GetLittleEndian64(meta.data());
}

absl::Status Graph::IngestTableFile(Table table, uint32_t p, uint64_t version,
                                    const std::string& path) {
  RETURN_IF_ERROR(rep_->RequireWritable("IngestTableFile"));
  RETURN_IF_ERROR(rep_->CheckPartition(p, "IngestTableFile"));
  const Db& shard = rep_->shards[p];
  rocksdb::ColumnFamilyHandle* cf = rep_->TableCf(table, p);
  const std::string where = absl::StrCat(path, " into ", shard.path, " ",
                                         internal::TableCfName(table), " version ", version);
  // The file's keys must all be that version's: its first and last key.
  std::shared_ptr<rocksdb::Env> env = internal::RocksEnvForCurrentFileSystem();
  rocksdb::Options reader_options(rocksdb::DBOptions(), internal::ColumnFamilyOptionsFor(
                                                            internal::TableCfName(table), nullptr));
  reader_options.env = env.get();
  rocksdb::SstFileReader reader(reader_options);
  RETURN_IF_ERROR(FromRocks(reader.Open(path), absl::StrCat("cannot open ", path)));
  const std::string prefix = TableVersionPrefix(version);
  {
    std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    const bool first_ok = it->Valid() && it->key().starts_with(prefix);
    it->SeekToLast();
    const bool last_ok = it->Valid() && it->key().starts_with(prefix);
    RETURN_IF_ERROR(FromRocks(it->status(), absl::StrCat("cannot read ", path)));
    if (!first_ok || !last_ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot ingest ", where, ": the file holds no table of that version"));
    }
  }
  // Drop whatever an earlier write of this version left (ingested above it,
  // the file's keys would hide only the records it has itself).
  bool earlier = false;
  {
    std::unique_ptr<rocksdb::Iterator> it(shard.db->NewIterator(rocksdb::ReadOptions(), cf));
    it->Seek(prefix);
    earlier = it->Valid() && it->key().starts_with(prefix);
    RETURN_IF_ERROR(FromRocks(it->status(), absl::StrCat("cannot scan ", where)));
  }
  if (earlier) {
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;  // the ingestion below flushes the memtable holding it
    RETURN_IF_ERROR(
        FromRocks(shard.db->DeleteRange(wo, cf, prefix, internal::PrefixSuccessor(prefix)),
                  absl::StrCat("cannot clear ", where)));
  }
  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = true;
  ingest.allow_global_seqno = true;
  ingest.allow_blocking_flush = true;
  return FromRocks(shard.db->IngestExternalFile(cf, {path}, ingest),
                   absl::StrCat("cannot ingest ", where));
}

absl::Status Graph::RemoveIncomingTables() {
  RETURN_IF_ERROR(rep_->RequireWritable("RemoveIncomingTables"));
  return CurrentFileSystem()->RemoveAll(IncomingDir(rep_->dir));
}

absl::Status Graph::IngestRuns(std::string_view cf, uint32_t partition,
                               const std::vector<std::string>& files) {
  RETURN_IF_ERROR(rep_->RequireWritable("IngestRuns"));
  if (files.empty()) return absl::OkStatus();
  Db* db = nullptr;
  int handle = -1;
  if (cf == "by_name" || cf == "by_id") {
    db = &rep_->dict;
    handle = cf == "by_name" ? kByName : kById;
  } else {
    RETURN_IF_ERROR(rep_->CheckPartition(partition, "IngestRuns"));
    db = &rep_->shards[partition];
    if (cf == "nodes") {
      handle = kNodes;
    } else if (cf == "edges") {
      handle = kEdges;
    } else if (cf == "features") {
      handle = kFeatures;
    }
  }
  if (handle < 0) {
    return absl::InvalidArgumentError(absl::StrCat("IngestRuns: unknown column family ", Sv(cf)));
  }
  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = true;
  ingest.allow_global_seqno = true;
  ingest.allow_blocking_flush = true;
  return FromRocks(db->db->IngestExternalFile(db->handles[handle], files, ingest),
                   absl::StrCat("cannot ingest ", files.size(), " run(s) into ",
                                db->path, " ", Sv(cf)));
}

absl::Status Graph::BeginAppend() {
  RETURN_IF_ERROR(rep_->RequireWritable("BeginAppend"));
  FileSystem* file_system = CurrentFileSystem();
  const std::string undo = internal::AppendUndoDir(rep_->dir);
  RETURN_IF_ERROR(file_system->RemoveAll(undo));
  RETURN_IF_ERROR(file_system->CreateDir(undo));
  absl::Status copied = internal::CopyDbForUndo(rep_->dict.db, rep_->dir, internal::DictDirName());
  for (uint32_t p = 0; copied.ok() && p < rep_->shards.size(); ++p) {
    copied = internal::CopyDbForUndo(rep_->shards[p].db, rep_->dir, internal::ShardDirName(p));
  }
  if (copied.ok()) copied = internal::SealAppendUndo(rep_->dir, rep_->manifest.edge_generation);
  if (!copied.ok()) file_system->RemoveAll(undo).IgnoreError();
  return copied;
}

absl::Status Graph::EndAppend() {
  RETURN_IF_ERROR(rep_->RequireWritable("EndAppend"));
  // The manifest on disk decides: a commit whose rename landed but whose
  // directory sync failed has committed as far as the next open knows.
  ASSIGN_OR_RETURN(const Manifest on_disk, ReadManifest(rep_->dir + "/MANIFEST.json"));
  ASSIGN_OR_RETURN(const bool pending,
                   internal::AppendUndoPending(rep_->dir, on_disk.edge_generation));
  if (!pending) return internal::DropAppendUndo(rep_->dir);
  // Closing may fail on the very fault that failed the append; the copy
  // replaces these DBs either way.
  rep_->CloseDbs().IgnoreError();
  RETURN_IF_ERROR(internal::PutBackAppendUndo(rep_->dir));
  return rep_->OpenAll();
}

absl::Status Graph::RemoveUncommittedAppend() {
  RETURN_IF_ERROR(rep_->RequireWritable("RemoveUncommittedAppend"));
  const Manifest& m = rep_->manifest;
  rocksdb::WriteOptions wo;
  wo.sync = true;
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    Db& shard = rep_->shards[p];
    // Edge blocks of generations above the committed one.
    for (Split split : kAllSplits) {
      for (uint32_t j = 0; j < m.num_partitions; ++j) {
        const std::string from = EdgeBlockKey(split, j, EdgeBlockSeq(m.edge_generation + 1, 0, 0));
        const std::string to = internal::PrefixSuccessor(EdgeBucketPrefix(split, j));
        RETURN_IF_ERROR(FromRocks(shard.db->DeleteRange(wo, shard.handles[kEdges], from, to),
                                  absl::StrCat("cannot clean edges of ", shard.path)));
      }
    }
    // Node-table rows beyond the partition size.
    const uint32_t size = static_cast<uint32_t>(m.partition_sizes[p]);
    RETURN_IF_ERROR(FromRocks(
        // Node keys are 4 bytes; 5 bytes of 0xff sort after all of them.
        shard.db->DeleteRange(wo, shard.handles[kNodes], NodeOffsetKey(size),
                              std::string(5, '\xff')),
        absl::StrCat("cannot clean nodes of ", shard.path)));
    // Dictionary entries of those rows: by_name first (found through the
    // names by_id holds), then by_id.
    Db& dict = rep_->dict;
    const std::string lo = DictIdKey(PackNodeRef({p, size}));
    const std::string hi = DictIdKey(PackNodeRef({p + 1, 0}));
    rocksdb::Slice upper(hi);
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(dict.db->NewIterator(ro, dict.handles[kById]));
    for (it->Seek(lo); it->Valid(); it->Next()) {
      const std::string name = it->value().ToString();
      uint64_t key;
      if (m.integer_ids) {
        uint64_t id = 0;
        if (!ParseDecimal(name, &id)) continue;
        key = IntegerNodeKey(id);
      } else {
        key = StringNodeKey(name);
      }
      // Only if the entry still points at the uncommitted row.
      std::string value;
      rocksdb::Status s = dict.db->Get(rocksdb::ReadOptions(), dict.handles[kByName],
                                       DictNameKey(key, name), &value);
      uint64_t packed = 0;
      if (s.ok() && DecodeU64(value, &packed).ok() &&
          UnpackNodeRef(packed).partition == p && UnpackNodeRef(packed).offset >= size) {
        RETURN_IF_ERROR(FromRocks(
            dict.db->Delete(wo, dict.handles[kByName], DictNameKey(key, name)),
            absl::StrCat("cannot clean ", dict.path)));
      }
    }
    RETURN_IF_ERROR(FromRocks(it->status(), absl::StrCat("cannot scan ", dict.path)));
    RETURN_IF_ERROR(FromRocks(dict.db->DeleteRange(wo, dict.handles[kById], lo, hi),
                              absl::StrCat("cannot clean ", dict.path)));
  }
  return absl::OkStatus();
}

}  // namespace ember
