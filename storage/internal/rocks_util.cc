#include "storage/internal/rocks_util.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "rocksdb/convenience.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/checkpoint.h"
#include "storage/base/file_util.h"
#include "storage/base/status_macros.h"

namespace ember::internal {
namespace {

constexpr size_t kBlockSize = 64 << 10;

// LZ4 if this RocksDB has it, else the best fallback it does have.
rocksdb::CompressionType FastCompression() {
  static const rocksdb::CompressionType type = [] {
    std::vector<rocksdb::CompressionType> supported =
        rocksdb::GetSupportedCompressions();
    for (auto want : {rocksdb::kLZ4Compression, rocksdb::kSnappyCompression}) {
      if (std::find(supported.begin(), supported.end(), want) !=
          supported.end()) {
        return want;
      }
    }
    return rocksdb::kNoCompression;
  }();
  return type;
}

}  // namespace

const std::vector<std::string>& DictColumnFamilies() {
  static const std::vector<std::string>* cfs =
      new std::vector<std::string>{kCfByName, kCfById};
  return *cfs;
}

const std::vector<std::string>& ShardColumnFamilies() {
  static const std::vector<std::string>* cfs = new std::vector<std::string>{
      kCfNodes, kCfEdges, kCfFeatures, kCfEmbeddings, kCfOptimizer};
  return *cfs;
}

std::string DictDirName() { return "dict"; }

std::string ShardDirName(uint32_t p) { return absl::StrCat("shard-", p); }

rocksdb::ColumnFamilyOptions ColumnFamilyOptionsFor(
    std::string_view cf, const std::shared_ptr<rocksdb::Cache>& block_cache) {
  rocksdb::ColumnFamilyOptions o;
  const bool is_table = cf == kCfEmbeddings || cf == kCfOptimizer;
  // Point lookups (names, ids, node offsets) get Bloom filters; edges and
  // tables are only ever scanned by prefix.
  const bool point_lookups = cf == kCfByName || cf == kCfById ||
                             cf == kCfNodes || cf == kCfFeatures;

  rocksdb::BlockBasedTableOptions t;
  t.block_size = kBlockSize;
  if (block_cache != nullptr) {
    t.block_cache = block_cache;
    // Partitioned index and filters: only small top-level blocks stay
    // pinned; the partitions compete for the cache like data blocks, so a
    // big shard neither blows memory nor rereads a huge filter per lookup.
    t.cache_index_and_filter_blocks = true;
    t.pin_top_level_index_and_filter = true;
    t.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
    t.metadata_block_size = 4096;
  } else {
    t.no_block_cache = true;
  }
  if (point_lookups) {
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.partition_filters = block_cache != nullptr;
  }
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));

  // Floats barely compress; everything else is ids and text.
  o.compression = is_table ? rocksdb::kNoCompression : FastCompression();
  o.bottommost_compression = o.compression;
  // Table rows are written in ~4 MiB values; a larger memtable keeps a
  // partition's chunks in few files.
  o.write_buffer_size = is_table ? (64 << 20) : (16 << 20);
  o.max_write_buffer_number = 2;
  o.level_compaction_dynamic_level_bytes = true;
  return o;
}

absl::Status CloseDb(rocksdb::DB** db, std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                     std::string_view path) {
  if (*db == nullptr) return absl::OkStatus();
  absl::Status status;
  for (rocksdb::ColumnFamilyHandle* h : *handles) {
    absl::Status s = FromRocks((*db)->DestroyColumnFamilyHandle(h),
                               absl::StrCat("cannot release a column family of ", Sv(path)));
    if (status.ok()) status = s;
  }
  handles->clear();
  absl::Status s = FromRocks((*db)->Close(), absl::StrCat("cannot close ", Sv(path)));
  if (status.ok()) status = s;
  delete *db;
  *db = nullptr;
  return status;
}

absl::Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  std::string message = absl::StrCat(Sv(context), ": ", s.ToString());
  switch (s.code()) {
    case rocksdb::Status::kNotFound:
      return absl::NotFoundError(message);
    case rocksdb::Status::kCorruption:
      return absl::DataLossError(message);
    case rocksdb::Status::kInvalidArgument:
      return absl::InvalidArgumentError(message);
    case rocksdb::Status::kNotSupported:
      return absl::UnimplementedError(message);
    case rocksdb::Status::kBusy:
    case rocksdb::Status::kTryAgain:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    unsigned char c = static_cast<unsigned char>(s.back());
    if (c != 0xff) {
      s.back() = static_cast<char>(c + 1);
      return s;
    }
    s.pop_back();
  }
  return s;
}

absl::Status CheckpointDb(rocksdb::DB* db, const std::string& to, std::string_view context) {
  rocksdb::Checkpoint* raw = nullptr;
  RETURN_IF_ERROR(FromRocks(rocksdb::Checkpoint::Create(db, &raw), context));
  const std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  return FromRocks(checkpoint->CreateCheckpoint(to), context);
}

}  // namespace ember::internal
