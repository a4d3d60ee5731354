// Faults injected through the file-system seam (storage/base/file_system.h):
// the injector itself, atomic files, and a storage-level checkpoint (tables
// in RocksDB, a blob, the manifest) failed at the first and last write and
// sync of each kind of file,
// cut short, or crashed at each sync with unsynced bytes dropped. Each
// failure is an error naming the file and the cause, and the graph opens at
// its last committed checkpoint, or at the new one, whole.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/base/atomic_file.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"
#include "storage/base/status_macros.h"
#include "storage/graph.h"
#include "tests/storage/fault_injection_fs.h"
#include "tests/storage/test_graph.h"

namespace ember::testing {
namespace {

using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  return internal::ReadFile(path).value_or("<unreadable>");
}

TEST(FaultInjectionFsTest, FailsTheNthWriteWithItsErrnoNamingTheFile) {
  TempDir tmp;
  FaultInjectingFileSystem fs;
  ScopedFileSystem scoped(&fs);
  const std::string path = tmp.Sub("f");
  fs.Inject({.op = FsOp::kWrite, .path_contains = "/f", .nth = 2, .err = ENOSPC});
  auto file = CurrentFileSystem()->OpenForWrite(path, WriteMode::kTruncate);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE((*file)->Append("one").ok());
  const absl::Status s = (*file)->Append("two");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path));
  EXPECT_THAT(std::string(s.message()), HasSubstr("No space left on device"));
  EXPECT_EQ(fs.fired_path().value_or(""), path);
  EXPECT_FALSE((*file)->Append("three").ok());  // a full disk stays full
  // EIO fails once.
  fs.Inject({.op = FsOp::kWrite, .err = EIO});
  EXPECT_EQ((*file)->Append("four").code(), absl::StatusCode::kUnknown);
  EXPECT_TRUE((*file)->Append("five").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Slurp(path), "onefive");
}

TEST(FaultInjectionFsTest, ShortWriteKeepsAPrefix) {
  TempDir tmp;
  FaultInjectingFileSystem fs;
  ScopedFileSystem scoped(&fs);
  fs.Inject({.op = FsOp::kWrite, .kind = Fault::Kind::kShortWrite, .err = ENOSPC});
  auto file = CurrentFileSystem()->OpenForWrite(tmp.Sub("f"), WriteMode::kTruncate);
  ASSERT_TRUE(file.ok());
  EXPECT_FALSE((*file)->Append("abcdef").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Slurp(tmp.Sub("f")), "abc");
}

TEST(FaultInjectionFsTest, CrashFailsLaterChangesAndDropsUnsyncedBytes) {
  TempDir tmp;
  FaultInjectingFileSystem fs;
  ScopedFileSystem scoped(&fs);
  const std::string path = tmp.Sub("f");
  auto file = CurrentFileSystem()->OpenForWrite(path, WriteMode::kTruncate);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("synced").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Append("+lost").ok());
  fs.Inject({.op = FsOp::kSync, .kind = Fault::Kind::kCrash});
  EXPECT_EQ((*file)->Sync().code(), absl::StatusCode::kUnknown);  // EIO
  EXPECT_TRUE(fs.crashed());
  EXPECT_FALSE((*file)->Append("more").ok());
  EXPECT_FALSE(CurrentFileSystem()->Rename(path, tmp.Sub("g")).ok());
  EXPECT_FALSE(CurrentFileSystem()->CreateDir(tmp.Sub("d")).ok());
  (*file)->Close().IgnoreError();
  EXPECT_EQ(Slurp(path), "synced+lost");
  fs.DropUnsyncedData();
  EXPECT_EQ(Slurp(path), "synced");
  fs.Reset();
  EXPECT_TRUE(CurrentFileSystem()->CreateDir(tmp.Sub("d")).ok());
}

TEST(FaultInjectionFsTest, FailedReadIsAnErrorNamingTheFile) {
  TempDir tmp;
  const std::string path = tmp.Sub("f");
  ASSERT_TRUE(internal::WriteFileAtomic(path, "contents").ok());
  FaultInjectingFileSystem fs;
  ScopedFileSystem scoped(&fs);
  fs.Inject({.op = FsOp::kRead, .nth = 2});  // the open, then the first read
  const absl::StatusOr<std::string> got = internal::ReadFile(path);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(absl::StrCat("cannot read ", path)));
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("Input/output error"));
}

