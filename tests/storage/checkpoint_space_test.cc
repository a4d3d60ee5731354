// NextCheckpointBytes and CheckFreeSpace: the estimate follows the table
// format and the committed blobs, and a file system with less free space
// than that is refused naming both numbers.
#include "storage/checkpoint_space.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/base/file_system.h"
#include "tests/storage/test_graph.h"

namespace ember::testing {
namespace {

using ::testing::HasSubstr;

// Reports a fixed number of free bytes.
class FreeBytesFileSystem : public FileSystemWrapper {
 public:
  explicit FreeBytesFileSystem(uint64_t free) : FileSystemWrapper(DefaultFileSystem()), free_(free) {}
  absl::StatusOr<uint64_t> FreeBytes(const std::string&) override { return free_; }

 private:
  uint64_t free_;
};

TEST(CheckpointSpaceTest, TableBytesFollowTheChunkFormat) {
  // One chunk of 1000 rows of 32 floats: the floats, a key and a header,
  // the shape record and its key, and 1/32 more.
  const uint64_t raw = 1000 * 32 * 4 + (12 + 8) + (12 + 16);
  EXPECT_EQ(TableVersionBytes(1000, 32), raw + raw / 32);
  // An empty table still has one chunk.
  EXPECT_GT(TableVersionBytes(0, 32), 0u);
  // 4 MiB chunks: 100k rows of 64 floats (25.6 MB) take 7 chunks.
  const uint64_t big = uint64_t{100000} * 64 * 4 + 7 * (12 + 8) + (12 + 16);
  EXPECT_EQ(TableVersionBytes(100000, 64), big + big / 32);
}

TEST(CheckpointSpaceTest, NextCheckpointCountsEveryPartitionAndTheCommittedBlobs) {
  TempDir tmp;
  TestGraphOptions o;
  o.partition_sizes = {40, 30};
  BuildTestGraph(tmp.Sub("g"), o);
  GraphOpenOptions rw;
  rw.read_only = false;
  auto g = Graph::Open(tmp.Sub("g"), rw);
  ASSERT_TRUE(g.ok()) << g.status();
  const uint64_t tables = TableVersionBytes(40, 16) + TableVersionBytes(40, 1) +
                          TableVersionBytes(30, 16) + TableVersionBytes(30, 1);
  EXPECT_EQ(NextCheckpointBytes(**g, 16, /*id_rows=*/true).value_or(0), tables);
  EXPECT_EQ(NextCheckpointBytes(**g, 16, /*id_rows=*/false).value_or(1), 0u);

  // Checkpoint 3 holds two blobs; blobs of other versions do not count.
  ASSERT_TRUE((*g)->WriteBlob("relations-3", std::string(1000, 'r')).ok());
  ASSERT_TRUE((*g)->WriteBlob("feature-table-3", std::string(500, 'f')).ok());
  ASSERT_TRUE((*g)->WriteBlob("relations-2", std::string(7000, 'o')).ok());
  Manifest m = (*g)->manifest();
  m.training.checkpoint_version = 3;
  ASSERT_TRUE((*g)->CommitManifest(m).ok());
  EXPECT_EQ(NextCheckpointBytes(**g, 16, true).value_or(0), tables + 1500);
}

TEST(CheckpointSpaceTest, TooLittleFreeSpaceIsResourceExhaustedNamingBoth) {
  TempDir tmp;
  {
    FreeBytesFileSystem fs(5 << 20);
    ScopedFileSystem scoped(&fs);
    EXPECT_TRUE(CheckFreeSpace(tmp.path(), 5 << 20).ok());
    const absl::Status s = CheckFreeSpace(tmp.path(), (5 << 20) + 1);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(std::string(s.message()), HasSubstr(tmp.path()));
    EXPECT_THAT(std::string(s.message()), HasSubstr(absl::StrCat((5 << 20) + 1, " bytes (6 MiB)")));
    EXPECT_THAT(std::string(s.message()), HasSubstr(absl::StrCat(5 << 20, " bytes (5 MiB) are free")));
  }
  // The real file system answers too.
  EXPECT_TRUE(CheckFreeSpace(tmp.path(), 1).ok());
  EXPECT_EQ(CheckFreeSpace(tmp.path(), ~uint64_t{0}).code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace ember::testing
