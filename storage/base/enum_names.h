// Names of enum values, from one table per enum. An enum with names keeps
// exactly one constexpr table of {value, name} rows (in the .cc beside it)
// and derives from it its Parse*/ *Name functions and the
// AbslParseFlag/AbslUnparseFlag pair that makes it a typed flag
// (ABSL_FLAG(ember::Operator, ...)). Abseil finds those two by argument-
// dependent lookup, so they live in the enum's namespace.
#ifndef EMBER_STORAGE_BASE_ENUM_NAMES_H_
#define EMBER_STORAGE_BASE_ENUM_NAMES_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ember {

template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

template <typename Enum, size_t N>
using EnumNameTable = std::array<EnumName<Enum>, N>;

// The name of `value`; `unknown` for a value the table lacks.
template <typename Enum, size_t N>
constexpr std::string_view NameInTable(const EnumNameTable<Enum, N>& table, Enum value,
                                       std::string_view unknown = "?") {
  for (const EnumName<Enum>& row : table) {
    if (row.value == value) return row.name;
  }
  return unknown;
}

// The accepted names in table order, joined by ", ".
template <typename Enum, size_t N>
std::string NamesInTable(const EnumNameTable<Enum, N>& table) {
  std::string out;
  for (const EnumName<Enum>& row : table) {
    if (!out.empty()) out += ", ";
    out += row.name;
  }
  return out;
}

// The value named `name`, or InvalidArgument
// "unknown <what> '<name>'; expected one of: <names>".
template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseInTable(const EnumNameTable<Enum, N>& table, std::string_view what,
                                  std::string_view name) {
  for (const EnumName<Enum>& row : table) {
    if (row.name == name) return row.value;
  }
  std::string message = "unknown ";
  message.append(what).append(" '").append(name).append("'; expected one of: ");
  return absl::InvalidArgumentError(message + NamesInTable(table));
}

// The body of an AbslParseFlag: sets *out, or writes ParseInTable's message
// to *error and returns false.
template <typename Enum, size_t N>
bool ParseFlagInTable(const EnumNameTable<Enum, N>& table, std::string_view what,
                      std::string_view text, Enum* out, std::string* error) {
  absl::StatusOr<Enum> value = ParseInTable(table, what, text);
  if (!value.ok()) {
    *error = std::string(value.status().message());
    return false;
  }
  *out = *value;
  return true;
}

// The one table of an enum, specialized right after the enum's definition:
//   template <> struct EnumNames<Operator> {
//     static constexpr std::string_view kWhat = "operator";  // for errors
//     static constexpr EnumNameTable<Operator, 4> kTable = {{...}};
//   };
// An enum outside namespace ember specializes it from namespace ember and
// adds `using ::ember::AbslParseFlag; using ::ember::AbslUnparseFlag;` to
// its own namespace so that Abseil finds them.
template <typename Enum>
struct EnumNames;

template <typename Enum>
concept NamedEnum = requires {
  EnumNames<Enum>::kTable;
  EnumNames<Enum>::kWhat;
};

template <NamedEnum Enum>
constexpr std::string_view EnumToName(Enum value) {
  return NameInTable(EnumNames<Enum>::kTable, value);
}

template <NamedEnum Enum>
absl::StatusOr<Enum> EnumFromName(std::string_view name) {
  return ParseInTable(EnumNames<Enum>::kTable, EnumNames<Enum>::kWhat, name);
}

// Typed flags: ABSL_FLAG(ember::Operator, operator, ember::Operator::kNone,
// ...) accepts exactly the table's names and prints the value's name.
template <NamedEnum Enum>
bool AbslParseFlag(absl::string_view text, Enum* out, std::string* error) {
  return ParseFlagInTable(EnumNames<Enum>::kTable, EnumNames<Enum>::kWhat,
                          std::string_view(text.data(), text.size()), out, error);
}

template <NamedEnum Enum>
std::string AbslUnparseFlag(Enum value) {
  return std::string(EnumToName(value));
}

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_ENUM_NAMES_H_