std::string Describe(const Fault& f) {
  const char* kind = f.kind == Fault::Kind::kCrash        ? "crash at"
                     : f.kind == Fault::Kind::kShortWrite ? "short"
                                                          : "failed";
  return absl::StrCat(kind, " ", FsOpName(f.op), " #", f.nth, " (", std::strerror(f.err), ")");
}

// Every step of an atomic write fails in turn: an error naming the file and
// the cause, the old contents stay (or, when only the directory's fsync
// failed, the new ones are in place), and no temporary is left.
TEST(FaultInjectionTest, AtomicWriteFailuresKeepTheOldFile) {
  TempDir tmp;
  const std::string path = tmp.Sub("out");
  ASSERT_TRUE(internal::WriteFileAtomic(path, "old").ok());
  FaultInjectingFileSystem fs;
  std::vector<FsOpRecord> log;
  {
    ScopedFileSystem scoped(&fs);
    fs.ClearLog();
    ASSERT_TRUE(internal::WriteFileAtomic(path, "new contents").ok());
    log = fs.log();
  }
  ASSERT_TRUE(internal::WriteFileAtomic(path, "old").ok());
  std::vector<Fault> faults;
  int nth[6] = {};
  for (const FsOpRecord& r : log) {
    const int n = ++nth[static_cast<int>(r.op)];
    for (int err : {ENOSPC, EIO}) faults.push_back({.op = r.op, .nth = n, .err = err});
    if (r.op == FsOp::kWrite) {
      faults.push_back({.op = r.op, .nth = n, .kind = Fault::Kind::kShortWrite, .err = ENOSPC});
    }
  }
  ASSERT_GE(faults.size(), 10u);  // create, write, sync, rename, directory sync
  for (const Fault& fault : faults) {
    SCOPED_TRACE(Describe(fault));
    absl::Status s;
    {
      ScopedFileSystem scoped(&fs);
      fs.Inject(fault);
      s = internal::WriteFileAtomic(path, "new contents");
    }
    ASSERT_TRUE(fs.fired_path().has_value());
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.message()), HasSubstr(*fs.fired_path()));
    EXPECT_THAT(std::string(s.message()), HasSubstr(std::strerror(fault.err)));
    const std::string now = Slurp(path);
    EXPECT_TRUE(now == "old" || (now == "new contents" && *fs.fired_path() == tmp.path())) << now;
    EXPECT_EQ(internal::RemoveAtomicWriteLeftovers(tmp.path()), absl::OkStatus());
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
      names.push_back(e.path().filename().string());
    }
    EXPECT_THAT(names, ::testing::ElementsAre("out"));  // no temporary left
    ASSERT_TRUE(internal::WriteFileAtomic(path, "old").ok());
  }
}

// A storage-level checkpoint as the trainer makes one: tables of every
// partition under version v, a blob, SyncTables, the manifest naming v,
// then the old version deleted.
struct CheckpointFixture {
  static constexpr uint32_t kWidth = 8;

  static std::vector<float> Rows(uint64_t n, uint64_t version) {
    std::vector<float> rows(n * kWidth);
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(version * 1000 + i);
    return rows;
  }

