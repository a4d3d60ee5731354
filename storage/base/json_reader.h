// JsonReader: typed reads of the fields of a parsed JSON document that
// never throw. nlohmann's accessors (`get<T>()`, `at()`, `value()`,
// `operator[]` on a non-object) throw on a document that parses but holds
// the wrong types; every reader of a file ember wrote (the manifest, the
// trainer's state inside it) goes through this class instead, so that a
// damaged or hand-edited file is an error naming the file and the field.
#ifndef EMBER_STORAGE_BASE_JSON_READER_H_
#define EMBER_STORAGE_BASE_JSON_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace ember {

class JsonReader {
 public:
  // Errors read "<where>: field '<field>' <what>" with status `code`.
  // `field` is the dotted path of the value within the document, e.g.
  // "training.state.trainer.next_round".
  JsonReader(std::string where, absl::StatusCode code)
      : where_(std::move(where)), code_(code) {}

  const std::string& where() const { return where_; }
  absl::Status Error(std::string_view field, std::string_view what) const;

  // The member `key` of `obj`; nullptr if absent or if `obj` is not an
  // object.
  static const nlohmann::json* Find(const nlohmann::json& obj, std::string_view key);
  // The same, but an error when `key` is absent or `obj` is not an object.
  absl::StatusOr<const nlohmann::json*> Require(const nlohmann::json& obj,
                                                std::string_view key,
                                                std::string_view field) const;

  // Typed reads of one value; an error unless `v` has the type (and, for
  // the narrower integers, the range) of *out. *out is untouched on error.
  absl::Status Read(const nlohmann::json& v, std::string_view field, uint64_t* out) const;
  absl::Status Read(const nlohmann::json& v, std::string_view field, uint32_t* out) const;
  absl::Status Read(const nlohmann::json& v, std::string_view field, int* out) const;
  absl::Status Read(const nlohmann::json& v, std::string_view field, double* out) const;
  absl::Status Read(const nlohmann::json& v, std::string_view field, float* out) const;
  absl::Status Read(const nlohmann::json& v, std::string_view field, bool* out) const;
  absl::Status Read(const nlohmann::json& v, std::string_view field, std::string* out) const;
  absl::Status Read(const nlohmann::json& v, std::string_view field,
                    std::vector<uint64_t>* out) const;
  absl::Status Read(const nlohmann::json& v, std::string_view field,
                    std::vector<uint32_t>* out) const;
  // An error unless `v` is an object.
  absl::Status Object(const nlohmann::json& v, std::string_view field) const;

  // Member `key` of `obj` (at `field`) into *out: an error if it is absent
  // or of the wrong type, or if `obj` is not an object.
  template <typename T>
  absl::Status Required(const nlohmann::json& obj, std::string_view key,
                        std::string_view field, T* out) const {
    absl::StatusOr<const nlohmann::json*> v = Require(obj, key, field);
    if (!v.ok()) return v.status();
    return Read(**v, field, out);
  }
  // The same, but an absent member (or a null `obj`, for an absent parent)
  // leaves *out as it is.
  template <typename T>
  absl::Status Optional(const nlohmann::json& obj, std::string_view key,
                        std::string_view field, T* out) const {
    if (obj.is_null()) return absl::OkStatus();
    if (!obj.is_object()) return Error(field, "has a parent that is not an object");
    const nlohmann::json* v = Find(obj, key);
    return v == nullptr ? absl::OkStatus() : Read(*v, field, out);
  }

 private:
  std::string where_;
  absl::StatusCode code_;
};

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_JSON_READER_H_
