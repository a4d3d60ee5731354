#include "storage/base/atomic_file.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/base/file_util.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"

namespace ember {
namespace {

using ::ember::testing::ReadWholeFile;
using ::ember::testing::TempDir;

void Spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(AtomicOutputFileTest, CommitMovesAllBytesIntoPlace) {
  TempDir tmp;
  const std::string path = tmp.Sub("out.txt");
  auto f = AtomicOutputFile::Create(path, /*overwrite=*/false);
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string big(3 << 20, 'x');  // larger than the write buffer
  ASSERT_TRUE((*f)->Append("head:").ok());
  ASSERT_TRUE((*f)->Append(big).ok());
  ASSERT_TRUE((*f)->Append(":tail").ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ((*f)->bytes(), big.size() + 10);
  ASSERT_TRUE((*f)->Commit().ok());
  EXPECT_EQ(ReadWholeFile(path), "head:" + big + ":tail");
  EXPECT_EQ(Files(tmp.path()), (std::vector<std::string>{".out.txt.ember-made", "out.txt"}));
  EXPECT_EQ((*f)->Commit().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(AtomicOutputFileTest, ExistingPathNeedsOverwrite) {
  TempDir tmp;
  const std::string path = tmp.Sub("out.txt");
  Spit(path, "old");
  auto refused = AtomicOutputFile::Create(path, /*overwrite=*/false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(refused.status().message().find(path), std::string::npos) << refused.status();

  auto f = AtomicOutputFile::Create(path, /*overwrite=*/true, OutputKind::kInternal);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->Append("new").ok());
  EXPECT_EQ(ReadWholeFile(path), "old");
  ASSERT_TRUE((*f)->Commit().ok());
  EXPECT_EQ(ReadWholeFile(path), "new");
}

// Writes `text` to `path` as a user's output and commits it.
void WriteOutput(const std::string& path, const std::string& text, bool overwrite) {
  auto f = AtomicOutputFile::Create(path, overwrite);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->Append(text).ok());
  ASSERT_TRUE((*f)->Commit().ok());
}

TEST(AtomicOutputFileTest, OverwriteRefusesAFileEmberDidNotMake) {
  TempDir tmp;
  const std::string path = tmp.Sub("mine.npy");
  Spit(path, "the user's own");
  auto f = AtomicOutputFile::Create(path, /*overwrite=*/true);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(f.status().message().find(path), std::string::npos) << f.status();
  EXPECT_NE(f.status().message().find("not made by ember, or changed since; remove it yourself"),
            std::string::npos)
      << f.status();
  EXPECT_EQ(ReadWholeFile(path), "the user's own");
  EXPECT_EQ(Files(tmp.path()), std::vector<std::string>{"mine.npy"});
}

TEST(AtomicOutputFileTest, OverwriteReplacesWhatEmberMade) {
  TempDir tmp;
  const std::string path = tmp.Sub("out.tsv");
  WriteOutput(path, std::string(3 << 20, 'a') + "first", /*overwrite=*/false);
  WriteOutput(path, "second", /*overwrite=*/true);
  EXPECT_EQ(ReadWholeFile(path), "second");
  WriteOutput(path, "third", /*overwrite=*/true);  // the record follows each write
  EXPECT_EQ(ReadWholeFile(path), "third");
}

TEST(AtomicOutputFileTest, OverwriteRefusesWhatEmberMadeButWasChangedSince) {
  TempDir tmp;
  const std::string path = tmp.Sub("out.tsv");
  WriteOutput(path, "ember's", /*overwrite=*/false);
  Spit(path, "edited!");  // same size, other bytes
  auto same_size = AtomicOutputFile::Create(path, /*overwrite=*/true);
  EXPECT_EQ(same_size.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(same_size.status().message().find("hash"), std::string::npos) << same_size.status();
  Spit(path, "edited, and longer");
  auto longer = AtomicOutputFile::Create(path, /*overwrite=*/true);
  EXPECT_EQ(longer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(longer.status().message().find("bytes"), std::string::npos) << longer.status();
  EXPECT_EQ(ReadWholeFile(path), "edited, and longer");
}

TEST(AtomicOutputFileTest, OverwriteNeverReplacesAFileThatAppearedAfterCreate) {
  TempDir tmp;
  const std::string path = tmp.Sub("out.tsv");
  auto f = AtomicOutputFile::Create(path, /*overwrite=*/true);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->Append("ember's").ok());
  Spit(path, "theirs");
  EXPECT_EQ((*f)->Commit().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ReadWholeFile(path), "theirs");
}

TEST(AtomicOutputFileTest, FileAppearingBeforeCommitIsNotReplaced) {
  TempDir tmp;
  const std::string path = tmp.Sub("out.txt");
  {
    auto f = AtomicOutputFile::Create(path, /*overwrite=*/false);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append("mine").ok());
    Spit(path, "theirs");
    EXPECT_EQ((*f)->Commit().code(), absl::StatusCode::kAlreadyExists);
  }
  EXPECT_EQ(ReadWholeFile(path), "theirs");
  EXPECT_EQ(Files(tmp.path()), std::vector<std::string>{"out.txt"});
}

TEST(AtomicOutputFileTest, AbandonedFileLeavesNothing) {
  TempDir tmp;
  {
    auto f = AtomicOutputFile::Create(tmp.Sub("out.txt"), false);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Append("half").ok());
    ASSERT_TRUE((*f)->Close().ok());
    EXPECT_EQ((*f)->Append("more").code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(Files(tmp.path()).size(), 1u);  // the temporary
    EXPECT_NE(Files(tmp.path())[0].find(internal::kAtomicWriteTempInfix), std::string::npos);
  }
  EXPECT_TRUE(Files(tmp.path()).empty());
}

TEST(AtomicOutputFileTest, MissingDirectoryNamesTheTemporary) {
  TempDir tmp;
  auto f = AtomicOutputFile::Create(tmp.Sub("no/such/dir/out.txt"), false);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find(tmp.Sub("no/such/dir/out.txt.tmp-")), std::string::npos)
      << f.status();
}

TEST(AtomicOutputFileTest, DirectoryIsNotAFile) {
  TempDir tmp;
  auto f = AtomicOutputFile::Create(tmp.path(), true);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ErrnoStatusTest, CodeFollowsErrnoAndMessageNamesThePath) {
  const absl::Status s = internal::ErrnoStatus(ENOSPC, "cannot write", "/x/y");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("cannot write /x/y: "), std::string::npos) << s;
  EXPECT_EQ(internal::ErrnoStatus(ENOENT, "open", "p").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(internal::ErrnoStatus(EACCES, "open", "p").code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace ember
