// TrainGraph in process: metrics, resume and restart rules, stops that act
// like kills (TrainOptions::hooks.stop_after_buckets), bucket orders, and every
// operator x comparator.
#include "train/train_loop.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/train/train_test_util.h"
#include "train/model/checkpoint.h"
#include "train/model/init.h"
#include "train/model/model_options.h"

namespace ember {
namespace {

using ::testing::HasSubstr;
using train_test::ImportEdges;
using train_test::LoadSnapshot;
using train_test::ManifestOf;
using train_test::MetricsLines;
using train_test::ModelSnapshot;
using train_test::TempDir;

// A small SBM (1000 nodes, 10 blocks, 5000 edges), written once per suite;
// each test imports its own copies.
class TrainLoopTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    edges_ = tmp_->Sub("sbm.tsv");
    tools::gen::SbmOptions sbm;
    sbm.nodes = 1000;
    sbm.blocks = 10;
    sbm.avg_degree = 10;
    sbm.mixing = 0.1;
    sbm.seed = 11;
    train_test::WriteSbmEdges(sbm, edges_);
    graphs_ = new train_test::GraphFactory(tmp_->path(), {edges_});
  }
  static void TearDownTestSuite() {
    delete graphs_;
    graphs_ = nullptr;
    delete tmp_;
    tmp_ = nullptr;
  }

  // A fresh copy of the suite's SBM imported with `partitions` partitions.
  static std::string NewGraph(uint32_t partitions) { return graphs_->New(partitions); }

  static TrainOptions Options(int epochs) {
    TrainOptions o = train_test::SmallOptions(epochs);
    o.model.dim = 16;
    return o;
  }

  // Partitioned, out of core, checkpointing after every bucket.
  static TrainOptions BufferedOptions(int epochs) {
    TrainOptions o = Options(epochs);
    o.schedule.buffer_partitions = 2;
    o.schedule.checkpoint_every = 1;
    return o;
  }

  static uint64_t TrainEdges(const std::string& dir) {
    auto m = ManifestOf(dir);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? m->edges.train : 0;
  }

  static TempDir* tmp_;
  static std::string edges_;
  static train_test::GraphFactory* graphs_;
};

TempDir* TrainLoopTest::tmp_ = nullptr;
std::string TrainLoopTest::edges_;
train_test::GraphFactory* TrainLoopTest::graphs_ = nullptr;

void ExpectMetricsLine(const std::string& line, int epoch, uint64_t edges) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << line;
  for (const char* key : {"epoch", "loss", "edges", "seconds", "edges_per_second"}) {
    EXPECT_TRUE(j.contains(key)) << "metrics line lacks \"" << key << "\": " << line;
  }
  EXPECT_EQ(j.value("epoch", -1), epoch) << line;
  EXPECT_EQ(j.value("edges", uint64_t{0}), edges) << line;
  const double loss = j.value("loss", -1.0);
  EXPECT_TRUE(std::isfinite(loss) && loss > 0) << line;
  const double seconds = j.value("seconds", -1.0);
  EXPECT_GT(seconds, 0) << line;
  EXPECT_NEAR(j.value("edges_per_second", -1.0), edges / seconds, 1e-6 * edges / seconds) << line;
}

TEST_F(TrainLoopTest, MetricsGetOneLinePerEpochAcrossResumes) {
  const std::string dir = NewGraph(2);
  const uint64_t train = TrainEdges(dir);
  ASSERT_GT(train, 0u);

  auto first = TrainGraph(dir, Options(3));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->resumed);
  EXPECT_EQ(first->start_epoch, 0);
  ASSERT_EQ(first->epochs.size(), 3u);
  std::vector<std::string> lines = MetricsLines(dir);
  ASSERT_EQ(lines.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(first->epochs[e].epoch, e + 1);
    EXPECT_EQ(first->epochs[e].edges, train);
    ExpectMetricsLine(lines[e], e + 1, train);
  }
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 3u);
  EXPECT_EQ(m->training.checkpoint_version, first->checkpoint_version);
  EXPECT_GT(first->checkpoint_version, 0u);

  // Raising --epochs trains only the missing ones and appends their lines.
  auto more = TrainGraph(dir, Options(5));
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_TRUE(more->resumed);
  EXPECT_EQ(more->start_epoch, 3);
  EXPECT_EQ(more->start_round, 0u);
  ASSERT_EQ(more->epochs.size(), 2u);
  EXPECT_EQ(more->epochs[0].epoch, 4);
  EXPECT_EQ(more->epochs[1].epoch, 5);
  lines = MetricsLines(dir);
  ASSERT_EQ(lines.size(), 5u);
  ExpectMetricsLine(lines[3], 4, train);
  ExpectMetricsLine(lines[4], 5, train);

  // Nothing left to do: no epoch, no line, no new checkpoint.
  auto none = TrainGraph(dir, Options(5));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->epochs.empty());
  EXPECT_FALSE(none->stopped);
  EXPECT_EQ(none->checkpoint_version, more->checkpoint_version);
  EXPECT_EQ(MetricsLines(dir).size(), 5u);
}

