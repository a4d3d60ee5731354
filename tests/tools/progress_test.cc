// Progress lines in logs (stderr not a terminal): full lines, each with a
// measured rate and an ETA, never a first line that says 0 edges/s.
#include "storage/base/progress.h"

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/partition/test_util.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using ::ember::import_test::ProcessResult;
using ::ember::import_test::RunProcess;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kEmber = EMBER_BINARY;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The "<rate> <unit>/s" of a progress line; -1 without one.
double RateOf(const std::string& line, const std::string& unit) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("  ([0-9.]+)( [kMG])? " + unit + "/s"))) return -1;
  const double scale = m[2] == " k" ? 1e3 : m[2] == " M" ? 1e6 : m[2] == " G" ? 1e9 : 1;
  return std::stod(m[1]) * scale;
}

TEST(ProgressPrinterTest, LogLinesWaitForARate) {
  ::testing::internal::CaptureStderr();
  {
    tools::ProgressPrinter p(true, /*log_interval_seconds=*/0, /*tty=*/false);
    p.Update("epoch 1/2", 0, 1000, "edges");  // nothing measured yet
    p.Update("epoch 1/2", 400, 1000, "edges", "loss 0.5");
    p.Update("commit", 0, 0, "");  // a step without a count: shown at once
    p.Finish();
  }
  const std::vector<std::string> lines = Lines(::testing::internal::GetCapturedStderr());
  ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines[0], HasSubstr("epoch 1/2 400/1.0 k edges (40.0%)"));
  EXPECT_GT(RateOf(lines[0], "edges"), 0) << lines[0];
  EXPECT_THAT(lines[0], ::testing::ContainsRegex("ETA [0-9.]+s"));
  EXPECT_THAT(lines[0], HasSubstr("loss 0.5"));
  EXPECT_THAT(lines[1], ::testing::StartsWith("commit"));
  for (const std::string& l : lines) EXPECT_THAT(l, Not(HasSubstr("\r")));
}

TEST(ProgressPrinterTest, LogLinesAreThrottledByTheInterval) {
  ::testing::internal::CaptureStderr();
  {
    // An interval no test run reaches: only the first measured line shows.
    tools::ProgressPrinter p(true, /*log_interval_seconds=*/1e9, /*tty=*/false);
    for (uint64_t done = 0; done <= 1000; done += 100) p.Update("read", done, 1000, "rows");
  }
  const std::vector<std::string> lines = Lines(::testing::internal::GetCapturedStderr());
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines[0], HasSubstr("100/1.0 k rows"));
}

TEST(ProgressPrinterTest, HumanSeconds) {
  EXPECT_EQ(tools::HumanSeconds(0.44), "0.4s");
  EXPECT_EQ(tools::HumanSeconds(37.2), "37s");
  EXPECT_EQ(tools::HumanSeconds(185), "3m05s");
  EXPECT_EQ(tools::HumanSeconds(7620), "2h07m");
}

TEST(ProgressPrinterTest, QuietPrintsNothing) {
  ::testing::internal::CaptureStderr();
  {
    tools::ProgressPrinter p(false, 0, false);
    p.Update("read", 0, 10, "rows");
    p.Update("read", 5, 10, "rows", "", /*force=*/true);
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// `ember train` with stderr in a file and a small --progress-interval:
// full lines with edges/s > 0 and an ETA appear while an epoch runs.
TEST(TrainProgressCliTest, LogGetsLiveLinesWithRateAndEta) {
  TempDir tmp;
  ProcessResult r = RunProcess({kEmber, "gen", "sbm", "--nodes", "2000", "--blocks", "10",
                                "--avg-degree", "20", "--seed", "4", "--out", tmp.Sub("sbm.tsv"),
                                "--labels-out", tmp.Sub("labels.tsv"),
                                "--quiet"},
                               tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunProcess({kEmber, "import", "--out", tmp.Sub("g"), "--quiet", tmp.Sub("sbm.tsv")},
                 tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunProcess({kEmber, "train", tmp.Sub("g"), "--epochs", "2", "--dim", "16", "--batch-size",
                  "500", "--threads", "1", "--progress-interval", "0"},
                 tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("\r")));
  int live = 0;
  for (const std::string& line : Lines(r.err)) {
    if (!absl::StartsWith(line, "epoch ")) continue;
    EXPECT_GT(RateOf(line, "edges"), 0) << line;
    if (std::regex_search(line, std::regex("ETA [0-9][0-9.hms]*"))) ++live;
  }
  // 20000 edges in batches of 500: 40 batches an epoch, each a line after
  // the first.
  EXPECT_GE(live, 2) << r.err;

  // A bad interval is refused by the flag parser.
  r = RunProcess({kEmber, "train", tmp.Sub("g"), "--progress-interval", "-1"}, tmp.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("progress_interval"));
}

}  // namespace
}  // namespace ember
