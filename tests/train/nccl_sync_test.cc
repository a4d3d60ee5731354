// The NCCL sync (parameter_sync.h, MakeNcclSync) on the host communicator:
// it must merge relation parameters and feature-table changes as the
// in-process sync does, pass a lone trainer's values through, and refuse a
// trainer count that does not match its ranks. The real NCCL path runs in
// cuda_trainer_test.cc (CudaNcclTest), skipping without a GPU.
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "train/device/device_communicator.h"
#include "train/schedule/parameter_sync.h"

namespace ember {
namespace {

// A trainer that holds relation parameters and, like the device trainer,
// its own copy of the feature table, changed by Perturb.
class CopyTrainer final : public Trainer {
 public:
  CopyTrainer(const RelationParams& relations, const FeatureTable& table)
      : relations_(relations), copy_(table), base_(table) {}
  std::string device() const override { return "copy"; }
  int slots() const override { return 1; }
  absl::StatusOr<double> TrainBatch(const BucketTask&, const BatchRange&,
                                    std::span<const Edge>) override {
    return 0.0;
  }
  RelationParams& relations() override { return relations_; }
  RowHome Home(uint32_t) const override { return RowHome::kHost; }
  absl::Status SyncToHost(PartitionData*) override { return absl::OkStatus(); }
  void Release(uint32_t) override {}
  absl::Status MergeFeatures(FeatureTable* table) override {
    for (size_t i = 0; i < copy_.embeddings.size(); ++i) {
      float& m = table->embeddings[i];
      m = m == base_.embeddings[i] ? copy_.embeddings[i] : m + (copy_.embeddings[i] - base_.embeddings[i]);
    }
    for (size_t i = 0; i < copy_.optimizer.size(); ++i) {
      float& m = table->optimizer[i];
      m = m == base_.optimizer[i] ? copy_.optimizer[i] : m + (copy_.optimizer[i] - base_.optimizer[i]);
    }
    return absl::OkStatus();
  }
  absl::Status RefreshFeatures(const FeatureTable& table) override {
    copy_ = base_ = table;
    return absl::OkStatus();
  }
  // Changes every parameter, state entry and feature value by a random step.
  void Perturb(std::mt19937& rng) {
    std::uniform_real_distribution<float> step(-0.1f, 0.1f);
    for (float& x : relations_.params) x += step(rng);
    for (float& x : relations_.state) x += std::fabs(step(rng));
    for (float& x : copy_.embeddings) x += step(rng);
    for (float& x : copy_.optimizer) x += std::fabs(step(rng));
  }
  const FeatureTable& copy() const { return copy_; }

 private:
  RelationParams relations_;
  FeatureTable copy_, base_;
};

struct Trainers {
  RelationParams relations;
  FeatureTable table;
  std::vector<std::unique_ptr<CopyTrainer>> trainers;
  std::vector<Trainer*> views;
  Trainers(int n, uint64_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    relations.num_relations = 3;
    relations.param_size = 4;
    for (int i = 0; i < 12; ++i) relations.params.push_back(normal(rng));
    relations.state.assign(12, 0.5f);
    table.rows = 5;
    table.dim = 4;
    for (int i = 0; i < 20; ++i) table.embeddings.push_back(normal(rng));
    table.optimizer.assign(5, 0.25f);
    for (int t = 0; t < n; ++t) {
      trainers.push_back(std::make_unique<CopyTrainer>(relations, table));
      trainers.back()->Perturb(rng);
      views.push_back(trainers.back().get());
    }
  }
};

void ExpectNear(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f) << i;
}

TEST(NcclSyncTest, MergesAsTheInProcessSyncDoes) {
  Trainers nccl(3, 11), in_process(3, 11);
  std::unique_ptr<ParameterSync> sync = MakeNcclSync(MakeHostCommunicator(3));
  std::unique_ptr<ParameterSync> reference = MakeInProcessSync(3);
  EXPECT_TRUE(sync->SyncsEveryRound());
  ASSERT_TRUE(sync->SyncRelations(nccl.views, &nccl.relations).ok());
  ASSERT_TRUE(sync->SyncFeatures(nccl.views, &nccl.table).ok());
  ASSERT_TRUE(reference->SyncRelations(in_process.views, &in_process.relations).ok());
  ASSERT_TRUE(reference->SyncFeatures(in_process.views, &in_process.table).ok());
  ExpectNear(nccl.relations.params, in_process.relations.params);
  ExpectNear(nccl.relations.state, in_process.relations.state);
  ExpectNear(nccl.table.embeddings, in_process.table.embeddings);
  ExpectNear(nccl.table.optimizer, in_process.table.optimizer);
  // Every trainer holds the result, and the merge moved the values.
  for (Trainer* t : nccl.views) EXPECT_EQ(t->relations().params, nccl.relations.params);
  for (auto& t : nccl.trainers) EXPECT_EQ(t->copy().embeddings, nccl.table.embeddings);
  const Trainers before(3, 11);
  EXPECT_NE(nccl.relations.params, before.relations.params);
  EXPECT_NE(nccl.table.embeddings, before.table.embeddings);
}

TEST(NcclSyncTest, PassesALoneTrainersValuesThrough) {
  Trainers one(1, 5);
  const std::vector<float> params = one.trainers[0]->relations().params;
  const std::vector<float> rows = one.trainers[0]->copy().embeddings;
  std::unique_ptr<ParameterSync> sync = MakeNcclSync(MakeHostCommunicator(1));
  ASSERT_TRUE(sync->SyncRelations(one.views, &one.relations).ok());
  ASSERT_TRUE(sync->SyncFeatures(one.views, &one.table).ok());
  EXPECT_EQ(one.relations.params, params);
  EXPECT_EQ(one.table.embeddings, rows);
}

TEST(NcclSyncTest, RefusesTrainersThatAreNotItsRanks) {
  Trainers two(2, 3);
  std::unique_ptr<ParameterSync> sync = MakeNcclSync(MakeHostCommunicator(3));
  const absl::Status s = sync->SyncRelations(two.views, &two.relations);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("2 trainers for 3 ranks"), std::string::npos) << s;
}

TEST(NcclSyncTest, HostCommunicatorSumsEveryRank) {
  std::unique_ptr<DeviceCommunicator> comm = MakeHostCommunicator(3);
  std::vector<float> a{1, 2}, b{10, 20}, c{100, 200};
  float* data[] = {a.data(), b.data(), c.data()};
  ASSERT_EQ(comm->AllReduceSum(data, 2), "");
  for (const auto& v : {a, b, c}) EXPECT_EQ(v, (std::vector<float>{111, 222}));
}

}  // namespace
}  // namespace ember
