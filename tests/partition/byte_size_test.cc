#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "partition/importer.h"

namespace ember {
namespace {

TEST(ParseByteSizeTest, AcceptsSizesWithSuffixes) {
  EXPECT_EQ(*ParseByteSize("1000000"), 1000000u);
  EXPECT_EQ(*ParseByteSize("512M"), 512ull << 20);
  EXPECT_EQ(*ParseByteSize(" 4g "), 4ull << 30);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), 3ull << 29);
  EXPECT_EQ(*ParseByteSize("0"), 0u);
}

TEST(ParseByteSizeTest, RejectsNonFiniteNegativeAndHugeValues) {
  for (const char* text : {"nan", "NaN", "inf", "-inf", "infinity", "1e30G", "1e300",
                           "16777216T", "-1", "-0.5G", "", "G", "12X", "2e19"}) {
    const absl::StatusOr<uint64_t> r = ParseByteSize(text);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << "'" << text << "' gave " << (r.ok() ? std::to_string(*r) : r.status().ToString());
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(std::string("'") + text + "'"), std::string::npos)
          << r.status();
    }
  }
}

TEST(ParseByteSizeTest, LargestSizesBelowTwoToThe64Fit) {
  // 2^64 - 2^11: the largest double below 2^64.
  EXPECT_EQ(*ParseByteSize("18446744073709549568"), 18446744073709549568ull);
  EXPECT_EQ(*ParseByteSize("16777215T"), 16777215ull << 40);
}

}  // namespace
}  // namespace ember
