#include "storage/graph.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/graph_builder.h"
#include "storage/internal/keys.h"
#include "storage/manifest.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using ::ember::testing::BuildTestGraph;
using ::ember::testing::ExpectedGraph;
using ::ember::testing::TempDir;
using ::ember::testing::TestGraphOptions;

class GraphTest : public ::testing::Test {
 protected:
  void SetUp() override { expected_ = BuildTestGraph(dir()); }
  std::string dir() const { return tmp_.Sub("g"); }
  std::unique_ptr<Graph> OpenRw() {
    auto g = Graph::Open(dir(), {.read_only = false});
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? std::move(*g) : nullptr;
  }

  TempDir tmp_;
  ExpectedGraph expected_;
};

std::vector<float> RandomRows(uint64_t rows, uint32_t width, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(rows * width);
  for (float& f : v) f = d(rng);
  return v;
}

TEST(GraphOpenTest, MissingManifestIsNotFound) {
  TempDir tmp;
  auto g = Graph::Open(tmp.path());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(g.status().message().find(tmp.path() + "/MANIFEST.json"),
            std::string::npos)
      << g.status();
}

TEST(GraphOpenTest, MissingShardIsReported) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  BuildTestGraph(out);
  fs::remove_all(out + "/shard-2");
  auto g = Graph::Open(out);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("shard-2"), std::string::npos)
      << g.status();
}

TEST_F(GraphTest, LockExcludesSecondWriter) {
  {
    std::unique_ptr<Graph> first = OpenRw();
    ASSERT_NE(first, nullptr);
    auto second = Graph::Open(dir(), {.read_only = false});
    EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(second.status().message().find("locked by another writer"),
              std::string::npos);
    EXPECT_NE(second.status().message().find(dir() + "/LOCK"),
              std::string::npos)
        << second.status();
    auto reader = Graph::Open(dir());
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::vector<Edge> edges;
    EXPECT_TRUE((*reader)->ReadBucket(Split::kTrain, 0, 0, &edges).ok());
  }
  EXPECT_NE(OpenRw(), nullptr);  // released on close
}

// The writer records who it is in GRAPH/LOCK, and a second writer's
// refusal names it.
TEST_F(GraphTest, WriterRecordsItselfInLock) {
  std::unique_ptr<Graph> first = OpenRw();
  ASSERT_NE(first, nullptr);
  const std::string pid = absl::StrCat("pid ", ::getpid());
  const std::string lock = ::ember::testing::ReadWholeFile(dir() + "/LOCK");
  EXPECT_EQ(lock.rfind(pid + "\ncommand ", 0), 0u) << lock;
  EXPECT_NE(lock.find("storage_test"), std::string::npos) << lock;
  auto second = Graph::Open(dir(), {.read_only = false});
  EXPECT_NE(second.status().message().find(pid + " ("), std::string::npos) << second.status();
}

// A reader keeps the committed state it opened: the writer's next
// checkpoint, its deletion of the old table version and blob, and a reopen
// of its DBs (new MANIFEST-* files, obsolete files deleted) change nothing
// the reader reads.
TEST_F(GraphTest, ReaderKeepsItsSnapshotWhileWriterReplacesIt) {
  const uint64_t rows = expected_.manifest.partition_sizes[0];
  const std::vector<float> v1 = RandomRows(rows, 4, 1), v2 = RandomRows(rows, 4, 2);
  auto commit = [&](Graph& g, uint64_t version, const std::vector<float>& rows_of_p0) {
    ASSERT_TRUE(g.WriteTable(Table::kEmbeddings, 0, version, rows_of_p0.data(), rows, 4).ok());
    ASSERT_TRUE(g.WriteBlob(absl::StrCat("relations-", version), absl::StrCat("v", version)).ok());
    ASSERT_TRUE(g.SyncTables().ok());
    Manifest m = g.manifest();
    m.training.checkpoint_version = version;
    ASSERT_TRUE(g.CommitManifest(m).ok());
  };
  std::unique_ptr<Graph> writer = OpenRw();
  ASSERT_NE(writer, nullptr);
  commit(*writer, 1, v1);
  auto reader = Graph::Open(dir());
  ASSERT_TRUE(reader.ok()) << reader.status();
  commit(*writer, 2, v2);
  ASSERT_TRUE(writer->DeleteTableVersion(Table::kEmbeddings, 0, 1).ok());
  ASSERT_TRUE(writer->DeleteBlob("relations-1").ok());
  ASSERT_TRUE(writer->SyncTables().ok());
  ASSERT_TRUE(writer->Close().ok());
  writer.reset();
  writer = OpenRw();
  ASSERT_NE(writer, nullptr);

  EXPECT_EQ((*reader)->manifest().training.checkpoint_version, 1u);
  std::vector<float> got(rows * 4);
  ASSERT_TRUE((*reader)->ReadTable(Table::kEmbeddings, 0, 1, got.data(), rows, 4).ok());
  EXPECT_EQ(got, v1);
  EXPECT_EQ((*reader)->ReadBlob("relations-1").value_or("gone"), "v1");
  EXPECT_EQ((*reader)->ReadBlob("relations-2").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*reader)->ListBlobs().value_or(std::vector<std::string>{}),
            std::vector<std::string>{"relations-1"});
  // A reader opened now sees the new checkpoint only.
  auto later = Graph::Open(dir());
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_EQ((*later)->manifest().training.checkpoint_version, 2u);
  EXPECT_EQ((*later)->ReadTable(Table::kEmbeddings, 0, 1, got.data(), rows, 4).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE((*later)->ReadTable(Table::kEmbeddings, 0, 2, got.data(), rows, 4).ok());
  EXPECT_EQ(got, v2);
}

