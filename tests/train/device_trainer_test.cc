// The device trainer (train/trainers/device_trainer.h) through the whole training
// loop, on the host (`--devices emulated`: the CUDA trainer's algorithm and
// kernel bodies run by the host launcher): it must reach the CPU trainer's
// quality on the standard SBM in memory, out of core (partitions moved to
// and from the "device" on eviction), and beside a CPU trainer; and it must
// refuse the models and devices it cannot train, naming them.
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "train/device/device_ops.h"
#include "tests/train/train_test_util.h"
#include "train/trainers/device_trainer.h"
#include "train/train_loop.h"
#include "train/trainers/trainer_factory.h"

namespace ember {
namespace {

using train_test::SmallOptions;
using train_test::StandardSbm;
using train_test::TempDir;
using train_test::TrainedRun;

class DeviceTrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    const std::string edges = tmp_->Sub("sbm.tsv");
    train_test::WriteSbmEdges(StandardSbm(), edges);
    graphs_ = new train_test::GraphFactory(tmp_->path(), {edges});
  }
  static void TearDownTestSuite() {
    delete graphs_;
    delete tmp_;
  }

  static TrainedRun TrainAndEvaluate(uint32_t partitions, const TrainOptions& options) {
    return train_test::TrainAndEvaluate(graphs_->New(partitions), options);
  }

  static TempDir* tmp_;
  static train_test::GraphFactory* graphs_;
};

TempDir* DeviceTrainerTest::tmp_ = nullptr;
train_test::GraphFactory* DeviceTrainerTest::graphs_ = nullptr;

constexpr int kEpochs = 5;

// Noise bound and quality floor as justified in train_quality_test.cc. The
// device steps once per batch where the CPU steps once per chunk, so the
// runs differ in their updates, not only in rounding.
TEST_F(DeviceTrainerTest, MatchesCpuTrainerInMemoryOutOfCoreAndBesideIt) {
  TrainOptions cpu = SmallOptions(kEpochs, 1);
  cpu.pipeline.deterministic = true;
  const TrainedRun reference = TrainAndEvaluate(1, cpu);

  TrainOptions emulated = cpu;
  emulated.devices.list = "emulated";
  const TrainedRun in_memory = TrainAndEvaluate(1, emulated);
  ASSERT_EQ(in_memory.summary.epochs.size(), size_t{kEpochs});
  EXPECT_EQ(in_memory.summary.devices, std::vector<std::string>{"emulated"});
  // At least the graph's 2000 rows of 32 floats and their state.
  EXPECT_GE(in_memory.summary.device_peak_bytes, 2000u * 33 * sizeof(float));
  EXPECT_EQ(reference.summary.device_peak_bytes, 0u);
  for (size_t e = 1; e < in_memory.summary.epochs.size(); ++e) {
    EXPECT_LT(in_memory.summary.epochs[e].loss, in_memory.summary.epochs[e - 1].loss);
  }

  // 4 partitions, 2 in memory: every eviction brings rows back from the device.
  TrainOptions out_of_core = emulated;
  out_of_core.schedule.buffer_partitions = 2;
  const TrainedRun partitioned = TrainAndEvaluate(4, out_of_core);
  for (const EpochStats& e : partitioned.summary.epochs) EXPECT_GT(e.partition_loads, 4u);

  // A CPU trainer and a device trainer on disjoint buckets.
  TrainOptions mixed = SmallOptions(kEpochs, 1);
  mixed.devices.threads = 2;
  mixed.devices.list = "cpu:1,emulated";
  mixed.pipeline.deterministic = true;  // as `two` below
  const TrainedRun beside = TrainAndEvaluate(4, mixed);

  // Two device trainers: rows move between them through the host at round
  // ends, and their relation parameters (complex_diagonal has some) merge.
  TrainOptions two = SmallOptions(kEpochs, 1);
  two.devices.threads = 2;
  two.devices.list = "emulated,emulated";
  two.model.op = Operator::kComplexDiagonal;
  // Each bucket's trainer fixed in advance, so that neither MRR depends on
  // which trainer a loaded machine lets finish first (under load the two
  // CPU trainers' MRR once ran 0.048 against its usual 0.038-0.040).
  two.pipeline.deterministic = true;
  const TrainedRun two_devices = TrainAndEvaluate(4, two);
  TrainOptions two_cpu = two;
  two_cpu.devices.list = "cpu,cpu";
  const TrainedRun two_cpus = TrainAndEvaluate(4, two_cpu);

  std::printf("[ MRR ] cpu %.4f | emulated in memory %.4f, 4 partitions buffer 2 %.4f, "
              "beside a cpu trainer %.4f | complex_diagonal: two emulated %.4f, two cpu %.4f\n",
              reference.mrr(), in_memory.mrr(), partitioned.mrr(), beside.mrr(), two_devices.mrr(),
              two_cpus.mrr());
  EXPECT_GT(two_devices.mrr(), train_test::kMinSbmMrr);
  EXPECT_NEAR(two_devices.mrr(), two_cpus.mrr(), train_test::kMrrNoise);
  for (double mrr : {in_memory.mrr(), partitioned.mrr(), beside.mrr()}) {
    EXPECT_GT(mrr, train_test::kMinSbmMrr);
    EXPECT_NEAR(mrr, reference.mrr(), train_test::kMrrNoise);
  }
}

