// GraphOpenOptions::write_buffer_bytes: one memtable cap shared by every DB
// of a graph.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using ::ember::testing::BuildTestGraph;
using ::ember::testing::TempDir;
using ::ember::testing::TestGraphOptions;

constexpr uint32_t kPartitions = 6;
constexpr uint32_t kWidth = 256;        // 1 KiB rows: 4096 rows per 4 MiB chunk
constexpr uint64_t kRows = 6 * 1024;    // 6 MiB per table: two chunks
constexpr uint64_t kCap = 16ull << 20;

std::vector<float> Rows(uint64_t rows, uint32_t width, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(rows * width);
  for (float& x : v) x = u(rng);
  return v;
}

// Writes a 6 MiB embeddings table to every partition (36 MiB in all) and
// returns the most memtable bytes seen after a write; checks every table
// reads back equal.
uint64_t WriteAllPartitions(const std::string& dir, uint64_t write_buffer_bytes) {
  GraphOpenOptions o;
  o.read_only = false;
  o.write_buffer_bytes = write_buffer_bytes;
  auto g = Graph::Open(dir, o);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return 0;
  uint64_t peak = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    const std::vector<float> rows = Rows(kRows, kWidth, p + 1);
    absl::Status s = (*g)->WriteTable(Table::kEmbeddings, p, 1, rows.data(), kRows, kWidth);
    EXPECT_TRUE(s.ok()) << s;
    peak = std::max(peak, (*g)->MemTableBytes());
  }
  for (uint32_t p = 0; p < kPartitions; ++p) {
    std::vector<float> got(kRows * kWidth);
    absl::Status s = (*g)->ReadTable(Table::kEmbeddings, p, 1, got.data(), kRows, kWidth);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_TRUE(got == Rows(kRows, kWidth, p + 1)) << "partition " << p;
  }
  EXPECT_TRUE((*g)->SyncTables().ok());
  EXPECT_LT((*g)->MemTableBytes(), 1u << 20);  // empty memtables' arenas
  return peak;
}

TEST(WriteBufferTest, CapHoldsMemtablesNearItAcrossShards) {
  TempDir tmp;
  TestGraphOptions opts;
  opts.partition_sizes.assign(kPartitions, 2);
  const std::string capped = tmp.Sub("capped");
  const std::string uncapped = tmp.Sub("uncapped");
  BuildTestGraph(capped, opts);
  BuildTestGraph(uncapped, opts);

  const uint64_t peak_capped = WriteAllPartitions(capped, kCap);
  const uint64_t peak_default = WriteAllPartitions(uncapped, 0);
  // The cap plus one table write (6 MiB) of slack.
  EXPECT_LE(peak_capped, kCap + kRows * kWidth * sizeof(float) + (1 << 20))
      << "default: " << peak_default;
  // Without it every table stays in memory (64 MiB memtables, 256 MiB in all).
  EXPECT_GE(peak_default, kPartitions * kRows * kWidth * sizeof(float));

  // Both survive a reopen.
  auto g = Graph::Open(capped);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<float> got(kRows * kWidth);
  ASSERT_TRUE((*g)->ReadTable(Table::kEmbeddings, 3, 1, got.data(), kRows, kWidth).ok());
  EXPECT_TRUE(got == Rows(kRows, kWidth, 4));
}

TEST(WriteBufferTest, TinyCapIsRefused) {
  TempDir tmp;
  BuildTestGraph(tmp.Sub("g"));
  GraphOpenOptions o;
  o.read_only = false;
  o.write_buffer_bytes = 4096;
  auto g = Graph::Open(tmp.Sub("g"), o);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << g.status();
  EXPECT_NE(g.status().message().find("write_buffer_bytes"), std::string::npos);
  EXPECT_TRUE(GraphOpenOptions().Validate().ok());
}

}  // namespace
}  // namespace ember
