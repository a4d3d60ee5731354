// libFuzzer target: the edge-list line parser (partition/line_parser.h).
// Input: one selector byte (delimiter, integer ids, relation column), then
// the line. Checks that parsed fields are views into the line and that the
// flag parsers and helpers accept any bytes without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "partition/line_parser.h"

namespace {

bool Inside(std::string_view field, std::string_view line) {
  return field.empty() || (field.data() >= line.data() &&
                           field.data() + field.size() <= line.data() + line.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  // Flag parsers take any text.
  (void)ember::ParseDelimiterFlag(text);
  (void)ember::ParseColumnsFlag(text);
  (void)ember::PrintableSnippet(text);
  // ParseEdgeLine takes one line, without '\n'.
  std::string_view line = text.substr(0, text.find('\n'));
  ember::LineFormat format;
  constexpr char kDelimiters[] = {'\t', ',', ' ', '\0'};
  format.delimiter = kDelimiters[selector & 3];
  if (format.delimiter == '\0') format.delimiter = ember::DetectDelimiter(line);
  format.integer_ids = (selector >> 2) & 1;
  if ((selector >> 3) & 1) {
    format.rel_col = 1;
    format.dst_col = 2;
  }
  if ((selector >> 4) & 1) std::swap(format.src_col, format.dst_col);
  (void)ember::IsSkippableLine(line);
  const int fields = ember::CountFields(line, format.delimiter);
  ember::ParsedLine parsed;
  ember::RejectReason reason = ember::RejectReason::kCount;
  if (ember::ParseEdgeLine(line, format, &parsed, &reason)) {
    if (fields < format.min_fields()) std::abort();
    if (!Inside(parsed.src, line) || !Inside(parsed.rel, line) || !Inside(parsed.dst, line)) {
      std::abort();
    }
  } else {
    if (reason == ember::RejectReason::kCount) std::abort();  // a reason is always set
    (void)ember::RejectReasonName(reason);
  }
  ember::RejectReason id_reason;
  (void)ember::ValidateStringId(line, &id_reason);
  return 0;
}
