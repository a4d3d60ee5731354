#include "train/model/model_options.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "storage/base/status_macros.h"

namespace ember {
absl::Status ModelOptions::Validate() const {
  if (static_cast<int>(op) >= kNumOperators || static_cast<int>(comparator) >= kNumComparators ||
      static_cast<int>(loss) >= kNumLosses || static_cast<int>(precision) >= kNumPrecisions ||
      static_cast<int>(regularizer) >= kNumRegularizers ||
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
  if (reciprocal && op == Operator::kNone) {
    return absl::InvalidArgumentError(
        "model options: reciprocal relations give each relation an inverse operator, and "
        "operator none has no parameters to invert; pass --operator (e.g. complex_diagonal) "
        "or drop --reciprocal");
  }
  if (!(reg_weight >= 0.0f) || std::isinf(reg_weight)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model options: the regularizer's weight must be finite and >= 0, got %g", reg_weight));
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

int RelationRecordSize(const ModelOptions& options) {
  return RelationParamSize(options.op, options.dim) * (options.reciprocal ? 2 : 1);
}

void InitRelationRecord(const ModelOptions& options, float* record) {
  InitRelationParams(options.op, options.dim, record);
  if (options.reciprocal) {
    InitRelationParams(options.op, options.dim,
                       record + RelationParamSize(options.op, options.dim));
  }
}

float N3Penalty(const float* x, int dim, bool complex, float grad_scale, float* grad) {
  const float scale = 3.0f * grad_scale;
  float total = 0.0f;
  if (complex) {
    const int h = dim / 2;
    for (int k = 0; k < h; ++k) {
      const float re = x[k], im = x[k + h];
      const float modulus = std::sqrt(re * re + im * im);
      total += modulus * modulus * modulus;
      if (grad != nullptr) {
        grad[k] += scale * modulus * re;
        grad[k + h] += scale * modulus * im;
      }
    }
    return total;
  }
  for (int k = 0; k < dim; ++k) {
    const float a = std::fabs(x[k]);
    total += a * a * a;
    if (grad != nullptr) grad[k] += scale * a * x[k];
  }
  return total;
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
  if (options.reciprocal) return true;
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
