// Runs the benchmark recipes of tools/datasets/prepare.sh offline, on tiny
// fixtures in each dataset's published layout (tests/tools/fixtures/datasets/
// <name>/: same file names, compression, delimiters, headers and, for OGB,
// torch .pt split files), and checks what `ember inspect --json` reports of
// the imported graph: nodes, edges per split and relations. Also checks that
// a checksum mismatch is refused, that the first use records a checksum, and
// that a missing dataset is named.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"

namespace ember {
namespace {

using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunProcess;
using ::ember::testing::RunShell;
using ::ember::testing::TempDir;

const std::string kSource = EMBER_SOURCE_DIR;
const std::string kScript = kSource + "/tools/datasets/prepare.sh";
const std::string kFixtures = kSource + "/tests/tools/fixtures/datasets";

struct RecipeRun {
  int exit_code = -1;
  std::string out;  // stdout: the summary and the printed commands
  std::string err;  // stderr: the steps and any error
};

// Runs prepare.sh --offline NAME DIR with this build's binary. `env` is
// prepended to the command line (e.g. "EMBER_DATASETS_SUMS=/x ").
RecipeRun Prepare(const std::string& name, const std::string& dir, const TempDir& tmp,
                  const std::string& env = "") {
  const std::string out = tmp.Sub("prepare.out"), err = tmp.Sub("prepare.err");
  const std::string cmd = env + "EMBER='" + std::string(EMBER_BINARY) + "' bash '" + kScript +
                          "' --offline " + name + " '" + dir + "' --threads 2 --quiet >'" +
                          out + "' 2>'" + err + "'";
  RecipeRun run;
  run.exit_code = RunShell(cmd);
  run.out = ReadWholeFile(out);
  run.err = ReadWholeFile(err);
  return run;
}

// Copies the fixture of `name` into a fresh DIR under `tmp` (the recipe
// writes into DIR).
std::string CopyFixture(const std::string& name, const TempDir& tmp) {
  const std::string dir = tmp.Sub(name);
  std::filesystem::copy(kFixtures + "/" + name, dir, std::filesystem::copy_options::recursive);
  return dir;
}

nlohmann::json Inspect(const std::string& graph, const TempDir& tmp) {
  std::filesystem::create_directories(tmp.Sub("inspect"));
  auto r = RunProcess({EMBER_BINARY, "inspect", graph, "--json"}, tmp.Sub("inspect"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

struct Expected {
  std::string name;
  uint64_t nodes;
  uint64_t edges;  // all splits
  // The published split; all -1 for datasets split by --split (random).
  int64_t train, valid, test;
  size_t relations;
  std::string train_flags;  // expected in the printed train command
  std::string reference;    // expected in the printed comparison
};

std::ostream& operator<<(std::ostream& os, const Expected& e) { return os << e.name; }

class DatasetRecipeTest : public ::testing::TestWithParam<Expected> {};

TEST_P(DatasetRecipeTest, ImportsFixtureOfferingTrainCommandAndReference) {
  const Expected& e = GetParam();
  TempDir tmp;
  const std::string dir = CopyFixture(e.name, tmp);
  const RecipeRun run = Prepare(e.name, dir, tmp);
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;

  const nlohmann::json j = Inspect(dir + "/graph", tmp);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["nodes"], e.nodes);
  EXPECT_EQ(j["edges"]["total"], e.edges);
  const uint64_t train = j["edges"]["train"], valid = j["edges"]["valid"],
                 test = j["edges"]["test"];
  EXPECT_EQ(train + valid + test, e.edges);
  if (e.train >= 0) {  // published splits are kept whole
    EXPECT_EQ(train, static_cast<uint64_t>(e.train));
    EXPECT_EQ(valid, static_cast<uint64_t>(e.valid));
    EXPECT_EQ(test, static_cast<uint64_t>(e.test));
  }
  EXPECT_EQ(j["relations"].size(), e.relations) << j["relations"];

  EXPECT_NE(run.out.find("train: ember train " + dir + "/graph " + e.train_flags),
            std::string::npos)
      << run.out;
  const size_t eval_line = run.out.find("eval:  ember eval " + dir + "/graph --split test");
  ASSERT_NE(eval_line, std::string::npos) << run.out;
  // Evaluation under the budget the graph was imported for.
  EXPECT_NE(run.out.substr(eval_line, run.out.find('\n', eval_line) - eval_line)
                .find(" --memory-budget "),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(e.reference), std::string::npos) << run.out;
}

INSTANTIATE_TEST_SUITE_P(
    Recipes, DatasetRecipeTest,
    ::testing::Values(
        // h<TAB>r<TAB>t names; 8 relations.
        Expected{"fb15k-237", 12, 19, 12, 3, 4, 8,
                 "--operator complex_diagonal --comparator dot --loss softmax --dim 400",
                 "Dettmers et al., AAAI 2018"},
        // One test entity (13386614) is in no train triple: it stays in test.
        Expected{"wn18rr", 11, 17, 12, 2, 3, 8, "--operator complex_diagonal",
                 "Ruffinelli et al., ICLR 2020"},
        // raw/edge.csv.gz + edge_reltype.csv.gz, valid/test from zip-layout .pt.
        Expected{"ogbl-wikikg2", 10, 19, 12, 3, 4, 3,
                 "--operator complex_diagonal --comparator dot --loss softmax --dim 500",
                 "OGB leaderboard"},
        // raw/edge.csv.gz as train, valid/test from legacy-layout .pt.
        Expected{"ogbl-citation2", 12, 18, 13, 2, 3, 1, "--operator none --comparator dot",
                 "OGB leaderboard"},
        // SNAP: 4 '#' lines, tabs, gzip; random 90/5/5 split.
        Expected{"livejournal", 11, 16, -1, -1, -1, 1,
                 "--operator none --comparator dot --loss softmax --dim 100 --lr 0.1 --epochs 25",
                 "Marius (OSDI 2021) Table 3, test MRR 0.749"},
        // Space-separated, no header, gzip; random 90/5/5 split.
        Expected{"twitter-2010", 10, 14, -1, -1, -1, 1,
                 "--operator none --comparator dot --loss softmax --dim 100 --lr 0.1 --epochs 10",
                 "Marius (OSDI 2021) Table 4, test MRR 0.383"},
        // DGL-KE's Freebase: integer h<TAB>t<TAB>r, relation last.
        Expected{"freebase86m", 11, 18, 13, 2, 3, 4,
                 "--operator complex_diagonal --comparator dot --loss softmax --dim 100",
                 "Marius (OSDI 2021) Table 5"}),
    [](const ::testing::TestParamInfo<Expected>& info) {
      std::string n;
      for (char c : info.param.name) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

TEST(DatasetChecksumTest, MismatchIsRefusedWithClearMessage) {
  TempDir tmp;
  const std::string dir = CopyFixture("livejournal", tmp);
  const std::string wrong(64, '0');
  ASSERT_EQ(RunShell("printf '%s  soc-LiveJournal1.txt.gz\\n' " + wrong + " > '" + dir +
                     "/SHA256SUMS'"),
            0);
  const RecipeRun run = Prepare("livejournal", dir, tmp);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("checksum mismatch for " + dir + "/soc-LiveJournal1.txt.gz"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find(dir + "/SHA256SUMS records " + wrong), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("delete it and run again"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/graph")) << "nothing is imported";
}

TEST(DatasetChecksumTest, PinnedSumIsCheckedFirst) {
  TempDir tmp;
  const std::string dir = CopyFixture("twitter-2010", tmp);
  const std::string pinned = tmp.Sub("pinned.sha256");
  const std::string wrong(64, 'a');
  ASSERT_EQ(RunShell("printf '# pinned\\n%s  twitter-2010.txt.gz\\n' " + wrong + " > '" +
                     pinned + "'"),
            0);
  const RecipeRun run = Prepare("twitter-2010", dir, tmp, "EMBER_DATASETS_SUMS='" + pinned + "' ");
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("but " + pinned + " records " + wrong), std::string::npos) << run.err;
}

TEST(DatasetChecksumTest, FirstUseRecordsAndLaterRunsVerify) {
  TempDir tmp;
  const std::string dir = CopyFixture("livejournal", tmp);
  const RecipeRun first = Prepare("livejournal", dir, tmp);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("no published checksum: recorded"), std::string::npos) << first.err;
  const std::string sums = ReadWholeFile(dir + "/SHA256SUMS");
  EXPECT_NE(sums.find("  soc-LiveJournal1.txt.gz\n"), std::string::npos) << sums;

  const RecipeRun again = Prepare("livejournal", dir, tmp);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("ok (matches " + dir + "/SHA256SUMS)"), std::string::npos)
      << again.err;

  // The file changes (a different gzip stream with the same edges): refused.
  ASSERT_EQ(RunShell("cd '" + dir + "' && gzip -dc soc-LiveJournal1.txt.gz | gzip -1 > x.gz && "
                     "mv x.gz soc-LiveJournal1.txt.gz"),
            0);
  const RecipeRun changed = Prepare("livejournal", dir, tmp);
  EXPECT_EQ(changed.exit_code, 1);
  EXPECT_NE(changed.err.find("checksum mismatch"), std::string::npos) << changed.err;
}

TEST(DatasetDownloadTest, PartialDownloadIsResumedFromMirror) {
  // A local file:// mirror stands in for the host; the first 100 bytes are
  // already there as a .part file from an interrupted download.
  TempDir tmp;
  const std::string mirror = CopyFixture("livejournal", tmp);
  const std::string dir = tmp.Sub("d");
  std::filesystem::create_directories(dir);
  ASSERT_EQ(RunShell("head -c 100 '" + mirror + "/soc-LiveJournal1.txt.gz' > '" + dir +
                     "/soc-LiveJournal1.txt.gz.part'"),
            0);
  const std::string out = tmp.Sub("dl.out"), err = tmp.Sub("dl.err");
  const int rc = RunShell("EMBER_DATASETS_MIRROR='file://" + mirror + "' EMBER='" +
                          std::string(EMBER_BINARY) + "' bash '" + kScript + "' livejournal '" +
                          dir + "' --quiet >'" + out + "' 2>'" + err + "'");
  ASSERT_EQ(rc, 0) << ReadWholeFile(err);
  EXPECT_NE(ReadWholeFile(err).find("Resuming transfer from byte position 100"),
            std::string::npos)
      << ReadWholeFile(err);
  EXPECT_EQ(ReadWholeFile(dir + "/soc-LiveJournal1.txt.gz"),
            ReadWholeFile(mirror + "/soc-LiveJournal1.txt.gz"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/soc-LiveJournal1.txt.gz.part"));
  EXPECT_EQ(Inspect(dir + "/graph", tmp)["edges"]["total"], 16);
}

TEST(DatasetRecipeErrorsTest, ArchiveIsExtractedAndChecked) {
  // Offline with only the downloaded zip (as data.dgl.ai serves it): the
  // recipe records its checksum, extracts it and imports.
  TempDir tmp;
  const std::string dir = tmp.Sub("fb");
  std::filesystem::create_directories(dir);
  ASSERT_EQ(RunShell("cd '" + kFixtures + "/fb15k-237' && python3 -m zipfile -c '" + dir +
                     "/FB15k-237.zip' FB15k-237"),
            0);
  const RecipeRun run = Prepare("fb15k-237", dir, tmp);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("== unzip FB15k-237.zip"), std::string::npos) << run.err;
  EXPECT_NE(ReadWholeFile(dir + "/SHA256SUMS").find("  FB15k-237.zip"), std::string::npos);
  const nlohmann::json j = Inspect(dir + "/graph", tmp);
  EXPECT_EQ(j["edges"]["total"], 19);
}

TEST(DatasetRecipeErrorsTest, MissingFilesAreNamed) {
  TempDir tmp;
  const std::string dir = tmp.Sub("empty");
  std::filesystem::create_directories(dir);
  const RecipeRun run = Prepare("fb15k-237", dir, tmp);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("has neither FB15k-237/train.txt nor FB15k-237.zip"), std::string::npos)
      << run.err;

  const RecipeRun unknown = Prepare("fb15k", dir, tmp);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("unknown dataset 'fb15k'"), std::string::npos) << unknown.err;
}

TEST(DatasetRecipeErrorsTest, UnreadableSplitFileIsNamed) {
  TempDir tmp;
  const std::string dir = CopyFixture("ogbl-citation2", tmp);
  const std::string valid = dir + "/citation-v2/split/time/valid.pt";
  ASSERT_EQ(RunShell("printf 'not a torch file' > '" + valid + "'"), 0);
  const RecipeRun run = Prepare("ogbl-citation2", dir, tmp);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find(valid + ": neither a zip archive nor a legacy torch file"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/graph"));
}

}  // namespace
}  // namespace ember