// --eval-valid: by default the same sample of valid edges every epoch,
// ranked against every node, its size and interval in metrics.jsonl;
// sampled negatives on request, labelled.
TEST_F(TrainLoopTest, ValidationRanksASampleAgainstAllNodes) {
  EXPECT_EQ(TrainOptions{}.validation.negatives, 0u);
  const std::string dir = NewGraph(2);
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_GT(m->edges.valid, 100u);
  TrainOptions o = Options(2);
  o.validation.enabled = true;
  o.validation.max_edges = 100;
  auto summary = TrainGraph(dir, o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->epochs.size(), 2u);
  const std::string protocol =
      absl::StrCat("filtered ranking against all ", m->num_nodes, " nodes on a sample of 100 of ",
                   m->edges.valid, " edges (200 queries)");
  const std::vector<std::string> lines = MetricsLines(dir);
  ASSERT_EQ(lines.size(), 2u);
  for (int e = 0; e < 2; ++e) {
    const std::optional<EvalResult>& valid = summary->epochs[e].valid;
    ASSERT_TRUE(valid.has_value());
    EXPECT_EQ(valid->negatives, 0u);
    EXPECT_EQ(valid->edges, 100u);
    EXPECT_GT(valid->filtered.mrr_ci95, 0);
    EXPECT_EQ(DescribeProtocol(*valid), protocol);
    const nlohmann::json j = nlohmann::json::parse(lines[e]);
    EXPECT_DOUBLE_EQ(j.at("valid_mrr").get<double>(), valid->filtered.mrr);
    EXPECT_DOUBLE_EQ(j.at("valid_mrr_ci95").get<double>(), valid->filtered.mrr_ci95);
    EXPECT_EQ(j.at("valid_edges"), 100);
    EXPECT_EQ(j.at("valid_protocol"), protocol);
  }

  o.from_scratch = true;
  o.epochs = 1;
  o.validation.negatives = 50;
  summary = TrainGraph(dir, o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_TRUE(summary->epochs[0].valid.has_value());
  EXPECT_THAT(DescribeProtocol(*summary->epochs[0].valid),
              HasSubstr("against 50 sampled negatives (optimistic)"));

  o.validation.negatives = uint64_t{1} << 40;  // refused before training
  EXPECT_EQ(TrainGraph(dir, o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TrainLoopTest, FromScratchRestartsEpochCount) {
  const std::string dir = NewGraph(2);
  ASSERT_TRUE(TrainGraph(dir, Options(3)).ok());
  auto before = LoadSnapshot(dir);
  ASSERT_TRUE(before.ok()) << before.status();

  TrainOptions o = Options(1);
  o.from_scratch = true;
  auto scratch = TrainGraph(dir, o);
  ASSERT_TRUE(scratch.ok()) << scratch.status();
  EXPECT_FALSE(scratch->resumed);
  EXPECT_EQ(scratch->start_epoch, 0);
  ASSERT_EQ(scratch->epochs.size(), 1u);
  EXPECT_EQ(scratch->epochs[0].epoch, 1);
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 1u);
  auto after = LoadSnapshot(dir);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NE(before->partitions, after->partitions);

  // A plain run resumes from the restarted count.
  auto resumed = TrainGraph(dir, Options(2));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->resumed);
  EXPECT_EQ(resumed->start_epoch, 1);
  ASSERT_EQ(resumed->epochs.size(), 1u);
  EXPECT_EQ(resumed->epochs[0].epoch, 2);

  // --from-scratch may change the model.
  o.model.dim = 8;
  ASSERT_TRUE(TrainGraph(dir, o).ok());
  auto small = LoadSnapshot(dir);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->model.dim, 8);
  EXPECT_EQ(small->partitions[0].size(), m->partition_sizes[0] * 8);
}

