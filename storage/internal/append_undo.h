// The undo copy of an append (internal to storage/; Graph::BeginAppend and
// Graph::EndAppend use it, and a writer's Graph::Open settles what a killed
// append left).
//
// GRAPH/undo-append/ holds, for every DB of the graph (dict/, shard-<p>/),
// a RocksDB checkpoint taken before the append ingests anything (hard links
// to its table files, copies of its MANIFEST-* and WAL), and GENERATION:
// the manifest's edge generation at that moment, written last, which seals
// the copy.
//
// Why a copy and not only deleting what the append added
// (Graph::RemoveUncommittedAppend): a write or fsync of a DB's MANIFEST-*
// that fails while the DB ingests a run can leave the DB unopenable
// (RocksDB 7.8 has logged the ingested file, then deletes it: "Corruption:
// ... cannot open 000029.ldb"). A checkpoint shares the table files, which
// RocksDB never changes in place, so it costs links, not bytes.
#ifndef EMBER_STORAGE_INTERNAL_APPEND_UNDO_H_
#define EMBER_STORAGE_INTERNAL_APPEND_UNDO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rocksdb/db.h"

namespace ember::internal {

// GRAPH/undo-append.
std::string AppendUndoDir(const std::string& graph_dir);

// Checkpoints `db` (the DB in GRAPH/<name>) into AppendUndoDir/<name>.
// Errors name the DB.
absl::Status CopyDbForUndo(rocksdb::DB* db, const std::string& graph_dir,
                           const std::string& name);

// Seals the copies: GENERATION holds `generation` (synced, like the
// directory). Until sealed, a copy is incomplete and is never put back.
absl::Status SealAppendUndo(const std::string& graph_dir, uint32_t generation);

// Whether a sealed copy is there whose generation is `committed_generation`,
// the manifest's: the append it guards has not committed, and the live DBs
// may hold part of it.
// An error when the seal cannot be read.
absl::StatusOr<bool> AppendUndoPending(const std::string& graph_dir,
                                       uint32_t committed_generation);

// Puts a pending copy back: each copied DB replaces the live one (the live
// one renamed aside into the undo directory, the copy renamed into place;
// a failed rename leaves a DB in place and returns the error), then the
// copy is unsealed and removed. Can be cut short by a crash and called
// again. REQUIRES: the graph's writer lock held, no DB of the graph open,
// AppendUndoPending.
absl::Status PutBackAppendUndo(const std::string& graph_dir);

// Removes the undo directory (a committed append's copy, or one never
// sealed). OK when there is none. REQUIRES: the graph's writer lock held.
absl::Status DropAppendUndo(const std::string& graph_dir);

}  // namespace ember::internal

#endif  // EMBER_STORAGE_INTERNAL_APPEND_UNDO_H_
