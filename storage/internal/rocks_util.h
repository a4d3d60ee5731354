// RocksDB configuration shared by GraphBuilder and Graph (internal to
// storage/; never include from outside it). Both must agree on the options of
// every column family: the builder writes SST files with them and the graph
// reads those files back.
#ifndef EMBER_STORAGE_INTERNAL_ROCKS_UTIL_H_
#define EMBER_STORAGE_INTERNAL_ROCKS_UTIL_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/status.h"

namespace ember::internal {

// Column family names.
inline constexpr char kCfByName[] = "by_name";
inline constexpr char kCfById[] = "by_id";
inline constexpr char kCfNodes[] = "nodes";
inline constexpr char kCfEdges[] = "edges";
inline constexpr char kCfFeatures[] = "features";
inline constexpr char kCfEmbeddings[] = "embeddings";
inline constexpr char kCfOptimizer[] = "optimizer";

// Every column family of dict/ and of each shard-<p>/, in handle order
// (the implicit "default" column family is opened too but holds nothing).
const std::vector<std::string>& DictColumnFamilies();
const std::vector<std::string>& ShardColumnFamilies();

// "dict" and "shard-<p>".
std::string DictDirName();
std::string ShardDirName(uint32_t p);

// Options of column family `cf`. `block_cache` may be null (writers).
rocksdb::ColumnFamilyOptions ColumnFamilyOptionsFor(
    std::string_view cf, const std::shared_ptr<rocksdb::Cache>& block_cache);

// A rocksdb::Status as an absl::Status: "<context>: <rocksdb message>".
absl::Status FromRocks(const rocksdb::Status& s, std::string_view context);

// Destroys `handles`, closes `*db` and deletes it (also when closing fails;
// RocksDB's DB::Close reports errors of background work, e.g. a flush that
// failed) and sets *db to null. OK, or the close error naming `path`. A null
// *db is OK.
absl::Status CloseDb(rocksdb::DB** db, std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                     std::string_view path);

// A RocksDB checkpoint of `db` in the new directory `to` (hard links to its
// table files where the file system allows, copies otherwise); errors start
// with `context`.
absl::Status CheckpointDb(rocksdb::DB* db, const std::string& to, std::string_view context);

// The smallest string greater than every string starting with `prefix`
// (empty when there is none, i.e. prefix is all 0xff).
std::string PrefixSuccessor(std::string_view prefix);

}  // namespace ember::internal

#endif  // EMBER_STORAGE_INTERNAL_ROCKS_UTIL_H_
