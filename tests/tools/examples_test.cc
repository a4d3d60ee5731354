// Runs the example scripts of tools/examples/ against the ember binary of
// this build. Each exits 0 only if its own quality check passes:
// - recommender.sh (the README's walk-through): every demo user's top-10
//   recommended items are at least 70% from the user's taste group, before
//   and after appending new users;
// - communities.sh (what tools/demo.sh runs): the nearest neighbours of
//   sampled nodes are mostly in the node's planted community.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "gtest/gtest.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"

namespace ember {
namespace {

struct ScriptRun {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string output;  // stdout and stderr
};

// Runs tools/examples/<name> from the source root with EMBER set to this
// build's binary and 2 threads, in a work directory under `tmp`.
ScriptRun RunExample(const std::string& name, const testing::TempDir& tmp) {
  const std::string script = std::string(EMBER_SOURCE_DIR) + "/tools/examples/" + name;
  EXPECT_TRUE(std::filesystem::exists(script)) << script;
  const std::string log = tmp.Sub("log.txt");
  const std::string cmd = "cd '" + std::string(EMBER_SOURCE_DIR) + "' && EMBER='" +
                          std::string(EMBER_BINARY) + "' THREADS=2 bash '" + script + "' '" +
                          tmp.Sub("work") + "' >'" + log + "' 2>&1";
  const int status = std::system(cmd.c_str());
  ScriptRun run;
  run.output = testing::ReadWholeFile(log);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  std::cerr << run.output;
  return run;
}

TEST(RecommenderExampleTest, WalkThroughScriptSucceeds) {
  testing::TempDir tmp;
  const ScriptRun run = RunExample("recommender.sh", tmp);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // The script's own checks printed their figures.
  EXPECT_NE(run.output.find("user17: in-group share"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("user2017: in-group share"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("FAIL"), std::string::npos) << run.output;
}

TEST(CommunitiesExampleTest, DemoEndsOnPurityAndMrrBesideReferences) {
  testing::TempDir tmp;
  const ScriptRun run = RunExample("communities.sh", tmp);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("neighbour purity: "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("(chance: 1 in 20 = 5.0%)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("test MRR reference: chance 0.0005;"), std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("FAIL"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace ember
