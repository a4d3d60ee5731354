// `ember --help` and `ember <command> --help`: each command lists the flags
// it reads (its own and the shared ones), with defaults, and nothing else.
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/partition/test_util.h"
#include "tests/storage/test_graph.h"
#include "tools/cli/cli.h"
#include "tools/cli/command_help.h"

namespace ember {
namespace {

using ::ember::import_test::ProcessResult;
using ::ember::import_test::RunProcess;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kEmber = EMBER_BINARY;

TEST(CommandHelpTest, TrainListsItsFlagsAndTheSharedOnesItReads) {
  const std::string help = tools::CommandHelpText("train");
  EXPECT_THAT(help, HasSubstr("usage: ember train GRAPH"));
  EXPECT_THAT(help, HasSubstr("  --epochs=10\n      total epochs"));
  EXPECT_THAT(help, HasSubstr("  --lr=auto\n"));
  EXPECT_THAT(help, HasSubstr("  --devices=\"\"\n"));
  EXPECT_THAT(help, HasSubstr("  --batch-size=1000\n"));
  // Defined by import, read by train.
  EXPECT_THAT(help, HasSubstr("  --memory-budget=2G\n      memory the run may use"));
  EXPECT_THAT(help, HasSubstr("  --dim=100\n"));
  EXPECT_THAT(help, HasSubstr("  --threads=0\n"));
  EXPECT_THAT(help, HasSubstr("  --progress-interval=10\n"));
  // Import-only and other commands' flags.
  EXPECT_THAT(help, Not(HasSubstr("--delimiter")));
  EXPECT_THAT(help, Not(HasSubstr("--partitioner")));
  EXPECT_THAT(help, Not(HasSubstr("--negatives")));
  EXPECT_THAT(help, Not(HasSubstr("--scale")));
  // The command prefix of the help strings is not repeated.
  EXPECT_THAT(help, Not(HasSubstr("train: total epochs")));
}

TEST(CommandHelpTest, ImportListsImportFlagsOnly) {
  const std::string help = tools::CommandHelpText("import");
  EXPECT_THAT(help, HasSubstr("  --delimiter=auto\n"));
  EXPECT_THAT(help, HasSubstr("  --memory-budget=2G\n      peak memory target"));
  EXPECT_THAT(help, HasSubstr("  --partitions=1\n"));
  EXPECT_THAT(help, Not(HasSubstr("--epochs")));
  EXPECT_THAT(help, Not(HasSubstr("--devices")));
}

TEST(CommandHelpTest, EvalShowsSplitAsTheSplitToEvaluate) {
  const std::string help = tools::CommandHelpText("eval");
  EXPECT_THAT(help, HasSubstr("  --split=test\n      the split to evaluate"));
  EXPECT_THAT(help, HasSubstr("  --negatives="));
  EXPECT_THAT(help, Not(HasSubstr("--delimiter")));
}

TEST(CommandHelpTest, GenGroupsFlagsByKind) {
  const std::string help = tools::CommandHelpText("gen");
  EXPECT_THAT(help, HasSubstr("gen rmat flags:\n"));
  EXPECT_THAT(help, HasSubstr("gen sbm flags:\n"));
  EXPECT_THAT(help, HasSubstr("  --scale=16\n"));
  EXPECT_THAT(help, HasSubstr("  --labels-out=\"\"\n"));
  EXPECT_THAT(help, Not(HasSubstr("--epochs")));
}

TEST(CommandHelpTest, EveryCommandHasHelpAndEveryFlagACommand) {
  for (const std::string& c : tools::CommandNames()) {
    EXPECT_THAT(tools::CommandHelpText(c), HasSubstr("usage: ember " + c)) << c;
  }
  EXPECT_EQ(tools::CommandHelpText("nope"), "");
  EXPECT_EQ(tools::FlagsShownByNoCommand(tools::CommandNames()), std::vector<std::string>{});
  // Without train, its own flags are orphans: the check can fail.
  EXPECT_THAT(tools::FlagsShownByNoCommand({"import"}), ::testing::Contains("epochs"));
}

TEST(CommandHelpCliTest, CommandHelpExitsZeroOnStdout) {
  TempDir tmp;
  for (const std::string& c : tools::CommandNames()) {
    ProcessResult r = RunProcess({kEmber, c, "--help"}, tmp.path());
    EXPECT_EQ(r.exit_code, 0) << c << ": " << r.err;
    EXPECT_EQ(r.out, tools::CommandHelpText(c)) << c;
  }
  // Help wins over other flags, even bad ones.
  ProcessResult r = RunProcess({kEmber, "train", "g", "--epochs", "x", "-h"}, tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--epochs=10"));
}

TEST(CommandHelpCliTest, FlagsACommandDoesNotReadAreRefusedNamingThem) {
  TempDir tmp;
  // eval reads neither: refused before it touches the (missing) graph.
  ProcessResult r = RunProcess(
      {kEmber, "eval", tmp.Sub("g"), "--batch-size", "5", "--chunk-size", "7"}, tmp.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("ember eval: --batch-size, --chunk-size are not flags of eval"));
  r = RunProcess({kEmber, "export", tmp.Sub("g"), "--out", tmp.Sub("e.tsv"), "--epochs=3"},
                 tmp.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--epochs is not a flag of export"));
  // Flags the command reads, its shared ones, and --quiet (taken by every
  // command) pass the check and reach the command, which then fails on the
  // missing graph instead; tune also takes train's flags.
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{kEmber, "eval", tmp.Sub("g"), "--negatives", "10", "--seed", "2",
                                 "--quiet"},
        std::vector<std::string>{kEmber, "tune", tmp.Sub("g"), "--grid", "lr=0.1",
                                 "--batch-size", "500"}}) {
    r = RunProcess(argv, tmp.path());
    EXPECT_NE(r.exit_code, 0) << argv[1];
    EXPECT_THAT(r.err, Not(HasSubstr("not a flag"))) << argv[1];
    EXPECT_THAT(r.err, Not(HasSubstr("not flags"))) << argv[1];
  }
  // gen reads the flags of the kind it runs, and --relations-out for kg;
  // another kind's flag is refused, naming the kind.
  r = RunProcess({kEmber, "gen", "kg", "--nodes", "200", "--out", tmp.Sub("k"), "--relations-out",
                  tmp.Sub("k.rel"), "--valid-fraction", "0", "--test-fraction", "0", "--quiet"},
                 tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunProcess({kEmber, "gen", "kg", "--nodes", "200", "--out", tmp.Sub("k2"), "--scale", "3"},
                 tmp.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--scale is not a flag of gen kg"));
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("k2")));
}

TEST(CommandHelpCliTest, UnknownFlagExitsTwoNamingTheCommandAndTheNearestFlags) {
  TempDir tmp;
  ProcessResult r = RunProcess({kEmber, "train", tmp.Sub("g"), "--epoch", "3"}, tmp.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("ember train: unknown flag --epoch (did you mean --epochs"));
  r = RunProcess({kEmber, "import", "--out", tmp.Sub("g"), "--delimeter=tab", "x.tsv"}, tmp.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("ember import: unknown flag --delimeter (did you mean --delimiter"));
  // Nothing near: no suggestion, still the command's name and exit 2.
  r = RunProcess({kEmber, "eval", tmp.Sub("g"), "--zzzzzzzzzz"}, tmp.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("ember eval: unknown flag --zzzzzzzzzz;"));
  // A value that starts with '-' is a value, and `-` alone is an input.
  r = RunProcess({kEmber, "import", "--out", tmp.Sub("g"), "--delimiter", "-", "-"}, tmp.path());
  EXPECT_THAT(r.err, Not(HasSubstr("unknown flag"))) << r.err;
}

TEST(CommandHelpCliTest, VersionNamesTheBuild) {
  TempDir tmp;
  ProcessResult r = RunProcess({kEmber, "--version"}, tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::ContainsRegex("^ember [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit "));
  EXPECT_THAT(r.out, HasSubstr("\nGEMM: "));
  EXPECT_THAT(r.out, HasSubstr("\nCUDA trainer: "));
  EXPECT_THAT(r.out, HasSubstr("\nMPI ranks: "));
  EXPECT_EQ(r.out, tools::VersionText());
}

// `ember CMD --version` is ember's version too, not Abseil's default line.
TEST(CommandHelpCliTest, CommandVersionIsEmbersVersion) {
  TempDir tmp;
  for (const char* command : {"train", "export", "gen"}) {
    ProcessResult r = RunProcess({kEmber, command, "--version"}, tmp.path());
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_EQ(r.out, tools::VersionText()) << command;
    EXPECT_THAT(r.out, Not(HasSubstr("NDEBUG"))) << command;
  }
}

// `ember --help` names every format of export and both protocols of eval.
TEST(CommandHelpCliTest, UsageNamesEveryExportFormatAndEvalProtocol) {
  TempDir tmp;
  ProcessResult r = RunProcess({kEmber, "--help"}, tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(tsv, npy, w2v, fvecs, h5)"));
  EXPECT_THAT(r.out, HasSubstr("--protocol recommend"));
}

TEST(CommandHelpCliTest, GenHelpForOneKindListsThatKindsFlags) {
  const std::string sbm = tools::CommandHelpText("gen", "sbm");
  EXPECT_THAT(sbm, HasSubstr("usage: ember gen sbm "));
  EXPECT_THAT(sbm, HasSubstr("  --mixing="));
  EXPECT_THAT(sbm, HasSubstr("  --nodes=0\n      number of nodes N (0: 1000).\n"));
  EXPECT_THAT(sbm, Not(HasSubstr("--scale")));
  EXPECT_THAT(sbm, Not(HasSubstr("--relations-out")));
  EXPECT_THAT(sbm, Not(HasSubstr("entities")));
  TempDir tmp;
  ProcessResult r = RunProcess({kEmber, "gen", "sbm", "--help"}, tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, sbm);
  // A flag of two commands shows each only its own part.
  EXPECT_THAT(tools::CommandHelpText("export"), Not(HasSubstr("gen kg")));
  EXPECT_THAT(tools::CommandHelpText("export"), HasSubstr("  --relations-out="));
}

TEST(CommandHelpCliTest, HelpfullShowsNoBuildPath) {
  TempDir tmp;
  ProcessResult r = RunProcess({kEmber, "train", "--helpfull"}, tmp.path());
  EXPECT_THAT(r.out + r.err, HasSubstr("tools/cli/cmd_train.cc"));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr(EMBER_SOURCE_DIR)));
}

TEST(CommandHelpCliTest, TopLevelHelpListsCommandsOneLineEach) {
  TempDir tmp;
  ProcessResult r = RunProcess({kEmber, "--help"}, tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& c : tools::CommandNames()) {
    EXPECT_THAT(r.out, ::testing::ContainsRegex("\n  " + c + " +[a-z][^\n]*\n")) << c;
  }
  EXPECT_THAT(r.out, HasSubstr("`ember <command> --help`"));
}

}  // namespace
}  // namespace ember
