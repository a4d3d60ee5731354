// TrainState's encoding in the manifest: where its members sit (where
// ember before the versioned state read them), the unversioned state of
// older manifests, the new epoch count after an append, and the errors.
#include "train/model/train_state.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/manifest.h"

namespace ember {
namespace {

constexpr char kPath[] = "/g/MANIFEST.json";

Manifest TwoPartitions() {
  Manifest m;
  m.num_nodes = 10;
  m.num_partitions = 2;
  m.partition_sizes = {6, 4};
  m.relations = {"r"};
  return m;
}

TrainState Sample() {
  TrainState s;
  s.epochs_done = 3;
  s.model.dim = 24;
  s.model.op = Operator::kTranslation;
  s.model.comparator = Comparator::kCos;
  s.model.reciprocal = true;
  s.model.regularizer = Regularizer::kN3;
  s.model.reg_weight = 0.05f;
  s.partition_versions = {5, 4};
  s.position.epoch = 3;
  s.position.next_round = 2;
  s.position.lr = 0.25;
  s.position.seed = 11;
  s.position.bucket_order = "sequential";
  s.position.buffer_partitions = 2;
  s.position.round_size = 1;
  s.position.world_size = 2;
  s.position.round_lookahead = 4096;
  return s;
}

void ExpectSame(const TrainState& a, const TrainState& b) {
  EXPECT_EQ(a.epochs_done, b.epochs_done);
  EXPECT_EQ(a.model.dim, b.model.dim);
  EXPECT_EQ(a.model.op, b.model.op);
  EXPECT_EQ(a.model.comparator, b.model.comparator);
  EXPECT_EQ(a.model.loss, b.model.loss);
  EXPECT_EQ(a.model.featurized, b.model.featurized);
  EXPECT_FLOAT_EQ(a.model.margin, b.model.margin);
  EXPECT_EQ(a.model.reciprocal, b.model.reciprocal);
  EXPECT_EQ(a.model.regularizer, b.model.regularizer);
  EXPECT_FLOAT_EQ(a.model.reg_weight, b.model.reg_weight);
  EXPECT_EQ(a.partition_versions, b.partition_versions);
  EXPECT_EQ(a.partition_ranks, b.partition_ranks);
  EXPECT_EQ(a.copy_rank, b.copy_rank);
  EXPECT_EQ(a.position.epoch, b.position.epoch);
  EXPECT_EQ(a.position.next_round, b.position.next_round);
  EXPECT_EQ(a.position.lr, b.position.lr);
  EXPECT_EQ(a.position.seed, b.position.seed);
  EXPECT_EQ(a.position.bucket_order, b.position.bucket_order);
  EXPECT_EQ(a.position.buffer_partitions, b.position.buffer_partitions);
  EXPECT_EQ(a.position.round_size, b.position.round_size);
  EXPECT_EQ(a.position.world_size, b.position.world_size);
  EXPECT_EQ(a.position.round_lookahead, b.position.round_lookahead);
  EXPECT_EQ(a.position.edge_weights, b.position.edge_weights);
}

// A rank's own copy holds only its share of the rows: its state is version
// 3, which a reader of versions up to 2 refuses instead of loading rows the
// copy lacks.
TEST(TrainStateTest, ACopysStateIsVersionThreeAndReadsBack) {
  Manifest m = TwoPartitions();
  TrainState s = Sample();
  s.partition_ranks = {0, 1};
  s.copy_rank = 1;
  StoreTrainState(s, 4, &m);
  EXPECT_EQ(m.training.state_version, 3u);
  absl::StatusOr<TrainState> back = ReadTrainState(m, kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSame(*back, s);
}

// --weights is recorded beside the position, and absent from states
// written before it was (read as "": nothing to hold a resume to).
TEST(TrainStateTest, RecordsTheWeightsMode) {
  Manifest m = TwoPartitions();
  TrainState s = Sample();
  s.position.edge_weights = "sample";
  StoreTrainState(s, 4, &m);
  EXPECT_NE(m.training.state.find("\"weights\":\"sample\""), std::string::npos) << m.training.state;
  absl::StatusOr<TrainState> back = ReadTrainState(m, kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->position.edge_weights, "sample");
  StoreTrainState(Sample(), 5, &m);
  EXPECT_EQ(m.training.state.find("weights"), std::string::npos) << m.training.state;
  back = ReadTrainState(m, kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->position.edge_weights, "");
}

TEST(TrainStateTest, RoundTripsThroughTheManifest) {
  Manifest m = TwoPartitions();
  m.edge_generation = 3;
  StoreTrainState(Sample(), 7, &m);
  EXPECT_EQ(m.training.checkpoint_version, 7u);
  // No `copies`: readers of versions up to 2 read it right.
  EXPECT_EQ(m.training.state_version, TrainState::kPlainVersion);
  EXPECT_EQ(m.training.edge_generation, 3u);
  absl::StatusOr<TrainState> back = ReadTrainState(m, kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSame(*back, Sample());
}

// A rank's own copy records where every partition's rows are, and which
// rank's copy it is; a state without `copies` has every row here, and a
// `copies` of the wrong length is refused naming the field.
TEST(TrainStateTest, OwnCopiesRecordWhereTheRowsAre) {
  Manifest m = TwoPartitions();
  TrainState s = Sample();
  s.partition_ranks = {1, 0};
  s.copy_rank = 1;
  StoreTrainState(s, 7, &m);
  absl::StatusOr<TrainState> back = ReadTrainState(m, kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSame(*back, s);
  EXPECT_TRUE(back->RowsHere(0));
  EXPECT_FALSE(back->RowsHere(1));

  StoreTrainState(Sample(), 7, &m);
  EXPECT_FALSE(nlohmann::json::parse(m.training.state)["state"].contains("copies"));
  back = ReadTrainState(m, kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->RowsHere(0) && back->RowsHere(1));

  nlohmann::json j = nlohmann::json::parse(m.training.state);
  j["state"]["copies"] = {{"rank", 0}, {"partition_ranks", {0}}};
  m.training.state = j.dump();
  back = ReadTrainState(m, kPath);
  ASSERT_FALSE(back.ok());
  EXPECT_THAT(back.status().message(),
              ::testing::HasSubstr("training.state.copies.partition_ranks"));
}

// Ember before the versioned state read epochs_done beside the state and
// the position under state.trainer; they stay there. training.dim, which
// restated state.model.dim, is no longer written.
TEST(TrainStateTest, MembersSitWhereOlderEmberReadsThem) {
  Manifest m = TwoPartitions();
  StoreTrainState(Sample(), 7, &m);
  const nlohmann::json j = nlohmann::json::parse(m.training.state);
  EXPECT_EQ(j["epochs_done"], 3);
  EXPECT_FALSE(j.contains("dim"));
  EXPECT_EQ(j["state"]["model"]["dim"], 24);
  EXPECT_EQ(j["state"]["model"]["operator"], "translation");
  EXPECT_EQ(j["state"]["partition_versions"], nlohmann::json({5, 4}));
  EXPECT_EQ(j["state"]["trainer"]["next_round"], 2);
  EXPECT_EQ(j["state"]["trainer"]["seed"], 11);
  EXPECT_EQ(j["state"]["trainer"]["bucket_order"], "sequential");
  EXPECT_EQ(j["state"]["trainer"]["world_size"], 2);
}

// Today's main wrote this (training.dim, no state_version): read as the
// same state, the restated dim ignored.
TEST(TrainStateTest, ReadsUnversionedState) {
  Manifest m = TwoPartitions();
  m.training.checkpoint_version = 1;
  m.training.state = R"({"dim": 8, "epochs_done": 1, "state": {
      "model": {"comparator": "dot", "dim": 8, "featurized": "off", "loss": "softmax",
                "margin": 0.10000000149011612, "operator": "translation"},
      "partition_versions": [1, 1],
      "trainer": {"bucket_order": "inside-out", "buffer_partitions": 2, "epoch": 1,
                  "lr": 0.10000000149011612, "next_round": 3, "round_size": 1, "seed": 7,
                  "world_size": 1}}})";
  absl::StatusOr<TrainState> s = ReadTrainState(m, kPath);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->epochs_done, 1u);
  EXPECT_EQ(s->model.dim, 8);
  EXPECT_EQ(s->model.op, Operator::kTranslation);
  EXPECT_EQ(s->partition_versions, (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(s->position.next_round, 3u);
  EXPECT_EQ(s->position.seed, 7u);
  EXPECT_EQ(s->position.bucket_order, "inside-out");
  EXPECT_EQ(s->position.buffer_partitions, 2u);
  // Rounds were formed with a look-ahead of 64 buckets then.
  EXPECT_EQ(s->position.round_lookahead, 64u);
  EXPECT_FLOAT_EQ(static_cast<float>(s->position.lr), 0.1f);
  // Written before reciprocal relations and regularizers: neither.
  EXPECT_FALSE(s->model.reciprocal);
  EXPECT_EQ(s->model.regularizer, Regularizer::kNone);
  EXPECT_EQ(s->model.reg_weight, ModelOptions().reg_weight);

  // Without a trainer object (older still), the position reads zeros.
  m.training.state = R"({"epochs_done": 2, "state": {
      "model": {"comparator": "dot", "dim": 8, "loss": "softmax", "margin": 0.1,
                "operator": "none"},
      "partition_versions": [1, 1]}})";
  s = ReadTrainState(m, kPath);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->epochs_done, 2u);
  EXPECT_EQ(s->position.next_round, 0u);
  EXPECT_EQ(s->position.world_size, 1u);
}

