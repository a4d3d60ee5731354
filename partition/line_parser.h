// Parses one line of an edge list into (src, [rel,] dst) fields. Pure
// functions over string_views: no allocation, safe to call from any thread.
#ifndef EMBER_PARTITION_LINE_PARSER_H_
#define EMBER_PARTITION_LINE_PARSER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ember {

// Why a line was rejected. Reported as "file:line: <text>".
enum class RejectReason : uint8_t {
  kTooFewColumns = 0,
  kEmptyId,
  kNonNumericId,
  kNegativeId,
  kIdOutOfRange,
  kBinaryData,
  kInvalidUtf8,
  kBadWeight,       // not a finite number (--weight-column)
  kNegativeWeight,  // below 0
  kZeroWeight,      // exactly 0: the edge would teach nothing
  kCount,
};
inline constexpr int kNumRejectReasons = static_cast<int>(RejectReason::kCount);
std::string_view RejectReasonName(RejectReason reason);  // e.g. "empty_id"

struct LineFormat {
  // '\t' or ',' separate single fields (fields are trimmed of spaces);
  // ' ' splits on runs of spaces and tabs.
  char delimiter = '\t';
  int src_col = 0;
  int rel_col = -1;  // -1: no relation column (one relation)
  int dst_col = 1;
  int weight_col = -1;  // -1: unweighted; else the column of an f32 weight
  bool integer_ids = false;
  int min_fields() const;
};

// `--delimiter` values: "auto" (returns '\0'), "tab", "space", "comma" or a
// single character.
absl::StatusOr<char> ParseDelimiterFlag(std::string_view text);
// `--columns` values: "SRC,DST" or "SRC,REL,DST", 0-based.
absl::StatusOr<std::vector<int>> ParseColumnsFlag(std::string_view text);
// Parses an edge weight: a finite number above 0 (decimal or exponent
// notation, as strtof reads it). Sets *reason otherwise.
bool ParseEdgeWeight(std::string_view text, float* out, RejectReason* reason);

// Blank lines and comments (first non-blank character '#' or '%').
bool IsSkippableLine(std::string_view line);
// Picks the delimiter from a data line: tab if present, else comma if
// present, else spaces.
char DetectDelimiter(std::string_view line);
// Number of fields of `line` under `delimiter`.
int CountFields(std::string_view line, char delimiter);

struct ParsedLine {
  std::string_view src;
  std::string_view rel;  // empty when the format has no relation column
  std::string_view dst;
  uint64_t src_id = 0;  // set under integer_ids
  uint64_t dst_id = 0;
  std::string_view weight_text;  // the weight column's field (weighted formats)
  float weight = 1.0f;           // set when the format has a weight column
};

// Parses a data line (not skippable; without '\n'; a trailing '\r' is
// ignored). Returns false and sets *reason when the line is bad.
bool ParseEdgeLine(std::string_view line, const LineFormat& format,
                   ParsedLine* out, RejectReason* reason);

// Whether a data line reads as a header row: every id column the format
// reads holds a column name edge lists use ("src", "user_id", "relation",
// "target", ...). A heuristic for a warning, never for dropping a line.
bool LooksLikeHeader(std::string_view line, const LineFormat& format);

// At most 60 bytes of `s` for an error message, non-printable bytes as
// \xNN escapes and "..." when cut.
std::string PrintableSnippet(std::string_view s);

// Whether `id` is acceptable as a string id: non-empty, valid UTF-8, no
// control characters. Sets *reason otherwise.
bool ValidateStringId(std::string_view id, RejectReason* reason);

}  // namespace ember

#endif  // EMBER_PARTITION_LINE_PARSER_H_
