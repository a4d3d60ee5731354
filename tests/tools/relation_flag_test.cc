// A --relation the graph lacks is refused naming the relations it has, so
// that a user of a two-column import learns its one relation is `default`.
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
using ::ember::testing::RunProcess;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;

TEST(RelationFlagTest, UnknownRelationListsTheGraphsRelations) {
  TempDir tmp;
  std::string edges;
  for (int u = 0; u < 40; ++u) {
    for (int k = 0; k < 5; ++k) {
      edges += "user" + std::to_string(u) + "\titem" + std::to_string((u + 3 * k) % 9) + "\n";
    }
  }
  std::ofstream(tmp.Sub("ratings.tsv")) << edges;
  auto ember = [&](std::vector<std::string> args) {
    args.insert(args.begin(), EMBER_BINARY);
    return RunProcess(args, tmp.path());
  };
  ProcessResult r = ember({"import", "--out", tmp.Sub("g"), "--schema", "user:item", "--split",
                           "0.8,0,0.2", "--seed", "1", tmp.Sub("ratings.tsv"), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = ember({"train", tmp.Sub("g"), "--epochs", "1", "--dim", "8", "--threads", "1", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = ember(
      {"recommend", tmp.Sub("g"), "--relation", "likes", "--out", tmp.Sub("r.tsv"), "--quiet"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("no relation 'likes' in the graph (its relations: default)"));
  r = ember({"eval", tmp.Sub("g"), "--protocol", "recommend", "--relation", "likes", "--quiet"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err,
              HasSubstr("no relation 'likes' in " + tmp.Sub("g") + " (its relations: default)"));
  // Named as it is listed, it is found.
  r = ember({"eval", tmp.Sub("g"), "--protocol", "recommend", "--relation", "default", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace ember
