#include "train/model/model_options.h"

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
