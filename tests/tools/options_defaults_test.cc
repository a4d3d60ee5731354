// Every options struct of ember validates itself, and its defaults pass.
// Structs with required inputs (paths) get just those set; without them
// Validate must fail.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "partition/feature_import.h"
#include "partition/importer.h"
#include "partition/node_aggregator.h"
#include "storage/graph.h"
#include "storage/graph_builder.h"
#include "tools/export/exporter.h"
#include "tools/gen/features_generator.h"
#include "tools/gen/gen_output.h"
#include "tools/gen/kg_generator.h"
#include "tools/export/neighbors.h"
#include "tools/gen/rmat_generator.h"
#include "tools/gen/sbm_generator.h"
#include "train/batch/batch_former.h"
#include "train/eval/evaluator.h"
#include "train/model/model_options.h"
#include "train/schedule/partition_buffer.h"
#include "train/tune/probe.h"
#include "train/stream/round_source.h"
#include "train/options/train_options.h"

namespace ember {
namespace {

template <typename Options>
void ExpectDefaultsValid(const char* name) {
  const absl::Status s = Options{}.Validate();
  EXPECT_TRUE(s.ok()) << name << ": " << s;
}

TEST(OptionsDefaultsTest, DefaultsPassValidate) {
  ExpectDefaultsValid<GraphBuilderOptions>("GraphBuilderOptions");
  ExpectDefaultsValid<GraphOpenOptions>("GraphOpenOptions");
  ExpectDefaultsValid<FeatureImportOptions>("FeatureImportOptions");
  ExpectDefaultsValid<VarianceAwareOptions>("VarianceAwareOptions");
  ExpectDefaultsValid<ModelOptions>("ModelOptions");
  ExpectDefaultsValid<EvalOptions>("EvalOptions");
  ExpectDefaultsValid<PartitionBufferOptions>("PartitionBufferOptions");
  ExpectDefaultsValid<TrainOptions>("TrainOptions");
  ExpectDefaultsValid<OptimizerOptions>("OptimizerOptions");
  ExpectDefaultsValid<PipelineOptions>("PipelineOptions");
  ExpectDefaultsValid<ScheduleOptions>("ScheduleOptions");
  ExpectDefaultsValid<DeviceOptions>("DeviceOptions");
  ExpectDefaultsValid<ValidationOptions>("ValidationOptions");
  ExpectDefaultsValid<ProbeOptions>("ProbeOptions");
  ExpectDefaultsValid<RoundSourceOptions>("RoundSourceOptions");
  ExpectDefaultsValid<tools::NeighborIndexOptions>("NeighborIndexOptions");
  ExpectDefaultsValid<tools::gen::RmatOptions>("RmatOptions");
  ExpectDefaultsValid<tools::gen::FeaturesOptions>("FeaturesOptions");
  ExpectDefaultsValid<tools::gen::SbmOptions>("SbmOptions");
  ExpectDefaultsValid<tools::gen::KgOptions>("KgOptions");
}

TEST(OptionsDefaultsTest, DefaultsPassOnceRequiredInputsAreSet) {
  ImportOptions import;
  EXPECT_FALSE(import.Validate().ok());
  import.out = "/tmp/g";
  import.files = {"edges.tsv"};
  EXPECT_TRUE(import.Validate().ok()) << import.Validate();

  tools::ExportOptions export_options;
  EXPECT_FALSE(export_options.Validate().ok());
  export_options.out = "/tmp/e.tsv";
  EXPECT_TRUE(export_options.Validate().ok()) << export_options.Validate();

  tools::gen::GenOutputOptions gen_output;
  EXPECT_FALSE(gen_output.Validate().ok());
  gen_output.path = "/tmp/out.tsv";
  EXPECT_TRUE(gen_output.Validate().ok()) << gen_output.Validate();

  NodeAggregatorOptions aggregator;
  EXPECT_FALSE(aggregator.Validate().ok());
  aggregator.spill_dir = "/tmp/spill";
  EXPECT_TRUE(aggregator.Validate().ok()) << aggregator.Validate();
}

TEST(OptionsDefaultsTest, NewValidatorsRejectWhatTheyDocument) {
  GraphBuilderOptions builder;
  builder.num_partitions = 0;
  EXPECT_EQ(builder.Validate().code(), absl::StatusCode::kInvalidArgument);
  FeatureImportOptions features;
  features.memory_budget = 0;
  EXPECT_EQ(features.Validate().code(), absl::StatusCode::kInvalidArgument);
  NodeAggregatorOptions aggregator;
  aggregator.spill_dir = "/tmp/spill";
  aggregator.memory_bytes = 0;
  EXPECT_EQ(aggregator.Validate().code(), absl::StatusCode::kInvalidArgument);
  VarianceAwareOptions variance;
  variance.tolerance = -0.5;
  EXPECT_EQ(variance.Validate().code(), absl::StatusCode::kInvalidArgument);
  PartitionBufferOptions buffer;
  buffer.capacity = 0;
  EXPECT_EQ(buffer.Validate().code(), absl::StatusCode::kInvalidArgument);
  buffer = PartitionBufferOptions{};
  buffer.dim = 0;
  EXPECT_EQ(buffer.Validate().code(), absl::StatusCode::kInvalidArgument);
  RoundSourceOptions round;
  round.batch_size = 0;
  EXPECT_EQ(round.Validate().code(), absl::StatusCode::kInvalidArgument);
  round = RoundSourceOptions{};
  round.edge_sample = 0;
  EXPECT_EQ(round.Validate().code(), absl::StatusCode::kInvalidArgument);
  for (float scale : {0.0f, -1.0f, std::numeric_limits<float>::infinity()}) {
    TrainOptions train;
    train.optimizer.relation_lr_scale = scale;
    EXPECT_EQ(train.Validate().code(), absl::StatusCode::kInvalidArgument) << scale;
  }
}

// Each group of TrainOptions checks its own fields, and TrainOptions
// checks every group.
TEST(OptionsDefaultsTest, TrainOptionsCheckEveryGroup) {
  TrainOptions optimizer;
  optimizer.optimizer.lr = 0;
  TrainOptions pipeline;
  pipeline.pipeline.chunk_size = 0;
  TrainOptions schedule;
  schedule.schedule.memory_budget = 0;
  TrainOptions devices;
  devices.devices.trainers = 2;  // more than its one thread
  TrainOptions validation;
  validation.validation.enabled = true;
  validation.validation.negatives = uint64_t{1} << 40;
  const std::pair<const char*, absl::Status> groups[] = {
      {"optimizer", optimizer.optimizer.Validate()},
      {"pipeline", pipeline.pipeline.Validate()},
      {"schedule", schedule.schedule.Validate()},
      {"devices", devices.devices.Validate()},
      {"validation", validation.validation.Validate()},
  };
  for (const auto& [name, status] : groups) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
  }
  for (const TrainOptions* o : {&optimizer, &pipeline, &schedule, &devices, &validation}) {
    EXPECT_EQ(o->Validate().code(), absl::StatusCode::kInvalidArgument);
  }
  validation.validation.enabled = false;  // negatives are checked only when enabled
  EXPECT_TRUE(validation.Validate().ok()) << validation.Validate();
}

}  // namespace
}  // namespace ember
