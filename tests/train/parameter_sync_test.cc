// The in-process parameter sync (train/schedule/parameter_sync.h): several
// trainers' relation changes since the last sync are summed into the global
// parameters and state, and every trainer takes the result.
#include "train/schedule/parameter_sync.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

// A trainer that only holds a copy of the relation parameters.
class RelationsOnlyTrainer final : public Trainer {
 public:
  explicit RelationsOnlyTrainer(RelationParams r) : relations_(std::move(r)) {}
  std::string device() const override { return "test"; }
  int slots() const override { return 1; }
  absl::StatusOr<double> TrainBatch(const BucketTask&, const BatchRange&,
                                    std::span<const Edge>) override {
    return absl::UnimplementedError("not a training trainer");
  }
  RelationParams& relations() override { return relations_; }
  RowHome Home(uint32_t) const override { return RowHome::kHost; }
  absl::Status SyncToHost(PartitionData*) override { return absl::OkStatus(); }
  void Release(uint32_t) override {}

 private:
  RelationParams relations_;
};

RelationParams Start() {
  RelationParams r;
  r.num_relations = 2;
  r.param_size = 2;
  r.params = {1.0f, 2.0f, 3.0f, 4.0f};
  r.state = {0.5f, 0.5f, 0.5f, 0.5f};
  return r;
}

// Trainer a changes relation 0, trainer b relation 1 and both change the
// last parameter: the merge keeps each change and adds the overlapping ones.
TEST(InProcessSyncTest, SumsEveryTrainersRelationChangesAndHandsEveryoneTheResult) {
  RelationParams global = Start();
  RelationsOnlyTrainer a(global), b(global), c(global);
  a.relations().params[0] += 1.0f;
  a.relations().params[3] += 0.25f;
  a.relations().state[0] += 2.0f;
  b.relations().params[2] -= 1.0f;
  b.relations().params[3] += 0.5f;
  b.relations().state[3] += 4.0f;
  // c trained nothing this stretch.
  auto sync = MakeInProcessSync(3);
  EXPECT_TRUE(sync->SyncsEveryRound());
  std::vector<Trainer*> trainers = {&a, &b, &c};
  ASSERT_TRUE(sync->SyncRelations(trainers, &global).ok());

  EXPECT_EQ(global.params, (std::vector<float>{2.0f, 2.0f, 2.0f, 4.75f}));
  EXPECT_EQ(global.state, (std::vector<float>{2.5f, 0.5f, 0.5f, 4.5f}));
  for (Trainer* t : trainers) {
    EXPECT_EQ(t->relations().params, global.params) << "a trainer kept its own copy";
    EXPECT_EQ(t->relations().state, global.state) << "a trainer kept its own state";
  }

  // The next stretch merges changes since this sync, not since the start.
  b.relations().params[1] += 1.0f;
  ASSERT_TRUE(sync->SyncRelations(trainers, &global).ok());
  EXPECT_EQ(global.params, (std::vector<float>{2.0f, 3.0f, 2.0f, 4.75f}));
}

// The first sync (no global parameters yet) and a lone trainer take the
// trainer's parameters as they are.
TEST(InProcessSyncTest, OneTrainerOrNoGlobalYetTakesTheTrainersParameters) {
  RelationsOnlyTrainer only(Start());
  only.relations().params[1] = 7.0f;
  auto sync = MakeInProcessSync(1);
  EXPECT_FALSE(sync->SyncsEveryRound());
  RelationParams global = Start();
  std::vector<Trainer*> one = {&only};
  ASSERT_TRUE(sync->SyncRelations(one, &global).ok());
  EXPECT_EQ(global.params, only.relations().params);

  RelationsOnlyTrainer first(Start()), second(Start());
  RelationParams empty;
  std::vector<Trainer*> two = {&first, &second};
  ASSERT_TRUE(MakeInProcessSync(2)->SyncRelations(two, &empty).ok());
  EXPECT_EQ(empty.params, Start().params);
}

}  // namespace
}  // namespace ember
