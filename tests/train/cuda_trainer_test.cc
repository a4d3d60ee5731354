// The CUDA trainer on a GPU: its step against the host launcher's on the
// same inputs, for every model it trains (with and without features) and at
// the benchmark's shape, and
// its training against the CPU trainer's on the standard SBM. Without a GPU
// (or in a build without CUDA) every test here skips, saying why; on a
// machine with a GPU a failed device setup fails them; the host
// tests (device_step_test.cc, device_trainer_test.cc) cover the same code
// paths without one.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include "gtest/gtest.h"
#include "tests/train/device_step_util.h"
#include "tests/train/train_test_util.h"
#include "train/device/device_ops.h"
#include "train/schedule/parameter_sync.h"
#include "train/trainers/trainer_factory.h"
#include "train/train_loop.h"
#ifdef EMBER_HAVE_CUDA
#include "train/cuda/cuda_device_ops.h"
#endif

namespace ember {
namespace {

using device_test::DeviceCases;
using device_test::ExpectAllNear;
using device_test::MakeStepBatch;
using device_test::Rows;
using device_test::RunStepOn;
using device_test::StepBatch;
using device_test::StepCase;
using device_test::StepResult;

// What a CUDA test does with the device setup it got: run on the GPU; skip,
// where the machine has no NVIDIA GPU at all (neither the kernel driver nor
// the CUDA runtime sees one); or fail, where it has one and the setup
// failed anyway (a broken runtime, cuBLAS, a device that will not open),
// which a skip would hide.
enum class CudaSetup { kReady, kSkip, kFail };

CudaSetup ClassifyCudaSetup(bool gpu_on_machine, int cuda_devices, bool ops_made) {
  if (ops_made) return CudaSetup::kReady;
  return gpu_on_machine || cuda_devices > 0 ? CudaSetup::kFail : CudaSetup::kSkip;
}

// Whether the NVIDIA kernel driver sees a GPU, whatever the CUDA runtime
// says (it counts 0 devices when it cannot talk to the driver).
[[maybe_unused]] bool MachineHasNvidiaGpu() {
  std::error_code ec;
  for (const auto& gpu : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)gpu;
    return true;
  }
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 && std::isdigit(name[6])) return true;
  }
  return false;
}

// The GPU's ops, or null with *setup saying whether to skip or fail and
// *reason why.
// How the GPU's step is launched (CudaOpsOptions, which non-CUDA builds lack).
struct Launches {
  bool graphs = true;
  bool warp_rows = true;
};
constexpr Launches kPlainLaunches{.graphs = false, .warp_rows = false};
void PrintTo(const Launches& l, std::ostream* os) {
  *os << (l.graphs ? "graphs" : "launches") << "_" << (l.warp_rows ? "warps" : "threads");
}

std::unique_ptr<DeviceOps> CudaOps(CudaSetup* setup, std::string* reason, Launches launches) {
#ifdef EMBER_HAVE_CUDA
  const int devices = CudaDeviceCount();
  std::unique_ptr<DeviceOps> ops;
  CudaOpsOptions options;
  options.graphs = launches.graphs;
  options.warp_rows = launches.warp_rows;
  if (devices > 0) ops = MakeCudaDeviceOps(0, 2, reason, options);
  *setup = ClassifyCudaSetup(MachineHasNvidiaGpu(), devices, ops != nullptr);
  if (*setup == CudaSetup::kSkip) *reason = "no CUDA device on this machine";
  if (*setup == CudaSetup::kFail && reason->empty()) {
    *reason = "the NVIDIA driver sees a GPU, but the CUDA runtime counts none";
  }
  return ops;
#else
  (void)launches;
  *setup = CudaSetup::kSkip;
  *reason = "this build has no CUDA trainer (nvcc was not found)";
  return nullptr;
#endif
}

#define CUDA_OPS_OR_SKIP(ops, launches)                                          \
  CudaSetup cuda_setup = CudaSetup::kSkip;                                       \
  std::string cuda_reason;                                                       \
  std::unique_ptr<DeviceOps> ops = CudaOps(&cuda_setup, &cuda_reason, launches); \
  if (cuda_setup == CudaSetup::kFail)                                            \
    FAIL() << "CUDA device setup failed on a machine "                           \
              "with a GPU: "                                                     \
           << cuda_reason;                                                       \
  if (ops == nullptr) GTEST_SKIP() << cuda_reason

