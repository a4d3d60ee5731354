// The records of one checkpoint table version (shard-<p> / embeddings and
// optimizer, storage/internal/keys.h): what Graph::WriteTable puts into a
// shard and WriteTableFile (storage/table_files.h) into a table file.
#ifndef EMBER_STORAGE_INTERNAL_TABLE_RECORDS_H_
#define EMBER_STORAGE_INTERNAL_TABLE_RECORDS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "storage/types.h"

namespace ember::internal {

// The column family holding `table`: "embeddings" or "optimizer".
const char* TableCfName(Table table);

// The first of `num_rows` rows of `width` floats holding a NaN or an
// infinity; nullopt when every value is finite.
std::optional<uint64_t> FirstNonFiniteRow(const float* rows, uint64_t num_rows, uint32_t width);

// Calls put(key, value) for every record of table version `version`
// holding `num_rows` rows of `width` floats: its chunks in order, then its
// shape record, keys strictly ascending. Stops at put's first error.
// InvalidArgument naming `where` for width 0 or more chunks than a version
// has room for; FailedPrecondition naming `where` and the row, before any
// put, when a value is not finite (a diverged model is never written).
absl::Status ForEachTableRecord(
    uint64_t version, const float* rows, uint64_t num_rows, uint32_t width,
    const std::string& where,
    const std::function<absl::Status(const std::string& key, std::string_view value)>& put);

}  // namespace ember::internal

#endif  // EMBER_STORAGE_INTERNAL_TABLE_RECORDS_H_
