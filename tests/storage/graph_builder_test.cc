#include "storage/graph_builder.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/graph.h"
#include "storage/internal/keys.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using ::ember::testing::BuildTestGraph;
using ::ember::testing::ExpectedGraph;
using ::ember::testing::FillTestGraph;
using ::ember::testing::TempDir;
using ::ember::testing::TestGraphOptions;

// Entries of `dir` other than `keep`.
std::vector<std::string> OtherEntries(const std::string& dir,
                                      const std::string& keep) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != keep) out.push_back(e.path().filename());
  }
  return out;
}

void ExpectAllBucketsMatch(const Graph& graph, const ExpectedGraph& g) {
  const uint32_t num_p = g.manifest.num_partitions;
  uint64_t seen = 0;
  for (Split split : kAllSplits) {
    for (uint32_t i = 0; i < num_p; ++i) {
      for (uint32_t j = 0; j < num_p; ++j) {
        std::vector<Edge> got;
        ASSERT_TRUE(graph.ReadBucket(split, i, j, &got).ok());
        auto it = g.buckets.find({static_cast<int>(split), i, j});
        const std::vector<Edge> want =
            it == g.buckets.end() ? std::vector<Edge>{} : it->second;
        EXPECT_EQ(got, want) << SplitName(split) << " (" << i << "," << j
                             << ")";
        seen += got.size();
      }
    }
  }
  EXPECT_EQ(seen, g.manifest.edges.total());
}

TEST(GraphBuilderTest, CommitThenReadEveryBucketBack) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  ExpectedGraph g = BuildTestGraph(out);
  ASSERT_GT(g.manifest.edges.train, 0u);
  EXPECT_TRUE(OtherEntries(tmp.path(), "g").empty());  // no staging left
  EXPECT_TRUE(fs::exists(out + "/MANIFEST.json"));
  EXPECT_TRUE(fs::is_directory(out + "/dict"));
  for (int p = 0; p < 3; ++p) {
    EXPECT_TRUE(fs::is_directory(out + "/shard-" + std::to_string(p)));
  }
  EXPECT_FALSE(fs::exists(out + "/runs"));
  EXPECT_FALSE(fs::exists(out + "/scratch"));

  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->manifest().num_nodes, 12u);
  EXPECT_EQ((*graph)->manifest().train_bucket_edges,
            g.manifest.train_bucket_edges);
  ExpectAllBucketsMatch(**graph, g);
}

TEST(GraphBuilderTest, BlocksComeInKeyOrder) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  TestGraphOptions o;
  o.edges_per_block = 3;
  ExpectedGraph g = BuildTestGraph(out, o);
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  int blocks = 0;
  ASSERT_TRUE((*graph)
                  ->ForEachEdgeBlock(Split::kTrain, 1, 2,
                                     [&](std::span<const Edge> b) {
                                       EXPECT_LE(b.size(), 3u);
                                       ++blocks;
                                       return absl::OkStatus();
                                     })
                  .ok());
  const auto& want = g.buckets[{0, 1, 2}];
  EXPECT_EQ(blocks, static_cast<int>((want.size() + 2) / 3));
  // A callback error stops the scan and is returned.
  int calls = 0;
  absl::Status s = (*graph)->ForEachEdgeBlock(
      Split::kTrain, 1, 2, [&](std::span<const Edge>) {
        ++calls;
        return absl::CancelledError("stop");
      });
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ((*graph)
                ->ForEachEdgeBlock(Split::kTrain, 3, 0,
                                   [](std::span<const Edge>) {
                                     return absl::OkStatus();
                                   })
                .code(),
            absl::StatusCode::kOutOfRange);
}

