// RocksDB's files through ember's file-system seam (internal to storage/):
// the rocksdb::Env a graph's DBs and SST writers use, so that a FileSystem
// installed with ScopedFileSystem (a fault injector) sees RocksDB's writes,
// syncs, renames and reads as well as ember's own.
#ifndef EMBER_STORAGE_INTERNAL_ROCKS_FS_H_
#define EMBER_STORAGE_INTERNAL_ROCKS_FS_H_

#include <memory>

#include "rocksdb/env.h"
#include "storage/base/file_system.h"

namespace ember::internal {

// The Env for RocksDB work started now. With DefaultFileSystem() current:
// RocksDB's own default Env, unchanged, so production I/O is exactly
// RocksDB's. Otherwise an Env whose file operations go through
// CurrentFileSystem() (data files, WALs, MANIFEST-*, CURRENT, directory
// syncs, renames, deletions, reads); RocksDB's LOCK and info LOG files stay
// on RocksDB's default file system. Keep the pointer alive while anything
// opened with it (a DB, an SstFileWriter) is. The first call lowers the CPU
// priority of RocksDB's compaction threads for the process (nice 19).
std::shared_ptr<rocksdb::Env> RocksEnvForCurrentFileSystem();

}  // namespace ember::internal

#endif  // EMBER_STORAGE_INTERNAL_ROCKS_FS_H_