// A reader's RocksDB secondary files live in a temporary directory of their
// own that closing removes; the graph directory gains nothing.
TEST_F(GraphTest, ReaderLeavesNoFilesBehind) {
  const std::string tmpdir = tmp_.Sub("tmpdir");
  fs::create_directory(tmpdir);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", tmpdir.c_str(), 1);
  std::vector<std::string> before;
  for (const auto& e : fs::recursive_directory_iterator(dir())) before.push_back(e.path());
  {
    auto g = Graph::Open(dir());
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_FALSE(fs::is_empty(tmpdir));
  }
  old != nullptr ? ::setenv("TMPDIR", saved.c_str(), 1) : ::unsetenv("TMPDIR");
  EXPECT_TRUE(fs::is_empty(tmpdir));
  std::vector<std::string> after;
  for (const auto& e : fs::recursive_directory_iterator(dir())) after.push_back(e.path());
  EXPECT_EQ(after, before);
}

// A damaged DB with no live writer is reported after one retry as DataLoss
// naming the DB; beside a live writer the reader retries longer, then names
// the writer.
TEST_F(GraphTest, ReaderNamesLiveWriterWhenOpenKeepsFailing) {
  const std::string current = dir() + "/shard-1/CURRENT";
  const std::string good = ::ember::testing::ReadWholeFile(current);
  std::ofstream(current, std::ios::trunc) << "MANIFEST-999999\n";
  auto alone = Graph::Open(dir());
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kDataLoss) << alone.status();
  EXPECT_NE(alone.status().message().find("shard-1"), std::string::npos) << alone.status();

  std::ofstream(current, std::ios::trunc) << good;
  std::unique_ptr<Graph> writer = OpenRw();
  ASSERT_NE(writer, nullptr);
  std::ofstream(current, std::ios::trunc) << "MANIFEST-999999\n";
  auto beside = Graph::Open(dir());
  ASSERT_FALSE(beside.ok());
  EXPECT_EQ(beside.status().code(), absl::StatusCode::kUnavailable) << beside.status();
  EXPECT_NE(beside.status().message().find(
                absl::StrCat(dir(), " is being written by pid ", ::getpid(), " (")),
            std::string::npos)
      << beside.status();
  EXPECT_NE(beside.status().message().find("shard-1"), std::string::npos) << beside.status();
}

TEST_F(GraphTest, ReadOnlyRefusesWrites) {
  auto g = Graph::Open(dir());
  ASSERT_TRUE(g.ok());
  float x = 1;
  EXPECT_EQ((*g)->WriteTable(Table::kEmbeddings, 0, 1, &x, 1, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*g)->CommitManifest((*g)->manifest()).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*g)->CommitTraining({}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*g)->SyncTables().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*g)->SyncTables(0).code(), absl::StatusCode::kFailedPrecondition);
}