// Only a machine without any GPU may skip: a failed setup where there is
// one fails the test.
TEST(CudaSetupTest, SkipsOnlyWithoutAGpu) {
  EXPECT_EQ(ClassifyCudaSetup(false, 0, false), CudaSetup::kSkip);
  EXPECT_EQ(ClassifyCudaSetup(true, 0, false), CudaSetup::kFail);
  EXPECT_EQ(ClassifyCudaSetup(false, 1, false), CudaSetup::kFail);
  EXPECT_EQ(ClassifyCudaSetup(true, 1, false), CudaSetup::kFail);
  EXPECT_EQ(ClassifyCudaSetup(true, 1, true), CudaSetup::kReady);
}

void ExpectSameStep(DeviceOps& cuda, const StepCase& c, const StepBatch& b, float tolerance) {
  std::unique_ptr<DeviceOps> host = MakeHostDeviceOps(2);
  const Rows* features = b.sh.has_features() ? &b.features : nullptr;
  const StepResult want =
      RunStepOn(*host, b.plan, b.sh, b.slot_rel, b.src, b.dst_or_null(), 2, 0.1f, features);
  const StepResult got =
      RunStepOn(cuda, b.plan, b.sh, b.slot_rel, b.src, b.dst_or_null(), 2, 0.1f, features);
  ASSERT_EQ(want.error, "");
  ASSERT_EQ(got.error, "");
  EXPECT_NEAR(got.loss, want.loss, tolerance * (1 + std::fabs(want.loss)));
  ExpectAllNear(want.dx, got.dx, tolerance, "row gradient");
  ExpectAllNear(want.drel, got.drel, tolerance, "relation gradient");
  ExpectAllNear(want.src.emb, got.src.emb, tolerance, "src rows");
  ExpectAllNear(want.src.state, got.src.state, tolerance, "src state");
  if (c.two_partitions) ExpectAllNear(want.dst.emb, got.dst.emb, tolerance, "dst rows");
  ExpectAllNear(want.features.emb, got.features.emb, tolerance, "feature rows");
}

// Four ways, so that a difference on a GPU names its cause: CUDA graphs and
// warp-per-row kernels (the default: every step after a stream's first is
// a captured graph), each alone, and plain launches with a thread per row.
class CudaStepTest : public ::testing::TestWithParam<Launches> {};
INSTANTIATE_TEST_SUITE_P(CudaGraphsAndWarps, CudaStepTest,
                         ::testing::Values(Launches{.graphs = true, .warp_rows = true}));
INSTANTIATE_TEST_SUITE_P(CudaGraphs, CudaStepTest,
                         ::testing::Values(Launches{.graphs = true, .warp_rows = false}));
INSTANTIATE_TEST_SUITE_P(CudaWarps, CudaStepTest,
                         ::testing::Values(Launches{.graphs = false, .warp_rows = true}));
INSTANTIATE_TEST_SUITE_P(CudaPlain, CudaStepTest, ::testing::Values(kPlainLaunches));

TEST_P(CudaStepTest, MatchesHostStepForEveryDeviceModel) {
  CUDA_OPS_OR_SKIP(cuda, GetParam());
  for (StepCase c : DeviceCases(8)) {
    for (FeaturizedMode mode : {FeaturizedMode::kOff, FeaturizedMode::kFeatures,
                                FeaturizedMode::kIdPlusFeatures}) {
      c.model.featurized = mode;
      SCOPED_TRACE(c.Name());
      ExpectSameStep(*cuda, c, MakeStepBatch(c, 5, 3, 13, 9, 7, 3, 11), 1e-3f);
    }
  }
}

// Reciprocal models and N3 (RegularizeRows, and side 1 with w_{r⁻¹}).
TEST_P(CudaStepTest, MatchesHostStepWithReciprocalRelationsAndN3) {
  CUDA_OPS_OR_SKIP(cuda, GetParam());
  for (const StepCase& c : device_test::ReciprocalAndN3Cases(8)) {
    SCOPED_TRACE(c.Name());
    ExpectSameStep(*cuda, c, MakeStepBatch(c, 5, 3, 13, 9, 7, 3, 11), 1e-3f);
  }
}