  static absl::Status Checkpoint(const std::string& dir, uint64_t v) {
    GraphOpenOptions o;
    o.read_only = false;
    ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::Open(dir, o));
    Manifest m = g->manifest();
    for (uint32_t p = 0; p < m.num_partitions; ++p) {
      const std::vector<float> rows = Rows(m.partition_sizes[p], v);
      for (Table t : {Table::kEmbeddings, Table::kOptimizer}) {
        RETURN_IF_ERROR(g->WriteTable(t, p, v, rows.data(), m.partition_sizes[p], kWidth));
      }
    }
    RETURN_IF_ERROR(g->WriteBlob(absl::StrCat("relations-", v), absl::StrCat("relations of ", v)));
    RETURN_IF_ERROR(g->SyncTables());
    const uint64_t old = m.training.checkpoint_version;
    m.training.checkpoint_version = v;
    RETURN_IF_ERROR(g->CommitManifest(m));
    for (uint32_t p = 0; p < m.num_partitions; ++p) {
      for (Table t : {Table::kEmbeddings, Table::kOptimizer}) {
        RETURN_IF_ERROR(g->DeleteTableVersion(t, p, old));
      }
    }
    RETURN_IF_ERROR(g->DeleteBlob(absl::StrCat("relations-", old)));
    return g->Close();
  }

  // Opens `dir` read-only and checks that the committed version's tables
  // and blob are whole; the version.
  static absl::StatusOr<uint64_t> CommittedVersion(const std::string& dir) {
    ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::Open(dir));
    const Manifest& m = g->manifest();
    const uint64_t v = m.training.checkpoint_version;
    for (uint32_t p = 0; p < m.num_partitions; ++p) {
      std::vector<float> got(m.partition_sizes[p] * kWidth);
      for (Table t : {Table::kEmbeddings, Table::kOptimizer}) {
        RETURN_IF_ERROR(g->ReadTable(t, p, v, got.data(), m.partition_sizes[p], kWidth));
        if (got != Rows(m.partition_sizes[p], v)) {
          return absl::DataLossError(absl::StrCat("partition ", p, " of version ", v, " differs"));
        }
      }
    }
    ASSIGN_OR_RETURN(std::string blob, g->ReadBlob(absl::StrCat("relations-", v)));
    if (blob != absl::StrCat("relations of ", v)) return absl::DataLossError("blob differs");
    return v;
  }
};

class CheckpointFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Everything goes through the injector (armed only around the calls
    // with a fault): it does no real fsyncs, which would cost this test most
    // of its time on a busy disk.
    scoped_ = std::make_unique<ScopedFileSystem>(&fs_);
    base_ = tmp_.Sub("base");
    TestGraphOptions o;
    o.partition_sizes = {40, 30};
    BuildTestGraph(base_, o);
    ASSERT_TRUE(CheckpointFixture::Checkpoint(base_, 1).ok());
  }

  std::string Copy() {
    const std::string dir = tmp_.Sub(absl::StrCat("g", next_++));
    std::filesystem::copy(base_, dir, std::filesystem::copy_options::recursive);
    return dir;
  }

  // Runs checkpoint 2 of a fresh copy with `fault` injected; expects an
  // error naming the file and the cause and a graph at version 1 or 2,
  // whole (after dropping unsynced data, for a crash).
  void RunWithFault(const Fault& fault) {
    SCOPED_TRACE(Describe(fault));
    const std::string dir = Copy();
    absl::Status s;
    {
      ScopedFileSystem scoped(&fs_);
      fs_.Inject(fault);
      s = CheckpointFixture::Checkpoint(dir, 2);
    }
    if (fault.kind == Fault::Kind::kCrash) fs_.DropUnsyncedData(dir);
    fs_.Reset();
    if (!fs_.fired_path().has_value()) {
      ++not_fired_;  // RocksDB's background work varies a little run to run
      return;
    }
    ++fired_;
    if (s.ok() && RocksDbMayAbsorb(*fs_.fired_path())) {
      EXPECT_EQ(CheckpointFixture::CommittedVersion(dir).value_or(0), 2u);
      return;
    }
    ASSERT_FALSE(s.ok()) << "the fault at " << *fs_.fired_path() << " went unreported";
    // After a crash every change fails: the error may be a later one's.
    if (fault.kind != Fault::Kind::kCrash) {
      EXPECT_TRUE(fs_.NamesAFiredFile(s.message())) << s;
    }
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(std::strerror(fault.kind == Fault::Kind::kCrash ? EIO : fault.err)));
    const absl::StatusOr<uint64_t> v = CheckpointFixture::CommittedVersion(dir);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_TRUE(*v == 1 || *v == 2) << *v;
    // And the next checkpoint goes through (every fourth case: each takes a
    // checkpoint's fsyncs).
    if (fired_ % 4 == 1) {
      ASSERT_EQ(CheckpointFixture::Checkpoint(dir, 3), absl::OkStatus());
      EXPECT_EQ(CheckpointFixture::CommittedVersion(dir).value_or(0), 3u);
    }
  }

  std::vector<FsOpRecord> DryRun() {
    ScopedFileSystem scoped(&fs_);
    fs_.ClearLog();
    EXPECT_TRUE(CheckpointFixture::Checkpoint(Copy(), 2).ok());
    return fs_.log();
  }

  TempDir tmp_;
  std::string base_;
  int next_ = 0;
  FaultInjectingFileSystem fs_;
  std::unique_ptr<ScopedFileSystem> scoped_;
  int fired_ = 0;
  int not_fired_ = 0;
};

