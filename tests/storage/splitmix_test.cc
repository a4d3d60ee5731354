#include "storage/base/splitmix.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

// Fisher-Yates as its definition reads: v[i - 1] swapped with v[Below(i)].
std::vector<uint32_t> ReferenceShuffle(uint64_t seed, std::vector<uint32_t> v) {
  SplitMix64 rng(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
  return v;
}

TEST(SplitMixShuffleTest, IsFisherYatesWithTheSameDraws) {
  // Sizes around the draw-ahead depth (32): none, one, fewer, equal, more.
  for (size_t n : {0, 1, 2, 31, 32, 33, 64, 1000, 100003}) {
    std::vector<uint32_t> v(n);
    std::iota(v.begin(), v.end(), 0u);
    const std::vector<uint32_t> expected = ReferenceShuffle(n + 5, v);
    SplitMix64 rng(n + 5);
    rng.Shuffle(v);
    EXPECT_EQ(v, expected) << "size " << n;
    // The generator ends where the reference's does: the same draws, no more.
    SplitMix64 after(n + 5);
    for (size_t i = n; i > 1; --i) after.Below(i);
    EXPECT_EQ(rng.Next(), after.Next()) << "size " << n;
  }
}

// ShuffleAlong moves v as Shuffle does and w's entries beside v's.
TEST(SplitMixShuffleTest, ShuffleAlongKeepsPairsTogether) {
  for (size_t n : {0, 1, 2, 31, 32, 33, 1000, 100003}) {
    std::vector<uint32_t> v(n);
    std::iota(v.begin(), v.end(), 0u);
    std::vector<float> w(n);
    for (size_t i = 0; i < n; ++i) w[i] = 0.5f * static_cast<float>(i);
    const std::vector<uint32_t> expected = ReferenceShuffle(n + 5, v);
    SplitMix64 rng(n + 5);
    rng.ShuffleAlong(std::span<uint32_t>(v), std::span<float>(w));
    EXPECT_EQ(v, expected) << "size " << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(w[i], 0.5f * static_cast<float>(v[i])) << i;
    SplitMix64 after(n + 5);
    for (size_t i = n; i > 1; --i) after.Below(i);
    EXPECT_EQ(rng.Next(), after.Next()) << "size " << n;
  }
  // No weights: as Shuffle.
  std::vector<uint32_t> v(100);
  std::iota(v.begin(), v.end(), 0u);
  const std::vector<uint32_t> expected = ReferenceShuffle(3, v);
  SplitMix64(3).ShuffleAlong(std::span<uint32_t>(v), std::span<float>());
  EXPECT_EQ(v, expected);
}

TEST(SplitMixShuffleTest, MovesEveryPositionUniformly) {
  // Where element 0 of 8 lands over 80,000 shuffles: 10,000 per slot, each
  // within 5 standard deviations (about 470).
  std::vector<int> lands(8, 0);
  SplitMix64 rng(11);
  for (int t = 0; t < 80000; ++t) {
    std::vector<uint32_t> v(8);
    std::iota(v.begin(), v.end(), 0u);
    rng.Shuffle(v);
    ++lands[std::find(v.begin(), v.end(), 0u) - v.begin()];
  }
  for (int c : lands) EXPECT_NEAR(c, 10000, 470);
}

}  // namespace
}  // namespace ember