// An append leaves the record's edge generation behind the graph's: the
// grown graph's epoch count starts over; the model and the rest are kept.
TEST(TrainStateTest, AppendSinceRestartsEpochCountAndPositionOnly) {
  Manifest m = TwoPartitions();
  StoreTrainState(Sample(), 7, &m);
  m.edge_generation = 1;  // what import --append does
  absl::StatusOr<TrainState> s = ReadTrainState(m, kPath);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->epochs_done, 0u);
  EXPECT_EQ(s->position.next_round, 0u);
  TrainState expected = Sample();
  expected.epochs_done = 0;
  expected.position.next_round = 0;
  ExpectSame(*s, expected);

  // The next checkpoint records the new generation.
  StoreTrainState(Sample(), 8, &m);
  s = ReadTrainState(m, kPath);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->epochs_done, 3u);
}

void ExpectError(const Manifest& m, absl::StatusCode code, const std::string& field) {
  const absl::Status s = ReadTrainState(m, kPath).status();
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(kPath), std::string::npos) << s;
  EXPECT_NE(s.message().find(field), std::string::npos) << s;
}

TEST(TrainStateTest, ErrorsNameTheManifestAndTheField) {
  Manifest m = TwoPartitions();
  ExpectError(m, absl::StatusCode::kFailedPrecondition, "no checkpoint");

  StoreTrainState(Sample(), 7, &m);
  Manifest newer = m;
  newer.training.state_version = TrainState::kVersion + 1;
  ExpectError(newer, absl::StatusCode::kFailedPrecondition, "training.state_version");

  const auto edited = [&](const char* pointer, const nlohmann::json& value) {
    Manifest out = m;
    nlohmann::json j = nlohmann::json::parse(out.training.state);
    j[nlohmann::json::json_pointer(pointer)] = value;
    out.training.state = j.dump();
    return out;
  };
  ExpectError(edited("/epochs_done", "3"), absl::StatusCode::kDataLoss, "training.epochs_done");
  ExpectError(edited("/state", "x"), absl::StatusCode::kDataLoss, "'training.state'");
  ExpectError(edited("/state/model/dim", "24"), absl::StatusCode::kDataLoss,
              "training.state.model.dim");
  ExpectError(edited("/state/model/reciprocal", "yes"), absl::StatusCode::kDataLoss,
              "training.state.model.reciprocal");
  ExpectError(edited("/state/model/regularizer", "n2"), absl::StatusCode::kDataLoss,
              "training.state.model");
  ExpectError(edited("/state/model/reg_weight", -1.0), absl::StatusCode::kDataLoss,
              "training.state.model");
  ExpectError(edited("/state/partition_versions", {1, 2, 3}), absl::StatusCode::kDataLoss,
              "training.state.partition_versions");
  ExpectError(edited("/state/trainer", 7), absl::StatusCode::kDataLoss, "training.state.trainer");
  ExpectError(edited("/state/trainer/next_round", -1), absl::StatusCode::kDataLoss,
              "training.state.trainer.next_round");

  Manifest no_state = m;
  no_state.training.state = R"({"epochs_done": 1})";
  ExpectError(no_state, absl::StatusCode::kDataLoss, "'training.state' is missing");
}

TEST(TrainStateTest, ModelOptionsJsonRoundTrips) {
  const ModelOptions model = Sample().model;
  absl::StatusOr<ModelOptions> back = ModelOptionsFromJson(ModelOptionsToJson(model));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dim, model.dim);
  EXPECT_EQ(back->op, model.op);
  EXPECT_EQ(back->comparator, model.comparator);
  EXPECT_TRUE(back->reciprocal);
  EXPECT_EQ(back->regularizer, Regularizer::kN3);
  EXPECT_FLOAT_EQ(back->reg_weight, 0.05f);
  EXPECT_EQ(ModelOptionsFromJson("{}").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ember
