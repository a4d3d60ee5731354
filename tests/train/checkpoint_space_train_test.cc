// `ember train` and the disk space of its next checkpoint: refused before
// training when it cannot fit, stopped after a checkpoint when the next one
// no longer fits, the last checkpoint whole either way.
#include <atomic>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/base/file_system.h"
#include "tests/train/train_test_util.h"
#include "train/train_loop.h"

namespace ember {
namespace {

using ::testing::HasSubstr;
using train_test::TempDir;

// The real file system, reporting `free` bytes free once `plenty_calls`
// queries have been answered with plenty.
class ShrinkingDisk : public FileSystemWrapper {
 public:
  ShrinkingDisk(int plenty_calls, uint64_t free)
      : FileSystemWrapper(DefaultFileSystem()), plenty_(plenty_calls), free_(free) {}
  absl::StatusOr<uint64_t> FreeBytes(const std::string&) override {
    return plenty_-- > 0 ? uint64_t{1} << 50 : free_;
  }

 private:
  std::atomic<int> plenty_;
  const uint64_t free_;
};

class CheckpointSpaceTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string edges = tmp_.Sub("sbm.tsv");
    tools::gen::SbmOptions sbm = train_test::StandardSbm();
    train_test::WriteSbmEdges(sbm, edges);
    graphs_ = std::make_unique<train_test::GraphFactory>(tmp_.path(), std::vector{edges});
  }
  static TrainOptions Options(int epochs) {
    TrainOptions o = train_test::SmallOptions(epochs);
    o.pipeline.deterministic = true;
    o.devices.threads = 1;
    return o;
  }
  TempDir tmp_;
  std::unique_ptr<train_test::GraphFactory> graphs_;
};

TEST_F(CheckpointSpaceTrainTest, TooLittleSpaceIsRefusedBeforeTraining) {
  const std::string dir = graphs_->New(2);
  absl::StatusOr<TrainSummary> s;
  {
    ShrinkingDisk disk(0, 1000);
    ScopedFileSystem scoped(&disk);
    s = TrainGraph(dir, Options(1));
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr("1000 bytes"));
  EXPECT_THAT(s.status().message(), HasSubstr(dir));
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->training.checkpoint_version, 0u);
  EXPECT_TRUE(train_test::MetricsLines(dir).empty());
}

// The disk fills after the first epoch's checkpoint: the run stops there
// with the checkpoint whole, and once space is back the same command
// resumes and ends where an uninterrupted run ends.
TEST_F(CheckpointSpaceTrainTest, ARunStopsAfterTheLastCheckpointThatFitsAndResumes) {
  const std::string whole = graphs_->New(2);
  ASSERT_TRUE(TrainGraph(whole, Options(3)).ok());

  const std::string dir = graphs_->New(2);
  absl::StatusOr<TrainSummary> s;
  {
    ShrinkingDisk disk(1, 1000);  // plenty before training, then full
    ScopedFileSystem scoped(&disk);
    s = TrainGraph(dir, Options(3));
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr("the last checkpoint (1) is whole"));
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 1);

  auto resumed = TrainGraph(dir, Options(3));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->resumed);
  auto a = train_test::LoadSnapshot(whole);
  auto b = train_test::LoadSnapshot(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  train_test::ExpectBitIdentical(*a, *b);
}

}  // namespace
}  // namespace ember
