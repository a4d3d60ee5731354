// Graphs written before the training state had a version keep opening and
// resume as they did: one made by ember at main df07069 (the fixture), and
// a mid-epoch checkpoint put back into that layout.
//
// tests/train/fixtures/graph_v1 was made with that commit's binary:
//   ember gen sbm --out edges.tsv --labels-out labels.tsv --nodes 60 \
//     --blocks 3 --avg-degree 4 --seed 3
//   ember import --out g --partitions 2 --threads 1 edges.tsv
//   ember train g --dim 8 --epochs 1 --operator translation --lr 0.1 \
//     --threads 1 --deterministic --seed 7
// then RocksDB's LOG and OPTIONS files, the writer LOCK and metrics.jsonl
// removed (none is read to open the graph).
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/train/train_test_util.h"
#include "train/model/train_state.h"
#include "train/train_loop.h"

namespace ember {
namespace {

using ::testing::HasSubstr;
using train_test::ExpectBitIdentical;
using train_test::LoadSnapshot;
using train_test::ManifestOf;
using train_test::TempDir;

const std::string kFixture = std::string(EMBER_SOURCE_DIR) + "/tests/train/fixtures/graph_v1";

void CopyDir(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
}

// Rewrites the checkpoint of `dir` as this ember stores it (versioned).
void RewriteInCurrentLayout(const std::string& dir) {
  GraphOpenOptions writable;
  writable.read_only = false;
  auto g = Graph::Open(dir, writable);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<TrainState> state = ReadTrainState(**g);
  ASSERT_TRUE(state.ok()) << state.status();
  Manifest m = (*g)->manifest();
  StoreTrainState(*state, m.training.checkpoint_version, &m);
  const absl::Status committed = (*g)->CommitManifest(m);
  ASSERT_TRUE(committed.ok()) << committed;
  const absl::Status closed = (*g)->Close();
  ASSERT_TRUE(closed.ok()) << closed;
}

// Rewrites the `training` object of dir's manifest as ember before the
// versioned state wrote it: no edge_generation or state_version, and
// training.dim restating state.model.dim.
void RewriteInUnversionedLayout(const std::string& dir) {
  const std::string path = dir + "/MANIFEST.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  nlohmann::json& t = j["training"];
  ASSERT_EQ(t["state_version"], 2);
  t.erase("state_version");
  t.erase("edge_generation");
  t["dim"] = t["state"]["model"]["dim"];
  train_test::WriteWholeFile(path, j.dump(2));
}

// The options the fixture was trained with (its command above), for `epochs`.
TrainOptions FixtureOptions(int epochs) {
  TrainOptions o;
  o.model.dim = 8;
  o.model.op = Operator::kTranslation;
  o.epochs = epochs;
  o.optimizer.lr = 0.1f;
  o.devices.threads = 1;
  o.pipeline.deterministic = true;
  o.seed = 7;
  return o;
}

TEST(LegacyGraphTest, GraphOfTodaysMainOpensAndResumes) {
  TempDir tmp;
  const std::string legacy = tmp.Sub("legacy");
  const std::string current = tmp.Sub("current");
  CopyDir(kFixture, legacy);
  CopyDir(kFixture, current);
  {
    auto g = Graph::Open(legacy);  // read-only
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->manifest().training.state_version, 0u);
    absl::StatusOr<TrainState> state = ReadTrainState(**g);
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_EQ(state->epochs_done, 1u);
    EXPECT_EQ(state->model.dim, 8);
    EXPECT_EQ(state->model.op, Operator::kTranslation);
    EXPECT_EQ(state->partition_versions, (std::vector<uint64_t>{1, 1}));
    EXPECT_EQ(state->position.next_round, 0u);
    EXPECT_EQ(state->position.seed, 7u);
    EXPECT_EQ(state->position.bucket_order, "inside-out");
  }
  absl::StatusOr<train_test::ModelSnapshot> before = LoadSnapshot(legacy);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->relation_params.size(), 8u);
  EXPECT_EQ(before->partitions.size(), 2u);
  RewriteInCurrentLayout(current);

  // Both resume at epoch 2 from the stored model, and end the same.
  for (const std::string& dir : {legacy, current}) {
    SCOPED_TRACE(dir);
    absl::StatusOr<TrainSummary> s = TrainGraph(dir, FixtureOptions(2));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s->resumed);
    EXPECT_EQ(s->start_epoch, 1);
    EXPECT_EQ(s->start_round, 0u);
    ASSERT_EQ(s->epochs.size(), 1u);
    EXPECT_EQ(s->epochs[0].epoch, 2);
    absl::StatusOr<Manifest> m = ManifestOf(dir);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(train_test::EpochsDone(*m), 2u);
    EXPECT_EQ(m->training.state_version, TrainState::kPlainVersion);
  }
  absl::StatusOr<train_test::ModelSnapshot> a = LoadSnapshot(legacy);
  absl::StatusOr<train_test::ModelSnapshot> b = LoadSnapshot(current);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectBitIdentical(*a, *b);
}

