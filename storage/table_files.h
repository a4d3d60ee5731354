// Checkpoint tables written beside a graph rather than into it, for the
// graph's writer to take in. Where several processes train one graph
// directory (ranks under mpirun sharing a path), only one opens it
// read-write (GRAPH/LOCK); the others write the partitions they hold as
// table files under GRAPH/incoming/<version>/, make them durable, and the
// writer takes each into its shard (Graph::IngestTableFile: a hard link,
// no bytes copied where the file system allows) before it commits the
// manifest naming them. What a killed checkpoint left there, the writer
// removes at its next start (Graph::RemoveIncomingTables).
#ifndef EMBER_STORAGE_TABLE_FILES_H_
#define EMBER_STORAGE_TABLE_FILES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/types.h"

namespace ember {

// GRAPH/incoming: where table files and markers are staged.
std::string IncomingDir(const std::string& graph_dir);
// GRAPH/incoming/<version>/<table>-<p>.sst: where partition p's `table` of
// checkpoint `version` is staged.
std::string IncomingTableFile(const std::string& graph_dir, uint64_t version, Table table,
                              uint32_t p);

// Writes `num_rows` rows of `width` floats as the table file `path`
// (IncomingTableFile), holding what Graph::WriteTable(table, p, version,
// ...) would store, and makes it durable: the file and every directory
// created for it synced. Replaces a file already there. Writes nothing
// into the graph's databases, so a process that opened the graph read-only
// may call it. InvalidArgument for width 0; errors name the path.
absl::Status WriteTableFile(const std::string& path, Table table, uint64_t version,
                            const float* rows, uint64_t num_rows, uint32_t width);

// Whether processes see one graph directory (perhaps by other names):
// the writer leaves an empty file `name` ([A-Za-z0-9._-]+) in
// GRAPH/incoming/ (removed with the rest by Graph::RemoveIncomingTables),
// the others look for it in theirs. A file system that does not show a new
// file to every client at once may make SeesIncomingMarker say false.
absl::Status WriteIncomingMarker(const std::string& graph_dir, const std::string& name);
absl::StatusOr<bool> SeesIncomingMarker(const std::string& graph_dir, const std::string& name);

}  // namespace ember

#endif  // EMBER_STORAGE_TABLE_FILES_H_
