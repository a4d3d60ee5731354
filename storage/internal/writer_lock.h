// GRAPH/LOCK: the one-writer lock of a graph directory, and who holds it
// (internal to storage/; Graph::Open is its only user).
//
// A writer takes an exclusive, non-blocking flock() on GRAPH/LOCK and then
// writes into the file who it is:
//   pid <decimal pid>\n
//   command <argv joined by spaces>\n
// The flock is what excludes other writers; the text is only for readers'
// messages ("being written by pid 123 (ember train g --epochs 9)"). A writer
// that exits or is killed releases the flock but leaves its text behind, so
// a reader trusts the text only while that pid is alive (a recycled pid can
// make a reader name the wrong process; it cannot make it read wrong data).
#ifndef EMBER_STORAGE_INTERNAL_WRITER_LOCK_H_
#define EMBER_STORAGE_INTERNAL_WRITER_LOCK_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "storage/base/file_system.h"

namespace ember::internal {

// Creates GRAPH/LOCK if needed, locks it and records this process in it.
// The lock (through CurrentFileSystem()); destroying it releases the lock. FailedPrecondition
// "GRAPH is locked by another writer (GRAPH/LOCK)" while another descriptor
// (this process's or another's) holds it, naming that writer when it is
// known and alive.
absl::StatusOr<std::unique_ptr<FileLock>> AcquireWriterLock(const std::string& graph_dir);

// "pid <pid> (<command>)" of the writer GRAPH/LOCK records when that
// process is alive; nullopt when no live writer is recorded (no LOCK, empty
// or malformed text, a dead pid).
std::optional<std::string> LiveWriter(const std::string& graph_dir);

}  // namespace ember::internal

#endif  // EMBER_STORAGE_INTERNAL_WRITER_LOCK_H_
