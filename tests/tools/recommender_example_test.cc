// Runs the README's recommender walk-through (tools/examples/recommender.sh)
// against the ember binary of this build: it exits 0 only if every demo
// user's top-10 recommended items are at least 70% from the user's taste
// group, before and after appending new users.
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"

namespace ember {
namespace {

TEST(RecommenderExampleTest, WalkThroughScriptSucceeds) {
  testing::TempDir tmp;
  const std::string script = std::string(EMBER_SOURCE_DIR) + "/tools/examples/recommender.sh";
  ASSERT_TRUE(std::filesystem::exists(script)) << script;
  const std::string log = tmp.Sub("log.txt");
  const std::string cmd = "cd '" + std::string(EMBER_SOURCE_DIR) + "' && EMBER='" +
                          std::string(EMBER_BINARY) + "' THREADS=2 bash '" + script + "' '" +
                          tmp.Sub("work") + "' >'" + log + "' 2>&1";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string output = testing::ReadWholeFile(log);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << "\n" << output;
  EXPECT_EQ(WEXITSTATUS(status), 0) << output;
  // The script's own checks printed their figures.
  EXPECT_NE(output.find("user17: in-group share"), std::string::npos) << output;
  EXPECT_NE(output.find("user2017: in-group share"), std::string::npos) << output;
  EXPECT_EQ(output.find("FAIL"), std::string::npos) << output;
  EXPECT_LT(seconds, 60) << "the walk-through should take about a minute at most";
  std::cerr << output;
}

}  // namespace
}  // namespace ember
