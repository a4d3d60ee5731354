#include "train/train_options.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace ember {

absl::StatusOr<RelationBatching> ParseRelationBatching(std::string_view name) {
  if (name == "mixed") return RelationBatching::kMixed;
  if (name == "grouped") return RelationBatching::kGrouped;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown relation batching '", std::string(name), "'; expected mixed or grouped"));
}

std::string_view RelationBatchingName(RelationBatching kind) {
  return kind == RelationBatching::kMixed ? "mixed" : "grouped";
}

}  // namespace ember