// A cursor over a bucket's blocks yields the bucket's edges in key order,
// one block per Next (the blocks ForEachEdgeBlock visits), and then stays
// at its end.
TEST(GraphBuilderTest, EdgeBlockCursorVisitsTheBlocksInOrder) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  TestGraphOptions o;
  o.edges_per_block = 3;
  ExpectedGraph g = BuildTestGraph(out, o);
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<size_t> block_sizes;
  ASSERT_TRUE((*graph)
                  ->ForEachEdgeBlock(Split::kTrain, 1, 2,
                                     [&](std::span<const Edge> b) {
                                       block_sizes.push_back(b.size());
                                       return absl::OkStatus();
                                     })
                  .ok());
  ASSERT_GT(block_sizes.size(), 1u);
  auto cursor = (*graph)->OpenEdgeBlocks(Split::kTrain, 1, 2);
  ASSERT_TRUE(cursor.ok()) << cursor.status();
  std::vector<Edge> edges;
  std::vector<size_t> sizes;
  while (true) {
    absl::StatusOr<bool> more = (*cursor)->Next();
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    const EdgeBlockView block = (*cursor)->block();
    sizes.push_back(block.size());
    edges.resize(edges.size() + block.size());
    block.CopyTo(0, block.size(), edges.data() + edges.size() - block.size());
  }
  EXPECT_EQ(sizes, block_sizes);
  EXPECT_EQ(edges, (g.buckets[{0, 1, 2}]));
  absl::StatusOr<bool> more = (*cursor)->Next();
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_FALSE(*more);
  EXPECT_EQ((*graph)->OpenEdgeBlocks(Split::kTrain, 3, 0).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(GraphBuilderTest, EmptyGraphHasEveryShardAndColumnFamily) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  GraphBuilderOptions bo;
  bo.num_partitions = 4;
  auto builder = GraphBuilder::Create(out, bo);
  ASSERT_TRUE(builder.ok()) << builder.status();
  // An empty run is allowed and dropped.
  auto run = (*builder)->NewRun(RunTarget::kShardEdges, 2);
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE((*run)->Finish().ok());
  Manifest m;
  m.num_partitions = 4;
  m.partition_sizes = {0, 0, 0, 0};
  ASSERT_TRUE((*builder)->Commit(m).ok());
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (uint32_t p = 0; p < 4; ++p) {
    std::vector<Edge> edges;
    EXPECT_TRUE((*graph)->ReadBucket(Split::kTrain, p, 3 - p, &edges).ok());
    EXPECT_TRUE(edges.empty());
    EXPECT_GT((*graph)->ShardBytesOnDisk(p), 0u);
  }
}

TEST(GraphBuilderTest, AbandonLeavesNothing) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  auto builder = GraphBuilder::Create(out, {.num_partitions = 3});
  ASSERT_TRUE(builder.ok());
  FillTestGraph(builder->get(), {});
  EXPECT_FALSE(OtherEntries(tmp.path(), "").empty());  // staging exists
  (*builder)->Abandon();
  EXPECT_TRUE(OtherEntries(tmp.path(), "").empty());
  builder->reset();
  EXPECT_TRUE(OtherEntries(tmp.path(), "").empty());
}

TEST(GraphBuilderTest, DestroyedUncommittedLeavesNothing) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  {
    auto builder = GraphBuilder::Create(out, {.num_partitions = 3});
    ASSERT_TRUE(builder.ok());
    FillTestGraph(builder->get(), {});
    // Caller temp files go with it too.
    std::ofstream((*builder)->scratch_dir() + "/tmp.bin") << "x";
    // A writer left unfinished is dropped.
    auto run = (*builder)->NewRun(RunTarget::kShardNodes, 0);
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE((*run)->Add("\x01", "x").ok());
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(OtherEntries(tmp.path(), "").empty());
}