// The benchmark's shape: dim 100, chunk 50, 50 negatives, 1000 edges over
// many rows (grids of many blocks, few repeated rows).
TEST_P(CudaStepTest, MatchesHostStepAtTheBenchmarkShape) {
  CUDA_OPS_OR_SKIP(cuda, GetParam());
  for (const StepCase& c : DeviceCases(100)) {
    if (c.two_partitions) continue;
    SCOPED_TRACE(c.Name());
    ExpectSameStep(*cuda, c, MakeStepBatch(c, 50, 50, 1000, 100000, 100000, 10, 5), 2e-3f);
  }
}

// As DeviceTrainerTest's emulated runs, on the GPU.
TEST(CudaTrainerTest, MatchesCpuTrainerOnTheSbm) {
  CUDA_OPS_OR_SKIP(cuda, Launches{});
  train_test::TempDir tmp;
  const std::string edges = tmp.Sub("sbm.tsv");
  train_test::WriteSbmEdges(train_test::StandardSbm(), edges);
  train_test::GraphFactory graphs(tmp.path(), {edges});
  auto train = [&](uint32_t partitions, const TrainOptions& o) {
    return train_test::TrainAndEvaluate(graphs.New(partitions), o).mrr();
  };
  TrainOptions cpu = train_test::SmallOptions(5, 1);
  cpu.pipeline.deterministic = true;
  TrainOptions gpu = cpu;
  gpu.devices.list = "cuda:0";
  TrainOptions gpu_out_of_core = gpu;
  gpu_out_of_core.schedule.buffer_partitions = 2;
  const double reference = train(1, cpu), in_memory = train(1, gpu),
               out_of_core = train(4, gpu_out_of_core);
  std::printf("[ MRR ] cpu %.4f | cuda:0 in memory %.4f, 4 partitions buffer 2 %.4f\n",
              reference, in_memory, out_of_core);
  for (double mrr : {in_memory, out_of_core}) {
    EXPECT_GT(mrr, train_test::kMinSbmMrr);
    EXPECT_NEAR(mrr, reference, train_test::kMrrNoise);
  }
}

// NCCL on one GPU (a one-rank communicator): loading, the communicator,
// the copies and an all-reduce (the identity with one rank), and the NCCL
// sync over it. Skips without a GPU, saying why; a GPU without a loadable
// NCCL fails, naming what is missing.
TEST(CudaNcclTest, OneGpuCommunicatorAllReducesAndSyncs) {
  CUDA_OPS_OR_SKIP(cuda, kPlainLaunches);
  const DeviceSpec gpu{.kind = "cuda", .index = 0};
  absl::StatusOr<std::unique_ptr<DeviceCommunicator>> comm =
      MakeNcclCommunicatorFor(std::span(&gpu, 1));
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->ranks(), 1);
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = 0.5f * i;
  const std::vector<float> want = data;
  float* ranks[] = {data.data()};
  ASSERT_EQ((*comm)->AllReduceSum(ranks, data.size()), "");
  EXPECT_EQ(data, want);

  RelationParams global;
  global.num_relations = 1;
  global.param_size = 4;
  global.params = {1, 2, 3, 4};
  global.state = {0, 0, 0, 0};
  TrainOptions o = train_test::SmallOptions(1);
  o.model.op = Operator::kDiagonal;
  o.model.dim = 4;
  auto trainers = MakeTrainers(std::span(&gpu, 1), o, global, nullptr);
  ASSERT_TRUE(trainers.ok()) << trainers.status();
  (*trainers)[0]->relations().params[2] = 7;
  std::unique_ptr<ParameterSync> sync = MakeNcclSync(*std::move(comm));
  std::vector<Trainer*> views{(*trainers)[0].get()};
  ASSERT_TRUE(sync->SyncRelations(views, &global).ok());
  EXPECT_EQ(global.params, (std::vector<float>{1, 2, 7, 4}));
}

}  // namespace
}  // namespace ember