// A reciprocal model trained with N3: the device trainer (whose side 1
// uses the inverse relation's parameters, and which adds N3 in its own
// kernel) reaches the CPU trainer's quality; a reciprocal model without an
// adjoint form (diagonal with cos) trains on it too.
TEST_F(DeviceTrainerTest, ReciprocalWithN3MatchesCpuTrainer) {
  TrainOptions cpu = SmallOptions(kEpochs, 1);
  cpu.pipeline.deterministic = true;
  cpu.model.op = Operator::kComplexDiagonal;
  cpu.model.reciprocal = true;
  cpu.model.regularizer = Regularizer::kN3;
  cpu.model.reg_weight = 0.001f;
  const TrainedRun reference = TrainAndEvaluate(1, cpu);
  TrainOptions emulated = cpu;
  emulated.devices.list = "emulated";
  const TrainedRun device = TrainAndEvaluate(1, emulated);
  std::printf("[ MRR ] reciprocal complex_diagonal with N3: cpu %.4f, emulated %.4f\n",
              reference.mrr(), device.mrr());
  EXPECT_GT(device.mrr(), train_test::kMinSbmMrr);
  EXPECT_NEAR(device.mrr(), reference.mrr(), train_test::kMrrNoise);
  ASSERT_EQ(device.summary.epochs.size(), size_t{kEpochs});
  for (size_t e = 1; e < device.summary.epochs.size(); ++e) {
    EXPECT_LT(device.summary.epochs[e].loss, device.summary.epochs[e - 1].loss);
  }

  TrainOptions cos = SmallOptions(1);
  cos.model.op = Operator::kDiagonal;
  cos.model.comparator = Comparator::kCos;
  cos.model.reciprocal = true;
  EXPECT_TRUE(CheckDeviceModel(cos).ok());
}

TEST_F(DeviceTrainerTest, RefusesWhatItCannotTrain) {
  RelationParams relations;
  TrainOptions cos_diagonal = SmallOptions(1);
  cos_diagonal.model.op = Operator::kDiagonal;
  cos_diagonal.model.comparator = Comparator::kCos;
  const absl::Status s = CheckDeviceModel(cos_diagonal);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "--operator diagonal --comparator cos")) << s;

  TrainOptions complex = SmallOptions(1);
  complex.model.op = Operator::kComplexDiagonal;
  EXPECT_TRUE(CheckDeviceModel(complex).ok());
  relations.param_size = RelationParamSize(complex.model.op, complex.model.dim);
  auto made = MakeTrainers(std::vector<DeviceSpec>{DeviceSpec{.kind = "emulated", .threads = 3}},
                           complex, relations, nullptr);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)[0]->slots(), 3);
  EXPECT_EQ((*made)[0]->device(), "emulated");
}

