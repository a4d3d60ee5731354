// The ember binary as a new user meets it: the usual mistakes get a clear
// refusal and touch nothing (an --overwrite of a folder that is not a graph,
// a ratings file of four columns, --epochs 0), and the usual habits work
// (piping an edge list into `ember import -`, resuming with `ember train G`
// alone, a quiet happy path).
#include <filesystem>
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
using ::ember::testing::RunShell;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kEmber = EMBER_BINARY;

// 60 users and 30 items in 3 taste groups; user u likes items of group u % 3.
std::string LikesText() {
  std::string text;
  for (int u = 0; u < 60; ++u) {
    for (int k = 0; k < 6; ++k) {
      const int item = (u % 3) + 3 * ((u + 7 * k) % 10);
      text += "user" + std::to_string(u) + "\tlikes\titem" + std::to_string(item) + "\n";
    }
  }
  return text;
}

class CliInputTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = tmp_.Sub(name);
    std::ofstream(path) << text;
    return path;
  }
  ProcessResult Ember(std::vector<std::string> args, const std::string& stdin_path = "/dev/null") {
    args.insert(args.begin(), kEmber);
    return RunProcess(args, tmp_.path(), stdin_path);
  }
  // The rows of one deterministic epoch as tsv (names and values): equal
  // for two graphs only when their nodes, ids and edges are.
  std::string TrainedRows(const std::string& graph) {
    ProcessResult r = Ember({"train", graph, "--epochs", "1", "--dim", "8", "--lr", "0.1",
                             "--deterministic", "--threads", "1", "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string out = tmp_.Sub(std::filesystem::path(graph).filename().string() + ".tsv");
    r = Ember({"export", graph, "--format", "tsv", "--out", out, "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ReadWholeFile(out);
  }
  // `inspect --json` less what differs between two imports of the same
  // edges: the directory and the bytes on disk.
  nlohmann::json Inspected(const std::string& graph) {
    ProcessResult r = Ember({"inspect", graph, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      for (const char* key : {"dir", "bytes_on_disk", "bytes_on_disk_total"}) j.erase(key);
    }
    return j;
  }

  TempDir tmp_;
};

TEST_F(CliInputTest, OverwriteOfAFolderThatIsNotAGraphIsRefusedAndTouchesNothing) {
  const std::string likes = Write("likes.tsv", LikesText());
  const std::string dir = tmp_.Sub("mine");
  std::filesystem::create_directory(dir);
  std::ofstream(dir + "/notes.txt") << "keep me";
  ProcessResult r = Ember({"import", "--overwrite", "--out", dir, likes, "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("ember import: " + dir + " is not an ember graph"));
  EXPECT_THAT(r.err, HasSubstr("notes.txt"));
  EXPECT_EQ(ReadWholeFile(dir + "/notes.txt"), "keep me");
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(tmp_.path())) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_THAT(left, Not(::testing::Contains(::testing::HasSubstr("staging"))));

  // A graph ember made is replaced.
  const std::string graph = tmp_.Sub("g");
  ASSERT_EQ(Ember({"import", "--out", graph, likes, "--quiet"}).exit_code, 0);
  r = Ember({"import", "--overwrite", "--out", graph, likes, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliInputTest, FourColumnRatingsAreRefusedUntilColumnsSaysWhich) {
  const std::string ratings = Write(
      "ratings.tsv", "196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n");
  const std::string graph = tmp_.Sub("g");
  ProcessResult r = Ember({"import", "--out", graph, ratings, "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(ratings + ":1: 4 columns"));
  EXPECT_THAT(r.err, HasSubstr("--columns"));
  EXPECT_FALSE(std::filesystem::exists(graph));
  r = Ember({"import", "--out", graph, "--columns", "0,1", ratings, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"relations\":1"));
  EXPECT_THAT(r.out, HasSubstr("\"nodes\":6"));
}

// `user item rating timestamp` with the rating as the edge's weight: the
// graph says it is weighted, a bad rating names its file and line and
// leaves nothing behind, and a weight of 1 on every edge exports the same
// bytes as no weights after a deterministic epoch.
TEST_F(CliInputTest, RatingsImportAsWeightsAndWeightOneExportsTheSameBytes) {
  const std::string ratings = Write(
      "ratings.tsv", "196\t242\t3\t881250949\n186\t302\t4.5\t891717742\n22\t377\t1\t878887116\n");
  const std::string graph = tmp_.Sub("g");
  ProcessResult r = Ember(
      {"import", "--out", graph, "--columns", "0,1", "--weight-column", "2", ratings, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["weights"]["max"], 4.5) << r.out;
  nlohmann::json inspected = Inspected(graph);
  EXPECT_EQ(inspected["format_version"], 2) << inspected;
  EXPECT_EQ(inspected["edge_weights"]["min"], 1.0) << inspected;
  r = Ember({"inspect", graph});
  EXPECT_THAT(r.out, HasSubstr("edge weights   min 1, mean 2.83333, max 4.5"));

  const std::string bad = Write("bad.tsv", "1\t2\t3\t0\n2\t3\t-2\t0\n");
  r = Ember({"import", "--out", tmp_.Sub("bad"), "--columns", "0,1", "--weight-column", "2", bad,
             "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(bad + ":2: weight '-2' (column 2) is negative"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("bad")));

  std::string plain_text, weighted_text;
  for (int u = 0; u < 60; ++u) {
    for (int k = 0; k < 6; ++k) {
      const std::string edge =
          "user" + std::to_string(u) + "\titem" + std::to_string((u % 3) + 3 * ((u + 7 * k) % 10));
      plain_text += edge + "\n";
      weighted_text += edge + "\t1\n";
    }
  }
  const std::string plain = tmp_.Sub("plain"), weighted = tmp_.Sub("weighted");
  ASSERT_EQ(
      Ember({"import", "--out", plain, Write("plain-edges.tsv", plain_text), "--quiet"}).exit_code,
      0);
  r = Ember({"import", "--out", weighted, "--weight-column", "2",
             Write("weighted-edges.tsv", weighted_text), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rows = TrainedRows(plain);
  EXPECT_FALSE(rows.empty());
  EXPECT_TRUE(rows == TrainedRows(weighted)) << "exported embeddings differ";
}

TEST_F(CliInputTest, HeaderLineIsNamedWithAWarning) {
  const std::string file = Write("h.tsv", "src\tdst\na\tb\nb\tc\n");
  ProcessResult r = Ember({"import", "--out", tmp_.Sub("g"), file, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      r.err, HasSubstr("ember import: warning: " + file + ":1: 'src\\x09dst' looks like a header"));
  EXPECT_THAT(r.err, HasSubstr("--header"));
  r = Ember({"import", "--out", tmp_.Sub("g2"), file, "--header", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("looks like a header")));
}

// `-` and pipes in every form a shell makes them: the same graph as the file.
TEST_F(CliInputTest, StandardInputAndPipesImportLikeTheFile) {
  const std::string likes = Write("likes.tsv", LikesText());
  const std::string valid = Write("valid.tsv", "user1\tlikes\titem4\nuser2\tlikes\titem5\n");
  ASSERT_EQ(
      Ember({"import", "--out", tmp_.Sub("file"), "--valid", valid, likes, "--quiet"}).exit_code,
      0);
  const nlohmann::json from_file = Inspected(tmp_.Sub("file"));
  ASSERT_EQ(from_file["edges"]["valid"], 2) << from_file.dump();

  ProcessResult r =
      Ember({"import", "--out", tmp_.Sub("stdin"), "--valid", valid, "-", "--quiet"}, likes);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(RunShell("gzip -c '" + likes + "' > '" + likes + ".gz'"), 0);
  const std::string bin = "'" + kEmber + "'";
  const std::string quiet = " --quiet >/dev/null 2>'" + tmp_.Sub("sh.err") + "'";
  // A decompressor's output through a pipe, and gzip itself on stdin.
  EXPECT_EQ(RunShell("zcat '" + likes + ".gz' | " + bin + " import --out '" + tmp_.Sub("zcat") +
                     "' --valid '" + valid + "' -" + quiet),
            0)
      << ReadWholeFile(tmp_.Sub("sh.err"));
  EXPECT_EQ(RunShell(bin + " import --out '" + tmp_.Sub("gz") + "' --valid '" + valid + "' - < '" +
                     likes + ".gz'" + quiet),
            0)
      << ReadWholeFile(tmp_.Sub("sh.err"));
  // bash's process substitution: a /dev/fd/N pipe, for the valid split too.
  EXPECT_EQ(RunShell("bash -c \"" + bin + " import --out '" + tmp_.Sub("procsub") +
                     "' --valid <(cat '" + valid + "') <(cat '" + likes + "')" + quiet + "\""),
            0)
      << ReadWholeFile(tmp_.Sub("sh.err"));
  for (const char* name : {"stdin", "zcat", "gz", "procsub"}) {
    EXPECT_EQ(Inspected(tmp_.Sub(name)), from_file) << name;
  }
  const std::string rows = TrainedRows(tmp_.Sub("file"));
  EXPECT_FALSE(rows.empty());
  EXPECT_EQ(TrainedRows(tmp_.Sub("stdin")), rows);

  // Standard input is read once: naming it twice is refused up front.
  r = Ember({"import", "--out", tmp_.Sub("twice"), "--valid", "-", "-", "--quiet"}, likes);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("standard input"));
}

TEST_F(CliInputTest, EpochsZeroIsRefusedBeforeAnyWork) {
  const std::string graph = tmp_.Sub("g");
  ASSERT_EQ(Ember({"import", "--out", graph, "--split", "0.9,0.1", Write("l.tsv", LikesText()),
                   "--quiet"})
                .exit_code,
            0);
  const std::string manifest = ReadWholeFile(graph + "/MANIFEST.json");
  ProcessResult r = Ember({"train", graph, "--epochs", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--epochs 0"));
  EXPECT_THAT(r.err, Not(HasSubstr("lr auto")));
  EXPECT_EQ(ReadWholeFile(graph + "/MANIFEST.json"), manifest);
  EXPECT_FALSE(std::filesystem::exists(graph + "/metrics.jsonl"));
}

// `ember train G` alone resumes the model the checkpoint records, and says
// which options it took; a model flag set to something else is refused.
TEST_F(CliInputTest, TrainAloneResumesWithTheCheckpointsOptions) {
  const std::string graph = tmp_.Sub("g");
  ASSERT_EQ(Ember({"import", "--out", graph, Write("l.tsv", LikesText()), "--quiet"}).exit_code, 0);
  ProcessResult r = Ember({"train", graph, "--epochs", "1", "--dim", "16", "--operator",
                           "translation", "--loss", "logistic", "--lr", "0.1", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Ember({"train", graph, "--epochs", "2", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("resuming with the checkpoint's --dim 16 --operator translation "
                               "--loss logistic"));
  EXPECT_THAT(r.err, HasSubstr("resumed from checkpoint after 1 epochs"));
  EXPECT_THAT(r.out, HasSubstr("epoch 2:"));
  r = Ember({"train", graph, "--epochs", "3", "--dim", "32", "--threads", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--dim 16"));
  // The default value named on the command line is a choice too.
  r = Ember({"train", graph, "--epochs", "3", "--operator", "none", "--threads", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--operator translation"));
}

// Reciprocal relations are part of the model: `ember train G` alone resumes
// them (and the N3 regularizer with its weight), a run with the other
// value is refused, and --reg-weight without a regularizer is refused
// unless the checkpoint has one.
TEST_F(CliInputTest, TrainAloneResumesReciprocalRelationsAndN3) {
  const std::string graph = tmp_.Sub("g");
  ASSERT_EQ(Ember({"import", "--out", graph, Write("l.tsv", LikesText()), "--quiet"}).exit_code, 0);
  ProcessResult r = Ember({"train", graph, "--epochs", "1", "--dim", "8", "--reg-weight", "0.05",
                           "--lr", "0.1", "--threads", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--regularizer n3"));
  r = Ember({"train", graph, "--epochs", "1", "--dim", "8", "--reciprocal", "--lr", "0.1",
             "--threads", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("operator none"));
  r = Ember({"train", graph, "--epochs", "1", "--dim", "8", "--operator", "diagonal",
             "--reciprocal", "--regularizer", "n3", "--reg-weight", "0.05", "--lr", "0.1",
             "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Ember({"train", graph, "--epochs", "2", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("resuming with the checkpoint's --dim 8 --operator diagonal "
                               "--reciprocal --regularizer n3 --reg-weight 0.05"));
  EXPECT_THAT(r.out, HasSubstr("epoch 2:"));
  // Another weight is a choice of the objective, not of the model.
  r = Ember({"train", graph, "--epochs", "3", "--reg-weight", "0.1", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Ember({"train", graph, "--epochs", "4", "--reciprocal=false", "--threads", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--reciprocal=true"));
  r = Ember({"eval", graph, "--split", "train", "--max-edges", "50"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The happy path prints no GEMM line (--verbose does), and the JSON still
// names the backend.
TEST_F(CliInputTest, QuietByDefaultVerboseOnRequest) {
  const std::string graph = tmp_.Sub("g");
  ASSERT_EQ(Ember({"import", "--out", graph, "--split", "0.9,0.1", Write("l.tsv", LikesText()),
                   "--quiet"})
                .exit_code,
            0);
  ProcessResult r = Ember({"train", graph, "--epochs", "1", "--dim", "8", "--lr", "0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("GEMM:")));
  r = Ember({"eval", graph, "--split", "valid"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("GEMM:")));
  r = Ember({"eval", graph, "--split", "valid", "--verbose", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("GEMM: "));
  EXPECT_THAT(r.out, HasSubstr("\"gemm\""));
  EXPECT_THAT(ReadWholeFile(graph + "/metrics.jsonl"), HasSubstr("\"kernel\""));
}

}  // namespace
}  // namespace ember
