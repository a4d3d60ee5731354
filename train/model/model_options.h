// Model choices for PBG-style scoring: score(s, r, d) =
// comparator(op_r(e_s), e_d), trained with a loss over one positive and many
// negative scores per edge and side.
#ifndef EMBER_TRAIN_MODEL_MODEL_OPTIONS_H_
#define EMBER_TRAIN_MODEL_MODEL_OPTIONS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/base/enum_names.h"
#include "train/model/featurized.h"

namespace ember {

// Relation operator op_r applied to the source embedding.
enum class Operator : uint8_t {
  kNone = 0,             // op_r(e) = e; no parameters.
  kTranslation = 1,      // op_r(e) = e + t_r (TransE); t_r has dim floats.
  kDiagonal = 2,         // op_r(e) = e ⊙ w_r (DistMult); w_r has dim floats.
  kComplexDiagonal = 3,  // ComplEx: e and w_r hold dim/2 complex numbers,
                         // real parts in [0, dim/2), imaginary parts in
                         // [dim/2, dim) (PBG's layout); op_r(e) = e * w_r.
};
inline constexpr int kNumOperators = 4;

enum class Comparator : uint8_t {
  kDot = 0,  // <a, b>
  kCos = 1,  // <a, b> / (|a| |b|), norms clamped below at 1e-12 as in PBG.
  kL2 = 2,   // -|a - b|_2 (negative distance, as in PBG).
};
inline constexpr int kNumComparators = 3;

enum class Loss : uint8_t {
  // Sum over negatives of max(0, margin - pos + neg).
  kRanking = 0,
  // -log σ(pos) - mean over negatives of log(1 - σ(neg)) (PBG averages the
  // negative term so that its weight does not grow with the negative count).
  kLogistic = 1,
  // -pos + log(exp(pos) + Σ_neg exp(neg)).
  kSoftmax = 2,
};
inline constexpr int kNumLosses = 3;

// The arithmetic of the chunk step's products (training only: rows, scores,
// gradients and Adagrad stay fp32 either way).
enum class Precision : uint8_t {
  kFp32 = 0,  // fp32 products.
  // Operands rounded to bfloat16, products summed in fp32
  // (train/model/bf16_gemm.h); needs a CPU with AVX512-BF16.
  kBf16 = 1,
};
inline constexpr int kNumPrecisions = 2;

// A penalty on the embeddings of the edges trained, added to the loss.
enum class Regularizer : uint8_t {
  kNone = 0,
  // N3 (Lacroix et al. 2018, "Canonical Tensor Decomposition for Knowledge
  // Base Completion"): every scored positive (q, r, a), one per edge and
  // side, adds weight · (N3(e_q) + N3(w_r) + N3(e_a)) to the loss, where
  // N3(x) = Σ_k |x_k|³, with |x_k| the complex modulus
  // (re_k² + im_k²)^(1/2) of each complex coordinate under
  // complex_diagonal (N3Penalty below). w_r is the side's own relation
  // parameters (the inverse relation's on the source side of a reciprocal
  // model); operator none has none. Negatives are not penalized.
  kN3 = 1,
};
inline constexpr int kNumRegularizers = 2;

// The CLI spellings, one table each (storage/base/enum_names.h): also the typed
// flags' names.
template <>
struct EnumNames<Operator> {
  static constexpr std::string_view kWhat = "operator";
  static constexpr EnumNameTable<Operator, kNumOperators> kTable = {{
      {Operator::kNone, "none"},
      {Operator::kTranslation, "translation"},
      {Operator::kDiagonal, "diagonal"},
      {Operator::kComplexDiagonal, "complex_diagonal"},
  }};
};
template <>
struct EnumNames<Comparator> {
  static constexpr std::string_view kWhat = "comparator";
  static constexpr EnumNameTable<Comparator, kNumComparators> kTable = {{
      {Comparator::kDot, "dot"},
      {Comparator::kCos, "cos"},
      {Comparator::kL2, "l2"},
  }};
};
template <>
struct EnumNames<Loss> {
  static constexpr std::string_view kWhat = "loss";
  static constexpr EnumNameTable<Loss, kNumLosses> kTable = {{
      {Loss::kRanking, "ranking"},
      {Loss::kLogistic, "logistic"},
      {Loss::kSoftmax, "softmax"},
  }};
};

template <>
struct EnumNames<Regularizer> {
  static constexpr std::string_view kWhat = "regularizer";
  static constexpr EnumNameTable<Regularizer, kNumRegularizers> kTable = {{
      {Regularizer::kNone, "none"},
      {Regularizer::kN3, "n3"},
  }};
};

template <>
struct EnumNames<Precision> {
  static constexpr std::string_view kWhat = "precision";
  static constexpr EnumNameTable<Precision, kNumPrecisions> kTable = {{
      {Precision::kFp32, "fp32"},
      {Precision::kBf16, "bf16"},
  }};
};

// Unknown names give InvalidArgument listing the accepted ones.
inline absl::StatusOr<Operator> ParseOperator(std::string_view name) {
  return EnumFromName<Operator>(name);
}
inline absl::StatusOr<Comparator> ParseComparator(std::string_view name) {
  return EnumFromName<Comparator>(name);
}
inline absl::StatusOr<Loss> ParseLoss(std::string_view name) { return EnumFromName<Loss>(name); }
inline absl::StatusOr<Precision> ParsePrecision(std::string_view name) {
  return EnumFromName<Precision>(name);
}
inline absl::StatusOr<Regularizer> ParseRegularizer(std::string_view name) {
  return EnumFromName<Regularizer>(name);
}
// Inverse of the parse functions.
inline std::string_view OperatorName(Operator op) { return EnumToName(op); }
inline std::string_view ComparatorName(Comparator cmp) { return EnumToName(cmp); }
inline std::string_view LossName(Loss loss) { return EnumToName(loss); }
inline std::string_view PrecisionName(Precision precision) { return EnumToName(precision); }
inline std::string_view RegularizerName(Regularizer regularizer) { return EnumToName(regularizer); }

// How tools name relation r's inverse r⁻¹ of a reciprocal model (export's
// --relations-out, neighbors' --relation): r's name and this suffix.
inline constexpr char kInverseRelationSuffix[] = "_inv";

// --reg-weight's default: the weight of N3 when none is given. Measured on
// gen kg (ComplEx, dim 100 and 400, 10 epochs; docs/knowledge-graphs.md):
// 1e-4 moved filtered MRR by +0.008 to +0.016 on sparse graphs and -0.014
// to +0.007 on denser ones; 1e-3 by -0.037 to +0.007; 1e-2 (Lacroix et
// al.'s order of magnitude) lost up to 0.24.
inline constexpr float kRegWeightDefault = 1e-4f;

struct ModelOptions {
  // Default: kNone.
  Operator op = Operator::kNone;
  // Default: kDot.
  Comparator comparator = Comparator::kDot;
  // Default: kSoftmax.
  Loss loss = Loss::kSoftmax;
  // Margin of the ranking loss; ignored by the other losses. Default: 0.1.
  float margin = 0.1f;
  // Embedding dimension; even for kComplexDiagonal. Default: 100.
  int dim = 100;
  // Reciprocal relations (Lacroix et al. 2018): every relation r has an
  // inverse r⁻¹ with parameters of its own, and an edge (s, r, d) trains
  // (s, r, d) predicting d and (d, r⁻¹, s) predicting s: the source side's
  // queries are op_{r⁻¹}(e_d), scored against candidate sources, instead
  // of op_r applied to every candidate (or its adjoint to e_d). Evaluation
  // ranks a head query (?, r, d) as the tail query (d, r⁻¹, ?). Part of the
  // model: each relation's record in RelationParams holds [w_r, w_{r⁻¹}]
  // (RelationRecordSize). REQUIRES an operator with parameters (op none
  // has nothing to invert). Default: false.
  bool reciprocal = false;
  // A penalty added to the training loss (Regularizer above); part of the
  // training objective, like `loss`, not of the model's form. Default:
  // kNone.
  Regularizer regularizer = Regularizer::kNone;
  // The regularizer's weight; finite and >= 0; ignored with kNone.
  // Default: kRegWeightDefault.
  float reg_weight = kRegWeightDefault;
  // How a node's embedding is formed from its id row and its sparse
  // features (train/model/featurized.h). Default: kOff (id rows only).
  FeaturizedMode featurized = FeaturizedMode::kOff;
  // The chunk step's products. A choice of how to train, not part of the
  // model: not stored with it, and evaluation scores in fp32. Default:
  // kFp32.
  Precision precision = Precision::kFp32;