// An SBM graph of `nodes` in `blocks` (average degree 8), imported into
// `partitions` at `dir`.
void ImportSbm(TempDir& tmp, uint32_t nodes, uint32_t blocks, uint32_t partitions,
               const std::string& dir) {
  tools::gen::SbmOptions sbm;
  sbm.nodes = nodes;
  sbm.blocks = blocks;
  sbm.avg_degree = 8;
  sbm.seed = 5;
  const std::string edges = tmp.Sub("edges.tsv");
  train_test::WriteSbmEdges(sbm, edges);
  ASSERT_TRUE(train_test::ImportEdges(dir, {edges}, partitions, /*with_splits=*/false).ok());
}

// A run stopped mid-epoch, its manifest put back into the unversioned
// layout, resumes at the same round and ends bit-identical to resuming the
// checkpoint as this ember wrote it.
TEST(LegacyGraphTest, MidEpochCheckpointInUnversionedLayoutResumes) {
  TempDir tmp;
  const std::string current = tmp.Sub("current");
  ASSERT_NO_FATAL_FAILURE(ImportSbm(tmp, 300, 3, 4, current));

  TrainOptions o = train_test::SmallOptions(2);
  o.model.dim = 16;
  o.model.op = Operator::kTranslation;
  o.pipeline.batch_size = 100;
  o.schedule.buffer_partitions = 2;
  o.schedule.checkpoint_every = 3;
  o.pipeline.deterministic = true;
  o.hooks.stop_after_buckets = 23;  // epoch 2 (16 buckets an epoch), after a checkpoint
  absl::StatusOr<TrainSummary> stopped = TrainGraph(current, o);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  ASSERT_TRUE(stopped->stopped);
  uint64_t next_round = 0;
  {
    absl::StatusOr<Manifest> m = ManifestOf(current);
    ASSERT_TRUE(m.ok()) << m.status();
    absl::StatusOr<TrainState> state = ReadTrainState(*m, current + "/MANIFEST.json");
    ASSERT_TRUE(state.ok()) << state.status();
    ASSERT_EQ(state->epochs_done, 1u);
    next_round = state->position.next_round;
    ASSERT_GT(next_round, 0u);
  }
  const std::string legacy = tmp.Sub("legacy");
  CopyDir(current, legacy);
  RewriteInUnversionedLayout(legacy);

  o.hooks.stop_after_buckets = 0;
  for (const std::string& dir : {legacy, current}) {
    SCOPED_TRACE(dir);
    absl::StatusOr<TrainSummary> s = TrainGraph(dir, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s->resumed);
    EXPECT_EQ(s->start_epoch, 1);
    EXPECT_EQ(s->start_round, next_round);
  }
  absl::StatusOr<train_test::ModelSnapshot> a = LoadSnapshot(legacy);
  absl::StatusOr<train_test::ModelSnapshot> b = LoadSnapshot(current);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectBitIdentical(*a, *b);
}

// A run in memory stopped mid-epoch by an ember that formed rounds with a
// look-ahead of 64 buckets (its record has none) is not resumed with
// today's rounds over the whole order: the rest of its epoch would be
// another schedule's.
TEST(LegacyGraphTest, MidEpochCheckpointOfOlderRoundsIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.Sub("g");
  ASSERT_NO_FATAL_FAILURE(ImportSbm(tmp, 600, 4, 12, dir));
  TrainOptions o = train_test::SmallOptions(2);
  o.model.dim = 8;
  o.devices.trainers = 2;
  o.devices.threads = 2;
  o.schedule.checkpoint_every = 20;
  o.hooks.stop_after_buckets = 170;  // epoch 2 (144 buckets an epoch), after a checkpoint
  absl::StatusOr<TrainSummary> stopped = TrainGraph(dir, o);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  ASSERT_TRUE(stopped->stopped);
  const std::string path = dir + "/MANIFEST.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  nlohmann::json& trainer = j["training"]["state"]["trainer"];
  ASSERT_GT(trainer["next_round"], 0);
  ASSERT_EQ(trainer["round_lookahead"], 144);  // 12 x 12 buckets: the whole order
  trainer.erase("round_lookahead");
  train_test::WriteWholeFile(path, j.dump(2));

  o.hooks.stop_after_buckets = 0;
  absl::StatusOr<TrainSummary> resumed = TrainGraph(dir, o);
  ASSERT_FALSE(resumed.ok());
  EXPECT_THAT(resumed.status().message(),
              HasSubstr("rounds formed with a look-ahead of 64, this run 144"));
}

}  // namespace
}  // namespace ember
