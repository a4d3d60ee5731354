// TrainGraph on a failing disk: every kind of file a checkpoint writes
// (RocksDB's table files, WAL, MANIFEST-* and CURRENT, the relations blob,
// MANIFEST.json, metrics.jsonl) has a write and a sync failed with ENOSPC
// and with EIO, a write cut short, and a crash at its syncs that drops what
// was not synced (tests/storage/fault_injection_fs.h). Each time the run
// stops with an error naming the file and the cause, the graph opens at its
// last committed checkpoint (or, after a crash, the new one) whole, and the
// next run ends bit-identical to an uninterrupted one.
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/base/file_system.h"
#include "tests/storage/fault_injection_fs.h"
#include "tests/train/train_test_util.h"
#include "train/train_loop.h"

namespace ember {
namespace {

using ::ember::testing::FaultInjectingFileSystem;
using ::ember::testing::Fault;
using ::ember::testing::FsOp;
using ::ember::testing::FsOpName;
using ::ember::testing::FsOpRecord;
using ::ember::testing::RocksDbMayAbsorb;
using ::ember::testing::FileKind;
using ::ember::testing::DiskFullAndIoErrorFaults;
using ::ember::testing::SampleFaults;
using ::testing::HasSubstr;
using train_test::ExpectBitIdentical;
using train_test::LoadSnapshot;
using train_test::ManifestOf;
using train_test::ModelSnapshot;
using train_test::TempDir;

TrainOptions Options(int epochs) {
  TrainOptions o = train_test::SmallOptions(epochs);
  o.model.op = Operator::kTranslation;  // relation parameters in the blob
  o.pipeline.deterministic = true;
  o.devices.threads = 1;
  return o;
}

class TrainFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    tools::gen::SbmOptions sbm = train_test::StandardSbm();
    sbm.nodes = 600;
    sbm.blocks = 6;
    sbm.avg_degree = 10;
    const std::string edges = tmp_->Sub("sbm.tsv");
    train_test::WriteSbmEdges(sbm, edges);
    std::filesystem::create_directory(tmp_->Sub("graphs"));
    graphs_ = new train_test::GraphFactory(tmp_->Sub("graphs"), {edges});
  }
  static void TearDownTestSuite() {
    delete graphs_;
    delete tmp_;
  }

  void SetUp() override {
    // Everything goes through the injector (armed only around the runs
    // with a fault): it does no real fsyncs, which would cost this test
    // most of its time on a busy disk.
    scoped_ = std::make_unique<ScopedFileSystem>(&fs_);
    if (!one_dir_.empty()) return;
    // An uninterrupted two-epoch run, and a graph one epoch in (a committed
    // checkpoint) that every fault run starts from.
    const std::string ref = graphs_->New(2);
    ASSERT_TRUE(TrainGraph(ref, Options(2)).ok());
    auto two = LoadSnapshot(ref);
    ASSERT_TRUE(two.ok()) << two.status();
    two_ = *two;
    const std::string one_dir = graphs_->New(2);
    ASSERT_TRUE(TrainGraph(one_dir, Options(1)).ok());
    auto one = LoadSnapshot(one_dir);
    ASSERT_TRUE(one.ok()) << one.status();
    one_ = *one;
    one_dir_ = one_dir;
  }

  std::string CopyOfOne() {
    const std::string dir = tmp_->Sub(absl::StrCat("run", next_++));
    std::filesystem::copy(one_dir_, dir, std::filesystem::copy_options::recursive);
    return dir;
  }

  // The operations of epoch 2 and its checkpoint, as a fault-free run makes
  // them; *checkpoint_start: the index of the checkpoint's first (its
  // relations blob's). What comes before it, opening the graph's DBs, the
  // storage tests cover (tests/storage/fault_injection_test.cc).
  std::vector<FsOpRecord> DryRun(size_t* checkpoint_start) {
    const std::string dir = CopyOfOne();
    ScopedFileSystem scoped(&fs_);
    fs_.ClearLog();
    EXPECT_TRUE(TrainGraph(dir, Options(2)).ok());
    std::vector<FsOpRecord> log = fs_.log();
    *checkpoint_start = 0;
    while (*checkpoint_start < log.size() &&
           !absl::StrContains(log[*checkpoint_start].path, "relations-")) {
      ++*checkpoint_start;
    }
    EXPECT_LT(*checkpoint_start, log.size());
    return log;
  }

