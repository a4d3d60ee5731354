#include "partition/line_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace ember {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Splits `line` into at most `max_fields` fields; returns the total count
// of fields seen (which may exceed max_fields).
int SplitFields(std::string_view line, char delimiter, std::string_view* fields,
                int max_fields) {
  int n = 0;
  if (delimiter == ' ') {
    size_t i = 0;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i >= line.size()) break;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      if (n < max_fields) fields[n] = line.substr(i, j - i);
      ++n;
      i = j;
    }
    return n;
  }
  size_t start = 0;
  while (true) {
    size_t end = line.find(delimiter, start);
    std::string_view f = line.substr(
        start, end == std::string_view::npos ? std::string_view::npos
                                             : end - start);
    if (n < max_fields) fields[n] = Trim(f);
    ++n;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return n;
}

bool ParseIntegerId(std::string_view s, uint64_t* out, RejectReason* reason) {
  if (s.empty()) {
    *reason = RejectReason::kEmptyId;
    return false;
  }
  if (s.front() == '-') {
    *reason = RejectReason::kNegativeId;
    return false;
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec == std::errc::result_out_of_range) {
    *reason = RejectReason::kIdOutOfRange;
    return false;
  }
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    *reason = RejectReason::kNonNumericId;
    return false;
  }
  return true;
}

}  // namespace

std::string_view RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kTooFewColumns:
      return "too_few_columns";
    case RejectReason::kEmptyId:
      return "empty_id";
    case RejectReason::kNonNumericId:
      return "non_numeric_id";
    case RejectReason::kNegativeId:
      return "negative_id";
    case RejectReason::kIdOutOfRange:
      return "id_out_of_range";
    case RejectReason::kBinaryData:
      return "binary_data";
    case RejectReason::kInvalidUtf8:
      return "invalid_utf8";
    case RejectReason::kBadWeight:
      return "bad_weight";
    case RejectReason::kNegativeWeight:
      return "negative_weight";
    case RejectReason::kZeroWeight:
      return "zero_weight";
    case RejectReason::kCount:
      break;
  }
  return "unknown";
}

int LineFormat::min_fields() const { return std::max({src_col, rel_col, dst_col, weight_col}) + 1; }

absl::StatusOr<char> ParseDelimiterFlag(std::string_view text) {
  if (text == "auto") return '\0';
  if (text == "tab" || text == "\\t") return '\t';
  if (text == "space") return ' ';
  if (text == "comma") return ',';
  if (text.size() == 1 && text[0] != '\n' && text[0] != '\r') return text[0];
  return absl::InvalidArgumentError(absl::StrCat(
      "--delimiter '", std::string(text), "': expected auto, tab, space, comma or one character"));
}

absl::StatusOr<std::vector<int>> ParseColumnsFlag(std::string_view text) {
  std::vector<int> cols;
  for (absl::string_view part : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    int c;
    if (!absl::SimpleAtoi(part, &c) || c < 0 || c > 1000) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--columns '", std::string(text), "': '", part, "' is not a column index (0-based)"));
    }
    cols.push_back(c);
  }
  if (cols.size() != 2 && cols.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--columns '", std::string(text), "': expected SRC,DST or SRC,REL,DST"));
  }
  std::vector<int> sorted = cols;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--columns '", std::string(text), "': a column is named twice"));
  }
  return cols;
}

bool ParseEdgeWeight(std::string_view text, float* out, RejectReason* reason) {
  float w = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), w);
  // from_chars reads "nan" and "inf" as numbers; a value past float's range
  // is result_out_of_range.
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(w)) {
    *reason = RejectReason::kBadWeight;
    return false;
  }
  if (w < 0 || std::signbit(w)) {
    *reason = w == 0 ? RejectReason::kZeroWeight : RejectReason::kNegativeWeight;
    return false;
  }
  if (w == 0) {
    *reason = RejectReason::kZeroWeight;
    return false;
  }
  *out = w;
  return true;
}

bool IsSkippableLine(std::string_view line) {
  for (char c : line) {
    if (IsBlank(c)) continue;
    return c == '#' || c == '%';
  }
  return true;
}

char DetectDelimiter(std::string_view line) {
  if (line.find('\t') != std::string_view::npos) return '\t';
  if (line.find(',') != std::string_view::npos) return ',';
  return ' ';
}