TEST_F(TrainLoopTest, ResumeWithDifferentModelFailsNamingTheFlags) {
  const std::string dir = NewGraph(2);
  ASSERT_TRUE(TrainGraph(dir, Options(1)).ok());
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();

  TrainOptions o = Options(2);
  o.model.dim = 24;
  auto s = TrainGraph(dir, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--dim 16"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--from-scratch"));

  o = Options(2);
  o.model.op = Operator::kDiagonal;
  s = TrainGraph(dir, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--operator none"));

  o = Options(2);
  o.model.comparator = Comparator::kCos;
  s = TrainGraph(dir, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--comparator dot"));

  // The refused runs changed nothing.
  auto after = ManifestOf(dir);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->training.checkpoint_version, m->training.checkpoint_version);
  EXPECT_EQ(train_test::EpochsDone(*after), 1u);
  EXPECT_EQ(MetricsLines(dir).size(), 1u);
  EXPECT_TRUE(LoadSnapshot(dir).ok());
}

TEST_F(TrainLoopTest, ResumeMidEpochNeedsTheSameSchedule) {
  const std::string dir = NewGraph(4);
  TrainOptions o = BufferedOptions(1);
  o.hooks.stop_after_buckets = 5;
  auto stopped = TrainGraph(dir, o);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_TRUE(stopped->stopped);
  EXPECT_TRUE(stopped->epochs.empty());
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 0u);
  ASSERT_GT(m->training.checkpoint_version, 0u);

  o.hooks.stop_after_buckets = 0;
  TrainOptions beta = o;
  beta.schedule.bucket_order = BucketOrderKind::kBeta;
  auto s = TrainGraph(dir, beta);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--bucket-order"));

  TrainOptions other_seed = o;
  other_seed.seed = o.seed + 1;
  s = TrainGraph(dir, other_seed);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();

  TrainOptions bigger_buffer = o;
  bigger_buffer.schedule.buffer_partitions = 3;
  s = TrainGraph(dir, bigger_buffer);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();

  auto same = ManifestOf(dir);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->training.checkpoint_version, m->training.checkpoint_version);

  // The same schedule resumes mid-epoch and finishes it.
  auto resumed = TrainGraph(dir, o);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->resumed);
  EXPECT_EQ(resumed->start_epoch, 0);
  EXPECT_GT(resumed->start_round, 0u);
  ASSERT_EQ(resumed->epochs.size(), 1u);
  EXPECT_GT(resumed->epochs[0].edges, 0u);
  EXPECT_LT(resumed->epochs[0].edges, TrainEdges(dir));

  // At an epoch boundary the order may change.
  beta.epochs = 2;
  auto next = TrainGraph(dir, beta);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_EQ(next->epochs.size(), 1u);
  EXPECT_EQ(next->epochs[0].edges, TrainEdges(dir));
}

// A stopped run (as if killed) leaves a manifest whose every table and blob
// exists: none before its first checkpoint, the last one after it. With 4
// partitions and a buffer of 2, the early mid-epoch checkpoints come before
// some partitions were ever loaded.
// Every partition in memory: each epoch's checkpoint but the last is
// copied and written beside the next epoch. A stop in epoch 3 commits
// epoch 2's (written beside) and leaves two metrics lines; resuming ends
// bit-identical to an uninterrupted run, so the copy held exactly epoch 2's
// model.
TEST_F(TrainLoopTest, CheckpointsWrittenBesideTheNextEpochResumeBitIdentical) {
  TrainOptions o = Options(3);
  o.model.op = Operator::kTranslation;  // relation parameters and their state too
  o.pipeline.deterministic = true;
  const std::string whole = NewGraph(2);
  auto uninterrupted = TrainGraph(whole, o);
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status();
  ASSERT_EQ(uninterrupted->epochs.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(uninterrupted->epochs[e].checkpoint_beside, e < 2) << "epoch " << e + 1;
    EXPECT_EQ(uninterrupted->epochs[e].checkpoint_version, uint64_t(e + 1)) << "epoch " << e + 1;
  }
  const std::vector<std::string> whole_lines = MetricsLines(whole);
  ASSERT_EQ(whole_lines.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    ExpectMetricsLine(whole_lines[e], e + 1, TrainEdges(whole));
    EXPECT_EQ(nlohmann::json::parse(whole_lines[e]).value("checkpoint_beside", !(e < 2)), e < 2);
  }

  const std::string dir = NewGraph(2);
  o.hooks.stop_after_buckets = 9;  // 4 buckets an epoch: in epoch 3
  auto stopped = TrainGraph(dir, o);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_TRUE(stopped->stopped);
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 2u);
  EXPECT_EQ(m->training.checkpoint_version, 2u);
  EXPECT_EQ(MetricsLines(dir).size(), 2u);

  o.hooks.stop_after_buckets = 0;
  auto resumed = TrainGraph(dir, o);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->start_epoch, 2);
  EXPECT_EQ(MetricsLines(dir).size(), 3u);
  auto a = LoadSnapshot(whole);
  auto b = LoadSnapshot(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  train_test::ExpectBitIdentical(*a, *b);
}

TEST_F(TrainLoopTest, StoppedRunLeavesLoadableCheckpoint) {
  for (uint64_t stop : {1, 2, 5, 9, 15}) {
    SCOPED_TRACE(absl::StrCat("stop after ", stop, " buckets"));
    const std::string dir = NewGraph(4);
    TrainOptions o = BufferedOptions(2);
    o.hooks.stop_after_buckets = stop;
    auto s = TrainGraph(dir, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s->stopped);
    auto m = ManifestOf(dir);
    ASSERT_TRUE(m.ok()) << m.status();
    if (m->training.checkpoint_version == 0) {  // stopped before any checkpoint
      EXPECT_EQ(stop, 1u);
      auto g = Graph::Open(dir);
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ(LoadStoredModel(**g).status().code(), absl::StatusCode::kFailedPrecondition);
      continue;
    }
    auto snapshot = LoadSnapshot(dir);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  }
}

TEST_F(TrainLoopTest, StopWithoutCheckpointLeavesPreviousCheckpointIntact) {
  const std::string dir = NewGraph(4);
  TrainOptions o = Options(1);
  o.schedule.buffer_partitions = 2;
  o.hooks.stop_after_buckets = 3;  // before any checkpoint
  auto s = TrainGraph(dir, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->stopped);
  {
    auto g = Graph::Open(dir);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(LoadStoredModel(**g).status().code(), absl::StatusCode::kFailedPrecondition);
  }

  o.hooks.stop_after_buckets = 0;
  ASSERT_TRUE(TrainGraph(dir, o).ok());
  auto epoch1 = LoadSnapshot(dir);
  ASSERT_TRUE(epoch1.ok()) << epoch1.status();

  // Stopped half-way through epoch 2 without a checkpoint: partitions it
  // evicted were written, but the manifest still names epoch 1's model.
  o.epochs = 2;
  o.hooks.stop_after_buckets = 9;
  s = TrainGraph(dir, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->stopped);
  auto still = LoadSnapshot(dir);
  ASSERT_TRUE(still.ok()) << still.status();
  train_test::ExpectBitIdentical(*epoch1, *still);
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 1u);
}

// Stops at several points (mid-epoch, between checkpoints, across an epoch
// boundary), resuming each time, end bit-identical to an uninterrupted run
// with the same flags. Translation gives the relations parameters and
// Adagrad state, which must survive the checkpoint too; so must a
// reciprocal model's inverse relations (trained with N3).
class StoppedAndResumedTest : public TrainLoopTest, public ::testing::WithParamInterface<bool> {};

TEST_P(StoppedAndResumedTest, IsBitIdentical) {
  TrainOptions o = BufferedOptions(2);
  o.model.op = Operator::kTranslation;
  if (GetParam()) {
    o.model.op = Operator::kComplexDiagonal;
    o.model.reciprocal = true;
    o.model.regularizer = Regularizer::kN3;
    o.model.reg_weight = 0.01f;
  }
  o.schedule.checkpoint_every = 3;
  o.pipeline.deterministic = true;
  o.devices.threads = 1;

  const std::string ref_dir = NewGraph(4);
  auto ref = TrainGraph(ref_dir, o);
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_EQ(ref->epochs.size(), 2u);
  auto expected = LoadSnapshot(ref_dir);
  ASSERT_TRUE(expected.ok()) << expected.status();

  // Checkpoints themselves do not perturb training.
  {
    const std::string dir = NewGraph(4);
    TrainOptions plain = o;
    plain.schedule.checkpoint_every = 0;
    ASSERT_TRUE(TrainGraph(dir, plain).ok());
    auto got = LoadSnapshot(dir);
    ASSERT_TRUE(got.ok()) << got.status();
    train_test::ExpectBitIdentical(*expected, *got);
  }

  const std::string dir = NewGraph(4);
  // 16 buckets per epoch. Stop after 5 (checkpoint after bucket 3), resume
  // at 3 and stop 14 later (bucket 1 of epoch 2), then finish.
  int runs = 0;
  for (uint64_t stop : {5, 14, 0}) {
    TrainOptions step = o;
    step.hooks.stop_after_buckets = stop;
    auto s = TrainGraph(dir, step);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->stopped, stop != 0);
    EXPECT_EQ(s->resumed, runs > 0);
    ++runs;
    auto snapshot = LoadSnapshot(dir);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  }
  auto got = LoadSnapshot(dir);
  ASSERT_TRUE(got.ok()) << got.status();
  train_test::ExpectBitIdentical(*expected, *got);
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 2u);
  EXPECT_EQ(MetricsLines(dir).size(), 2u);
  EXPECT_EQ(got->model.reciprocal, GetParam());
  EXPECT_EQ(got->relation_params.size(), size_t{m->relations.size()} * RelationRecordSize(o.model));
}

INSTANTIATE_TEST_SUITE_P(Models, StoppedAndResumedTest, ::testing::Bool(), [](const auto& info) {
  return info.param ? "ReciprocalComplexN3" : "Translation";
});

// Two slots of one CPU trainer read and step the same relation parameters
// without a lock (Hogwild, as the rows; cpu_trainer.cc): the suite's SBM
// with five relations, mixed chunks of every relation, trains to finite
// parameters that moved from the identity, the loss falls, and each epoch's
// line times its checkpoint. Under ThreadSanitizer (tools/test.sh) any race
// on the relations outside the two named functions fails it.
TEST_F(TrainLoopTest, TwoSlotsStepSharedRelationsWithoutALock) {
  const std::string file = tmp_->Sub("sbm-relations.tsv");
  {
    std::ifstream in(edges_);
    std::ofstream out(file);
    std::string src, dst;
    for (int k = 0; in >> src >> dst; ++k) out << src << "\tr" << k % 5 << "\t" << dst << "\n";
  }
  const std::string dir = tmp_->Sub("relations");
  auto imported = train_test::ImportEdges(dir, {file}, 1);
  ASSERT_TRUE(imported.ok()) << imported.status();
  TrainOptions o = Options(2);
  o.model.op = Operator::kComplexDiagonal;
  o.pipeline.deterministic = false;
  o.devices.threads = 2;
  o.devices.trainers = 1;
  auto run = TrainGraph(dir, o);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->epochs.size(), 2u);
  EXPECT_LT(run->epochs[1].loss, run->epochs[0].loss);
  for (const EpochStats& e : run->epochs) EXPECT_GT(e.checkpoint_seconds, 0) << e.epoch;
  for (const std::string& line : MetricsLines(dir)) {
    EXPECT_GT(nlohmann::json::parse(line).value("checkpoint_seconds", 0.0), 0) << line;
  }
  auto got = LoadSnapshot(dir);
  ASSERT_TRUE(got.ok()) << got.status();
  const int p = RelationRecordSize(o.model);
  ASSERT_EQ(got->relation_params.size(), size_t{5} * p);
  std::vector<float> identity(p);
  InitRelationRecord(o.model, identity.data());
  for (int r = 0; r < 5; ++r) {
    const float* w = got->relation_params.data() + size_t(r) * p;
    EXPECT_TRUE(std::all_of(w, w + p, [](float x) { return std::isfinite(x); })) << "r" << r;
    EXPECT_NE(std::memcmp(w, identity.data(), sizeof(float) * p), 0)
        << "r" << r << " never stepped";
  }
}

