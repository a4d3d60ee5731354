#include "train/model/model_options.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

TEST(ModelOptionsTest, ParseRoundTrips) {
  for (int i = 0; i < kNumOperators; ++i) {
    const auto op = static_cast<Operator>(i);
    auto parsed = ParseOperator(OperatorName(op));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, op);
  }
  for (int i = 0; i < kNumComparators; ++i) {
    const auto cmp = static_cast<Comparator>(i);
    auto parsed = ParseComparator(ComparatorName(cmp));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, cmp);
  }
  for (int i = 0; i < kNumLosses; ++i) {
    const auto loss = static_cast<Loss>(i);
    auto parsed = ParseLoss(LossName(loss));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, loss);
  }
  EXPECT_EQ(*ParseOperator("complex_diagonal"), Operator::kComplexDiagonal);
}

TEST(ModelOptionsTest, UnknownNamesListTheChoices) {
  auto op = ParseOperator("transE");
  ASSERT_FALSE(op.ok());
  EXPECT_EQ(op.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(op.status().message().find("translation"), std::string::npos);
  EXPECT_FALSE(ParseComparator("").ok());
  EXPECT_FALSE(ParseLoss("Softmax").ok());
}

TEST(ModelOptionsTest, Validate) {
  ModelOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.dim = 0;
  EXPECT_FALSE(o.Validate().ok());
  o.dim = 7;
  o.op = Operator::kComplexDiagonal;
  EXPECT_FALSE(o.Validate().ok());
  o.dim = 8;
  EXPECT_TRUE(o.Validate().ok());
  o.margin = -1;
  EXPECT_FALSE(o.Validate().ok());
  o.margin = 0.1f;
  // Reciprocal relations need an operator to invert.
  o.reciprocal = true;
  EXPECT_TRUE(o.Validate().ok());
  o.op = Operator::kNone;
  const absl::Status none = o.Validate();
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.message().find("operator none"), std::string::npos) << none;
  o.reciprocal = false;
  EXPECT_TRUE(o.Validate().ok());
  o.reg_weight = -0.1f;
  EXPECT_FALSE(o.Validate().ok());
  o.reg_weight = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(o.Validate().ok());
  o.reg_weight = 0.0f;
  EXPECT_TRUE(o.Validate().ok());
}

TEST(ModelOptionsTest, RegularizerNamesRoundTrip) {
  for (int i = 0; i < kNumRegularizers; ++i) {
    const auto r = static_cast<Regularizer>(i);
    EXPECT_EQ(*ParseRegularizer(RegularizerName(r)), r);
  }
  EXPECT_EQ(*ParseRegularizer("n3"), Regularizer::kN3);
  EXPECT_FALSE(ParseRegularizer("N3").ok());
}

// A reciprocal model's relation record holds w_r, then w_{r⁻¹}, each
// initialized as PBG's identity; every reciprocal model mixes.
TEST(ModelOptionsTest, ReciprocalRecordsHoldTheInverseAfterTheRelation) {
  ModelOptions o;
  o.op = Operator::kComplexDiagonal;
  o.dim = 4;
  EXPECT_EQ(RelationRecordSize(o), 4);
  o.reciprocal = true;
  EXPECT_EQ(RelationRecordSize(o), 8);
  std::vector<float> record(8, -3.0f);
  InitRelationRecord(o, record.data());
  EXPECT_EQ(record, (std::vector<float>{1, 1, 0, 0, 1, 1, 0, 0}));
  o.comparator = Comparator::kCos;  // no adjoint form
  EXPECT_TRUE(SupportsMixedChunks(o));
  o.reciprocal = false;
  EXPECT_FALSE(SupportsMixedChunks(o));
}

// N3Penalty: Σ|x|³ (complex moduli for complex rows) and 3|x|x, against
// the definition and central differences.
TEST(ModelOptionsTest, N3PenaltyAndItsGradient) {
  const std::vector<float> x = {0.5f, -1.5f, 2.0f, -0.25f};
  EXPECT_NEAR(N3Penalty(x.data(), 4, false), 0.125 + 3.375 + 8 + 0.015625, 1e-5);
  EXPECT_NEAR(N3Penalty(x.data(), 4, true),
              std::pow(std::hypot(0.5, 2.0), 3) + std::pow(std::hypot(-1.5, -0.25), 3), 1e-5);
  for (const bool complex : {false, true}) {
    std::vector<float> g(4, 1.0f);  // added to
    N3Penalty(x.data(), 4, complex, 0.5f, g.data());
    for (int k = 0; k < 4; ++k) {
      const double h = 1e-3;
      std::vector<float> up = x, down = x;
      up[k] += h;
      down[k] -= h;
      const double fd =
          (N3Penalty(up.data(), 4, complex) - N3Penalty(down.data(), 4, complex)) / (2 * h);
      EXPECT_NEAR(g[k], 1.0 + 0.5 * fd, 2e-3 * (1 + std::fabs(fd))) << complex << " " << k;
    }
  }
}

TEST(ModelOptionsTest, RelationInitIsIdentity) {
  const int dim = 6;
  EXPECT_EQ(RelationParamSize(Operator::kNone, dim), 0);
  std::vector<float> p(dim, -3.0f);
  InitRelationParams(Operator::kTranslation, dim, p.data());
  EXPECT_EQ(p, std::vector<float>(dim, 0.0f));
  InitRelationParams(Operator::kDiagonal, dim, p.data());
  EXPECT_EQ(p, std::vector<float>(dim, 1.0f));
  InitRelationParams(Operator::kComplexDiagonal, dim, p.data());
  EXPECT_EQ(p, (std::vector<float>{1, 1, 1, 0, 0, 0}));
}

}  // namespace
}  // namespace ember