TEST_F(CheckpointFaultTest, EveryWriteAndSyncFailsCleanly) {
  const std::vector<FsOpRecord> log = DryRun();
  bool saw_sst = false, saw_manifest = false, saw_blob = false;
  for (const FsOpRecord& r : log) {
    saw_sst |= absl::EndsWith(r.path, ".sst");
    saw_manifest |= absl::StrContains(r.path, "MANIFEST.json");
    saw_blob |= absl::StrContains(r.path, "relations-2");
  }
  EXPECT_TRUE(saw_sst && saw_manifest && saw_blob) << "RocksDB's files and ember's go through it";
  const std::vector<Fault> faults = DiskFullAndIoErrorFaults(log, {FsOp::kWrite, FsOp::kSync});
  for (const Fault& f : faults) {
    RunWithFault(f);
    if (HasFatalFailure()) return;
  }
  EXPECT_GE(fired_, static_cast<int>(faults.size() * 2 / 3)) << not_fired_ << " did not fire";
}

TEST_F(CheckpointFaultTest, CrashAtEverySyncKeepsTheOldOrTheNewCheckpoint) {
  const std::vector<FsOpRecord> log = DryRun();
  const std::vector<Fault> faults = SampleFaults(log, FsOp::kSync, Fault::Kind::kCrash, EIO);
  ASSERT_GE(faults.size(), 5u);
  for (const Fault& f : faults) {
    RunWithFault(f);
    if (HasFatalFailure()) return;
  }
  EXPECT_GE(fired_, static_cast<int>(faults.size() * 2 / 3)) << not_fired_ << " did not fire";
}

// Reads that fail while opening a graph and reading its tables and blobs:
// an error naming the file, never a wrong result.
TEST_F(CheckpointFaultTest, FailedReadsAreErrorsNeverWrongResults) {
  std::vector<FsOpRecord> log;
  {
    ScopedFileSystem scoped(&fs_);
    fs_.ClearLog(/*record_reads=*/true);
    ASSERT_EQ(CheckpointFixture::CommittedVersion(base_).value_or(0), 1u);
    log = fs_.log();
  }
  int reads = 0;
  for (const FsOpRecord& r : log) reads += r.op == FsOp::kRead;
  ASSERT_GT(reads, 5);
  // Every read while few, else a spread of them.
  const int step = std::max(1, reads / 60);
  int errors = 0;
  for (int k = 1; k <= reads; k += step) {
    SCOPED_TRACE(absl::StrCat("read #", k));
    absl::StatusOr<uint64_t> v;
    {
      ScopedFileSystem scoped(&fs_);
      fs_.Inject({.op = FsOp::kRead, .nth = k});
      v = CheckpointFixture::CommittedVersion(base_);
    }
    if (!fs_.fired_path().has_value()) continue;
    if (v.ok()) {
      // A read the reader could do without (a retry, or a file RocksDB
      // reads again): the result must still be right.
      EXPECT_EQ(*v, 1u);
      continue;
    }
    ++errors;
    const std::string file = std::filesystem::path(*fs_.fired_path()).filename().string();
    EXPECT_THAT(std::string(v.status().message()), HasSubstr(file));
    EXPECT_THAT(std::string(v.status().message()), HasSubstr("Input/output error"));
  }
  fs_.Reset();
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace ember::testing