// Reciprocal relations change the model: a run with the other value is
// refused, naming the checkpoint's, and changes nothing; the regularizer
// is part of the objective only and may change between runs.
TEST_F(TrainLoopTest, ReciprocalIsPartOfTheModel) {
  const std::string dir = NewGraph(2);
  TrainOptions o = Options(1);
  o.model.op = Operator::kDiagonal;
  o.model.reciprocal = true;
  ASSERT_TRUE(TrainGraph(dir, o).ok());
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();

  TrainOptions plain = o;
  plain.epochs = 2;
  plain.model.reciprocal = false;
  auto s = TrainGraph(dir, plain);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--reciprocal=true"));
  auto after = ManifestOf(dir);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->training.checkpoint_version, m->training.checkpoint_version);

  TrainOptions regularized = o;
  regularized.epochs = 2;
  regularized.model.regularizer = Regularizer::kN3;
  s = TrainGraph(dir, regularized);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->resumed);
  auto snapshot = LoadSnapshot(dir);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_TRUE(snapshot->model.reciprocal);
  EXPECT_EQ(snapshot->model.regularizer, Regularizer::kN3);

  // And the other way round: a plain checkpoint refuses a reciprocal run.
  const std::string other = NewGraph(2);
  ASSERT_TRUE(TrainGraph(other, plain).ok());
  s = TrainGraph(other, regularized);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--reciprocal=false"));
}

// Rows of each partition of the stored model still exactly at their seeded
// initial values (train/model/init.h at `options`' init scale and seed):
// rows that training never updated.
absl::StatusOr<std::vector<uint64_t>> RowsAtInit(const std::string& dir,
                                                 const TrainOptions& options) {
  ASSIGN_OR_RETURN(ModelSnapshot s, LoadSnapshot(dir));
  ASSIGN_OR_RETURN(Manifest m, ManifestOf(dir));
  const int dim = s.model.dim;
  std::vector<uint64_t> at_init;
  for (uint32_t p = 0; p < s.partitions.size(); ++p) {
    const std::vector<float>& rows = s.partitions[p];
    const int64_t n = static_cast<int64_t>(rows.size() / dim);
    std::vector<float> init(rows.size());
    InitEmbeddings(InitDistribution::kNormal, options.optimizer.init_scale, options.seed,
                   static_cast<int64_t>(m.PartitionBase(p)), n, dim, init.data());
    uint64_t same = 0;
    for (int64_t r = 0; r < n; ++r) {
      same += std::memcmp(rows.data() + r * dim, init.data() + r * dim, dim * sizeof(float)) == 0;
    }
    at_init.push_back(same);
  }
  return at_init;
}

// Every node of these graphs has train edges, so training moves every
// entity row away from its seeded init; a trainer that updated only the
// relation parameters would leave them there.
void ExpectEveryEntityRowTrained(const std::string& dir, const TrainOptions& o) {
  auto at_init = RowsAtInit(dir, o);
  ASSERT_TRUE(at_init.ok()) << at_init.status();
  for (size_t p = 0; p < at_init->size(); ++p) {
    EXPECT_EQ((*at_init)[p], 0u) << "rows of partition " << p << " never trained";
  }
}

// Every bucket order trains every train edge once per epoch, through a
// buffer smaller than the partition count.
class TrainBucketOrderTest
    : public TrainLoopTest,
      public ::testing::WithParamInterface<std::tuple<BucketOrderKind, uint32_t>> {};

TEST_P(TrainBucketOrderTest, TrainsEveryEdgeEachEpoch) {
  const auto [order, buffer] = GetParam();
  const std::string dir = NewGraph(4);
  TrainOptions o = Options(2);
  o.schedule.bucket_order = order;
  o.schedule.buffer_partitions = buffer;
  auto s = TrainGraph(dir, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->epochs.size(), 2u);
  for (const EpochStats& e : s->epochs) {
    EXPECT_EQ(e.edges, TrainEdges(dir)) << "epoch " << e.epoch;
    // Epoch 1 loads all 4 partitions; later ones at least one (buffer < 4).
    EXPECT_GE(e.partition_loads, e.epoch == 1 ? 4u : 1u) << "epoch " << e.epoch;
  }
  auto snapshot = LoadSnapshot(dir);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  for (const auto& rows : snapshot->partitions) {
    EXPECT_TRUE(train_test::AllFinite(rows));
  }
  ExpectEveryEntityRowTrained(dir, o);
}

INSTANTIATE_TEST_SUITE_P(
    TrainOrders, TrainBucketOrderTest,
    ::testing::Combine(::testing::Values(BucketOrderKind::kInsideOut, BucketOrderKind::kBeta,
                                         BucketOrderKind::kSequential, BucketOrderKind::kRandom),
                       ::testing::Values(2u, 3u)),
    [](const auto& info) {
      std::string name(BucketOrderName(std::get<0>(info.param)));
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return absl::StrCat(name, "_buffer", std::get<1>(info.param));
    });