// One partition of random rows and random edges among them, trained
// directly (no loop): batches of `batch` edges.
struct InMemoryBucket {
  InMemoryBucket(uint64_t rows, int dim, size_t edges, uint64_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    part.rows = rows;
    part.dim = dim;
    part.embeddings.resize(rows * dim);
    for (float& x : part.embeddings) x = normal(rng);
    part.optimizer.assign(rows, 0.0f);
    for (size_t i = 0; i < edges; ++i) {
      this->edges.push_back(Edge{.src = uint32_t(rng() % rows), .rel = 0,
                                 .dst = uint32_t(rng() % rows)});
    }
    task.src = task.dst = &part;
    task.seed = seed;
  }
  // Trains batch k of `batch` edges for k in [0, batches), from `threads`
  // threads taking batches in turn; the summed loss.
  absl::StatusOr<double> Train(Trainer& trainer, uint64_t batch, uint64_t batches, int threads) {
    std::vector<absl::StatusOr<double>> losses(batches);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (uint64_t k = t; k < batches; k += threads) {
          BatchRange r{.lo = k * batch, .hi = (k + 1) * batch, .index = k, .work = batch};
          losses[k] = trainer.TrainBatch(task, r, std::span(edges).subspan(r.lo, batch));
        }
      });
    }
    for (std::thread& w : workers) w.join();
    double sum = 0;
    for (const absl::StatusOr<double>& l : losses) {
      if (!l.ok()) return l.status();
      sum += *l;
    }
    return sum;
  }
  PartitionData part;
  std::vector<Edge> edges;
  BucketTask task;
};

// Every step is counted in the trainer's step times, each of its parts
// measured; trainers without device steps report none.
TEST_F(DeviceTrainerTest, StepTimesCountEveryStep) {
  const TrainOptions o = SmallOptions(1);
  RelationParams relations;
  relations.num_relations = 1;
  auto made = MakeTrainers(std::vector<DeviceSpec>{DeviceSpec{.kind = "emulated", .threads = 2},
                                                   DeviceSpec{.kind = "cpu", .threads = 1}},
                           o, relations, nullptr);
  ASSERT_TRUE(made.ok()) << made.status();
  InMemoryBucket bucket(300, o.model.dim, 6 * 200, 7);
  ASSERT_TRUE(bucket.Train(*(*made)[0], 200, 6, 2).ok());
  const StepTimes t = (*made)[0]->step_times();
  EXPECT_EQ(t.steps, 6u);
  EXPECT_GT(t.plan, 0);
  EXPECT_GT(t.device, 0);
  // On the host the step runs while it is submitted.
  EXPECT_GE(t.submit, t.device);
  EXPECT_GE(t.wait, 0);
  EXPECT_GT(t.finish, 0);
  ASSERT_TRUE(bucket.Train(*(*made)[1], 200, 2, 1).ok());
  EXPECT_EQ((*made)[1]->step_times().steps, 0u);
}

// Host ops that record, per stream, how many steps ran at once and which
// slots' timers were used on it; each step lasts at least 2 ms, so that
// slots overlap.
class WatchedOps final : public DeviceOps {
 public:
  explicit WatchedOps(int streams) : inner_(MakeHostDeviceOps(streams)), busy_(streams) {}
  std::string name() const override { return inner_->name(); }
  int streams() const override { return inner_->streams(); }
  std::string Alloc(size_t bytes, void** out) override { return inner_->Alloc(bytes, out); }
  void Free(void* p) override { inner_->Free(p); }
  std::string AllocPinned(size_t bytes, void** out) override {
    return inner_->AllocPinned(bytes, out);
  }
  void FreePinned(void* p) override { inner_->FreePinned(p); }
  size_t bytes_in_use() const override { return inner_->bytes_in_use(); }
  size_t peak_bytes() const override { return inner_->peak_bytes(); }
  std::string CopyToDevice(int s, void* d, const void* h, size_t b) override {
    return inner_->CopyToDevice(s, d, h, b);
  }
  std::string CopyToHost(int s, void* h, const void* d, size_t b) override {
    return inner_->CopyToHost(s, h, d, b);
  }
  std::string Step(int stream, const device::StepShape& shape,
                   const device::StepArgs& args) override {
    const int now = ++busy_[stream];
    int seen = max_busy_.load();
    while (now > seen && !max_busy_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::string error = inner_->Step(stream, shape, args);
    --busy_[stream];
    return error;
  }
  std::string Synchronize(int stream) override { return inner_->Synchronize(stream); }
  std::string StartTimer(int stream, int timer) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      timers_[stream].insert(timer);
    }
    return inner_->StartTimer(stream, timer);
  }
  std::string StopTimer(int stream, int timer) override { return inner_->StopTimer(stream, timer); }
  std::string WaitTimer(int timer) override { return inner_->WaitTimer(timer); }
  std::string TimerSeconds(int timer, double* seconds) override {
    return inner_->TimerSeconds(timer, seconds);
  }

  int max_busy() const { return max_busy_; }
  std::map<int, std::set<int>> timers() {
    std::lock_guard<std::mutex> lock(mu_);
    return timers_;
  }

 private:
  std::unique_ptr<DeviceOps> inner_;
  std::vector<std::atomic<int>> busy_;
  std::atomic<int> max_busy_{0};
  std::mutex mu_;
  std::map<int, std::set<int>> timers_;  // stream -> slots' timers
};

