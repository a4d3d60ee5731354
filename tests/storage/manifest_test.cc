#include "storage/manifest.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/storage/test_graph.h"

namespace ember {
namespace {

using ::ember::testing::TempDir;

Manifest SampleManifest() {
  Manifest m;
  m.num_nodes = 10;
  m.num_partitions = 2;
  m.partition_sizes = {6, 4};
  m.relations = {"a", "b", "c"};
  m.edges.train = 7;
  m.edges.valid = 2;
  m.edges.test = 1;
  m.train_bucket_edges = {1, 2, 3, 1};
  m.partitioner = "degree";
  m.seed = 0xfedcba9876543210ull;
  m.integer_ids = true;
  m.num_features = 33;
  m.degree = DegreeStats{1, 9, 2.5, 2, 8, 8};
  m.training.checkpoint_version = 4;
  m.training.state_version = 2;
  m.training.state = R"({"epochs_done":3,"dim":64,"state":{"lr":0.1,"rng":[1,2,3]}})";
  return m;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(ManifestTest, RoundTrip) {
  TempDir tmp;
  const std::string path = tmp.Sub("MANIFEST.json");
  const Manifest m = SampleManifest();
  ASSERT_TRUE(WriteManifestAtomic(path, m).ok());
  absl::StatusOr<Manifest> r = ReadManifest(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->format_version, Manifest::kFormatVersion);
  EXPECT_EQ(r->num_nodes, m.num_nodes);
  EXPECT_EQ(r->num_partitions, m.num_partitions);
  EXPECT_EQ(r->partition_sizes, m.partition_sizes);
  EXPECT_EQ(r->relations, m.relations);
  EXPECT_EQ(r->edges.train, 7u);
  EXPECT_EQ(r->edges.valid, 2u);
  EXPECT_EQ(r->edges.test, 1u);
  EXPECT_EQ(r->train_bucket_edges, m.train_bucket_edges);
  EXPECT_EQ(r->partitioner, "degree");
  EXPECT_EQ(r->seed, m.seed);
  EXPECT_TRUE(r->integer_ids);
  EXPECT_EQ(r->num_features, 33u);
  EXPECT_EQ(r->degree.max, 9u);
  EXPECT_DOUBLE_EQ(r->degree.mean, 2.5);
  EXPECT_EQ(r->degree.p99, 8u);
  EXPECT_EQ(r->training.checkpoint_version, 4u);
  EXPECT_EQ(r->training.state_version, 2u);
  EXPECT_EQ(r->training.edge_generation, 0u);
  // The trainer's members come back as they were given.
  const nlohmann::json state = nlohmann::json::parse(r->training.state);
  EXPECT_EQ(state["epochs_done"], 3);
  EXPECT_EQ(state["dim"], 64);
  EXPECT_EQ(state, nlohmann::json::parse(m.training.state));
}

TEST(ManifestTest, JsonUsesStructFieldNames) {
  TempDir tmp;
  const std::string path = tmp.Sub("MANIFEST.json");
  ASSERT_TRUE(WriteManifestAtomic(path, SampleManifest()).ok());
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["num_nodes"], 10);
  EXPECT_EQ(j["edges"]["train"], 7);
  EXPECT_EQ(j["train_bucket_edges"].size(), 4u);
  EXPECT_EQ(j["degree"]["p90"], 8);
  EXPECT_EQ(j["training"]["state"]["lr"], 0.1);  // embedded, not a string
  EXPECT_EQ(j["training"]["checkpoint_version"], 4);
  EXPECT_EQ(j["training"]["epochs_done"], 3);  // beside storage's members
  EXPECT_EQ(j["training"]["state_version"], 2);
}

// A typed graph is written as format version 3, weighted or not, so that
// an ember that reads only versions 1 and 2 refuses it rather than
// training it untyped or rewriting its manifest without the types.
TEST(ManifestTest, TypedGraphsAreFormatVersionThree) {
  TempDir tmp;
  const std::string path = tmp.Sub("MANIFEST.json");
  Manifest m = SampleManifest();
  m.node_types = {NodeType{"user", 0, 1}, NodeType{"item", 1, 1}};
  m.relation_types = {RelationTypes{0, 1}, RelationTypes{0, 1}, RelationTypes{1, 1}};
  for (const bool weighted : {false, true}) {
    SCOPED_TRACE(weighted ? "weighted" : "unweighted");
    m.SetEdgeWeights(weighted);
    EXPECT_EQ(m.RequiredFormatVersion(), Manifest::kTypedFormatVersion);
    const absl::Status written = WriteManifestAtomic(path, m);
    ASSERT_TRUE(written.ok()) << written;
    EXPECT_EQ(nlohmann::json::parse(std::ifstream(path))["format_version"], 3);
    absl::StatusOr<Manifest> r = ReadManifest(path);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->format_version, 3);
    EXPECT_EQ(r->edge_weights, weighted);
    EXPECT_EQ(r->node_types.size(), 2u);
  }
  // A typed graph an older ember wrote as version 1 is read, and its next
  // manifest says 3.
  m.SetEdgeWeights(false);
  nlohmann::json j = nlohmann::json::parse([&] {
    EXPECT_TRUE(WriteManifestAtomic(path, m).ok());
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }());
  j["format_version"] = 1;
  WriteText(path, j.dump());
  absl::StatusOr<Manifest> old = ReadManifest(path);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->format_version, 1);
  EXPECT_EQ(old->RequiredFormatVersion(), 3);
  // Version 3 names a typed graph: without types it is refused.
  j["format_version"] = 3;
  j.erase("node_types");
  j.erase("relation_types");
  WriteText(path, j.dump());
  absl::StatusOr<Manifest> untyped = ReadManifest(path);
  ASSERT_FALSE(untyped.ok());
  EXPECT_NE(std::string(untyped.status().message()).find("node_types"), std::string::npos)
      << untyped.status();
}

