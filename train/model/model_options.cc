#include "train/model/model_options.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "storage/base/status_macros.h"

namespace ember {
absl::Status ModelOptions::Validate() const {
  if (static_cast<int>(op) >= kNumOperators ||
      static_cast<int>(comparator) >= kNumComparators ||
      static_cast<int>(loss) >= kNumLosses ||
      static_cast<int>(precision) >= kNumPrecisions ||
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

void AdjointRelationParams(Operator op, const float* in, int dim, float* out) {
  switch (op) {
    case Operator::kNone:
      return;
    case Operator::kTranslation:
      for (int k = 0; k < dim; ++k) out[k] = -in[k];
      return;
    case Operator::kComplexDiagonal:
      for (int k = 0; k < dim / 2; ++k) out[k] = in[k];
      for (int k = dim / 2; k < dim; ++k) out[k] = -in[k];
      return;
    case Operator::kDiagonal:
      std::copy(in, in + dim, out);
      return;
  }
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
