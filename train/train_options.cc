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

absl::StatusOr<EndpointNegatives> ParseEndpointNegatives(std::string_view name) {
  if (name == "auto") return EndpointNegatives::kAuto;
  if (name == "on" || name == "true") return EndpointNegatives::kOn;
  if (name == "off" || name == "false") return EndpointNegatives::kOff;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown endpoint negatives '", std::string(name), "'; expected auto, on or off"));
}

std::string_view EndpointNegativesName(EndpointNegatives mode) {
  switch (mode) {
    case EndpointNegatives::kAuto:
      return "auto";
    case EndpointNegatives::kOn:
      return "on";
    case EndpointNegatives::kOff:
      return "off";
  }
  return "auto";
}

}  // namespace ember
