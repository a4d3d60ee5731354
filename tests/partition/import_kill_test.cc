// Runs the `ember` binary: an import killed with SIGKILL part-way leaves no
// graph at --out and a rerun succeeds; bad input gives a non-zero exit and
// "file:line:" on stderr; the documented flag spellings are accepted.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "tests/partition/test_util.h"

namespace ember::import_test {
namespace {


const std::string kEmber = EMBER_BINARY;

uint64_t BytesUnder(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    if (it->is_regular_file(ec2)) total += it->file_size(ec2);
  }
  return total;
}

std::vector<std::string> ImportArgs(const std::string& out,
                                    const std::string& input) {
  return {kEmber, "import", "--out", out, "--partitions", "4",
          "--threads", "2", "--seed", "3", "--quiet", input};
}

TEST(ImportKillTest, KilledImportLeavesNoGraphAndRerunSucceeds) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("rmat18.tsv");
  ProcessResult gen = RunProcess({kEmber, "gen", "rmat", "--scale", "18",
                                  "--edge_factor", "16", "--seed", "21",
                                  "--threads", "2", "--quiet", "--out", input},
                                 tmp.path());
  ASSERT_EQ(gen.exit_code, 0) << "ember gen rmat failed: " << gen.err;
  const std::vector<IntEdge> edges = ReadIntEdgeFile(input);
  ASSERT_EQ(edges.size(), uint64_t{16} << 18);
  const uint64_t distinct = DistinctNodes(edges);

  const std::string out = tmp.Sub("graph");
  // Kill 1: while reading, once the staging dir holds a few MiB of spill.
  {
    ChildProcess child(ImportArgs(out, input), tmp.Sub("child"));
    ASSERT_TRUE(child.started());
    const bool staged = PollUntil(
        &child, [&] { return !StagingDirs(out).empty(); },
        std::chrono::seconds(60));
    ASSERT_TRUE(staged) << "no " << out << ".staging-* appeared; stderr: "
                        << child.Wait().err;
    PollUntil(
        &child,
        [&] {
          auto dirs = StagingDirs(out);
          return !dirs.empty() && BytesUnder(dirs.front()) > (4u << 20);
        },
        std::chrono::seconds(5));
    ASSERT_FALSE(child.Exited())
        << "the import finished before it could be killed; make the input "
           "larger";
    child.Kill();
    ProcessResult r = child.Wait();
    EXPECT_EQ(r.term_signal, SIGKILL);
    EXPECT_FALSE(fs::exists(out)) << "a killed import left " << out;
  }
  // Kill 2: late, once the staging dir holds the graph's RocksDB dirs.
  bool killed_late = false;
  {
    ChildProcess child(ImportArgs(out, input), tmp.Sub("child"));
    ASSERT_TRUE(child.started());
    const bool committing = PollUntil(
        &child,
        [&] {
          for (const std::string& d : StagingDirs(out)) {
            if (fs::exists(d + "/dict") || fs::exists(d + "/shard-0")) return true;
          }
          return false;
        },
        std::chrono::seconds(60));
    if (committing && !child.Exited()) {
      child.Kill();
      ProcessResult r = child.Wait();
      killed_late = r.term_signal == SIGKILL;
      if (killed_late) {
        EXPECT_FALSE(fs::exists(out)) << "a killed import left " << out;
      }
    } else {
      ProcessResult r = child.Wait();
      // It finished first: then it must have finished properly.
      EXPECT_EQ(r.exit_code, 0) << r.err;
      std::error_code ec;
      fs::remove_all(out, ec);
    }
  }
  std::cerr << "[          ] late kill "
            << (killed_late ? "happened" : "missed (import finished first)")
            << "\n";