TEST(GraphBuilderTest, FailedCommitLeavesNothingAtOut) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  {
    auto builder = GraphBuilder::Create(out, {.num_partitions = 3});
    ASSERT_TRUE(builder.ok());
    ExpectedGraph g = FillTestGraph(builder->get(), {});
    Manifest bad = g.manifest;
    bad.num_nodes += 1;  // inconsistent
    EXPECT_EQ((*builder)->Commit(bad).code(),
              absl::StatusCode::kInvalidArgument);
    Manifest wrong_p = g.manifest;
    wrong_p.num_partitions = 1;
    wrong_p.partition_sizes = {12};
    wrong_p.train_bucket_edges.clear();
    EXPECT_EQ((*builder)->Commit(wrong_p).code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(OtherEntries(tmp.path(), "").empty());
}

TEST(GraphBuilderTest, CommitRefusesOpenRuns) {
  TempDir tmp;
  auto builder = GraphBuilder::Create(tmp.Sub("g"), {.num_partitions = 1});
  ASSERT_TRUE(builder.ok());
  auto run = (*builder)->NewRun(RunTarget::kShardNodes, 0);
  ASSERT_TRUE(run.ok());
  Manifest m;
  m.partition_sizes = {0};
  EXPECT_EQ((*builder)->Commit(m).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(GraphBuilderTest, RunWriterChecksOrderAndIsSticky) {
  TempDir tmp;
  auto builder = GraphBuilder::Create(tmp.Sub("g"), {.num_partitions = 2});
  ASSERT_TRUE(builder.ok());
  EXPECT_EQ((*builder)->NewRun(RunTarget::kShardEdges, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*builder)->NewRun(RunTarget::kDictById, 99).ok());
  auto run = (*builder)->NewRun(RunTarget::kShardNodes, 1);
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE((*run)->Add(NodeOffsetKey(5), "a").ok());
  EXPECT_FALSE((*run)->Add(NodeOffsetKey(5), "b").ok());  // duplicate
  EXPECT_FALSE((*run)->Add(NodeOffsetKey(9), "c").ok());  // sticky
  EXPECT_FALSE((*run)->Finish().ok());
}

TEST(GraphBuilderTest, ExistingOutRefusedWithoutOverwrite) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  BuildTestGraph(out);
  auto again = GraphBuilder::Create(out, {.num_partitions = 3});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find(out), std::string::npos);
}

TEST(GraphBuilderTest, OverwriteReplacesExistingGraph) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  BuildTestGraph(out);
  std::ofstream(out + "/marker") << "old";
  TestGraphOptions o;
  o.partition_sizes = {2, 2};
  o.seed = 7;
  auto builder =
      GraphBuilder::Create(out, {.num_partitions = 2, .overwrite = true});
  ASSERT_TRUE(builder.ok()) << builder.status();
  // The old graph stays readable until Commit.
  EXPECT_TRUE(fs::exists(out + "/marker"));
  ExpectedGraph g = FillTestGraph(builder->get(), o);
  ASSERT_TRUE((*builder)->Commit(g.manifest).ok());
  EXPECT_FALSE(fs::exists(out + "/marker"));
  EXPECT_TRUE(OtherEntries(tmp.path(), "g").empty());  // no .old, no staging
  auto graph = Graph::Open(out);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->manifest().num_partitions, 2u);
  ExpectAllBucketsMatch(**graph, g);
}

TEST(GraphBuilderTest, StaleStagingFromDeadPidIsRemoved) {
  TempDir tmp;
  const std::string out = tmp.Sub("g");
  // A pid that is not running: a child that has exited and been reaped.
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(dead, &wstatus, 0), dead);
  const std::string stale = out + ".staging-" + std::to_string(dead);
  fs::create_directories(stale + "/runs");
  std::ofstream(stale + "/runs/x.sst") << "junk";
  // A staging dir of a live process (our parent) stays.
  const std::string live = out + ".staging-" + std::to_string(::getppid());
  fs::create_directories(live);
  const std::string other = tmp.Sub("h.staging-" + std::to_string(dead));
  fs::create_directories(other);

  auto builder = GraphBuilder::Create(out, {.num_partitions = 1});
  ASSERT_TRUE(builder.ok()) << builder.status();
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));  // belongs to another output
}

TEST(GraphBuilderTest, OutWithTrailingSlashAndNewParent) {
  TempDir tmp;
  const std::string out = tmp.Sub("a/b/g");
  auto builder = GraphBuilder::Create(out + "/", {.num_partitions = 1});
  ASSERT_TRUE(builder.ok()) << builder.status();
  Manifest m;
  m.partition_sizes = {0};
  ASSERT_TRUE((*builder)->Commit(m).ok());
  EXPECT_TRUE(fs::exists(out + "/MANIFEST.json"));
  EXPECT_EQ((*builder)->Commit(m).code(),
            absl::StatusCode::kFailedPrecondition);
  builder->reset();  // a committed builder leaves the graph alone
  EXPECT_TRUE(fs::exists(out + "/MANIFEST.json"));
}

}  // namespace
}  // namespace ember