TEST(ManifestTest, AtomicWriteLeavesNoTempFileAndReplaces) {
  TempDir tmp;
  const std::string path = tmp.Sub("MANIFEST.json");
  Manifest m = SampleManifest();
  ASSERT_TRUE(WriteManifestAtomic(path, m).ok());
  m.training.checkpoint_version = 9;
  ASSERT_TRUE(WriteManifestAtomic(path, m).ok());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename(), "MANIFEST.json");
    ++files;
  }
  EXPECT_EQ(files, 1);
  EXPECT_EQ(ReadManifest(path)->training.checkpoint_version, 9u);
}

TEST(ManifestTest, InconsistentManifestIsNotWritten) {
  TempDir tmp;
  const std::string path = tmp.Sub("MANIFEST.json");
  Manifest m = SampleManifest();
  m.partition_sizes = {6, 5};
  absl::Status s = WriteManifestAtomic(path, m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(path));
  m = SampleManifest();
  m.training.state = "{not json";
  EXPECT_FALSE(WriteManifestAtomic(path, m).ok());
  m = SampleManifest();
  m.training.state = "[1]";
  EXPECT_FALSE(WriteManifestAtomic(path, m).ok());
  m = SampleManifest();
  m.training.state = R"({"checkpoint_version":5})";  // storage's member
  EXPECT_FALSE(WriteManifestAtomic(path, m).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ManifestTest, Validate) {
  EXPECT_TRUE(SampleManifest().Validate().ok());
  Manifest m = SampleManifest();
  m.partition_sizes = {10};
  EXPECT_FALSE(m.Validate().ok());
  m = SampleManifest();
  m.num_nodes = 11;
  EXPECT_FALSE(m.Validate().ok());
  m = SampleManifest();
  m.train_bucket_edges = {1, 2, 3};
  EXPECT_FALSE(m.Validate().ok());
  m = SampleManifest();
  m.train_bucket_edges = {1, 2, 3, 2};  // sums to 8, edges.train is 7
  EXPECT_FALSE(m.Validate().ok());
  m = SampleManifest();
  m.train_bucket_edges.clear();  // unknown is fine
  EXPECT_TRUE(m.Validate().ok());
  m = SampleManifest();
  m.num_partitions = 0;
  m.partition_sizes.clear();
  EXPECT_FALSE(m.Validate().ok());
  m = SampleManifest();
  m.partition_sizes = {10, 0};
  m.num_nodes = 10;
  EXPECT_TRUE(m.Validate().ok());
}

TEST(ManifestTest, PartitionBase) {
  Manifest m;
  m.num_partitions = 3;
  m.partition_sizes = {5, 0, 7};
  EXPECT_EQ(m.PartitionBase(0), 0u);
  EXPECT_EQ(m.PartitionBase(1), 5u);
  EXPECT_EQ(m.PartitionBase(2), 5u);
  EXPECT_EQ(m.PartitionBase(3), 12u);
}

TEST(ManifestTest, SplitCountsIndexing) {
  SplitCounts c;
  c[Split::kTrain] = 3;
  c[Split::kValid] = 2;
  c[Split::kTest] = 1;
  EXPECT_EQ(c.train, 3u);
  EXPECT_EQ(c.valid, 2u);
  EXPECT_EQ(c.test, 1u);
  EXPECT_EQ(c.total(), 6u);
  const SplitCounts& cc = c;
  EXPECT_EQ(cc[Split::kValid], 2u);
}

TEST(ManifestTest, MissingFileIsNotFound) {
  TempDir tmp;
  absl::StatusOr<Manifest> r = ReadManifest(tmp.Sub("nope.json"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nope.json"), std::string::npos);
}

struct BadCase {
  const char* name;
  const char* text;
  const char* expect;  // substring of the message
};

TEST(ManifestTest, BadManifestsNameFileAndProblem) {
  const BadCase cases[] = {
      {"bad_json", "{\"num_nodes\": ", "bad JSON"},
      {"not_object", "[1,2]", "object"},
      {"no_version", R"({"num_nodes": 1})", "format_version"},
      {"future_version", R"({"format_version": 99})",
       "unsupported format_version 99"},
      {"missing_nodes",
       R"({"format_version":1,"num_partitions":1,"partition_sizes":[1],
           "relations":[],"edges":{"train":0,"valid":0,"test":0}})",
       "'num_nodes' is missing"},
      {"missing_split",
       R"({"format_version":1,"num_nodes":1,"num_partitions":1,
           "partition_sizes":[1],"relations":[],"edges":{"train":0,"valid":0}})",
       "'edges.test' is missing"},
      {"wrong_type",
       R"({"format_version":1,"num_nodes":"many","num_partitions":1,
           "partition_sizes":[1],"relations":[],
           "edges":{"train":0,"valid":0,"test":0}})",
       "'num_nodes' must be a non-negative integer"},
      {"negative",
       R"({"format_version":1,"num_nodes":1,"num_partitions":1,
           "partition_sizes":[-1],"relations":[],
           "edges":{"train":0,"valid":0,"test":0}})",
       "partition_sizes[0]"},
      {"inconsistent",
       R"({"format_version":1,"num_nodes":5,"num_partitions":2,
           "partition_sizes":[1,2],"relations":[],
           "edges":{"train":0,"valid":0,"test":0}})",
       "sum to 3"},
      {"bad_state",
       R"({"format_version":1,"num_nodes":1,"num_partitions":1,
           "partition_sizes":[1],"relations":["r"],
           "edges":{"train":0,"valid":0,"test":0},
           "training":"x"})",
       "'training' must be an object"},
      {"bad_checkpoint_version",
       R"({"format_version":1,"num_nodes":1,"num_partitions":1,
           "partition_sizes":[1],"relations":["r"],
           "edges":{"train":0,"valid":0,"test":0},
           "training":{"checkpoint_version":"1"}})",
       "'training.checkpoint_version'"},
  };
  TempDir tmp;
  for (const BadCase& c : cases) {
    const std::string path = tmp.Sub(std::string(c.name) + ".json");
    WriteText(path, c.text);
    absl::StatusOr<Manifest> r = ReadManifest(path);
    ASSERT_FALSE(r.ok()) << c.name;
    const std::string message(r.status().message());
    EXPECT_NE(message.find(path), std::string::npos) << c.name << ": "
                                                     << message;
    EXPECT_NE(message.find(c.expect), std::string::npos)
        << c.name << ": " << message;
  }
}

