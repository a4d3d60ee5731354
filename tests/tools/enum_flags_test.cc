// Each named enum has one table; its names parse back, flags marshal
// through it, and a bad name lists the accepted ones.
#include <string>

#include "absl/flags/marshalling.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "partition/bucket_order.h"
#include "partition/partitioner.h"
#include "storage/types.h"
#include "tools/export/exporter.h"
#include "tools/export/neighbors.h"
#include "train/batch/batch_former.h"
#include "train/model/featurized.h"
#include "train/model/model_options.h"
#include "train/options/train_options.h"

namespace ember {
namespace {

using ::testing::HasSubstr;

template <NamedEnum Enum>
void ExpectTableRoundTrips() {
  const auto& table = EnumNames<Enum>::kTable;
  for (const EnumName<Enum>& row : table) {
    absl::StatusOr<Enum> parsed = EnumFromName<Enum>(row.name);
    ASSERT_TRUE(parsed.ok()) << row.name;
    EXPECT_EQ(*parsed, row.value) << row.name;
    EXPECT_EQ(EnumToName(row.value), row.name);
    // Through Abseil's flag marshalling, as a typed flag sees it.
    Enum flag_value{};
    std::string error;
    ASSERT_TRUE(absl::ParseFlag(std::string(row.name), &flag_value, &error)) << error;
    EXPECT_EQ(flag_value, row.value);
    EXPECT_EQ(absl::UnparseFlag(row.value), row.name);
  }
  Enum untouched = table[0].value;
  std::string error;
  EXPECT_FALSE(absl::ParseFlag("no-such-name", &untouched, &error));
  EXPECT_EQ(untouched, table[0].value);
  EXPECT_THAT(error, HasSubstr(std::string("unknown ") + std::string(EnumNames<Enum>::kWhat) +
                               " 'no-such-name'; expected one of: "));
  for (const EnumName<Enum>& row : table) EXPECT_THAT(error, HasSubstr(std::string(row.name)));
}

TEST(EnumFlagsTest, EveryTableRoundTrips) {
  ExpectTableRoundTrips<Operator>();
  ExpectTableRoundTrips<Comparator>();
  ExpectTableRoundTrips<Loss>();
  ExpectTableRoundTrips<FeaturizedMode>();
  ExpectTableRoundTrips<BatchingKind>();
  ExpectTableRoundTrips<RelationBatching>();
  ExpectTableRoundTrips<BucketOrderKind>();
  ExpectTableRoundTrips<PartitionerKind>();
  ExpectTableRoundTrips<Split>();
  ExpectTableRoundTrips<tools::ExportFormat>();
  ExpectTableRoundTrips<tools::IndexKind>();
}

TEST(EnumFlagsTest, NamesKeepTheirCliSpellings) {
  EXPECT_EQ(OperatorName(Operator::kComplexDiagonal), "complex_diagonal");
  EXPECT_EQ(FeaturizedModeName(FeaturizedMode::kIdPlusFeatures), "id+features");
  EXPECT_EQ(BatchingKindName(BatchingKind::kVarianceAware), "variance-aware");
  EXPECT_EQ(BucketOrderName(BucketOrderKind::kInsideOut), "inside-out");
  EXPECT_EQ(SplitName(Split::kValid), "valid");
  EXPECT_EQ(tools::ExportFormatName(tools::ExportFormat::kFvecs), "fvecs");
  EXPECT_EQ(EnumToName(static_cast<Operator>(200)), "?");
}

}  // namespace
}  // namespace ember
