// `ember train --memory-budget` on a graph whose edges and rows exceed the
// budget: the process's peak RSS stays within the budget plus a fixed
// allowance for what the budget does not cover (the binary and its
// libraries, thread stacks, and RocksDB's flush and compaction buffers).
// Not run under the sanitizers, whose shadow memory inflates RSS.
#include <cstdio>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/train/train_test_util.h"

namespace ember {
namespace {

using train_test::TempDir;

// Measured on this project's machines: `ember train` of a 3-node graph
// peaks at 24 MiB; at budgets of 32-64 MiB on R-MAT scale 20, RocksDB's
// flushes and compactions of evicted partitions add up to about 70 MiB more,
// and how many of them overlap varies from run to run: this run's peak
// measured 146-160 MiB over 6 runs, and 161 MiB once under CI's load. The
// allowance leaves 8 MiB above that; holding the bucket's edges whole
// (201 MB) would still fail by far.
constexpr long kAllowanceKib = 104 * 1024;

TEST(BoundedMemoryTest, TrainStaysWithinItsBudget) {
  TempDir tmp;
  const std::string ember = EMBER_BINARY;
  const std::string text = tmp.Sub("rmat.tsv"), graph = tmp.Sub("g");
  // 16.8 M edges (201 MB as 12-byte edges) and 1 M nodes (68 MB of rows at
  // dim 16), against a 64 MiB budget: 3x the edges, 1x the rows.
  ASSERT_EQ(train_test::RunBinary({ember, "gen", "rmat", "--scale", "20", "--edge-factor", "16",
                                   "--seed", "3", "--out", text, "--quiet"},
                                  tmp.Sub("gen")),
            0);
  ASSERT_EQ(train_test::RunBinary({ember, "import", "--out", graph, "--integer-ids",
                                   "--partitions", "8", "--quiet", text},
                                  tmp.Sub("import")),
            0);
  std::remove(text.c_str());
  const long budget_kib = 64 * 1024;
  train_test::ChildProcess child({ember, "train", graph, "--dim", "16", "--epochs", "1",
                                  "--memory-budget", "64M", "--threads", "2", "--json"},
                                 tmp.Sub("train"));
  const train_test::ProcessResult r = child.Wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json epoch = nlohmann::json::parse(r.out);
  auto manifest = train_test::ManifestOf(graph);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(epoch["edges"].get<uint64_t>(), manifest->edges.train);
  EXPECT_GT(epoch["partition_loads"].get<uint64_t>(), 8u) << "not out of core";
  std::printf("[ RSS ] peak %ld KiB for a %ld KiB budget (allowance %ld KiB); %lu edges\n",
              r.max_rss_kib, budget_kib, kAllowanceKib,
              (unsigned long)manifest->edges.train);
  EXPECT_LE(r.max_rss_kib, budget_kib + kAllowanceKib);
}

}  // namespace
}  // namespace ember
