// `ember train GRAPH` alone resumes the run the checkpoint holds: what
// shapes the loss (the model flags and --weights) comes from the
// checkpoint when the flag is not given, and says so.
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"

namespace ember {
namespace {

using ::ember::testing::ProcessResult;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunProcess;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;

const std::string kEmber = EMBER_BINARY;

class ResumeOptionsTest : public ::testing::Test {
 protected:
  ProcessResult Ember(std::vector<std::string> args) {
    args.insert(args.begin(), kEmber);
    return RunProcess(args, tmp_.path());
  }
  // The `weights` the manifest's training state records ("" when absent).
  std::string RecordedWeights(const std::string& graph) {
    const nlohmann::json m = nlohmann::json::parse(ReadWholeFile(graph + "/MANIFEST.json"));
    const nlohmann::json& trainer = m["training"]["state"]["trainer"];
    return trainer.contains("weights") ? trainer["weights"].get<std::string>() : "";
  }
  TempDir tmp_;
};

TEST_F(ResumeOptionsTest, ResumeTakesTheCheckpointsWeights) {
  std::string text;
  for (int u = 0; u < 40; ++u) {
    for (int k = 0; k < 5; ++k) {
      text += "u" + std::to_string(u) + "\ti" + std::to_string((u * 7 + k * 3) % 25) + "\t" +
              std::to_string(1 + (u + k) % 4) + "\n";
    }
  }
  const std::string edges = tmp_.Sub("ratings.tsv");
  std::ofstream(edges) << text;
  const std::string graph = tmp_.Sub("g");
  ProcessResult r = Ember({"import", "--out", graph, "--weight-column", "2", edges, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Ember({"train", graph, "--epochs", "1", "--dim", "8", "--weights", "sample", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RecordedWeights(graph), "sample");
  // The flag left out: the checkpoint's mode, said on stderr.
  r = Ember({"train", graph, "--epochs", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("resuming with the checkpoint's --dim 8 --weights sample"));
  EXPECT_EQ(RecordedWeights(graph), "sample");
  // Another mode given: refused, naming both, and the graph is untouched.
  const std::string before = ReadWholeFile(graph + "/MANIFEST.json");
  r = Ember({"train", graph, "--epochs", "3", "--weights", "loss", "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("trained with --weights sample"));
  EXPECT_THAT(r.err, HasSubstr("--from-scratch"));
  EXPECT_EQ(ReadWholeFile(graph + "/MANIFEST.json"), before);
  // --from-scratch starts over under the new mode.
  r = Ember({"train", graph, "--epochs", "1", "--weights", "loss", "--from-scratch", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RecordedWeights(graph), "loss");
}

}  // namespace
}  // namespace ember