  // Epoch 2 of a copy of the one-epoch graph with `fault`; then the checks
  // the file's comment lists.
  void RunWithFault(Fault fault) {
    const std::string dir = CopyOfOne();
    absl::StatusOr<TrainSummary> run;
    {
      ScopedFileSystem scoped(&fs_);
      fs_.Inject(fault);
      run = TrainGraph(dir, Options(2));
    }
    const bool crash = fault.kind == Fault::Kind::kCrash;
    if (crash) fs_.DropUnsyncedData(dir);
    fs_.Reset();
    const std::optional<std::string> path = fs_.fired_path();
    SCOPED_TRACE(absl::StrCat(crash ? "crash at " : "failed ", FsOpName(fault.op), " #", fault.nth,
                              fault.kind == Fault::Kind::kShortWrite ? " (short)" : "", " of ",
                              path.value_or("nothing"), ": ", std::strerror(fault.err)));
    if (!path.has_value()) {
      ++not_fired_;  // RocksDB's background work varies a little run to run
      return;
    }
    ++fired_;
    kinds_hit_.insert(FileKind(*path));
    ASSERT_TRUE(!run.ok() || RocksDbMayAbsorb(*path)) << "the fault went unreported";
    // After a crash every change fails; the error may be a later one's.
    if (!crash && !run.ok()) {
      EXPECT_TRUE(fs_.NamesAFiredFile(run.status().message())) << run.status();
    }
    if (!run.ok()) {
      EXPECT_THAT(std::string(run.status().message()),
                  HasSubstr(std::strerror(crash ? EIO : fault.err)));
    }

    auto m = ManifestOf(dir);
    ASSERT_TRUE(m.ok()) << m.status();
    auto now = LoadSnapshot(dir);
    ASSERT_TRUE(now.ok()) << now.status();
    ASSERT_TRUE(train_test::EpochsDone(*m) == 1 || train_test::EpochsDone(*m) == 2)
        << train_test::EpochsDone(*m);
    ExpectBitIdentical(train_test::EpochsDone(*m) == 1 ? one_ : two_, *now);

    auto rerun = TrainGraph(dir, Options(2));
    ASSERT_TRUE(rerun.ok()) << rerun.status();
    auto end = LoadSnapshot(dir);
    ASSERT_TRUE(end.ok()) << end.status();
    ExpectBitIdentical(two_, *end);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  void RunAll(const std::vector<Fault>& faults) {
    for (const Fault& f : faults) {
      RunWithFault(f);
      if (HasFatalFailure()) return;
    }
    EXPECT_GE(fired_, static_cast<int>(faults.size() * 2 / 3)) << not_fired_ << " did not fire";
  }

  static TempDir* tmp_;
  static train_test::GraphFactory* graphs_;
  static ModelSnapshot one_, two_;
  static std::string one_dir_;
  static int next_;
  FaultInjectingFileSystem fs_;
  std::unique_ptr<ScopedFileSystem> scoped_;
  int fired_ = 0, not_fired_ = 0;
  std::set<std::string> kinds_hit_;
};

TempDir* TrainFaultTest::tmp_ = nullptr;
train_test::GraphFactory* TrainFaultTest::graphs_ = nullptr;
ModelSnapshot TrainFaultTest::one_, TrainFaultTest::two_;
std::string TrainFaultTest::one_dir_;
int TrainFaultTest::next_ = 0;

TEST_F(TrainFaultTest, FailedWritesAndSyncsLoseNothingCommitted) {
  size_t start = 0;
  const std::vector<FsOpRecord> log = DryRun(&start);
  const std::vector<Fault> faults = DiskFullAndIoErrorFaults(
      log, {FsOp::kWrite, FsOp::kSync}, start, /*first_and_last=*/false);
  RunAll(faults);
  for (const char* kind : {".sst", "MANIFEST-", "MANIFEST.json", "relations-", "metrics.jsonl"}) {
    EXPECT_TRUE(kinds_hit_.count(kind)) << "no fault hit a " << kind << " file";
  }
}

TEST_F(TrainFaultTest, CrashAtEachSyncKeepsAWholeCheckpoint) {
  size_t start = 0;
  const std::vector<FsOpRecord> log = DryRun(&start);
  RunAll(SampleFaults(log, FsOp::kSync, Fault::Kind::kCrash, EIO, start));
  for (const char* kind : {".sst", "MANIFEST-", "MANIFEST.json", "relations-"}) {
    EXPECT_TRUE(kinds_hit_.count(kind)) << "no crash at a sync of a " << kind << " file";
  }
}

}  // namespace
}  // namespace ember
