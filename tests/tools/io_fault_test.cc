// import, import --append and export on a failing disk
// (tests/storage/fault_injection_fs.h): each kind of file each writes has a
// write, a sync, a rename and a create failed in turn (ENOSPC, EIO, short
// writes). Each time the call fails with an error naming the file and the
// cause, and nothing is left half-done: no graph (and no staging directory)
// where an import would go, the graph as before a failed append, no output
// or temporary of a failed export.
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
#include "partition/importer.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"
#include "storage/base/status_macros.h"
#include "storage/graph.h"
#include "tests/storage/fault_injection_fs.h"
#include "tests/storage/test_graph.h"
#include "tools/export/exporter.h"
#include "tools/gen/sbm_generator.h"
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
using ::ember::testing::TempDir;
using ::testing::HasSubstr;

// Faults at the first write, sync, rename and create of each kind of file
// in `log`: ENOSPC and EIO, and short writes.
std::vector<Fault> Faults(const std::vector<FsOpRecord>& log) {
  return DiskFullAndIoErrorFaults(log, {FsOp::kWrite, FsOp::kSync, FsOp::kRename, FsOp::kCreate},
                                  0, /*first_and_last=*/false);
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A digest of what a graph holds as committed: its manifest and every edge
// of every bucket.
std::string Digest(const std::string& dir) {
  auto g = Graph::Open(dir);
  if (!g.ok()) return g.status().ToString();
  std::string d = internal::ReadFile(dir + "/MANIFEST.json").value_or("no manifest");
  const uint32_t p = (*g)->manifest().num_partitions;
  for (Split split : {Split::kTrain, Split::kValid, Split::kTest}) {
    for (uint32_t i = 0; i < p; ++i) {
      for (uint32_t j = 0; j < p; ++j) {
        const absl::Status s = (*g)->ForEachEdgeBlock(split, i, j, [&](std::span<const Edge> es) {
          for (const Edge& e : es) absl::StrAppend(&d, e.src, ",", e.rel, ",", e.dst, ";");
          return absl::OkStatus();
        });
        if (!s.ok()) return s.ToString();
      }
    }
  }
  return d;
}

class IoFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Everything goes through the injector (armed only around the calls
    // with a fault): it does no real fsyncs, which would cost this test most
    // of its time on a busy disk.
    scoped_ = std::make_unique<ScopedFileSystem>(&fs_);
    tools::gen::SbmOptions sbm;
    sbm.nodes = 300;
    sbm.blocks = 3;
    sbm.avg_degree = 8;
    sbm.seed = 3;
    ASSERT_TRUE(sbm.Validate().ok());
    std::string text;
    for (uint64_t c = 0; c < sbm.num_chunks(); ++c) tools::gen::AppendSbmChunkText(sbm, c, &text);
    edges_ = tmp_.Sub("edges.tsv");
    more_ = tmp_.Sub("more.tsv");
    const size_t cut = text.find('\n', text.size() / 2) + 1;
    ASSERT_TRUE(internal::WriteFileAtomic(edges_, text.substr(0, cut)).ok());
    ASSERT_TRUE(internal::WriteFileAtomic(more_, text.substr(cut)).ok());
    std::filesystem::create_directory(tmp_.Sub("out"));
  }

  ImportOptions Import(const std::string& out, bool append) const {
    ImportOptions o;
    o.out = out;
    o.files = {append ? more_ : edges_};
    o.num_partitions = append ? 1 : 2;
    o.append = append;
    o.split.fraction = {0.9, 0.05, 0.05};
    o.seed = 7;
    o.threads = 2;
    o.delimiter = '\t';
    return o;
  }

  // Runs `call` with each fault of a dry run's sample; `check` gets the
  // failed call's status after the fault fired.
  template <typename Call, typename Check>
  void ForEachFault(Call call, Check check) {
    std::vector<FsOpRecord> log;
    {
      ScopedFileSystem scoped(&fs_);
      fs_.ClearLog();
      const absl::Status s = call(-1);
      ASSERT_TRUE(s.ok()) << s;
      log = fs_.log();
    }
    const std::vector<Fault> faults = Faults(log);
    int fired = 0;
    for (size_t i = 0; i < faults.size(); ++i) {
      const Fault& f = faults[i];
      absl::Status s;
      {
        ScopedFileSystem scoped(&fs_);
        fs_.Inject(f);
        s = call(static_cast<int>(i));
      }
      fs_.Reset();
      const std::optional<std::string> path = fs_.fired_path();
      SCOPED_TRACE(absl::StrCat(f.kind == Fault::Kind::kShortWrite ? "short " : "failed ",
                                FsOpName(f.op), " #", f.nth, " of ", path.value_or("nothing"),
                                ": ", std::strerror(f.err)));
      if (!path.has_value()) continue;
      ++fired;
      if (s.ok() && RocksDbMayAbsorb(*path)) continue;
      ASSERT_FALSE(s.ok()) << "the fault went unreported";
      EXPECT_TRUE(fs_.NamesAFiredFile(s.message())) << s;
      EXPECT_THAT(std::string(s.message()), HasSubstr(std::strerror(f.err)));
      check(static_cast<int>(i));
      if (HasFatalFailure()) return;
    }
    EXPECT_GE(fired, static_cast<int>(faults.size() * 2 / 3));
  }

  TempDir tmp_;
  std::string edges_, more_;
  FaultInjectingFileSystem fs_;
  std::unique_ptr<ScopedFileSystem> scoped_;
};

