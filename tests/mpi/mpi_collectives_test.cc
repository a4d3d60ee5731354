// The MPI cluster's collectives, on every rank of the mpirun that started
// this binary; each rank's input comes from a generator seeded by its rank,
// so each rank can compute what every other rank contributed.
#include "train/distributed/mpi/internal/mpi_collectives.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/mpi/mpi_test_env.h"

namespace ember {
namespace {

// Rank r's string: empty for r % 3 == 0, else r * 1000 + 7 bytes of every
// byte value.
std::string StringOf(uint32_t r) {
  if (r % 3 == 0) return "";
  std::string s(r * 1000 + 7, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((i * 31 + r) & 0xff);
  return s;
}

// Rank r's doubles: signs and magnitudes over 2^-40 .. 2^40, so that the
// order of the additions shows in the bits.
std::vector<double> DoublesOf(uint32_t r, size_t n) {
  std::mt19937_64 rng(1234 + r);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::vector<double> v(n);
  for (double& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

std::vector<float> FloatsOf(uint32_t r, size_t n) {
  std::mt19937_64 rng(5678 + r);
  std::uniform_real_distribution<float> value(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (float& x : v) x = value(rng);
  return v;
}

TEST(MpiCollectivesTest, AllGatherOfStringsOfDifferentLengths) {
  Cluster& cluster = TestCluster();
  absl::StatusOr<std::vector<std::string>> all = cluster.AllGather(StringOf(cluster.rank()));
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), cluster.world_size());
  for (uint32_t r = 0; r < cluster.world_size(); ++r) {
    EXPECT_EQ((*all)[r], StringOf(r)) << "rank " << r << "'s string";
  }
  absl::StatusOr<std::vector<std::string>> empty = cluster.AllGather("");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, std::vector<std::string>(cluster.world_size()));
}

TEST(MpiCollectivesTest, SumDoublesAddsInRankOrderBitForBit) {
  Cluster& cluster = TestCluster();
  const uint32_t n = cluster.world_size();
  // More than one gather step: kGatherDoubles / n values per step.
  const size_t count = kGatherDoubles / n + 3;
  std::vector<double> values = DoublesOf(cluster.rank(), count);
  ASSERT_TRUE(cluster.SumDoubles(values).ok());
  std::vector<std::vector<double>> inputs;
  for (uint32_t r = 0; r < n; ++r) inputs.push_back(DoublesOf(r, count));
  size_t mismatches = 0;
  for (size_t i = 0; i < count; ++i) {
    double expected = inputs[0][i];
    for (uint32_t r = 1; r < n; ++r) expected += inputs[r][i];
    if (std::memcmp(&expected, &values[i], sizeof(double)) != 0) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u) << "of " << count << " sums";
}

TEST(MpiCollectivesTest, SumFloatsWithinRounding) {
  Cluster& cluster = TestCluster();
  const uint32_t n = cluster.world_size();
  const size_t count = 10007;
  std::vector<float> values = FloatsOf(cluster.rank(), count);
  ASSERT_TRUE(cluster.SumFloats(values).ok());
  std::vector<std::vector<float>> inputs;
  for (uint32_t r = 0; r < n; ++r) inputs.push_back(FloatsOf(r, count));
  for (size_t i = 0; i < count; ++i) {
    double exact = 0, magnitude = 0;
    for (uint32_t r = 0; r < n; ++r) {
      exact += inputs[r][i];
      magnitude += std::fabs(inputs[r][i]);
    }
    // n - 1 float additions, each off by at most half an ulp of the sum so
    // far (<= magnitude).
    ASSERT_NEAR(values[i], exact, n * magnitude * 0x1p-24) << "element " << i;
  }
}

TEST(MpiCollectivesTest, SumsOfDifferentLengthsAreRefusedOnEveryRank) {
  Cluster& cluster = TestCluster();
  std::vector<double> doubles(cluster.rank() == 0 ? 3 : 4, 1.0);
  EXPECT_EQ(cluster.SumDoubles(doubles).code(), absl::StatusCode::kInvalidArgument);
  std::vector<float> floats(cluster.rank() == 0 ? 5 : 2, 1.0f);
  EXPECT_EQ(cluster.SumFloats(floats).code(), absl::StatusCode::kInvalidArgument);
  std::vector<float> none;
  EXPECT_TRUE(cluster.SumFloats(none).ok());
  EXPECT_TRUE(cluster.Barrier().ok());
}

}  // namespace
}  // namespace ember