TEST(ManifestTest, MinimalManifestGetsDefaults) {
  TempDir tmp;
  const std::string path = tmp.Sub("m.json");
  WriteText(path, R"({"format_version":1,"num_nodes":3,"num_partitions":1,
      "partition_sizes":[3],"relations":["r"],
      "edges":{"train":2,"valid":0,"test":0}})");
  absl::StatusOr<Manifest> r = ReadManifest(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->partitioner, "hash");
  EXPECT_TRUE(r->train_bucket_edges.empty());
  EXPECT_EQ(r->training.state, "{}");
  EXPECT_EQ(r->training.checkpoint_version, 0u);
  EXPECT_FALSE(r->partitions_auto.has_value());
}

TEST(ManifestTest, PartitionsAutoRoundTrip) {
  TempDir tmp;
  const std::string path = tmp.Sub("MANIFEST.json");
  Manifest m = SampleManifest();
  m.partitions_auto = PartitionsAuto{64, 6ull << 30};
  ASSERT_TRUE(WriteManifestAtomic(path, m).ok());
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  EXPECT_EQ(j["partitions_auto"],
            nlohmann::json({{"dim", 64}, {"memory_budget", 6442450944ull}}));
  absl::StatusOr<Manifest> r = ReadManifest(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->partitions_auto.has_value());
  EXPECT_EQ(r->partitions_auto->dim, 64u);
  EXPECT_EQ(r->partitions_auto->memory_budget, 6ull << 30);

  // An explicit --partitions writes no record.
  m.partitions_auto.reset();
  ASSERT_TRUE(WriteManifestAtomic(path, m).ok());
  j = nlohmann::json::parse(std::ifstream(path));
  EXPECT_FALSE(j.contains("partitions_auto"));
  r = ReadManifest(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->partitions_auto.has_value());
}