  // Rerun to completion.
  ProcessResult r = RunProcess(ImportArgs(out, input), tmp.path());
  ASSERT_EQ(r.exit_code, 0) << "rerun after a kill failed: " << r.err;
  EXPECT_TRUE(StagingDirs(out).empty())
      << "stale staging dir left after a successful rerun: "
      << StagingDirs(out).front();
  auto g = Graph::Open(out);
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& m = (*g)->manifest();
  EXPECT_EQ(m.num_nodes, distinct);
  EXPECT_EQ(m.edges.train, edges.size());
  EXPECT_EQ(m.num_partitions, 4u);
  uint64_t in_buckets = 0;
  for (uint32_t i = 0; i < 4; ++i) {
    for (uint32_t j = 0; j < 4; ++j) {
      std::vector<Edge> b;
      ASSERT_TRUE((*g)->ReadBucket(Split::kTrain, i, j, &b).ok());
      EXPECT_EQ(b.size(), m.train_bucket_edges[i * 4 + j]);
      in_buckets += b.size();
    }
  }
  EXPECT_EQ(in_buckets, edges.size());
}

TEST(ImportCliTest, BadLineGivesNonZeroExitAndFileLine) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("bad.tsv");
  WriteFile(input, "# header\na\tb\nc\nd\te\n");
  const std::string out = tmp.Sub("graph");
  ProcessResult r = RunProcess({kEmber, "import", "--out", out, "--quiet", input},
                               tmp.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.term_signal, 0) << "ember crashed";
  EXPECT_TRUE(absl::StrContains(r.err, input + ":3: "))
      << "stderr lacks '" << input << ":3: ': " << r.err;
  ExpectNothingAt(out);
}

TEST(ImportCliTest, ExistingOutRefusedThenOverwritten) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("e.tsv");
  WriteFile(input, "a\tb\nb\tc\n");
  const std::string out = tmp.Sub("graph");
  ASSERT_TRUE(fs::create_directory(out));
  WriteFile(out + "/keep", "x");
  ProcessResult r = RunProcess({kEmber, "import", "--out", out, "--quiet", input},
                               tmp.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(fs::exists(out + "/keep"));
  // --overwrite replaces only what ember made: a folder of the user's stays.
  r = RunProcess({kEmber, "import", "--out", out, "--overwrite", "--quiet", input}, tmp.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(fs::exists(out + "/keep"));
  fs::remove_all(out);
  r = RunProcess({kEmber, "import", "--out", out, "--quiet", input}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunProcess({kEmber, "import", "--out", out, "--overwrite", "--quiet", "--json",
                  input},
                 tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << "--json output is not JSON: " << r.out;
  EXPECT_EQ(j["nodes"], 3);
  EXPECT_EQ(j["edges"]["train"], 2);
}

// The README spells flags with dashes (--integer-ids, --self-loops,
// --skip-bad-lines, --memory-budget); the CLI must accept them.
TEST(ImportCliTest, DocumentedFlagSpellingsAreAccepted) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("e.tsv");
  WriteFile(input, "1\t2\n2\t2\nx\t3\n2\t3\n3\t1\n");
  const std::string out = tmp.Sub("graph");
  ProcessResult r = RunProcess(
      {kEmber, "import", "--out", out, "--partitions", "2", "--integer-ids",
       "--self-loops", "drop", "--skip-bad-lines", "--memory-budget", "64M",
       "--threads", "2", "--seed", "1", "--quiet", "--json", input},
      tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["edges"]["train"], 3);
  EXPECT_EQ(j["self_loops_dropped"], 1);
  EXPECT_EQ(j["rejected"]["non_numeric_id"], 1);
}

// The same options with the flags as defined in cmd_import.cc (underscores).
TEST(ImportCliTest, UnderscoreFlagSpellingsWork) {
  ScopedTempDir tmp;
  const std::string input = tmp.Sub("e.tsv");
  WriteFile(input, "1\t2\n2\t2\nx\t3\n2\t3\n3\t1\n");
  const std::string out = tmp.Sub("graph");
  ProcessResult r = RunProcess(
      {kEmber, "import", "--out", out, "--partitions", "2", "--integer_ids",
       "--self_loops", "drop", "--skip_bad_lines", "--memory_budget", "64M",
       "--threads", "2", "--seed", "1", "--quiet", "--json", input},
      tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["edges"]["train"], 3);
  EXPECT_EQ(j["self_loops_dropped"], 1);
  EXPECT_EQ(j["rejected"]["non_numeric_id"], 1);
  auto g = Graph::Open(out);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ReadNamedEdges(**g, Split::kTrain),
            (std::vector<NamedEdge>{{"1", "", "2"}, {"2", "", "3"}, {"3", "", "1"}}));
}

}  // namespace
}  // namespace ember::import_test
