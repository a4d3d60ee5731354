// Table files staged beside a graph and taken into its shards
// (storage/table_files.h, Graph::IngestTableFile).
#include "storage/table_files.h"

#include <filesystem>
#include <vector>

#include "gtest/gtest.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using testing::BuildTestGraph;
using testing::TempDir;

std::vector<float> Rows(uint64_t n, uint32_t width, float base) {
  std::vector<float> rows(n * width);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = base + static_cast<float>(i);
  return rows;
}

TEST(TableFilesTest, AFileTakenInReadsAsWrittenAndSurvivesAReopen) {
  TempDir tmp;
  const std::string dir = tmp.Sub("g");
  BuildTestGraph(dir);
  // More rows than one 4 MiB chunk holds, so the file has several chunks.
  const uint64_t n = 20000;
  const uint32_t width = 64;
  const std::vector<float> rows = Rows(n, width, 0.5f);
  const std::string path = IncomingTableFile(dir, 3, Table::kEmbeddings, 1);
  ASSERT_TRUE(WriteTableFile(path, Table::kEmbeddings, 3, rows.data(), n, width).ok());
  ASSERT_TRUE(std::filesystem::exists(path));
  {
    auto g = Graph::Open(dir, {.read_only = false});
    ASSERT_TRUE(g.ok()) << g.status();
    const absl::Status s = (*g)->IngestTableFile(Table::kEmbeddings, 1, 3, path);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_FALSE(std::filesystem::exists(path));  // moved, not copied
    std::vector<float> back(n * width);
    ASSERT_TRUE((*g)->ReadTable(Table::kEmbeddings, 1, 3, back.data(), n, width).ok());
    EXPECT_EQ(back, rows);
    ASSERT_TRUE((*g)->RemoveIncomingTables().ok());
    EXPECT_FALSE(std::filesystem::exists(dir + "/incoming"));
    ASSERT_TRUE((*g)->Close().ok());
  }
  auto g = Graph::Open(dir);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<float> back(n * width);
  ASSERT_TRUE((*g)->ReadTable(Table::kEmbeddings, 1, 3, back.data(), n, width).ok());
  EXPECT_EQ(back, rows);
}

TEST(TableFilesTest, AFileReplacesAnEarlierWriteOfItsVersionAndNoOther) {
  TempDir tmp;
  const std::string dir = tmp.Sub("g");
  BuildTestGraph(dir);
  auto g = Graph::Open(dir, {.read_only = false});
  ASSERT_TRUE(g.ok()) << g.status();
  // Version 2 half written by a writer killed before: more rows, another
  // width. Version 1 is the committed one and must stay.
  const std::vector<float> old_rows = Rows(10, 4, 100);
  const std::vector<float> kept = Rows(5, 1, 7);
  ASSERT_TRUE((*g)->WriteTable(Table::kOptimizer, 0, 2, old_rows.data(), 10, 4).ok());
  ASSERT_TRUE((*g)->WriteTable(Table::kOptimizer, 0, 1, kept.data(), 5, 1).ok());
  const std::vector<float> rows = Rows(5, 1, -3);
  const std::string path = IncomingTableFile(dir, 2, Table::kOptimizer, 0);
  ASSERT_TRUE(WriteTableFile(path, Table::kOptimizer, 2, rows.data(), 5, 1).ok());
  ASSERT_TRUE((*g)->IngestTableFile(Table::kOptimizer, 0, 2, path).ok());
  std::vector<float> back(5);
  ASSERT_TRUE((*g)->ReadTable(Table::kOptimizer, 0, 2, back.data(), 5, 1).ok());
  EXPECT_EQ(back, rows);
  EXPECT_EQ(*(*g)->TableRows(Table::kOptimizer, 0, 2), 5u);
  ASSERT_TRUE((*g)->ReadTable(Table::kOptimizer, 0, 1, back.data(), 5, 1).ok());
  EXPECT_EQ(back, kept);
}

TEST(TableFilesTest, AFileOfAnotherVersionIsRefusedAndLeavesTheShard) {
  TempDir tmp;
  const std::string dir = tmp.Sub("g");
  BuildTestGraph(dir);
  auto g = Graph::Open(dir, {.read_only = false});
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<float> rows = Rows(3, 2, 1);
  ASSERT_TRUE((*g)->WriteTable(Table::kEmbeddings, 2, 4, rows.data(), 3, 2).ok());
  const std::string path = IncomingTableFile(dir, 5, Table::kEmbeddings, 2);
  ASSERT_TRUE(WriteTableFile(path, Table::kEmbeddings, 5, rows.data(), 3, 2).ok());
  const absl::Status s = (*g)->IngestTableFile(Table::kEmbeddings, 2, 4, path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
  std::vector<float> back(6);
  ASSERT_TRUE((*g)->ReadTable(Table::kEmbeddings, 2, 4, back.data(), 3, 2).ok());
  EXPECT_EQ(back, rows);
  EXPECT_EQ((*g)->ReadTable(Table::kEmbeddings, 2, 5, back.data(), 3, 2).code(),
            absl::StatusCode::kNotFound);
}

TEST(TableFilesTest, ReadOnlyGraphsMayNotTakeFilesIn) {
  TempDir tmp;
  const std::string dir = tmp.Sub("g");
  BuildTestGraph(dir);
  const std::vector<float> rows = Rows(2, 2, 0);
  const std::string path = IncomingTableFile(dir, 1, Table::kEmbeddings, 0);
  ASSERT_TRUE(WriteTableFile(path, Table::kEmbeddings, 1, rows.data(), 2, 2).ok());
  EXPECT_EQ(WriteTableFile(path, Table::kEmbeddings, 1, rows.data(), 2, 0).code(),
            absl::StatusCode::kInvalidArgument);
  auto g = Graph::Open(dir);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_FALSE((*g)->IngestTableFile(Table::kEmbeddings, 0, 1, path).ok());
  EXPECT_FALSE((*g)->RemoveIncomingTables().ok());
  EXPECT_TRUE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace ember