int CountFields(std::string_view line, char delimiter) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return SplitFields(line, delimiter, nullptr, 0);
}

std::string PrintableSnippet(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 60)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  if (s.size() > 60) out += "...";
  return out;
}

bool ValidateStringId(std::string_view id, RejectReason* reason) {
  if (id.empty()) {
    *reason = RejectReason::kEmptyId;
    return false;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(id.data());
  const auto* end = p + id.size();
  while (p < end) {
    unsigned char c = *p;
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) {
        *reason = RejectReason::kBinaryData;
        return false;
      }
      ++p;
      continue;
    }
    // Multi-byte UTF-8: lead byte, then continuation bytes 10xxxxxx;
    // overlong forms, surrogates and code points > U+10FFFF are invalid.
    int len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      *reason = RejectReason::kInvalidUtf8;
      return false;
    }
    if (end - p < len) {
      *reason = RejectReason::kInvalidUtf8;
      return false;
    }
    for (int k = 1; k < len; ++k) {
      if ((p[k] & 0xc0) != 0x80) {
        *reason = RejectReason::kInvalidUtf8;
        return false;
      }
      cp = (cp << 6) | (p[k] & 0x3f);
    }
    static constexpr uint32_t kMinForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLen[len] || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      *reason = RejectReason::kInvalidUtf8;
      return false;
    }
    p += len;
  }
  return true;
}

bool ParseEdgeLine(std::string_view line, const LineFormat& format,
                   ParsedLine* out, RejectReason* reason) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find('\0') != std::string_view::npos) {
    *reason = RejectReason::kBinaryData;
    return false;
  }
  std::string_view fields[8];
  const int need = format.min_fields();
  std::vector<std::string_view> many;
  std::string_view* f = fields;
  if (need > 8) {
    many.resize(need);
    f = many.data();
  }
  int n = SplitFields(line, format.delimiter, f, need);
  if (n < need) {
    *reason = RejectReason::kTooFewColumns;
    return false;
  }
  out->src = f[format.src_col];
  out->dst = f[format.dst_col];
  out->rel = format.rel_col >= 0 ? f[format.rel_col] : std::string_view();
  if (format.rel_col >= 0 && !ValidateStringId(out->rel, reason)) return false;
  if (format.weight_col >= 0) {
    out->weight_text = f[format.weight_col];
    if (!ParseEdgeWeight(out->weight_text, &out->weight, reason)) return false;
  }
  if (format.integer_ids) {
    return ParseIntegerId(out->src, &out->src_id, reason) &&
           ParseIntegerId(out->dst, &out->dst_id, reason);
  }
  return ValidateStringId(out->src, reason) &&
         ValidateStringId(out->dst, reason);
}

namespace {

// Column names that edge-list headers use, lower case, without '_', '-',
// ' ' and a trailing "id" (so "user_id", "userId" and "user" all match).
bool IsHeaderWord(std::string_view field) {
  std::string w;
  for (char c : field) {
    if (c == '_' || c == '-' || c == ' ' || c == '"' || c == '\'') continue;
    w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (w.size() > 2 && (w.ends_with("id") || w.ends_with("ids"))) {
    w.resize(w.size() - (w.ends_with("ids") ? 3 : 2));
  }
  static constexpr std::string_view kWords[] = {
      "id",           "src",       "source",  "dst",    "dest",    "destination", "target",
      "tgt",          "from",      "to",      "head",   "tail",    "rel",         "relation",
      "relationship", "predicate", "subject", "object", "lhs",     "rhs",         "user",
      "item",         "node",      "entity",  "edge",   "type",    "label",       "weight",
      "rating",       "timestamp", "time",    "movie",  "product", "query",       "doc",
      "customer",     "start",     "end",     "parent", "child",   "follower",    "followee"};
  for (std::string_view word : kWords) {
    if (w == word) return true;
  }
  return false;
}

}  // namespace

bool LooksLikeHeader(std::string_view line, const LineFormat& format) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string_view fields[8];
  const int need = format.min_fields();
  if (need > 8 || SplitFields(line, format.delimiter, fields, need) < need) return false;
  std::vector<int> cols = {format.src_col, format.dst_col};
  if (format.rel_col >= 0) cols.push_back(format.rel_col);
  for (int c : cols) {
    if (!IsHeaderWord(fields[c])) return false;
  }
  return true;
}

}  // namespace ember
