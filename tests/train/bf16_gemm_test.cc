#include "train/model/bf16_gemm.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

std::vector<float> Values(int n, float scale) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::sin(scale * (i + 1)) * (1.0f + 0.37f * (i % 5));
  return v;
}

float FromBf16(uint16_t h) {
  const uint32_t bits = uint32_t{h} << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}
uint16_t Low(uint32_t pair) { return static_cast<uint16_t>(pair & 0xffff); }
uint16_t High(uint32_t pair) { return static_cast<uint16_t>(pair >> 16); }

// The scalar reference of the rounding, against values whose rounding is
// known: ties go to the even neighbour, and the result is within half a
// bf16 step of x.
TEST(Bf16Test, RoundsToNearestEven) {
  EXPECT_EQ(ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(ToBf16(-2.0f), 0xc000);
  EXPECT_EQ(ToBf16(0.0f), 0x0000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
  EXPECT_EQ(ToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 · 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: to 1 + 2^-6.
  EXPECT_EQ(ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(FromBf16(ToBf16(std::numeric_limits<float>::quiet_NaN()))));
  for (const float x : Values(1000, 0.91f)) {
    ASSERT_LE(std::fabs(FromBf16(ToBf16(x)) - x), std::fabs(x) * std::ldexp(1.0f, -8)) << x;
  }
}

class Bf16GemmTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!Bf16GemmAvailable()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  }
};

// Each packing against its definition, on shapes with every tail: odd
// depths (a zero high half), partial blocks of 16, strides wider than the
// matrix; nothing past the packed shape is written.
TEST_F(Bf16GemmTest, PackingsPairTheirEntriesAndWriteNothingElse) {
  constexpr uint32_t kUntouched = 0xdeadbeef;
  for (const int rows : {1, 5, 16, 17, 50}) {
    for (const int depth : {1, 2, 31, 32, 33, 100}) {
      const int pairs = PairCount(depth);
      const int64_t ldx = depth + 3;
      const std::vector<float> x = Values(rows * ldx, 0.37f);
      auto at = [&](int r, int t) { return t < depth ? ToBf16(x[r * ldx + t]) : uint16_t{0}; };
      // Along rows: out(r, p) from row r.
      const int64_t ldo = pairs + 2;
      std::vector<uint32_t> along(rows * ldo, kUntouched);
      PackPairsAlongRows(rows, depth, x.data(), ldx, along.data(), ldo);
      // Transposed: out(p, r) from row r.
      const int64_t ldt = rows + 1;
      std::vector<uint32_t> transposed(pairs * ldt, kUntouched);
      PackPairsTransposed(rows, depth, x.data(), ldx, transposed.data(), ldt);
      for (int r = 0; r < rows; ++r) {
        for (int p = 0; p < ldo; ++p) {
          const uint32_t got = along[r * ldo + p];
          if (p >= pairs) {
            ASSERT_EQ(got, kUntouched);
            continue;
          }
          ASSERT_EQ(Low(got), at(r, 2 * p)) << rows << "x" << depth << " at " << r << "," << p;
          ASSERT_EQ(High(got), at(r, 2 * p + 1)) << rows << "x" << depth << " at " << r << "," << p;
        }
      }
      for (int p = 0; p < pairs; ++p) {
        for (int r = 0; r < ldt; ++r) {
          const uint32_t got = transposed[p * ldt + r];
          if (r >= rows) {
            ASSERT_EQ(got, kUntouched);
            continue;
          }
          ASSERT_EQ(got, along[r * ldo + p]) << rows << "x" << depth << " at " << p << "," << r;
        }
      }
      // Across rows: x read as depth' = rows rows of `depth` columns,
      // out(p, j) from rows 2p and 2p + 1.
      const int across_pairs = PairCount(rows);
      const int64_t lda = depth + 5;
      std::vector<uint32_t> across(across_pairs * lda, kUntouched);
      PackPairsAcrossRows(rows, depth, x.data(), ldx, across.data(), lda);
      for (int p = 0; p < across_pairs; ++p) {
        for (int j = 0; j < lda; ++j) {
          const uint32_t got = across[p * lda + j];
          if (j >= depth) {
            ASSERT_EQ(got, kUntouched);
            continue;
          }
          ASSERT_EQ(Low(got), at(2 * p, j));
          ASSERT_EQ(High(got), 2 * p + 1 < rows ? at(2 * p + 1, j) : 0) << p << "," << j;
        }
      }
    }
  }
}

// Every tile shape and tail: rows over 1..13, 26 and 50, columns over 1..150, A read as
// stored and transposed, with and without accumulation, into a C wider than
// the product. The reference sums the same bf16 products in double, so the
// only difference is fp32 summation.
TEST_F(Bf16GemmTest, MatchesTheDefinitionOnRoundedOperands) {
  for (const int rows : {1, 2, 5, 6, 7, 12, 13, 26, 50}) {
    for (const int cols : {1, 15, 16, 17, 36, 63, 64, 65, 100, 150}) {
      for (const int pairs : {0, 1, 25, 50}) {
        for (const bool transposed : {false, true}) {
          for (const bool accumulate : {false, true}) {
            std::vector<uint32_t> a(rows * pairs), b(pairs * (cols + 3));
            const std::vector<float> av = Values(2 * a.size(), 0.7f);
            const std::vector<float> bv = Values(2 * b.size(), 0.3f);
            for (size_t k = 0; k < a.size(); ++k) {
              a[k] = ToBf16(av[2 * k]) | uint32_t{ToBf16(av[2 * k + 1])} << 16;
            }
            for (size_t k = 0; k < b.size(); ++k) {
              b[k] = ToBf16(bv[2 * k]) | uint32_t{ToBf16(bv[2 * k + 1])} << 16;
            }
            const int64_t ldb = cols + 3, ldc = cols + 5;
            std::vector<float> c = Values(rows * ldc, 0.9f);
            const std::vector<float> old_c = c;
            const int64_t a_row = transposed ? 1 : pairs;
            const int64_t a_depth = transposed ? rows : 1;
            Bf16Gemm(rows, cols, pairs, a.data(), a_row, a_depth, b.data(), ldb, c.data(), ldc,
                     accumulate);
            for (int i = 0; i < rows; ++i) {
              for (int j = 0; j < ldc; ++j) {
                const float got = c[i * ldc + j];
                if (j >= cols) {
                  ASSERT_EQ(got, old_c[i * ldc + j]);
                  continue;
                }
                double want = accumulate ? old_c[i * ldc + j] : 0.0;
                for (int p = 0; p < pairs; ++p) {
                  const uint32_t x = a[i * a_row + p * a_depth], y = b[p * ldb + j];
                  want += double{FromBf16(Low(x))} * FromBf16(Low(y)) +
                          double{FromBf16(High(x))} * FromBf16(High(y));
                }
                ASSERT_NEAR(got, want, 1e-4 * (1 + 2 * pairs))
                    << rows << "x" << cols << "x" << pairs << " transposed " << transposed
                    << " accumulate " << accumulate << " at " << i << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember
