#include "partition/line_parser.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

LineFormat Tsv(bool rel = false, bool integers = false) {
  LineFormat f;
  f.delimiter = '\t';
  if (rel) {
    f.rel_col = 1;
    f.dst_col = 2;
  }
  f.integer_ids = integers;
  return f;
}

TEST(LineParserTest, SkipsCommentsAndBlankLines) {
  EXPECT_TRUE(IsSkippableLine(""));
  EXPECT_TRUE(IsSkippableLine("   \t\r"));
  EXPECT_TRUE(IsSkippableLine("# comment"));
  EXPECT_TRUE(IsSkippableLine("  % matrix market"));
  EXPECT_FALSE(IsSkippableLine("a\tb"));
  EXPECT_FALSE(IsSkippableLine(" 1 # 2"));
}

TEST(LineParserTest, DetectsDelimiter) {
  EXPECT_EQ(DetectDelimiter("a\tb"), '\t');
  EXPECT_EQ(DetectDelimiter("1,2"), ',');
  EXPECT_EQ(DetectDelimiter("1 2"), ' ');
  EXPECT_EQ(CountFields("1  2   3\r", ' '), 3);
  EXPECT_EQ(CountFields("1,,3", ','), 3);
}

TEST(LineParserTest, ParsesTwoAndThreeColumns) {
  ParsedLine p;
  RejectReason why;
  ASSERT_TRUE(ParseEdgeLine("a\tb\r", Tsv(), &p, &why));
  EXPECT_EQ(p.src, "a");
  EXPECT_EQ(p.dst, "b");
  EXPECT_TRUE(p.rel.empty());
  ASSERT_TRUE(ParseEdgeLine("/m/01\t/film/genre\t00260881", Tsv(true), &p, &why));
  EXPECT_EQ(p.src, "/m/01");
  EXPECT_EQ(p.rel, "/film/genre");
  EXPECT_EQ(p.dst, "00260881");
}

TEST(LineParserTest, SpaceDelimiterCollapsesRuns) {
  LineFormat f;
  f.delimiter = ' ';
  ParsedLine p;
  RejectReason why;
  ASSERT_TRUE(ParseEdgeLine("  12   34  ", f, &p, &why));
  EXPECT_EQ(p.src, "12");
  EXPECT_EQ(p.dst, "34");
}

TEST(LineParserTest, RejectsBadLinesWithReasons) {
  ParsedLine p;
  RejectReason why;
  EXPECT_FALSE(ParseEdgeLine("a", Tsv(), &p, &why));
  EXPECT_EQ(why, RejectReason::kTooFewColumns);
  EXPECT_FALSE(ParseEdgeLine("a\tb", Tsv(true), &p, &why));
  EXPECT_EQ(why, RejectReason::kTooFewColumns);
  EXPECT_FALSE(ParseEdgeLine("a\t", Tsv(), &p, &why));
  EXPECT_EQ(why, RejectReason::kEmptyId);
  EXPECT_FALSE(ParseEdgeLine(std::string("a\0b\tc", 5), Tsv(), &p, &why));
  EXPECT_EQ(why, RejectReason::kBinaryData);
  EXPECT_FALSE(ParseEdgeLine("a\x01\tc", Tsv(), &p, &why));
  EXPECT_EQ(why, RejectReason::kBinaryData);
  EXPECT_FALSE(ParseEdgeLine("caf\xe9\tc", Tsv(), &p, &why));
  EXPECT_EQ(why, RejectReason::kInvalidUtf8);
  EXPECT_TRUE(ParseEdgeLine("caf\xc3\xa9\tc", Tsv(), &p, &why));
}

TEST(LineParserTest, IntegerIds) {
  ParsedLine p;
  RejectReason why;
  ASSERT_TRUE(ParseEdgeLine("18446744073709551615\t0", Tsv(false, true), &p, &why));
  EXPECT_EQ(p.src_id, 18446744073709551615ull);
  EXPECT_EQ(p.dst_id, 0u);
  EXPECT_FALSE(ParseEdgeLine("18446744073709551616\t0", Tsv(false, true), &p, &why));
  EXPECT_EQ(why, RejectReason::kIdOutOfRange);
  EXPECT_FALSE(ParseEdgeLine("-1\t0", Tsv(false, true), &p, &why));
  EXPECT_EQ(why, RejectReason::kNegativeId);
  EXPECT_FALSE(ParseEdgeLine("x1\t0", Tsv(false, true), &p, &why));
  EXPECT_EQ(why, RejectReason::kNonNumericId);
  EXPECT_FALSE(ParseEdgeLine("1.5\t0", Tsv(false, true), &p, &why));
  EXPECT_EQ(why, RejectReason::kNonNumericId);
}

TEST(LineParserTest, Utf8Validation) {
  RejectReason why;
  EXPECT_TRUE(ValidateStringId("\xf0\x9f\x98\x80", &why));   // U+1F600
  EXPECT_FALSE(ValidateStringId("\xc0\xaf", &why));          // overlong '/'
  EXPECT_FALSE(ValidateStringId("\xed\xa0\x80", &why));      // surrogate
  EXPECT_FALSE(ValidateStringId("\xf4\x90\x80\x80", &why));  // > U+10FFFF
  EXPECT_FALSE(ValidateStringId("\xe2\x82", &why));          // truncated
}

TEST(LineParserTest, Flags) {
  EXPECT_EQ(*ParseDelimiterFlag("tab"), '\t');
  EXPECT_EQ(*ParseDelimiterFlag("auto"), '\0');
  EXPECT_EQ(*ParseDelimiterFlag(";"), ';');
  EXPECT_FALSE(ParseDelimiterFlag("ab").ok());
  EXPECT_EQ(*ParseColumnsFlag("2,0,1"), (std::vector<int>{2, 0, 1}));
  EXPECT_FALSE(ParseColumnsFlag("1").ok());
  EXPECT_FALSE(ParseColumnsFlag("1,1").ok());
  EXPECT_FALSE(ParseColumnsFlag("a,b").ok());
}

}  // namespace
}  // namespace ember
