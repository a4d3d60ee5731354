// `ember import --partitions auto` through the binary: P from the distinct
// node count, the record in `inspect --json` and the text output, and the
// flag errors.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "partition/train_memory.h"
#include "tests/partition/test_util.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using ::ember::import_test::ProcessResult;
using ::ember::import_test::RunProcess;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;

const std::string kEmber = EMBER_BINARY;

class ImportAutoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessResult r = Ember({"gen", "rmat", "--scale", "12", "--edge-factor", "4", "--seed",
                             "3", "--out", tmp_.Sub("rmat.tsv"), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  ProcessResult Ember(std::vector<std::string> args) {
    args.insert(args.begin(), kEmber);
    return RunProcess(args, tmp_.path());
  }

  TempDir tmp_;
};

TEST_F(ImportAutoTest, ChoosesPFromNodesAndRecordsIt) {
  // 64M is the smallest budget import takes; at --dim 16384 a node's row is
  // 64 KiB, so a few thousand nodes do not fit one partition.
  const std::string graph = tmp_.Sub("g");
  ProcessResult r = Ember({"import", "--out", graph, "--partitions", "auto", "--dim", "16384",
                           "--memory-budget", "64M", "--json", "--quiet", tmp_.Sub("rmat.tsv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  const uint64_t nodes = summary.at("nodes").get<uint64_t>();
  const uint32_t p = summary.at("partitions").get<uint32_t>();
  EXPECT_EQ(p, AutoPartitions(nodes, 16384, 64ull << 20));
  EXPECT_GT(p, 1u);
  EXPECT_EQ(summary.at("partitions_auto").at("dim"), 16384);
  EXPECT_EQ(summary.at("partitions_auto").at("memory_budget"), 64ull << 20);

  r = Ember({"inspect", graph, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("partitions"), p);
  EXPECT_EQ(j.at("nodes"), nodes);
  EXPECT_EQ(j.at("partitions_auto"),
            nlohmann::json({{"dim", 16384}, {"memory_budget", 64ull << 20}}));

  r = Ember({"inspect", graph});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("partitions     " + std::to_string(p) +
                               " (auto: --dim 16384, --memory-budget 64M;"));

  // The same graph at the default --dim fits one partition.
  r = Ember({"import", "--out", tmp_.Sub("g1"), "--partitions", "auto", "--quiet",
             tmp_.Sub("rmat.tsv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 partitions (auto: --dim 100, --memory-budget 2G)"));

  // --append keeps the graph's P and its record.
  r = Ember({"import", "--append", graph, "--partitions", "auto", "--quiet",
             tmp_.Sub("rmat.tsv")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--partitions does not apply to --append"));
  r = Ember({"import", "--append", graph, "--quiet", tmp_.Sub("rmat.tsv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Ember({"inspect", graph, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("partitions"), p);
  EXPECT_EQ(nlohmann::json::parse(r.out).at("partitions_auto").at("dim"), 16384);
}

TEST_F(ImportAutoTest, ExplicitPartitionsHaveNoRecord) {
  const std::string graph = tmp_.Sub("g");
  ProcessResult r = Ember({"import", "--out", graph, "--partitions", "3", "--json", "--quiet",
                           tmp_.Sub("rmat.tsv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out).at("partitions_auto").is_null());
  r = Ember({"inspect", graph, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("partitions"), 3);
  EXPECT_TRUE(j.at("partitions_auto").is_null());
}

TEST_F(ImportAutoTest, BadPartitionsValueNamesTheFlag) {
  for (const char* bad : {"many", "0", "-2", "4097", "Auto", ""}) {
    ProcessResult r = Ember({"import", "--out", tmp_.Sub("g"), "--partitions", bad, "--quiet",
                             tmp_.Sub("rmat.tsv")});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_THAT(r.err, HasSubstr("partitions")) << bad;
    EXPECT_THAT(r.err, HasSubstr("or auto")) << bad << ": " << r.err;
  }
  ProcessResult r = Ember({"import", "--out", tmp_.Sub("g"), "--partitions", "auto", "--dim",
                           "0", "--quiet", tmp_.Sub("rmat.tsv")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--dim 0"));
}

}  // namespace
}  // namespace ember
