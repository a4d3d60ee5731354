#include "train/model/small_gemm.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

std::vector<float> Values(int n, float scale) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::sin(scale * (i + 1));
  return v;
}

// Runs each test twice: on the CPU's own path (AVX-512 where it has it) and
// on the fallback of a CPU without.
class SmallGemmTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override { ForceSmallGemmFallbackForTesting(GetParam()); }
  void TearDown() override { ForceSmallGemmFallbackForTesting(false); }
};

// Every tile shape and tail of the kernel: rows over 1..13 (two 6-row tiles
// and each remainder) and 26 and 50 (6-row tiles then 5-row ones), columns over 1..150 (the 64-column tiles and each
// masked tail), A read as stored and transposed, with and without
// accumulation, into a C wider than the product (ldc > cols).
TEST_P(SmallGemmTest, MatchesTheDefinitionForEveryTileAndTail) {
  for (const int rows : {1, 2, 5, 6, 7, 12, 13, 26, 50}) {
    for (const int cols : {1, 15, 16, 17, 36, 63, 64, 65, 100, 150}) {
      for (const int depth : {0, 1, 50, 100}) {
        for (const bool transposed : {false, true}) {
          for (const bool accumulate : {false, true}) {
            const std::vector<float> a = Values(rows * depth, 0.7f);
            const int64_t ldb = cols + 3, ldc = cols + 5;
            const std::vector<float> b = Values(depth * ldb, 0.3f);
            std::vector<float> c = Values(rows * ldc, 0.9f);
            const std::vector<float> old_c = c;
            const int64_t a_row = transposed ? 1 : depth;
            const int64_t a_depth = transposed ? rows : 1;
            SmallGemm(rows, cols, depth, a.data(), a_row, a_depth, b.data(), ldb, c.data(), ldc,
                      accumulate);
            for (int i = 0; i < rows; ++i) {
              for (int j = 0; j < ldc; ++j) {
                const float got = c[i * ldc + j];
                if (j >= cols) {  // past the product: untouched
                  ASSERT_EQ(got, old_c[i * ldc + j]) << rows << "x" << cols << " " << i << "," << j;
                  continue;
                }
                double want = accumulate ? old_c[i * ldc + j] : 0.0;
                for (int t = 0; t < depth; ++t) {
                  want += double{a[i * a_row + t * a_depth]} * b[t * ldb + j];
                }
                ASSERT_NEAR(got, want, 1e-4 * (1 + depth))
                    << rows << "x" << cols << "x" << depth << " transposed " << transposed
                    << " accumulate " << accumulate << " at " << i << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

TEST_P(SmallGemmTest, TransposeMovesEveryEntryAndNothingElse) {
  for (const int rows : {1, 3, 16, 17, 50, 150}) {
    for (const int cols : {1, 7, 16, 33, 100}) {
      const int64_t ldx = cols + 2, ldy = rows + 4;
      const std::vector<float> x = Values(rows * ldx, 0.13f);
      std::vector<float> y(cols * ldy, -5.0f);
      Transpose(rows, cols, x.data(), ldx, y.data(), ldy);
      for (int j = 0; j < cols; ++j) {
        for (int i = 0; i < ldy; ++i) {
          const float want = i < rows ? x[i * ldx + j] : -5.0f;
          ASSERT_EQ(y[j * ldy + i], want) << rows << "x" << cols << " at " << j << "," << i;
        }
      }
    }
  }
}

// The path is chosen from the CPU's features, and the fallback is taken
// when forced.
TEST_P(SmallGemmTest, ChoosesItsPathFromTheCpu) {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  EXPECT_EQ(SmallGemmUsesAvx512(), avx512 && !GetParam());
}

INSTANTIATE_TEST_SUITE_P(OwnAndFallback, SmallGemmTest, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "Fallback" : "CpusOwn";
                         });

}  // namespace
}  // namespace ember
