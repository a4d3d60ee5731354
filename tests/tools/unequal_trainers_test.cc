// Trainers of unequal speed: the benchmark-only slowed trainer
// (tools/bench/hooks/slowed_trainer.h), plugged in through the trainer
// factory's wrap hook, and how each batching mode deals batches to a slow
// trainer beside a fast one.
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/train/train_test_util.h"
#include "tools/bench/hooks/slowed_trainer.h"
#include "train/trainers/trainer_factory.h"

namespace ember {
namespace {

TEST(SlowedTrainerTest, ParsesIndexAndFactor) {
  auto s = ParseTrainerSlowdown("1:3");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->trainer, 1);
  EXPECT_EQ(s->factor, 3.0);
  s = ParseTrainerSlowdown("0:2.5");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->trainer, 0);
  EXPECT_EQ(s->factor, 2.5);
  for (const char* bad :
       {"", "1", "1:", ":3", "-1:3", "1:0.5", "1:0", "1:inf", "1:nan", "x:3", "1:3:4", "1:3x"}) {
    const absl::Status st = ParseTrainerSlowdown(bad).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find(absl::StrCat("'", bad, "'")), std::string::npos) << st;
  }
}

TEST(SlowedTrainerTest, WrapRejectsABadFactor) {
  EXPECT_EQ(SlowTrainerWrap({.trainer = 0, .factor = 0.5}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SlowTrainerWrap({.trainer = -1, .factor = 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto wrap = SlowTrainerWrap({.trainer = 0, .factor = 1.5});
  EXPECT_TRUE(wrap.ok()) << wrap.status();
}

// TrainOptions with trainer `trainer` slowed by `factor`.
void SlowTrainer(TrainOptions& o, int trainer, double factor) {
  auto wrap = SlowTrainerWrap({.trainer = trainer, .factor = factor});
  ASSERT_TRUE(wrap.ok()) << wrap.status();
  o.bench.wrap_trainer = *std::move(wrap);
}

// A trainer that records what reaches it.
class StubTrainer final : public Trainer {
 public:
  std::string device() const override { return "stub"; }
  int slots() const override { return 3; }
  RelationParams& relations() override { return relations_; }
  RowHome Home(uint32_t) const override { return RowHome::kDevice; }
  absl::Status SyncToHost(PartitionData* host) override {
    synced = host->partition;
    return absl::DataLossError("stub sync");
  }
  void Release(uint32_t p) override { released = p; }
  size_t device_peak_bytes() const override { return 42; }
  absl::Status MergeFeatures(FeatureTable* table) override {
    merged = table;
    return absl::OkStatus();
  }
  absl::Status RefreshFeatures(const FeatureTable& table) override {
    refreshed = &table;
    return absl::OkStatus();
  }
  absl::StatusOr<double> TrainBatch(const BucketTask&, const BatchRange& b,
                                    std::span<const Edge> edges) override {
    last_index = b.index;
    last_edges = edges.size();
    if (b.index == 99) return absl::InternalError("stub batch 99");
    return 2.5;
  }
  uint32_t synced = 0, released = 0;
  const FeatureTable* merged = nullptr;
  const FeatureTable* refreshed = nullptr;
  uint64_t last_index = 0;
  size_t last_edges = 0;

 private:
  RelationParams relations_;
};

TEST(SlowedTrainerTest, ForwardsEverythingToTheInnerTrainer) {
  auto owned = std::make_unique<StubTrainer>();
  StubTrainer* stub = owned.get();
  std::unique_ptr<Trainer> slowed = MakeSlowedTrainer(std::move(owned), 3);
  EXPECT_EQ(slowed->device(), "stub (slowed 3x)");
  EXPECT_EQ(slowed->slots(), 3);
  EXPECT_EQ(&slowed->relations(), &stub->relations());
  EXPECT_EQ(slowed->Home(4), RowHome::kDevice);
  PartitionData host;
  host.partition = 7;
  EXPECT_EQ(slowed->SyncToHost(&host).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(stub->synced, 7u);
  slowed->Release(5);
  EXPECT_EQ(stub->released, 5u);
  FeatureTable table;
  EXPECT_TRUE(slowed->MergeFeatures(&table).ok());
  EXPECT_TRUE(slowed->RefreshFeatures(table).ok());
  EXPECT_EQ(stub->merged, &table);
  EXPECT_EQ(stub->refreshed, &table);
  EXPECT_EQ(slowed->device_peak_bytes(), 42u);

  const std::vector<Edge> edges(4);
  BucketTask task;
  BatchRange b;
  b.index = 12;
  auto loss = slowed->TrainBatch(task, b, edges);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_EQ(*loss, 2.5);
  EXPECT_EQ(stub->last_index, 12u);
  EXPECT_EQ(stub->last_edges, 4u);
  b.index = 99;
  EXPECT_EQ(slowed->TrainBatch(task, b, edges).status().code(), absl::StatusCode::kInternal);
}

TEST(SlowedTrainerTest, FactoryWrapsTheNamedTrainerOnly) {
  TrainOptions o;
  o.devices.threads = 2;
  o.devices.trainers = 2;
  SlowTrainer(o, 1, 3);
  auto d = ResolveDevices(o);
  ASSERT_TRUE(d.ok()) << d.status();
  RelationParams r;
  auto t = MakeTrainers(*d, o, r, nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0]->device(), "cpu");
  EXPECT_EQ((*t)[1]->device(), "cpu (slowed 3x)");

  SlowTrainer(o, 2, 3);
  auto beyond = MakeTrainers(*d, o, r, nullptr);
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(beyond.status().message().find("--bench-slow-trainer 2"), std::string::npos)
      << beyond.status();
}

// Two CPU trainers on one partition, trainer 1 slowed 8x. The factor is
// large so that the counts cannot flake on a busy machine; no time is
// asserted.
class UnequalDealingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new train_test::TempDir();
    const std::string edges = tmp_->Sub("sbm.tsv");
    train_test::WriteSbmEdges(train_test::StandardSbm(), edges);
    graphs_ = new train_test::GraphFactory(tmp_->Sub("graphs"), {edges});
  }
  static void TearDownTestSuite() {
    delete graphs_;
    delete tmp_;
  }
  // One epoch of `batching`; checks that the per-trainer counts add up.
  static EpochStats TrainOneEpoch(BatchingKind batching) {
    const std::string dir = graphs_->New(1);
    TrainOptions o = train_test::SmallOptions(1);
    o.pipeline.batch_size = 100;
    o.pipeline.batching = batching;
    o.devices.threads = 2;
    o.devices.trainers = 2;
    SlowTrainer(o, 1, 8);
    auto summary = TrainGraph(dir, o);
    EXPECT_TRUE(summary.ok()) << summary.status();
    if (!summary.ok() || summary->epochs.size() != 1) return EpochStats();
    const EpochStats& e = summary->epochs[0];
    EXPECT_EQ(e.batches_per_trainer.size(), 2u);
    if (e.batches_per_trainer.size() != 2) return EpochStats();
    EXPECT_EQ(e.batches_per_trainer[0] + e.batches_per_trainer[1], e.batches);
    EXPECT_GT(e.batches, 100u);
    return e;
  }
  static train_test::TempDir* tmp_;
  static train_test::GraphFactory* graphs_;
};
train_test::TempDir* UnequalDealingTest::tmp_ = nullptr;
train_test::GraphFactory* UnequalDealingTest::graphs_ = nullptr;

// Fixed batching's static split gives the slow trainer an equal share.
TEST_F(UnequalDealingTest, FixedGivesTheSlowTrainerAnEqualShare) {
  const EpochStats e = TrainOneEpoch(BatchingKind::kFixed);
  ASSERT_FALSE(e.batches_per_trainer.empty());
  const uint64_t fast = e.batches_per_trainer[0], slow = e.batches_per_trainer[1];
  EXPECT_LE(std::llabs(static_cast<long long>(fast) - static_cast<long long>(slow)), 1)
      << fast << " vs " << slow;
}

// Variance-aware batching deals to whichever trainer is free, so the slow
// one trains fewer batches (about 1 in 9 at 8x; asserted: under half the
// fast one's).
TEST_F(UnequalDealingTest, VarianceAwareGivesTheSlowTrainerFewer) {
  const EpochStats e = TrainOneEpoch(BatchingKind::kVarianceAware);
  ASSERT_FALSE(e.batches_per_trainer.empty());
  const uint64_t fast = e.batches_per_trainer[0], slow = e.batches_per_trainer[1];
  EXPECT_LT(2 * slow, fast) << fast << " vs " << slow;
  const nlohmann::json line = nlohmann::json::parse(EpochJsonLine(e));
  EXPECT_EQ(line.at("batches_per_trainer"), nlohmann::json::array({fast, slow}));
}

}  // namespace
}  // namespace ember