// Every operator x comparator trains an epoch of a 3-relation graph (the
// 3-column input) to finite embeddings and relation parameters, and so
// does every reciprocal one (both halves of each relation record trained).
void TrainOneEpochOfThreeRelations(Operator op, Comparator cmp, bool reciprocal) {
  TempDir tmp;
  std::mt19937 rng(5);
  std::string text;
  for (int i = 0; i < 1500; ++i) {
    const int src = i < 200 ? i : static_cast<int>(rng() % 200);
    const int rel = static_cast<int>(rng() % 3);
    const int dst = static_cast<int>((src * 13 + rel * 7 + rng() % 5) % 200);
    absl::StrAppend(&text, "n", src, "\tr", rel, "\tn", dst, "\n");
  }
  const std::string file = tmp.Sub("edges.tsv");
  train_test::WriteWholeFile(file, text);
  const std::string dir = tmp.Sub("g");
  auto imported = ImportEdges(dir, {file}, 2, /*with_splits=*/false);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->relations, 3u);

  TrainOptions o = train_test::SmallOptions(1);
  o.model.op = op;
  o.model.comparator = cmp;
  o.model.dim = 8;
  o.model.reciprocal = reciprocal;
  o.schedule.buffer_partitions = 2;
  auto s = TrainGraph(dir, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->epochs.size(), 1u);
  EXPECT_EQ(s->epochs[0].edges, imported->edges.train);
  EXPECT_TRUE(std::isfinite(s->epochs[0].loss)) << s->epochs[0].loss;

  auto snapshot = LoadSnapshot(dir);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->model.op, op);
  EXPECT_EQ(snapshot->model.comparator, cmp);
  for (const auto& rows : snapshot->partitions) {
    EXPECT_TRUE(train_test::AllFinite(rows));
  }
  ExpectEveryEntityRowTrained(dir, o);
  const int size = RelationParamSize(op, o.model.dim);
  const int halves = reciprocal ? 2 : 1;
  ASSERT_EQ(snapshot->relation_params.size(), size_t{3} * size * halves);
  EXPECT_TRUE(train_test::AllFinite(snapshot->relation_params));
  if (size > 0) {  // trained away from the identity
    std::vector<float> identity(size);
    InitRelationParams(op, o.model.dim, identity.data());
    for (int h = 0; h < 3 * halves; ++h) {
      EXPECT_NE(std::vector<float>(snapshot->relation_params.begin() + h * size,
                                   snapshot->relation_params.begin() + (h + 1) * size),
                identity)
          << "relation " << h / halves << (h % halves == 1 ? "'s inverse" : "")
          << " was not trained";
    }
  }
}

class TrainModelMatrixTest : public ::testing::TestWithParam<std::tuple<Operator, Comparator>> {};

TEST_P(TrainModelMatrixTest, TrainsOneEpochToFiniteValues) {
  const auto [op, cmp] = GetParam();
  TrainOneEpochOfThreeRelations(op, cmp, false);
}

// Reciprocal: every operator with parameters (none has no inverse).
class ReciprocalModelMatrixTest
    : public ::testing::TestWithParam<std::tuple<Operator, Comparator>> {};

TEST_P(ReciprocalModelMatrixTest, TrainsOneEpochToFiniteValues) {
  const auto [op, cmp] = GetParam();
  TrainOneEpochOfThreeRelations(op, cmp, true);
}

INSTANTIATE_TEST_SUITE_P(
    TrainModels, ReciprocalModelMatrixTest,
    ::testing::Combine(::testing::Values(Operator::kTranslation, Operator::kDiagonal,
                                         Operator::kComplexDiagonal),
                       ::testing::Values(Comparator::kDot, Comparator::kCos, Comparator::kL2)),
    [](const auto& info) {
      return absl::StrCat(std::string(OperatorName(std::get<0>(info.param))), "_",
                          std::string(ComparatorName(std::get<1>(info.param))));
    });

INSTANTIATE_TEST_SUITE_P(
    TrainModels, TrainModelMatrixTest,
    ::testing::Combine(::testing::Values(Operator::kNone, Operator::kTranslation,
                                         Operator::kDiagonal, Operator::kComplexDiagonal),
                       ::testing::Values(Comparator::kDot, Comparator::kCos, Comparator::kL2)),
    [](const auto& info) {
      return absl::StrCat(std::string(OperatorName(std::get<0>(info.param))), "_",
                          std::string(ComparatorName(std::get<1>(info.param))));
    });

}  // namespace
}  // namespace ember