// CommitTraining replaces the training record, on disk and in memory, and
// leaves every other field as it was.
TEST_F(GraphTest, CommitTrainingReplacesOnlyTheTrainingRecord) {
  Manifest before;
  {
    std::unique_ptr<Graph> g = OpenRw();
    ASSERT_NE(g, nullptr);
    before = g->manifest();
    TrainingRecord t;
    t.checkpoint_version = 7;
    t.edge_generation = before.edge_generation;
    t.state_version = 2;
    t.state = R"({"epochs_done":3})";
    ASSERT_TRUE(g->CommitTraining(t).ok());
    EXPECT_EQ(g->manifest().training.checkpoint_version, 7u);
    EXPECT_EQ(g->manifest().training.state, t.state);
  }
  auto g = Graph::Open(dir());
  ASSERT_TRUE(g.ok()) << g.status();
  const Manifest& after = (*g)->manifest();
  EXPECT_EQ(after.training.checkpoint_version, 7u);
  EXPECT_EQ(after.training.state_version, 2u);
  EXPECT_EQ(after.training.state, R"({"epochs_done":3})");
  EXPECT_EQ(after.num_partitions, before.num_partitions);
  EXPECT_EQ(after.num_nodes, before.num_nodes);
  EXPECT_EQ(after.partition_sizes, before.partition_sizes);
  EXPECT_EQ(after.edge_generation, before.edge_generation);
  EXPECT_EQ(after.relations, before.relations);
}

// A blob written in parts reads back as their concatenation, replaces an
// older one, and is gone after DeleteBlob (deleting again is fine).
TEST_F(GraphTest, BlobsFromPartsReplaceAndDelete) {
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(g->WriteBlob("b", "old contents").ok());
  const std::string big(1 << 20, 'x');
  const std::string_view parts[] = {"head:", big, "", ":tail"};
  ASSERT_TRUE(g->WriteBlob("b", std::span<const std::string_view>(parts)).ok());
  auto back = g->ReadBlob("b");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, "head:" + big + ":tail");
  for (const auto& e : fs::directory_iterator(dir() + "/blobs")) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  ASSERT_TRUE(g->DeleteBlob("b").ok());
  EXPECT_FALSE(g->ReadBlob("b").ok());
  EXPECT_TRUE(g->DeleteBlob("b").ok());
  EXPECT_FALSE(g->WriteBlob("../escape", "x").ok());
}

TEST_F(GraphTest, DeleteTableVersionsExceptKeepsOnlyOne) {
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  const float rows[4] = {1, 2, 3, 4};
  for (uint64_t v : {1, 2, 3, 1000}) {
    ASSERT_TRUE(g->WriteTable(Table::kEmbeddings, 0, v, rows, 2, 2).ok());
  }
  ASSERT_TRUE(g->DeleteTableVersionsExcept(Table::kEmbeddings, 0, 2).ok());
  float back[4];
  EXPECT_TRUE(g->ReadTable(Table::kEmbeddings, 0, 2, back, 2, 2).ok());
  EXPECT_EQ(back[3], 4.0f);
  for (uint64_t v : {1, 3, 1000}) {
    EXPECT_EQ(g->ReadTable(Table::kEmbeddings, 0, v, back, 2, 2).code(),
              absl::StatusCode::kNotFound) << v;
  }
  ASSERT_TRUE(g->DeleteTableVersionsExcept(Table::kEmbeddings, 0, 0).ok());
  EXPECT_EQ(g->ReadTable(Table::kEmbeddings, 0, 2, back, 2, 2).code(),
            absl::StatusCode::kNotFound);
}

// Temporaries of cut-short atomic writes are removed by a read-write open,
// never by a read-only one; committed files stay.
TEST_F(GraphTest, ReadWriteOpenRemovesAtomicWriteLeftovers) {
  {
    std::unique_ptr<Graph> g = OpenRw();
    ASSERT_NE(g, nullptr);
    ASSERT_TRUE(g->WriteBlob("keep", "x").ok());
  }
  const std::string leftovers[] = {dir() + "/MANIFEST.json.tmp-99999",
                                   dir() + "/blobs/relations-3.tmp-99999"};
  for (const std::string& path : leftovers) std::ofstream(path) << "partial";
  ASSERT_TRUE(Graph::Open(dir()).ok());
  for (const std::string& path : leftovers) EXPECT_TRUE(std::filesystem::exists(path)) << path;
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  for (const std::string& path : leftovers) EXPECT_FALSE(std::filesystem::exists(path)) << path;
  EXPECT_TRUE(std::filesystem::exists(dir() + "/MANIFEST.json"));
  EXPECT_EQ(*g->ReadBlob("keep"), "x");
}

