#include "storage/base/json_reader.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "storage/base/file_util.h"

namespace ember {

using Json = nlohmann::json;
using internal::Sv;

absl::Status JsonReader::Error(std::string_view field, std::string_view what) const {
  return absl::Status(code_, absl::StrCat(where_, ": field '", Sv(field), "' ", Sv(what)));
}

const Json* JsonReader::Find(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

absl::StatusOr<const Json*> JsonReader::Require(const Json& obj, std::string_view key,
                                                std::string_view field) const {
  if (!obj.is_object()) return Error(field, "has a parent that is not an object");
  const Json* v = Find(obj, key);
  if (v == nullptr) return Error(field, "is missing");
  return v;
}

absl::Status JsonReader::Read(const Json& v, std::string_view field, uint64_t* out) const {
  // nlohmann parses non-negative integers as unsigned, negative ones as
  // signed.
  if (!v.is_number_unsigned()) return Error(field, "must be a non-negative integer");
  *out = v.get<uint64_t>();
  return absl::OkStatus();
}

absl::Status JsonReader::Read(const Json& v, std::string_view field, uint32_t* out) const {
  uint64_t x = 0;
  absl::Status s = Read(v, field, &x);
  if (!s.ok()) return s;
  if (x > std::numeric_limits<uint32_t>::max()) return Error(field, "does not fit in 32 bits");
  *out = static_cast<uint32_t>(x);
  return absl::OkStatus();
}

absl::Status JsonReader::Read(const Json& v, std::string_view field, int* out) const {
  if (!v.is_number_integer()) return Error(field, "must be an integer");
  if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t{std::numeric_limits<int>::max()}
                             : v.get<int64_t>() < std::numeric_limits<int>::min()) {
    return Error(field, "does not fit in an int");
  }
  *out = v.get<int>();
  return absl::OkStatus();
}

absl::Status JsonReader::Read(const Json& v, std::string_view field, double* out) const {
  if (!v.is_number()) return Error(field, "must be a number");
  *out = v.get<double>();
  return absl::OkStatus();
}

absl::Status JsonReader::Read(const Json& v, std::string_view field, float* out) const {
  double x = 0;
  absl::Status s = Read(v, field, &x);
  if (!s.ok()) return s;
  *out = static_cast<float>(x);
  return absl::OkStatus();
}

absl::Status JsonReader::Read(const Json& v, std::string_view field, bool* out) const {
  if (!v.is_boolean()) return Error(field, "must be true or false");
  *out = v.get<bool>();
  return absl::OkStatus();
}

absl::Status JsonReader::Read(const Json& v, std::string_view field, std::string* out) const {
  if (!v.is_string()) return Error(field, "must be a string");
  *out = v.get<std::string>();
  return absl::OkStatus();
}

absl::Status JsonReader::Read(const Json& v, std::string_view field,
                              std::vector<uint64_t>* out) const {
  if (!v.is_array()) return Error(field, "must be an array");
  std::vector<uint64_t> values(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    absl::Status s = Read(v[i], absl::StrCat(Sv(field), "[", i, "]"), &values[i]);
    if (!s.ok()) return s;
  }
  *out = std::move(values);
  return absl::OkStatus();
}

absl::Status JsonReader::Read(const Json& v, std::string_view field,
                              std::vector<uint32_t>* out) const {
  std::vector<uint64_t> wide;
  absl::Status s = Read(v, field, &wide);
  if (!s.ok()) return s;
  std::vector<uint32_t> values(wide.size());
  for (size_t i = 0; i < wide.size(); ++i) {
    if (wide[i] > std::numeric_limits<uint32_t>::max()) {
      return Error(absl::StrCat(Sv(field), "[", i, "]"), "must be below 2^32");
    }
    values[i] = static_cast<uint32_t>(wide[i]);
  }
  *out = std::move(values);
  return absl::OkStatus();
}

absl::Status JsonReader::Object(const Json& v, std::string_view field) const {
  if (!v.is_object()) return Error(field, "must be an object");
  return absl::OkStatus();
}

}  // namespace ember