  absl::Status Validate() const;
};

// True when chunks may mix relations (chunk_scorer.h): the adjoint form
// cmp(op_r(x), y) = cmp(x, op*_r(y)) exists for op none with any comparator,
// diagonal or complex_diagonal with dot, and translation with l2; and every
// reciprocal model mixes, since both of its sides apply each edge's own
// operator to its query row (op_r(e_s), op_{r⁻¹}(e_d)).
bool SupportsMixedChunks(const ModelOptions& options);

// The adjoint operator's parameters, where SupportsMixedChunks: with
// p* = J·p for a diagonal ±1 matrix J, cmp(op_p(x), y) = cmp(x, op_p*(y)).
// p* is -t for translation (under l2), conj(w) for complex_diagonal and w
// for diagonal (under dot); none has no parameters. J is its own inverse
// and transpose, so this also maps the adjoint's gradients back.
// REQUIRES: in and out hold RelationParamSize(op, dim) floats; they may
// alias.
void AdjointRelationParams(Operator op, const float* in, int dim, float* out);

// Number of floats of one relation's operator parameters: 0 for kNone, dim
// otherwise.
int RelationParamSize(Operator op, int dim);

// Writes PBG's initial relation parameters (identity transforms): zeros for
// kTranslation, ones for kDiagonal, 1 + 0i for kComplexDiagonal.
// REQUIRES: `params` holds RelationParamSize(op, dim) floats.
void InitRelationParams(Operator op, int dim, float* params);

// Floats of one relation's record in RelationParams (checkpoint.h) and in
// the trainers' relation slots: its operator parameters w_r
// (RelationParamSize), followed for a reciprocal model by its inverse's
// w_{r⁻¹} (as many again).
int RelationRecordSize(const ModelOptions& options);

// Writes a relation record's initial values: InitRelationParams for w_r and,
// reciprocal, for w_{r⁻¹}.
// REQUIRES: `record` holds RelationRecordSize(options) floats.
void InitRelationRecord(const ModelOptions& options, float* record);

// N3(x) (Regularizer::kN3) of one row of `dim` floats: Σ_k |x_k|³, with
// the complex modulus of (x_k, x_{k+dim/2}) for k < dim/2 when `complex`
// (complex_diagonal's layout). With `grad` non-null also adds
// grad_scale · ∂N3/∂x = grad_scale · 3 |x_k| x_k (|x_k| the same modulus)
// to grad.
// REQUIRES: dim even when complex; grad does not overlap x.
float N3Penalty(const float* x, int dim, bool complex, float grad_scale = 0.0f,
                float* grad = nullptr);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_MODEL_OPTIONS_H_
