// Readers beside a writer, end to end: `ember export`, `ember eval --json`
// and `ember neighbors --json` run again and again on a graph while
// `ember train` checkpoints it after every bucket. Each answer is either
// complete and consistent or the clear "being written by pid N" refusal,
// never a corruption error; and most reads succeed.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/manifest.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "tests/train/train_test_util.h"

namespace ember {
namespace {

using ::ember::testing::ChildProcess;
using ::ember::testing::PollUntil;
using ::ember::testing::ProcessResult;
using ::ember::testing::RunProcess;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;

const std::string kEmber = EMBER_BINARY;
constexpr int kDim = 128;

uint64_t CheckpointVersion(const std::string& graph) {
  absl::StatusOr<Manifest> m = ReadManifest(graph + "/MANIFEST.json");
  return m.ok() ? m->training.checkpoint_version : 0;
}

// An export of `num_nodes` rows "name<TAB>v1..v<kDim>", all finite, with
// distinct names; the sidecar names a checkpoint at least `min_version`.
void ExpectCompleteExport(const std::string& path, uint64_t num_nodes, uint64_t min_version) {
  std::ifstream in(path);
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string name;
    std::getline(fields, name, '\t');
    names.push_back(name);
    int values = 0;
    for (std::string v; std::getline(fields, v, '\t'); ++values) {
      ASSERT_TRUE(std::isfinite(std::strtof(v.c_str(), nullptr))) << line;
    }
    ASSERT_EQ(values, kDim) << line;
  }
  EXPECT_EQ(names.size(), num_nodes);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end()) << "a name exported twice";
  const auto meta = nlohmann::json::parse(::ember::testing::ReadWholeFile(path + ".meta.json"),
                                          nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(meta.is_discarded());
  EXPECT_GE(meta.at("checkpoint_version").get<uint64_t>(), min_version);
}

void ExpectEvalJson(const std::string& out) {
  const auto j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out;
  const double mrr = j.at("filtered").at("mrr").get<double>();
  EXPECT_TRUE(mrr > 0 && mrr <= 1) << out;
}

void ExpectNeighborsJson(const std::string& out) {
  const auto j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j.at("neighbors").size(), 5u) << out;
}

TEST(ReadBesideTrainTest, ReadersGetCompleteResultsOrNameTheWriter) {
  TempDir tmp;
  const std::string edges = tmp.Sub("edges.tsv");
  tools::gen::SbmOptions sbm = train_test::StandardSbm();
  // Epochs long enough (a few tenths of a second) that a reader can open
  // between two checkpoints, as between a real run's epochs.
  sbm.nodes = 8000;
  sbm.blocks = 20;
  train_test::WriteSbmEdges(sbm, edges);
  const std::string graph = tmp.Sub("g");
  absl::StatusOr<ImportSummary> imported = train_test::ImportEdges(graph, {edges}, 4);
  ASSERT_TRUE(imported.ok()) << imported.status();
  const uint64_t num_nodes = imported->nodes;

  const std::vector<std::string> train = {kEmber, "train", graph, "--dim", absl::StrCat(kDim),
                                          "--lr", "0.1", "--threads", "1", "--quiet"};
  std::vector<std::string> first = train;
  first.insert(first.end(), {"--epochs", "1"});
  const ProcessResult warmup = RunProcess(first, tmp.path());
  ASSERT_EQ(warmup.exit_code, 0) << warmup.err;
  const uint64_t first_version = CheckpointVersion(graph);
  ASSERT_GT(first_version, 0u);

  // Long enough to outlast the reads; killed once they are done.
  std::vector<std::string> endless = train;
  endless.insert(endless.end(), {"--epochs", "100000"});
  ChildProcess writer(endless, tmp.Sub("train"));
  ASSERT_TRUE(writer.started());
  ASSERT_TRUE(PollUntil(
      &writer, [&] { return CheckpointVersion(graph) > first_version + 2; },
      std::chrono::seconds(120)))
      << "ember train made no checkpoints: " << writer.Err();

  const std::string being_written = absl::StrCat("is being written by pid ", writer.pid(), " (");
  constexpr int kReads = 30;
  int succeeded = 0;
  for (int i = 0; i < kReads; ++i) {
    SCOPED_TRACE(absl::StrCat("read ", i));
    const std::string out = tmp.Sub(absl::StrCat("export-", i, ".tsv"));
    std::vector<std::string> argv;
    switch (i % 3) {
      case 0:
        argv = {kEmber, "export", graph, "--format", "tsv", "--out", out, "--quiet"};
        break;
      case 1:
        argv = {kEmber, "eval", graph, "--json", "--max-edges", "200", "--quiet"};
        break;
      default:
        argv = {kEmber, "neighbors", graph, "--node", "0", "--k", "5", "--json", "--quiet"};
        break;
    }
    const ProcessResult r = RunProcess(argv, tmp.path());
    if (r.exit_code != 0) {
      // The only acceptable failure: the writer kept this reader from a
      // consistent open, and the message says who it is.
      EXPECT_THAT(r.err, HasSubstr(being_written));
      EXPECT_THAT(r.err, HasSubstr(" train "));
      continue;
    }
    ++succeeded;
    switch (i % 3) {
      case 0:
        ExpectCompleteExport(out, num_nodes, first_version);
        break;
      case 1:
        ExpectEvalJson(r.out);
        break;
      default:
        ExpectNeighborsJson(r.out);
        break;
    }
  }
  // The writer was at work throughout: it is still running, and checkpoints
  // kept coming.
  EXPECT_FALSE(writer.Exited()) << "ember train stopped during the reads: " << writer.Err();
  const uint64_t last_version = CheckpointVersion(graph);
  writer.Kill();
  writer.Wait();
  EXPECT_GT(last_version, first_version + 2);
  EXPECT_GE(succeeded, kReads / 2) << "too few reads succeeded beside the writer";
  std::printf("%d of %d reads succeeded beside ember train (checkpoints %llu..%llu)\n", succeeded,
              kReads, (unsigned long long)first_version, (unsigned long long)last_version);
}

}  // namespace
}  // namespace ember
