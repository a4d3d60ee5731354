// Which rank writes each partition of a checkpoint into its own copy
// (train/distributed/checkpoint_writers.h BalancedWriters).
#include "train/rank_copies.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

std::vector<uint32_t> Counts(const std::vector<uint32_t>& writers, uint32_t n) {
  std::vector<uint32_t> c(n, 0);
  for (uint32_t w : writers) ++c[w];
  return c;
}

// One rank holding every partition hands all but its share to the others.
TEST(BalancedWritersTest, AHolderOfEveryPartitionKeepsItsShare) {
  const std::vector<uint32_t> holders(8, 0);
  const std::vector<uint32_t> w = BalancedWriters(holders, 4);
  EXPECT_EQ(w, (std::vector<uint32_t>{0, 0, 1, 2, 3, 1, 2, 3}));
}

// Balanced holdings write where they are: nothing travels.
TEST(BalancedWritersTest, BalancedHoldersWriteTheirOwn) {
  const std::vector<uint32_t> holders = {2, 0, 1, 3, 0, 2, 1, 3};
  EXPECT_EQ(BalancedWriters(holders, 4), holders);
}

// Over uneven holdings no rank writes more than ceil(P/N), and a holder
// keeps as many of its own as that allows.
TEST(BalancedWritersTest, NoRankWritesMoreThanItsShare) {
  for (uint32_t n : {2u, 3u, 4u, 7u}) {
    for (uint32_t P : {1u, 5u, 8u, 13u}) {
      std::vector<uint32_t> holders(P);
      for (uint32_t p = 0; p < P; ++p) holders[p] = (p * p + p / 3) % n;
      const std::vector<uint32_t> w = BalancedWriters(holders, n);
      const uint32_t cap = (P + n - 1) / n;
      const std::vector<uint32_t> c = Counts(w, n);
      EXPECT_LE(*std::max_element(c.begin(), c.end()), cap) << n << " ranks, " << P;
      const std::vector<uint32_t> held = Counts(holders, n);
      for (uint32_t r = 0; r < n; ++r) {
        uint32_t own = 0;
        for (uint32_t p = 0; p < P; ++p) own += holders[p] == r && w[p] == r;
        EXPECT_EQ(own, std::min(held[r], cap)) << "rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace ember
