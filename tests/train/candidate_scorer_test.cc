#include "train/model/candidate_scorer.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "train/model/model_options.h"

namespace ember {
namespace {

std::vector<float> RandomRows(int rows, int dim, std::mt19937* rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(size_t(rows) * dim);
  for (float& x : out) x = normal(*rng);
  return out;
}

class CandidateScorerTest
    : public ::testing::TestWithParam<std::tuple<Operator, Comparator>> {};

TEST_P(CandidateScorerTest, MatchesNaivePerPairBothSides) {
  const auto [op, cmp] = GetParam();
  ModelOptions model;
  model.op = op;
  model.comparator = cmp;
  model.dim = 18;  // not a multiple of 8: exercises the SIMD tails
  std::mt19937 rng(7);
  const int nq = 5, nc = 37;
  const std::vector<float> queries = RandomRows(nq, model.dim, &rng);
  const std::vector<float> cands = RandomRows(nc, model.dim, &rng);
  std::vector<float> rel = RandomRows(1, model.dim, &rng);
  CandidateWorkspace ws;
  std::vector<float> scores(nq * nc);
  for (CorruptSide side : {CorruptSide::kTail, CorruptSide::kHead}) {
    ScoreCandidates(model, rel.data(), side, queries.data(), nq, cands.data(),
                    nc, scores.data(), &ws);
    for (int i = 0; i < nq; ++i) {
      for (int k = 0; k < nc; ++k) {
        const float* q = queries.data() + i * model.dim;
        const float* c = cands.data() + k * model.dim;
        const float want = side == CorruptSide::kTail
                               ? ScorePair(model, rel.data(), q, c)
                               : ScorePair(model, rel.data(), c, q);
        EXPECT_NEAR(scores[i * nc + k], want, 2e-4f * (1 + std::fabs(want)))
            << "side " << int(side) << " query " << i << " cand " << k;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, CandidateScorerTest,
    ::testing::Combine(::testing::Values(Operator::kNone,
                                         Operator::kTranslation,
                                         Operator::kDiagonal,
                                         Operator::kComplexDiagonal),
                       ::testing::Values(Comparator::kDot, Comparator::kCos,
                                         Comparator::kL2)),
    [](const auto& info) {
      return std::string(OperatorName(std::get<0>(info.param))) + "_" +
             std::string(ComparatorName(std::get<1>(info.param)));
    });

TEST(ScorePairTest, HandComputed) {
  ModelOptions model;
  model.dim = 2;
  const float s[2] = {1, 2}, d[2] = {3, -1}, w[2] = {2, 3};
  model.op = Operator::kDiagonal;
  EXPECT_FLOAT_EQ(ScorePair(model, w, s, d), 2 * 3 - 6);  // (2, 6) . (3, -1)
  model.op = Operator::kTranslation;
  model.comparator = Comparator::kL2;
  EXPECT_FLOAT_EQ(ScorePair(model, w, s, d), -std::sqrt(0.0f + 36));
  // ComplEx with dim 2: one complex number s = 1 + 2i, w = 2 + 3i,
  // s * w = -4 + 7i; dot with (3, -1) = -12 - 7.
  model.op = Operator::kComplexDiagonal;
  model.comparator = Comparator::kDot;
  EXPECT_FLOAT_EQ(ScorePair(model, w, s, d), -19);
}

TEST(ApplyOperatorTest, HandComputedPerOperator) {
  // Two rows of dim 2; rel (2, 3).
  const float x[4] = {1, 2, -1, 0.5f}, w[2] = {2, 3};
  float out[4];
  ApplyOperator(Operator::kNone, nullptr, x, 2, 2, out);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{1, 2, -1, 0.5f}));
  ApplyOperator(Operator::kTranslation, w, x, 2, 2, out);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{3, 5, 1, 3.5f}));
  ApplyOperator(Operator::kDiagonal, w, x, 2, 2, out);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{2, 6, -2, 1.5f}));
  // (1 + 2i)(2 + 3i) = -4 + 7i; (-1 + 0.5i)(2 + 3i) = -3.5 - 2i.
  ApplyOperator(Operator::kComplexDiagonal, w, x, 2, 2, out);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{-4, 7, -3.5f, -2}));
}

TEST(CandidateScorerTest, EmptyInputsWriteNothing) {
  ModelOptions model;
  model.dim = 4;
  CandidateWorkspace ws;
  float sentinel = 42;
  ScoreCandidates(model, nullptr, CorruptSide::kTail, nullptr, 0, nullptr, 0,
                  &sentinel, &ws);
  EXPECT_EQ(sentinel, 42);
}

}  // namespace
}  // namespace ember
