// A manifest whose training state parses as JSON but holds the wrong types
// (damage, or a hand edit) is reported as DataLoss naming the manifest and
// the field, by every reader of that state (train/model/train_state.h):
// resuming training and loading the stored model. `import --append` keeps
// the state without reading it.
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "partition/importer.h"
#include "tests/train/train_test_util.h"
#include "train/model/checkpoint.h"
#include "train/train_loop.h"

namespace ember {
namespace {

using train_test::SmallOptions;
using train_test::TempDir;
using train_test::WriteWholeFile;

class DamagedStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tools::gen::SbmOptions sbm;
    sbm.nodes = 200;
    sbm.blocks = 4;
    sbm.avg_degree = 8;
    sbm.seed = 5;
    edges_ = tmp_.Sub("edges.tsv");
    train_test::WriteSbmEdges(sbm, edges_);
    dir_ = tmp_.Sub("g");
    ASSERT_TRUE(train_test::ImportEdges(dir_, {edges_}, 1, /*with_splits=*/false).ok());
    auto trained = TrainGraph(dir_, SmallOptions(1));
    ASSERT_TRUE(trained.ok()) << trained.status();
  }

  std::string manifest_path() const { return dir_ + "/MANIFEST.json"; }

  // Applies `edit` to the manifest's training.state and writes it back.
  template <typename Edit>
  void EditState(Edit edit) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(manifest_path()));
    edit(j["training"]["state"]);
    WriteWholeFile(manifest_path(), j.dump());
  }

  void ExpectDataLoss(const absl::Status& s, const std::string& field) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_NE(s.message().find(manifest_path()), std::string::npos) << s;
    EXPECT_NE(s.message().find(field), std::string::npos) << s;
  }

  TempDir tmp_;
  std::string edges_;
  std::string dir_;
};

TEST_F(DamagedStateTest, ResumeWithStringRoundIsDataLoss) {
  EditState([](nlohmann::json& state) { state["trainer"]["next_round"] = "3"; });
  ExpectDataLoss(TrainGraph(dir_, SmallOptions(2)).status(), "training.state.trainer.next_round");
}

TEST_F(DamagedStateTest, ResumeWithTrainerNotAnObjectIsDataLoss) {
  EditState([](nlohmann::json& state) { state["trainer"] = 7; });
  ExpectDataLoss(TrainGraph(dir_, SmallOptions(2)).status(), "training.state.trainer");
}

TEST_F(DamagedStateTest, StoredModelWithStringDimIsDataLoss) {
  EditState([](nlohmann::json& state) { state["model"]["dim"] = "32"; });
  auto g = Graph::Open(dir_);
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectDataLoss(LoadStoredModel(**g).status(), "training.state.model.dim");
}

TEST_F(DamagedStateTest, StoredModelWithUnknownOperatorIsDataLoss) {
  EditState([](nlohmann::json& state) { state["model"]["operator"] = "rotation"; });
  auto g = Graph::Open(dir_);
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectDataLoss(LoadStoredModel(**g).status(), "training.state.model");
}

TEST_F(DamagedStateTest, PartitionVersionsOfWrongTypeAreDataLoss) {
  EditState([](nlohmann::json& state) { state["partition_versions"] = {"1"}; });
  auto g = Graph::Open(dir_);
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectDataLoss(LoadStoredModel(**g).status(), "training.state.partition_versions[0]");
}

// The append keeps the state as it is (storage does not read it); training
// after it reports the damage.
TEST_F(DamagedStateTest, AppendToGraphWithTrainerNotAnObjectIsDataLoss) {
  EditState([](nlohmann::json& state) { state["trainer"] = "x"; });
  const std::string more = tmp_.Sub("more.tsv");
  WriteWholeFile(more, "1000\t1001\n1001\t1002\n");
  ImportOptions o;
  o.out = dir_;
  o.append = true;
  o.files = {more};
  o.threads = 1;
  o.delimiter = '\t';
  ASSERT_TRUE(ImportGraph(o).ok());
  ExpectDataLoss(TrainGraph(dir_, SmallOptions(2)).status(), "training.state.trainer");
}

TEST_F(DamagedStateTest, StateNotAnObjectIsDataLoss) {
  nlohmann::json j = nlohmann::json::parse(std::ifstream(manifest_path()));
  j["training"]["state"] = "x";
  WriteWholeFile(manifest_path(), j.dump());
  ExpectDataLoss(TrainGraph(dir_, SmallOptions(2)).status(), "training.state");
}

TEST_F(DamagedStateTest, EpochsDoneOfWrongTypeIsDataLoss) {
  nlohmann::json j = nlohmann::json::parse(std::ifstream(manifest_path()));
  j["training"]["epochs_done"] = -1;
  WriteWholeFile(manifest_path(), j.dump());
  ExpectDataLoss(TrainGraph(dir_, SmallOptions(2)).status(), "training.epochs_done");
}

}  // namespace
}  // namespace ember
