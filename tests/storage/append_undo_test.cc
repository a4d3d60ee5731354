// The undo copy that brackets an append (Graph::BeginAppend / EndAppend,
// storage/internal/append_undo.h): what EndAppend and a writer's next open
// do with it, whether the append committed or not, and a copy that was
// never sealed. IoFaultTest drives real appends through injected faults.
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/graph.h"
#include "storage/internal/append_undo.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using ::ember::testing::BuildTestGraph;
using ::ember::testing::TempDir;

constexpr uint64_t kVersion = 9;
constexpr uint32_t kWidth = 2;

class AppendUndoTest : public ::testing::Test {
 protected:
  void SetUp() override { BuildTestGraph(dir()); }
  std::string dir() const { return tmp_.Sub("g"); }
  std::string undo() const { return internal::AppendUndoDir(dir()); }
  std::unique_ptr<Graph> OpenRw() {
    auto g = Graph::Open(dir(), {.read_only = false});
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? std::move(*g) : nullptr;
  }
  // A change standing in for an append's ingestion: a table version in
  // partition 0's DB.
  void Change(Graph* g) {
    const uint64_t rows = g->manifest().partition_sizes[0];
    const std::vector<float> v(rows * kWidth, 1.5f);
    ASSERT_TRUE(g->WriteTable(Table::kEmbeddings, 0, kVersion, v.data(), rows, kWidth).ok());
    ASSERT_TRUE(g->SyncTables().ok());
  }
  static bool HasChange(const Graph& g) {
    const uint64_t rows = g.manifest().partition_sizes[0];
    std::vector<float> v(rows * kWidth);
    return g.ReadTable(Table::kEmbeddings, 0, kVersion, v.data(), rows, kWidth).ok();
  }
  // Makes shard-1 unopenable, as a failed MANIFEST-* sync during an
  // ingestion can (its CURRENT names a MANIFEST that is not there).
  void BreakShard1() {
    std::ofstream(dir() + "/shard-1/CURRENT", std::ios::trunc) << "MANIFEST-999999\n";
  }
  // An append left as a killed writer leaves it: begun, changed, committed
  // or not, and never ended (the graph closed without EndAppend). Returns
  // the graph's train edges before it.
  uint64_t AbandonAppend(bool commit) {
    std::unique_ptr<Graph> g = OpenRw();
    if (g == nullptr) return 0;
    const uint64_t edges = CountEdges(*g);
    BeginAndChange(g.get(), commit);
    return edges;
  }
  // BeginAppend, Change and, with `commit`, a manifest one generation on.
  void BeginAndChange(Graph* g, bool commit) {
    ASSERT_TRUE(g->BeginAppend().ok());
    Change(g);
    if (!commit) return;
    Manifest m = g->manifest();
    ++m.edge_generation;
    ASSERT_TRUE(g->CommitManifest(m).ok());
  }
  // Every edge of every bucket: the graph's contents, read back.
  static uint64_t CountEdges(const Graph& g) {
    uint64_t n = 0;
    const uint32_t P = g.manifest().num_partitions;
    for (uint32_t i = 0; i < P; ++i) {
      for (uint32_t j = 0; j < P; ++j) {
        EXPECT_TRUE(g.ForEachEdgeBlock(Split::kTrain, i, j, [&](std::span<const Edge> es) {
                       n += es.size();
                       return absl::OkStatus();
                     }).ok());
      }
    }
    return n;
  }

  TempDir tmp_;
};

TEST_F(AppendUndoTest, EndAppendWithoutCommitPutsEveryDbBack) {
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  const uint64_t edges = CountEdges(*g);
  ASSERT_GT(edges, 0u);
  ASSERT_TRUE(g->BeginAppend().ok());
  EXPECT_TRUE(fs::exists(undo() + "/dict"));
  EXPECT_TRUE(fs::exists(undo() + "/shard-2"));
  Change(g.get());
  ASSERT_TRUE(HasChange(*g));
  const absl::Status ended = g->EndAppend();
  ASSERT_TRUE(ended.ok()) << ended;
  EXPECT_FALSE(HasChange(*g));
  EXPECT_EQ(CountEdges(*g), edges);
  EXPECT_FALSE(fs::exists(undo()));
}

TEST_F(AppendUndoTest, EndAppendAfterCommitDropsTheCopy) {
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  BeginAndChange(g.get(), /*commit=*/true);
  ASSERT_TRUE(g->EndAppend().ok());
  EXPECT_TRUE(HasChange(*g));
  EXPECT_FALSE(fs::exists(undo()));
}

// A writer killed between ingestion and commit, with one DB left
// unopenable: the next writer's open puts the copy back.
TEST_F(AppendUndoTest, KilledAppendIsUndoneByTheNextWriterOpen) {
  const uint64_t edges = AbandonAppend(/*commit=*/false);
  ASSERT_GT(edges, 0u);
  BreakShard1();
  ASSERT_FALSE(Graph::Open(dir()).ok()) << "the broken shard should not open";
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(HasChange(*g));
  EXPECT_EQ(CountEdges(*g), edges);
  EXPECT_FALSE(fs::exists(undo()));
}

TEST_F(AppendUndoTest, RestoreCutShortFinishesAtTheNextOpen) {
  const uint64_t edges = AbandonAppend(/*commit=*/false);
  ASSERT_GT(edges, 0u);
  BreakShard1();
  // As if killed during PutBackAppendUndo: shard-0 is back (its live DB set
  // aside), shard-1's live DB is set aside but its copy not yet in place.
  fs::rename(dir() + "/shard-0", undo() + "/shard-0.replaced");
  fs::rename(undo() + "/shard-0", dir() + "/shard-0");
  fs::rename(dir() + "/shard-1", undo() + "/shard-1.replaced");
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(HasChange(*g));
  EXPECT_EQ(CountEdges(*g), edges);
  EXPECT_FALSE(fs::exists(undo()));
}

TEST_F(AppendUndoTest, KilledAfterCommitKeepsTheAppend) {
  AbandonAppend(/*commit=*/true);
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(HasChange(*g));
  EXPECT_FALSE(fs::exists(undo()));
}

// A copy without its seal was cut short before the append ingested
// anything: it is dropped, never put back over the live DBs.
TEST_F(AppendUndoTest, UnsealedCopyIsDroppedNotPutBack) {
  AbandonAppend(/*commit=*/false);
  ASSERT_TRUE(fs::remove(undo() + "/GENERATION"));
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(HasChange(*g));
  EXPECT_FALSE(fs::exists(undo()));
}

// A reader beside a pending copy reads the committed graph and leaves the
// copy alone (only a writer settles it).
TEST_F(AppendUndoTest, ReaderLeavesAPendingCopyAlone) {
  std::unique_ptr<Graph> w = OpenRw();
  ASSERT_NE(w, nullptr);
  const uint64_t edges = CountEdges(*w);
  ASSERT_TRUE(w->BeginAppend().ok());
  auto r = Graph::Open(dir());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(CountEdges(**r), edges);
  EXPECT_TRUE(fs::exists(undo() + "/GENERATION"));
  ASSERT_TRUE(w->EndAppend().ok());
}

}  // namespace
}  // namespace ember
