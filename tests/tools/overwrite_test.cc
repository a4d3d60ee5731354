// `--overwrite` replaces only what ember made (storage/base/output_record.h),
// through the CLI of every command that writes plain files: a user's file
// at the output path (or at one of its sidecars) is refused, named, and left
// as it was; ember's own earlier output is replaced.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
constexpr char kRefusal[] = "not made by ember, or changed since; remove it yourself";

class OverwriteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    std::string edges;
    for (int u = 0; u < 60; ++u) {
      for (int k = 1; k <= 3; ++k) {
        edges += "user" + std::to_string(u) + "\tlikes\titem" + std::to_string((u * k) % 20) + "\n";
      }
    }
    std::ofstream(dir_->Sub("likes.tsv")) << edges;
    ProcessResult r = Run({"import", "--out", dir_->Sub("g"), dir_->Sub("likes.tsv"), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = Run({"train", dir_->Sub("g"), "--epochs", "1", "--dim", "8", "--threads", "1", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static ProcessResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), kEmber);
    return RunProcess(args, dir_->path());
  }
  static std::string Graph() { return dir_->Sub("g"); }

  // Runs `args` (which end in --overwrite) three times: over the user's file
  // at `user_file` (refused, untouched), after removing it (written), and
  // again over that output (replaced).
  void ExpectOnlyEmbersFileReplaced(const std::vector<std::string>& args,
                                    const std::string& user_file) {
    std::ofstream(user_file) << "the user's own\n";
    ProcessResult r = Run(args);
    EXPECT_NE(r.exit_code, 0) << "replaced " << user_file;
    EXPECT_THAT(r.err, HasSubstr(user_file));
    EXPECT_THAT(r.err, HasSubstr(kRefusal));
    EXPECT_EQ(ReadWholeFile(user_file), "the user's own\n");
    std::filesystem::remove(user_file);
    r = Run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << "ember's own output not replaced: " << r.err;
  }

  static TempDir* dir_;
  TempDir tmp_;
};

TempDir* OverwriteTest::dir_ = nullptr;

TEST_F(OverwriteTest, ExportReplacesOnlyItsOwnFiles) {
  for (const char* format : {"npy", "tsv", "w2v", "fvecs"}) {
    SCOPED_TRACE(format);
    const std::string out = tmp_.Sub(std::string("mine.") + format);
    const std::vector<std::string> args = {"export", Graph(), "--format", format,
                                           "--out",  out,     "--quiet",  "--overwrite"};
    ExpectOnlyEmbersFileReplaced(args, out);
    ExpectOnlyEmbersFileReplaced(args, out + ".meta.json");
  }
  const std::string out = tmp_.Sub("emb.npy");
  ExpectOnlyEmbersFileReplaced(
      {"export", Graph(), "--format", "npy", "--out", out, "--quiet", "--overwrite"},
      out + ".names.tsv");
  ExpectOnlyEmbersFileReplaced({"export", Graph(), "--format", "tsv", "--out", tmp_.Sub("e.tsv"),
                                "--relations-out", tmp_.Sub("rels.tsv"), "--quiet", "--overwrite"},
                               tmp_.Sub("rels.tsv"));
}

// A file ember wrote and the user edited since is not ember's any more.
TEST_F(OverwriteTest, ExportRefusesItsOwnFileChangedSince) {
  const std::string out = tmp_.Sub("emb.tsv");
  const std::vector<std::string> args = {"export", Graph(), "--format", "tsv",
                                         "--out",  out,     "--quiet",  "--overwrite"};
  ASSERT_EQ(Run(args).exit_code, 0);
  std::ofstream(out, std::ios::app) << "a line of the user's\n";
  const ProcessResult r = Run(args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr(kRefusal));
  EXPECT_THAT(ReadWholeFile(out), HasSubstr("a line of the user's\n"));
}

TEST_F(OverwriteTest, RecommendReplacesOnlyItsOwnFile) {
  ExpectOnlyEmbersFileReplaced({"recommend", Graph(), "--relation", "likes", "--k", "2", "--out",
                                tmp_.Sub("mine.tsv"), "--quiet", "--overwrite"},
                               tmp_.Sub("mine.tsv"));
}

TEST_F(OverwriteTest, NeighborsIndexReplacesOnlyItsOwnFiles) {
  const std::string index = tmp_.Sub("index.faiss");
  const std::vector<std::string> args = {"neighbors", Graph(),      "--node",       "user1",
                                         "--k",       "2",          "--save-index", index,
                                         "--quiet",   "--overwrite"};
  ExpectOnlyEmbersFileReplaced(args, index);
  ExpectOnlyEmbersFileReplaced(args, index + ".names.tsv");
}

TEST_F(OverwriteTest, GenReplacesOnlyItsOwnFile) {
  ExpectOnlyEmbersFileReplaced({"gen", "rmat", "--scale", "6", "--edge-factor", "2", "--seed", "1",
                                "--out", tmp_.Sub("rmat.tsv"), "--quiet", "--overwrite"},
                               tmp_.Sub("rmat.tsv"));
}

}  // namespace
}  // namespace ember