TEST_F(IoFaultTest, FailedImportLeavesNothingWhereTheGraphWouldGo) {
  auto out = [&](int i) { return tmp_.Sub(absl::StrCat("out/g", i)); };
  ForEachFault([&](int i) { return ImportGraph(Import(out(i), false)).status(); },
               [&](int i) {
                 EXPECT_FALSE(std::filesystem::exists(out(i)));
                 for (const std::string& name : Entries(tmp_.Sub("out"))) {
                   EXPECT_FALSE(absl::StrContains(name, absl::StrCat("g", i, ".")))
                       << name << " left behind";
                 }
               });
}

// Every fault of the append's sample, MANIFEST-* syncs of the shards'
// RocksDBs included (a failed one during an ingestion leaves that DB
// unopenable; the append's undo copy puts it back: Graph::BeginAppend).
TEST_F(IoFaultTest, FailedAppendLeavesTheGraphAsBefore) {
  const std::string base = tmp_.Sub("base");
  ASSERT_TRUE(ImportGraph(Import(base, false)).ok());
  const std::string before = Digest(base);
  const std::string appended = tmp_.Sub("appended");
  std::filesystem::copy(base, appended, std::filesystem::copy_options::recursive);
  ASSERT_TRUE(ImportGraph(Import(appended, true)).ok());
  const std::string after = Digest(appended);
  ASSERT_NE(before, after);
  auto copy = [&](int i) {
    const std::string dir = tmp_.Sub(absl::StrCat("a", i));
    if (!std::filesystem::exists(dir)) {
      std::filesystem::copy(base, dir, std::filesystem::copy_options::recursive);
    }
    return dir;
  };
  ForEachFault([&](int i) { return ImportGraph(Import(copy(i), true)).status(); },
               [&](int i) {
                 EXPECT_EQ(Digest(copy(i)), before);
                 // And the append, run again, ends as an uninterrupted one.
                 const absl::Status again = ImportGraph(Import(copy(i), true)).status();
                 ASSERT_TRUE(again.ok()) << again;
                 EXPECT_EQ(Digest(copy(i)), after);
               });
}

// Fails each fsync of a shard's MANIFEST-* during an append in turn
// (ENOSPC): the graph is as before, and the append, run again, succeeds.
TEST_F(IoFaultTest, AppendSurvivesAFailedManifestSync) {
  const std::string base = tmp_.Sub("base");
  ASSERT_TRUE(ImportGraph(Import(base, false)).ok());
  const std::string before = Digest(base);
  std::vector<FsOpRecord> log;
  {
    const std::string dir = tmp_.Sub("dry");
    std::filesystem::copy(base, dir, std::filesystem::copy_options::recursive);
    fs_.ClearLog();
    ASSERT_TRUE(ImportGraph(Import(dir, true)).ok());
    log = fs_.log();
  }
  int nth = 0, failed = 0;
  for (const FsOpRecord& r : log) {
    if (r.op != FsOp::kSync) continue;
    ++nth;
    if (FileKind(r.path) != "MANIFEST-" || !absl::StrContains(r.path, "/shard-")) continue;
    SCOPED_TRACE(absl::StrCat("sync #", nth, " of ", r.path));
    const std::string dir = tmp_.Sub(absl::StrCat("m", nth));
    std::filesystem::copy(base, dir, std::filesystem::copy_options::recursive);
    fs_.Inject({.op = FsOp::kSync, .nth = nth, .err = ENOSPC});
    const absl::Status s = ImportGraph(Import(dir, true)).status();
    fs_.Reset();
    if (s.ok()) continue;
    ++failed;
    EXPECT_EQ(Digest(dir), before);
    const absl::Status again = ImportGraph(Import(dir, true)).status();
    EXPECT_TRUE(again.ok()) << again;
  }
  EXPECT_GT(failed, 0) << "no MANIFEST-* sync failure failed the append";
}

TEST_F(IoFaultTest, FailedExportLeavesNoOutput) {
  const std::string graph = tmp_.Sub("trained");
  ASSERT_TRUE(ImportGraph(Import(graph, false)).ok());
  TrainOptions to;
  to.model.dim = 8;
  to.epochs = 1;
  to.devices.threads = 1;
  ASSERT_TRUE(TrainGraph(graph, to).ok());
  auto out = [&](int i) { return tmp_.Sub(absl::StrCat("out/emb", i, ".tsv")); };
  ForEachFault(
      [&](int i) -> absl::Status {
        ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::Open(graph));
        tools::ExportOptions o;
        o.out = out(i);
        o.relations_out = out(i) + ".relations";
        o.threads = 1;
        return tools::ExportEmbeddings(*g, o).status();
      },
      [&](int i) {
        for (const std::string& name : Entries(tmp_.Sub("out"))) {
          EXPECT_FALSE(absl::StartsWith(name, absl::StrCat("emb", i, ".")))
              << name << " left behind";
        }
      });
}

}  // namespace
}  // namespace ember
