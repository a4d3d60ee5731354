#include "train/model_options.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "storage/status_macros.h"

namespace ember {
namespace {

constexpr std::array<std::string_view, kNumOperators> kOperatorNames = {
    "none", "translation", "diagonal", "complex_diagonal"};
constexpr std::array<std::string_view, kNumComparators> kComparatorNames = {
    "dot", "cos", "l2"};
constexpr std::array<std::string_view, kNumLosses> kLossNames = {
    "ranking", "logistic", "softmax"};

template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseEnum(std::string_view what, std::string_view name,
                               const std::array<std::string_view, N>& names) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  std::string choices;
  for (std::string_view n : names) {
    if (!choices.empty()) choices += ", ";
    choices += n;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown %s '%s'; expected one of: %s", what, name, choices));
}

}  // namespace

absl::StatusOr<Operator> ParseOperator(std::string_view name) {
  return ParseEnum<Operator>("operator", name, kOperatorNames);
}
absl::StatusOr<Comparator> ParseComparator(std::string_view name) {
  return ParseEnum<Comparator>("comparator", name, kComparatorNames);
}
absl::StatusOr<Loss> ParseLoss(std::string_view name) {
  return ParseEnum<Loss>("loss", name, kLossNames);
}

std::string_view OperatorName(Operator op) {
  return kOperatorNames.at(static_cast<size_t>(op));
}
std::string_view ComparatorName(Comparator cmp) {
  return kComparatorNames.at(static_cast<size_t>(cmp));
}
std::string_view LossName(Loss loss) {
  return kLossNames.at(static_cast<size_t>(loss));
}

absl::Status ModelOptions::Validate() const {
  if (static_cast<int>(op) >= kNumOperators ||
      static_cast<int>(comparator) >= kNumComparators ||
      static_cast<int>(loss) >= kNumLosses ||
      static_cast<int>(featurized) > static_cast<int>(FeaturizedMode::kIdPlusFeatures)) {
    return absl::InvalidArgumentError("model options: enum out of range");
  }
  if (dim <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("model options: dim must be positive, got %d", dim));
  }
  if (op == Operator::kComplexDiagonal && dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model options: complex_diagonal needs an even dim, got %d", dim));
  }
  if (!(margin >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("model options: margin must be >= 0, got %g", margin));
  }
  return absl::OkStatus();
}

int RelationParamSize(Operator op, int dim) {
  return op == Operator::kNone ? 0 : dim;
}

void InitRelationParams(Operator op, int dim, float* params) {
  switch (op) {
    case Operator::kNone:
      return;
    case Operator::kTranslation:
      std::fill(params, params + dim, 0.0f);
      return;
    case Operator::kDiagonal:
      std::fill(params, params + dim, 1.0f);
      return;
    case Operator::kComplexDiagonal:
      std::fill(params, params + dim / 2, 1.0f);
      std::fill(params + dim / 2, params + dim, 0.0f);
      return;
  }
  EMBER_CHECK(false && "unknown operator");
}

bool SupportsMixedChunks(const ModelOptions& options) {
  switch (options.op) {
    case Operator::kNone:
      return true;
    case Operator::kTranslation:
      return options.comparator == Comparator::kL2;
    case Operator::kDiagonal:
    case Operator::kComplexDiagonal:
      return options.comparator == Comparator::kDot;
  }
  return false;
}

}  // namespace ember
