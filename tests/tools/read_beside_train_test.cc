// Readers beside a writer, end to end: `ember export`, `ember eval --json`
// and `ember neighbors --json` run again and again on a graph while
// `ember train` checkpoints it after every bucket. Each answer is either
// complete and consistent (an export's rows all from the one committed
// checkpoint it names; an eval ranking as well as the first checkpoint) or
// the clear "being written by pid N" refusal, never a corruption error;
// and most reads succeed.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/manifest.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "tests/train/train_test_util.h"
#include "train/model/train_state.h"

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

// The checkpoints the graph's manifest committed, as seen by polling it
// every millisecond while alive: checkpoint version -> the table version of
// each partition's rows.
class CheckpointHistory {
 public:
  explicit CheckpointHistory(std::string graph)
      : graph_(std::move(graph)), poller_([this] { Poll(); }) {}
  ~CheckpointHistory() {
    stop_ = true;
    poller_.join();
  }

  // The partition versions of checkpoint `version`; empty if it was not seen.
  std::vector<uint64_t> Find(uint64_t version) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = seen_.find(version);
    return it == seen_.end() ? std::vector<uint64_t>() : it->second;
  }

 private:
  void Poll() {
    while (!stop_) {
      absl::StatusOr<Manifest> m = ReadManifest(graph_ + "/MANIFEST.json");
      if (m.ok() && m->training.checkpoint_version > 0) {
        absl::StatusOr<TrainState> state = ReadTrainState(*m, graph_ + "/MANIFEST.json");
        if (state.ok() && !state->partition_versions.empty()) {
          std::lock_guard<std::mutex> lock(mu_);
          seen_[m->training.checkpoint_version] = state->partition_versions;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  const std::string graph_;
  std::mutex mu_;
  std::map<uint64_t, std::vector<uint64_t>> seen_;
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

// An export of `num_nodes` rows "name<TAB>v1..v<kDim>", all finite, with
// distinct names; the sidecar names a checkpoint at least `min_version`,
// and its rows come from that one checkpoint: every partition from a table
// version at most the checkpoint's, and, where `history` saw that
// checkpoint committed, exactly from the versions it named. Sets *checked
// when the history had the checkpoint.
void ExpectCompleteExport(const std::string& path, uint64_t num_nodes, uint64_t min_version,
                          CheckpointHistory& history, bool* checked) {
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
  const uint64_t version = meta.at("checkpoint_version").get<uint64_t>();
  EXPECT_GE(version, min_version);
  const auto read = meta.at("partition_versions").get<std::vector<uint64_t>>();
  for (uint64_t v : read) {
    EXPECT_LE(v, version) << "a partition of checkpoint " << version << " read from a later one";
  }
  const std::vector<uint64_t> committed = history.Find(version);
  *checked = !committed.empty();
  if (*checked) {
    EXPECT_EQ(read, committed) << "an export of checkpoint " << version
                               << " mixed in partitions of another checkpoint";
  }
}

double FilteredMrr(const std::string& eval_json) {
  const auto j = nlohmann::json::parse(eval_json, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << eval_json;
  return j.is_discarded() ? 0 : j.at("filtered").at("mrr").get<double>();
}

// Later checkpoints only train more, so an eval beside the writer ranks at
// least about as well as the first checkpoint did: above chance by at least
// half of the first checkpoint's measured gain over it. Rows that were not
// the trained ones (zeros, a fresh init, another model's) rank at chance.
void ExpectEvalJson(const std::string& out, double chance, double first_mrr) {
  const double mrr = FilteredMrr(out);
  EXPECT_GT(mrr - chance, (first_mrr - chance) / 2) << out;
  EXPECT_LE(mrr, 1) << out;
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
  // Epochs long enough (about a second between checkpoints) that a reader
  // can open between two of them, as between a real run's epochs, even on a
  // machine whose cores other tests keep busy: at 8000 nodes (0.3 s) a
  // loaded CI machine's readers lost 23 of 30 opens to the writer.
  sbm.nodes = 24000;
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
  const std::vector<std::string> eval = {kEmber, "eval",        graph,    "--json",
                                         "--max-edges", "200", "--quiet"};
  const ProcessResult first_eval = RunProcess(eval, tmp.path());
  ASSERT_EQ(first_eval.exit_code, 0) << first_eval.err;
  const double chance = train_test::ChanceMrr(num_nodes);
  const double first_mrr = FilteredMrr(first_eval.out);
  // One epoch already ranks far above chance (measured: 0.0xx against
  // 0.00xx), so half the gain is a margin well above the eval's noise.
  ASSERT_GT(first_mrr, 5 * chance);

  CheckpointHistory history(graph);
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
  int succeeded = 0, exports = 0, exports_checked = 0;
  for (int i = 0; i < kReads; ++i) {
    SCOPED_TRACE(absl::StrCat("read ", i));
    const std::string out = tmp.Sub(absl::StrCat("export-", i, ".tsv"));
    std::vector<std::string> argv;
    switch (i % 3) {
      case 0:
        argv = {kEmber, "export", graph, "--format", "tsv", "--out", out, "--quiet"};
        break;
      case 1:
        argv = eval;
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
      case 0: {
        bool checked = false;
        ExpectCompleteExport(out, num_nodes, first_version, history, &checked);
        ++exports;
        exports_checked += checked;
        break;
      }
      case 1:
        ExpectEvalJson(r.out, chance, first_mrr);
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
  // Polled every millisecond, the history misses few checkpoints.
  EXPECT_GE(2 * exports_checked, exports) << "too few exports' checkpoints were seen committed";
  std::printf("%d of %d reads succeeded beside ember train (checkpoints %llu..%llu); %d of %d "
              "exports checked against the committed checkpoint they name\n", succeeded, kReads,
              (unsigned long long)first_version, (unsigned long long)last_version,
              exports_checked, exports);
}

}  // namespace
}  // namespace ember