// Four slots on five streams: slots pair up on streams 0 and 1 (one moves
// partitions), a stream never runs two steps at once, and training through
// the pairs converges as the CPU trainer does (the SBM test below).
TEST_F(DeviceTrainerTest, DoubleBufferedSlotsShareAStreamOneStepAtATime) {
  const TrainOptions o = SmallOptions(1);
  RelationParams relations;
  relations.num_relations = 1;
  auto ops = std::make_unique<WatchedOps>(5);
  WatchedOps* watched = ops.get();
  auto made = MakeDeviceTrainer(std::move(ops), o, relations, nullptr);
  ASSERT_TRUE(made.ok()) << made.status();
  ASSERT_EQ((*made)->slots(), 4);
  InMemoryBucket bucket(400, o.model.dim, 24 * 100, 3);
  absl::StatusOr<double> loss = bucket.Train(**made, 100, 24, 4);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_TRUE(std::isfinite(*loss));
  EXPECT_EQ(watched->max_busy(), 1);
  // Which slots a step takes depends on how the threads interleave (on a
  // loaded machine one thread may finish its batches before another starts),
  // so every slot seen must be on its pair's stream, not every slot seen.
  const std::map<int, std::set<int>> pairs{{0, {0, 1}}, {1, {2, 3}}};
  const std::map<int, std::set<int>> seen = watched->timers();
  EXPECT_FALSE(seen.empty());
  for (const auto& [stream, slots] : seen) {
    ASSERT_TRUE(pairs.contains(stream)) << "a step timed on stream " << stream;
    for (int slot : slots) {
      EXPECT_TRUE(pairs.at(stream).contains(slot)) << "slot " << slot << " on stream " << stream;
    }
  }
}

TEST_F(DeviceTrainerTest, DoubleBufferedSlotsMatchCpuTrainerOnTheSbm) {
  TrainOptions cpu = SmallOptions(kEpochs, 1);
  cpu.pipeline.deterministic = true;
  const TrainedRun reference = TrainAndEvaluate(1, cpu);
  TrainOptions paired = SmallOptions(kEpochs, 1);
  paired.devices.threads = 4;
  paired.devices.list = "emulated:4";  // 4 slots, 2 streams
  const TrainedRun run = TrainAndEvaluate(1, paired);
  std::printf("[ MRR ] cpu %.4f | emulated:4 (slots in pairs on 2 streams) %.4f\n",
              reference.mrr(), run.mrr());
  EXPECT_GT(run.mrr(), train_test::kMinSbmMrr);
  EXPECT_NEAR(run.mrr(), reference.mrr(), train_test::kMrrNoise);
}

// On a machine without a GPU (or a build without CUDA) asking for one is a
// clear error naming the device; with one, the trainer is made.
TEST_F(DeviceTrainerTest, CudaDeviceIsMadeOrRefusedByName) {
  TrainOptions o = SmallOptions(1);
  RelationParams relations;
  auto made = MakeTrainers(std::vector<DeviceSpec>{DeviceSpec{.kind = "cuda", .index = 0}}, o,
                           relations, nullptr);
  if (made.ok()) {
    EXPECT_TRUE(absl::StrContains((*made)[0]->device(), "cuda:0")) << (*made)[0]->device();
    EXPECT_EQ((*made)[0]->slots(), kCudaSlots);
    return;
  }
  EXPECT_EQ(made.status().code(), absl::StatusCode::kFailedPrecondition) << made.status();
  EXPECT_TRUE(absl::StrContains(made.status().message(), "--devices cuda:0")) << made.status();
#ifdef EMBER_HAVE_CUDA
  const char* reason = "no CUDA device";
#else
  const char* reason = "built without the CUDA trainer";
#endif
  EXPECT_TRUE(absl::StrContains(made.status().message(), reason)) << made.status();
}

}  // namespace
}  // namespace ember