TEST_F(GraphTest, ListBlobsIsSorted) {
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  auto none = g->ListBlobs();
  ASSERT_TRUE(none.ok()) << none.status();
  for (const char* name : {"b", "a", "c.tmp-1"}) ASSERT_TRUE(g->WriteBlob(name, "x").ok());
  auto names = g->ListBlobs();
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(names->size(), none->size() + 3);
  EXPECT_TRUE(std::is_sorted(names->begin(), names->end()));
  EXPECT_NE(std::find(names->begin(), names->end(), "c.tmp-1"), names->end());
}

TEST_F(GraphTest, LookupNodeAndNames) {
  auto g = Graph::Open(dir());
  ASSERT_TRUE(g.ok());
  const Graph& graph = **g;
  for (uint64_t gid = 0; gid < expected_.names.size(); ++gid) {
    const std::string& name = expected_.names[gid];
    absl::StatusOr<NodeRef> ref = graph.LookupNode(name);
    ASSERT_TRUE(ref.ok()) << ref.status();
    EXPECT_EQ(graph.GlobalId(*ref), gid);
    absl::StatusOr<NodeRef> from_id = graph.NodeFromGlobalId(gid);
    ASSERT_TRUE(from_id.ok());
    EXPECT_EQ(*from_id, *ref);
    absl::StatusOr<std::string> back = graph.NodeName(*ref);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, name);
  }
  EXPECT_EQ(*graph.NodeFromGlobalId(4), (NodeRef{1, 0}));
  EXPECT_EQ(*graph.NodeFromGlobalId(11), (NodeRef{2, 4}));
  absl::StatusOr<NodeRef> missing = graph.LookupNode("no-such-node");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no-such-node"),
            std::string::npos);
  EXPECT_EQ(graph.NodeFromGlobalId(12).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(graph.NodeName({1, 3}).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(graph.NodeName({3, 0}).status().code(),
            absl::StatusCode::kOutOfRange);

  std::vector<std::string> names;
  ASSERT_TRUE(graph
                  .ForEachNodeName(2,
                                   [&](uint32_t offset, std::string_view n) {
                                     EXPECT_EQ(offset, names.size());
                                     names.emplace_back(n);
                                     return absl::OkStatus();
                                   })
                  .ok());
  EXPECT_EQ(names, std::vector<std::string>(expected_.names.begin() + 7,
                                            expected_.names.end()));
}

TEST(GraphIntegerIdsTest, LookupIntegerNames) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  TestGraphOptions o;
  o.integer_ids = true;
  o.partition_sizes = {3, 0, 4};  // an empty partition in the middle
  ExpectedGraph e = BuildTestGraph(out, o);
  auto g = Graph::Open(out);
  ASSERT_TRUE(g.ok()) << g.status();
  for (uint64_t gid = 0; gid < e.names.size(); ++gid) {
    absl::StatusOr<NodeRef> ref = (*g)->LookupNode(e.names[gid]);
    ASSERT_TRUE(ref.ok()) << e.names[gid] << ": " << ref.status();
    EXPECT_EQ((*g)->GlobalId(*ref), gid);
    EXPECT_EQ(*(*g)->NodeName(*ref), e.names[gid]);
  }
  EXPECT_EQ(*(*g)->NodeFromGlobalId(3), (NodeRef{2, 0}));
  // Non-canonical spelling of an integer finds the same node.
  EXPECT_EQ((*g)->GlobalId(*(*g)->LookupNode("0" + e.names[1])), 1u);
  EXPECT_EQ((*g)->LookupNode("1001").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ((*g)->LookupNode("abc").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ((*g)->LookupNode("-5").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(GraphTest, TableRoundTripMultiChunk) {
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  // 4 MiB chunks of width 256 hold 4096 rows; 10000 rows make 3 chunks.
  const uint64_t rows = 10000;
  const uint32_t width = 256;
  std::vector<float> emb = RandomRows(rows, width, 1);
  std::vector<float> opt = RandomRows(rows, width, 2);
  ASSERT_TRUE(g->WriteTable(Table::kEmbeddings, 1, 5, emb.data(), rows, width)
                  .ok());
  ASSERT_TRUE(
      g->WriteTable(Table::kOptimizer, 1, 5, opt.data(), rows, width).ok());
  std::vector<float> got(rows * width);
  ASSERT_TRUE(
      g->ReadTable(Table::kEmbeddings, 1, 5, got.data(), rows, width).ok());
  EXPECT_EQ(got, emb);
  ASSERT_TRUE(
      g->ReadTable(Table::kOptimizer, 1, 5, got.data(), rows, width).ok());
  EXPECT_EQ(got, opt);

  // Shape mismatch, absent version, other partition, other table version.
  absl::Status s =
      g->ReadTable(Table::kEmbeddings, 1, 5, got.data(), rows - 1, width);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(g->ReadTable(Table::kEmbeddings, 1, 5, got.data(), rows, 128)
                .code(),
            absl::StatusCode::kInvalidArgument);
  s = g->ReadTable(Table::kEmbeddings, 1, 6, got.data(), rows, width);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("version 6"), std::string::npos) << s;
  EXPECT_EQ(g->ReadTable(Table::kEmbeddings, 0, 5, got.data(), rows, width)
                .code(),
            absl::StatusCode::kNotFound);

  // Rewriting a version with a smaller shape replaces it entirely.
  std::vector<float> small = RandomRows(10, 4, 3);
  ASSERT_TRUE(
      g->WriteTable(Table::kEmbeddings, 1, 5, small.data(), 10, 4).ok());
  std::vector<float> small_got(40);
  ASSERT_TRUE(
      g->ReadTable(Table::kEmbeddings, 1, 5, small_got.data(), 10, 4).ok());
  EXPECT_EQ(small_got, small);

  ASSERT_TRUE(g->DeleteTableVersion(Table::kEmbeddings, 1, 5).ok());
  EXPECT_EQ(g->ReadTable(Table::kEmbeddings, 1, 5, small_got.data(), 10, 4)
                .code(),
            absl::StatusCode::kNotFound);
  // The optimizer table of the same version is untouched.
  ASSERT_TRUE(
      g->ReadTable(Table::kOptimizer, 1, 5, got.data(), rows, width).ok());
}

// A diverged model is never stored: a row holding NaN or an infinity is
// refused, naming it, and nothing of that version is written.
TEST_F(GraphTest, NonFiniteRowsAreRefused) {
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  const float good[4] = {1, 2, 3, 4};
  ASSERT_TRUE(g->WriteTable(Table::kEmbeddings, 0, 1, good, 2, 2).ok());
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
    const float rows[4] = {1, 2, 3, bad};
    const absl::Status s = g->WriteTable(Table::kOptimizer, 0, 2, rows, 4, 1);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(std::string(s.message()).find("row 3"), std::string::npos) << s;
    float back[4];
    EXPECT_EQ(g->ReadTable(Table::kOptimizer, 0, 2, back, 4, 1).code(),
              absl::StatusCode::kNotFound);
  }
  float back[4];
  ASSERT_TRUE(g->ReadTable(Table::kEmbeddings, 0, 1, back, 2, 2).ok());
  EXPECT_EQ(back[3], 4.0f);
}

TEST_F(GraphTest, EmptyTable) {
  std::unique_ptr<Graph> g = OpenRw();
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(g->WriteTable(Table::kEmbeddings, 0, 1, nullptr, 0, 8).ok());
  EXPECT_TRUE(g->ReadTable(Table::kEmbeddings, 0, 1, nullptr, 0, 8).ok());
  float x;
  EXPECT_EQ(g->ReadTable(Table::kEmbeddings, 0, 1, &x, 1, 8).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g->WriteTable(Table::kEmbeddings, 0, 1, &x, 1, 0).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(GraphTest, SyncTablesThenReopen) {
  const uint64_t rows = 3000;
  const uint32_t width = 100;
  std::vector<float> emb = RandomRows(rows, width, 4);
  {
    std::unique_ptr<Graph> g = OpenRw();
    ASSERT_NE(g, nullptr);
    for (uint32_t p = 0; p < 3; ++p) {
      ASSERT_TRUE(g->WriteTable(Table::kEmbeddings, p, 1, emb.data(), rows,
                                width)
                      .ok());
    }
    // One partition's tables, then every partition's.
    ASSERT_TRUE(g->SyncTables(1).ok());
    EXPECT_FALSE(g->SyncTables(3).ok());  // no such partition
    ASSERT_TRUE(g->SyncTables().ok());
    Manifest m = g->manifest();
    m.training.checkpoint_version = 1;
    m.training.state = absl::StrCat(R"({"epochs_done":1,"dim":)", width, "}");
    ASSERT_TRUE(g->CommitManifest(m).ok());
    EXPECT_EQ(g->manifest().training.checkpoint_version, 1u);
    Manifest bad = m;
    bad.partition_sizes = {5, 2, 5};
    EXPECT_EQ(g->CommitManifest(bad).code(),
              absl::StatusCode::kInvalidArgument);
  }
  auto g = Graph::Open(dir());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->manifest().training.checkpoint_version, 1u);
  EXPECT_EQ(nlohmann::json::parse((*g)->manifest().training.state)["dim"], width);
  std::vector<float> got(rows * width);
  for (uint32_t p = 0; p < 3; ++p) {
    ASSERT_TRUE((*g)->ReadTable(Table::kEmbeddings, p, 1, got.data(), rows,
                                width)
                    .ok());
    EXPECT_EQ(got, emb);
  }
  EXPECT_GT((*g)->ShardBytesOnDisk(0), rows * width * sizeof(float));
  EXPECT_EQ((*g)->ShardBytesOnDisk(99), 0u);
}

TEST_F(GraphTest, TablesSurviveCloseWithoutSync) {
  std::vector<float> emb = RandomRows(50, 8, 5);
  {
    std::unique_ptr<Graph> g = OpenRw();
    ASSERT_NE(g, nullptr);
    ASSERT_TRUE(
        g->WriteTable(Table::kOptimizer, 2, 3, emb.data(), 50, 8).ok());
  }
  auto g = Graph::Open(dir());
  ASSERT_TRUE(g.ok());
  std::vector<float> got(50 * 8);
  ASSERT_TRUE(
      (*g)->ReadTable(Table::kOptimizer, 2, 3, got.data(), 50, 8).ok());
  EXPECT_EQ(got, emb);
}

TEST_F(GraphTest, CloseKeepsUnsyncedTablesAndIsIdempotent) {
  std::vector<float> emb = RandomRows(50, 8, 6);
  {
    std::unique_ptr<Graph> g = OpenRw();
    ASSERT_NE(g, nullptr);
    ASSERT_TRUE(g->WriteTable(Table::kEmbeddings, 1, 2, emb.data(), 50, 8).ok());
    const absl::Status closed = g->Close();
    EXPECT_TRUE(closed.ok()) << closed;
    EXPECT_TRUE(g->Close().ok());
  }
  auto g = Graph::Open(dir());
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<float> got(50 * 8);
  ASSERT_TRUE((*g)->ReadTable(Table::kEmbeddings, 1, 2, got.data(), 50, 8).ok());
  EXPECT_EQ(got, emb);
}

// An edge key that is not [split][dst partition][seq u64] cannot be placed
// in a generation: the scan must report it, not skip the generation check.
TEST(GraphEdgeKeyTest, MalformedEdgeKeyIsDataLoss) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  GraphBuilderOptions bo;
  bo.num_partitions = 3;
  auto builder = GraphBuilder::Create(out, bo);
  ASSERT_TRUE(builder.ok()) << builder.status();
  ExpectedGraph expected = ::ember::testing::FillTestGraph(builder->get(), TestGraphOptions{});
  const Edge edge{0, 0, 0};
  const std::string short_key = EdgeBucketPrefix(Split::kTrain, 1) + "abc";
  ASSERT_TRUE(::ember::testing::WriteRuns(builder->get(), RunTarget::kShardEdges, 0,
                                          {{short_key, EncodeEdgeBlock({&edge, 1})}}, 1)
                  .ok());
  ASSERT_TRUE((*builder)->Commit(expected.manifest).ok());

  auto g = Graph::Open(out);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<Edge> edges;
  const absl::Status s = (*g)->ReadBucket(Split::kTrain, 0, 1, &edges);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(out + "/shard-0"), std::string::npos) << s;
  EXPECT_NE(s.message().find("a key of 8 bytes"), std::string::npos) << s;
  // Buckets without the bad key read as before.
  edges.clear();
  EXPECT_TRUE((*g)->ReadBucket(Split::kTrain, 0, 2, &edges).ok());
}

}  // namespace
}  // namespace ember