TEST(ManifestTest, ZeroPartitionsAutoIsNotWritten) {
  TempDir tmp;
  Manifest m = SampleManifest();
  m.partitions_auto = PartitionsAuto{0, 1 << 30};
  absl::Status s = WriteManifestAtomic(tmp.Sub("m.json"), m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("partitions_auto"), std::string::npos) << s;
}

TEST(ManifestTest, MalformedPartitionsAutoIsDataLoss) {
  const BadCase cases[] = {
      {"not_object", R"("partitions_auto": 19)", "'partitions_auto' must be an object"},
      {"dim_string", R"("partitions_auto": {"dim": "64", "memory_budget": 1})",
       "'partitions_auto.dim' must be a non-negative integer"},
      {"dim_negative", R"("partitions_auto": {"dim": -1, "memory_budget": 1})",
       "'partitions_auto.dim'"},
      {"budget_float", R"("partitions_auto": {"dim": 64, "memory_budget": 1.5})",
       "'partitions_auto.memory_budget' must be a non-negative integer"},
      {"no_budget", R"("partitions_auto": {"dim": 64})",
       "'partitions_auto.memory_budget' is missing"},
  };
  TempDir tmp;
  for (const BadCase& c : cases) {
    const std::string path = tmp.Sub(std::string(c.name) + ".json");
    WriteText(path, std::string(R"({"format_version":1,"num_nodes":3,"num_partitions":1,
        "partition_sizes":[3],"relations":["r"],
        "edges":{"train":2,"valid":0,"test":0}, )") + c.text + "}");
    absl::StatusOr<Manifest> r = ReadManifest(path);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << c.name << ": " << r.status();
    const std::string message(r.status().message());
    EXPECT_NE(message.find(path), std::string::npos) << c.name << ": " << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << c.name << ": " << message;
  }
}

// A manifest written before storage recorded the training record's edge
// generation and the state's version (training.dim beside epochs_done):
// storage keeps every trainer member where it was and reads the record as
// written for the graph's current generation.
TEST(ManifestTest, UnversionedTrainingRecordIsKeptInPlace) {
  TempDir tmp;
  const std::string path = tmp.Sub("MANIFEST.json");
  WriteText(path, R"({"format_version":1,"num_nodes":3,"num_partitions":1,
      "partition_sizes":[3],"relations":["r"],"edge_generation":2,
      "edges":{"train":2,"valid":0,"test":0},
      "training":{"checkpoint_version":5,"epochs_done":4,"dim":16,
                  "state":{"trainer":{"next_round":3}}}})");
  absl::StatusOr<Manifest> r = ReadManifest(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->training.checkpoint_version, 5u);
  EXPECT_EQ(r->training.edge_generation, 2u);
  EXPECT_EQ(r->training.state_version, 0u);
  const nlohmann::json members = nlohmann::json::parse(r->training.state);
  EXPECT_EQ(members, nlohmann::json::parse(
                         R"({"epochs_done":4,"dim":16,"state":{"trainer":{"next_round":3}}})"));

  // Written back, the old readers' fields are where they were.
  r->edge_generation = 3;  // an append: the record stays behind
  ASSERT_TRUE(WriteManifestAtomic(path, *r).ok());
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  EXPECT_EQ(j["training"]["epochs_done"], 4);
  EXPECT_EQ(j["training"]["dim"], 16);
  EXPECT_EQ(j["training"]["state"]["trainer"]["next_round"], 3);
  EXPECT_EQ(j["training"]["edge_generation"], 2);
  EXPECT_EQ(j["edge_generation"], 3);
}

}  // namespace
}  // namespace ember
