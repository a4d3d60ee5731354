// Training throughput of one trainer (`--devices`: cuda:N, emulated, cpu,
// cpu:T) on an in-memory R-MAT graph, against cuBLAS sgemm at the trainer's
// chunk shapes and against the CPU trainer on this machine's cores.
// tools/gpu-check.sh runs it on a GPU machine; no storage, no disk.
//
//   gpu_train_bench --devices cuda:0                    # scale 24, up to 60 s
//   gpu_train_bench --devices cpu --scale 14 --seconds 5 --cpu_seconds 5
//   gpu_train_bench --devices emulated:8 --skip_device_step   # the host side alone
//
// The graph is one partition of 2^scale nodes and edge_factor · 2^scale
// edges (default 16, Graph500's: at scale 24, 268 M edges, 3.2 GB, and 6.7 GB
// of rows at dim 100, made in about 3 s on 16 cores, so that the run's time
// limits, not the graph, bound the check); the model op none, dot, softmax, one relation,
// Adagrad at --lr. The device trains one pass over the edges or --seconds,
// whichever ends first, after one untimed batch (which uploads the rows),
// with slots() threads taking disjoint consecutive batches; the CPU trainer
// (cpu:<all cores>) then trains for --cpu_seconds on the same rows.
//
// Where the time goes (device trainers, trainer.h's StepTimes): per step,
// the host's planning, submission, the device's time (CUDA events; with
// --devices emulated the host launcher's time for the step) and waiting,
// for the run above and for a second run at --breakdown_batch (4000), so
// that one run shows whether launches, the host or the device bound it.
//
// Peak device memory is sampled every 20 ms (cudaMemGetInfo), from before
// the trainer is made to after it syncs its rows back.
//
// Output: a summary for people and one JSON line (the last line) with the
// same figures; figures that this build or machine cannot measure are
// "n/a" and null. Exit 1 when the device (or the CPU reference) fails, e.g.
// --devices cuda:0 without CUDA.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "train/blas/blas_startup.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "storage/base/status_macros.h"
#include "tools/bench/gpu_probe.h"
#include "tools/bench/train_run.h"
#include "train/device/device_ops.h"
#include "train/trainers/device_trainer.h"
#include "train/trainers/trainer_factory.h"

ABSL_FLAG(std::string, devices, "cuda:0",
          "the one trainer to measure (trainer_factory.h): cuda:N, emulated, cpu, cpu:T");
ABSL_FLAG(int, scale, 24, "R-MAT scale: 2^scale nodes");
ABSL_FLAG(uint64_t, edge_factor, 16, "R-MAT edges per node");
ABSL_FLAG(double, seconds, 60, "time limit of the device's run (it also stops after one pass)");
ABSL_FLAG(uint64_t, edges, 0, "edge limit of the device's run; 0: one pass");
ABSL_FLAG(double, cpu_seconds, 20, "time limit of the CPU trainer's run; 0: skip it");
ABSL_FLAG(int, cpu_threads, 0, "CPU trainer threads; 0: all cores");
ABSL_FLAG(int, dim, 100, "embedding dimension");
ABSL_FLAG(int, batch_size, 1000, "edges per batch");
ABSL_FLAG(int, chunk_size, 50, "edges per negative-sharing chunk");
ABSL_FLAG(int, negs, 50, "uniform negatives per chunk and side");
ABSL_FLAG(double, lr, 0.1, "Adagrad step size");
ABSL_FLAG(uint64_t, seed, 0, "seed of the graph, the rows and the negatives");
ABSL_FLAG(int, sgemm_reps, 200, "rounds of the cuBLAS chunk-shape products timed");
ABSL_FLAG(int, breakdown_batch, 4000,
          "a second device run at this batch size, for its time per step; 0: skip it");
ABSL_FLAG(bool, skip_device_step, false,
          "with --devices emulated[:S]: skip the device step (device_ops.h), so the run "
          "measures the device trainer's host side alone (planning, packing, results)");
ABSL_FLAG(double, breakdown_seconds, 10, "time limit of the --breakdown_batch run");

namespace ember::bench {
namespace {

// A device run and where its steps' time went.
struct DeviceRun {
  int batch_size = 0;
  int slots = 0;
  RunResult run;
  StepTimes times;
};

struct Measured {
  std::string device;
  std::string gpu = "n/a";
  RunResult run;
  DeviceRun timed;  // run, with its step times
  absl::StatusOr<DeviceRun> big = absl::UnavailableError("skipped (--breakdown_batch 0)");
  int cand = 0;  // candidates per chunk and side
  double flops_per_edge = 0;
  int sgemm_count = 0;
  absl::StatusOr<SgemmRate> sgemm = absl::UnavailableError("not measured");
  absl::StatusOr<uint64_t> peak_bytes = absl::UnavailableError("not measured");
  absl::StatusOr<RunResult> cpu = absl::UnavailableError("skipped (--cpu_seconds 0)");
  std::string cpu_device;
};

absl::StatusOr<std::unique_ptr<Trainer>> MakeOne(const DeviceSpec& spec, const TrainOptions& o) {
  RelationParams relations;
  relations.num_relations = 1;
  relations.param_size = RelationRecordSize(o.model);
  if (absl::GetFlag(FLAGS_skip_device_step) && spec.kind != "cpu") {  // not the CPU reference
    if (spec.kind != "emulated") {
      return absl::InvalidArgumentError("--skip_device_step needs --devices emulated[:SLOTS]");
    }
    return MakeDeviceTrainer(MakeHostDeviceOps(DeviceSlots(spec) + 1, /*skip_steps=*/true), o,
                             relations, nullptr);
  }
  ASSIGN_OR_RETURN(auto trainers, MakeTrainers(std::span(&spec, 1), o, relations, nullptr));
  return std::move(trainers.front());
}

// One untimed batch (which uploads the rows), then the timed run; the step
// times are the timed run's.
absl::StatusOr<DeviceRun> TrainWarm(Trainer* trainer, const BucketTask& task,
                                    std::span<const Edge> all, const TrainOptions& options,
                                    const RunLimits& limits) {
  const uint64_t warm = std::min<uint64_t>(options.pipeline.batch_size, all.size());
  RETURN_IF_ERROR(TrainTimed(trainer, task, all.first(warm), options, {}).status());
  const StepTimes before = trainer->step_times();
  DeviceRun r;
  r.batch_size = options.pipeline.batch_size;
  r.slots = trainer->slots();
  ASSIGN_OR_RETURN(r.run, TrainTimed(trainer, task, all.subspan(warm), options, limits));
  const StepTimes after = trainer->step_times();
  r.times.steps = after.steps - before.steps;
  r.times.plan = after.plan - before.plan;
  r.times.submit = after.submit - before.submit;
  r.times.device = after.device - before.device;
  r.times.wait = after.wait - before.wait;
  r.times.finish = after.finish - before.finish;
  return r;
}

absl::StatusOr<Measured> Measure(TrainOptions options) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.devices.threads = cores;
  options.devices.list = absl::GetFlag(FLAGS_devices);
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::vector<DeviceSpec> devices, ResolveDevices(options));
  if (devices.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("--devices ", options.devices.list,
                                                   ": name one device"));
  }
  const DeviceSpec spec = devices.front();
  const bool on_gpu = spec.kind == "cuda";
  const int gpu_index = on_gpu ? spec.index : 0;
  Measured m;
  m.device = spec.Name();
  if (absl::StatusOr<std::string> gpu = DescribeGpu(gpu_index); gpu.ok()) m.gpu = *gpu;
  // From before the trainer allocates; the CUDA context is not counted.
  std::unique_ptr<DeviceMemoryPeak> peak;
  if (on_gpu) {
    absl::StatusOr<std::unique_ptr<DeviceMemoryPeak>> p = DeviceMemoryPeak::Start(gpu_index, 20);
    if (p.ok()) {
      peak = *std::move(p);
    } else {
      m.peak_bytes = p.status();
    }
  } else {
    m.peak_bytes = absl::UnavailableError("the device is not a GPU");
  }
  // Fails here, before the graph is built, on a device this build or
  // machine lacks.
  ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, MakeOne(spec, options));

  const int scale = absl::GetFlag(FLAGS_scale);
  std::fprintf(stderr, "gpu_train_bench: generating R-MAT scale %d, edge factor %d ...\n", scale,
               static_cast<int>(absl::GetFlag(FLAGS_edge_factor)));
  ASSIGN_OR_RETURN(std::vector<Edge> edges,
                   MakeRmatEdges(scale, absl::GetFlag(FLAGS_edge_factor), options.seed));
  PartitionData rows = MakePartition(uint64_t{1} << scale, options.model.dim,
                                     options.optimizer.init_scale, options.seed);
  BucketTask task{.src = &rows, .dst = &rows, .seed = options.seed};
  const std::span<const Edge> all(edges);

  std::fprintf(stderr, "gpu_train_bench: training on %s ...\n", m.device.c_str());
  RunLimits limits{.seconds = absl::GetFlag(FLAGS_seconds), .max_edges = absl::GetFlag(FLAGS_edges)};
  ASSIGN_OR_RETURN(m.timed, TrainWarm(trainer.get(), task, all, options, limits));
  m.run = m.timed.run;
  RETURN_IF_ERROR(trainer->SyncToHost(&rows));
  if (peak != nullptr) m.peak_bytes = peak->Stop();
  trainer->Release(rows.partition);
  trainer.reset();

  if (const int big = absl::GetFlag(FLAGS_breakdown_batch); big > 0) {
    TrainOptions o = options;
    o.pipeline.batch_size = big;
    std::fprintf(stderr, "gpu_train_bench: training on %s at batch %d ...\n", m.device.c_str(), big);
    ASSIGN_OR_RETURN(std::unique_ptr<Trainer> t, MakeOne(spec, o));
    m.big = TrainWarm(t.get(), task, all, o, {.seconds = absl::GetFlag(FLAGS_breakdown_seconds)});
    RETURN_IF_ERROR(m.big.status());
    t->Release(rows.partition);
  }

  const bool endpoints = UsesEndpointNegatives(options, 1);
  m.flops_per_edge = GemmFlopsPerEdge(options, endpoints);
  const int chunk = options.pipeline.chunk_size;
  m.cand = chunk + options.pipeline.num_uniform_negs + (endpoints ? chunk : 0);
  const ChunkGemmShape shape{.chunk = chunk,
                             .cand = m.cand,
                             .dim = options.model.dim,
                             .count = 2 * ((options.pipeline.batch_size + chunk - 1) / chunk)};
  m.sgemm_count = shape.count;
  m.sgemm = MeasureChunkSgemm(gpu_index, shape, absl::GetFlag(FLAGS_sgemm_reps));

  const double cpu_seconds = absl::GetFlag(FLAGS_cpu_seconds);
  if (cpu_seconds > 0) {
    const int cpu_threads = absl::GetFlag(FLAGS_cpu_threads);
    const DeviceSpec cpu{.kind = "cpu", .threads = cpu_threads > 0 ? cpu_threads : cores};
    m.cpu_device = cpu.Name();
    std::fprintf(stderr, "gpu_train_bench: training on %s ...\n", m.cpu_device.c_str());
    ASSIGN_OR_RETURN(std::unique_ptr<Trainer> reference, MakeOne(cpu, options));
    task.seed = options.seed + 1;
    m.cpu = TrainTimed(reference.get(), task, all, options, {.seconds = cpu_seconds});
    RETURN_IF_ERROR(m.cpu.status());
  }
  return m;
}

// A figure as JSON: null when it was not measured.
template <typename T, typename F>
nlohmann::ordered_json OrNull(const absl::StatusOr<T>& v, F figure) {
  return v.ok() ? nlohmann::ordered_json(figure(*v)) : nlohmann::ordered_json(nullptr);
}

// Microseconds per step of each part, as JSON; null for a trainer that
// does not time its steps (the CPU's).
nlohmann::ordered_json StepJson(const DeviceRun& r) {
  nlohmann::ordered_json j;
  j["batch_size"] = r.batch_size;
  j["edges_per_second"] = r.run.edges_per_second();
  j["steps"] = r.times.steps;
  const double n = r.times.steps;
  for (auto [name, seconds] : {std::pair{"plan_us", r.times.plan}, {"submit_us", r.times.submit},
                               {"device_us", r.times.device}, {"wait_us", r.times.wait},
                               {"finish_us", r.times.finish}}) {
    j[name] = n > 0 ? nlohmann::ordered_json(seconds / n * 1e6) : nlohmann::ordered_json(nullptr);
  }
  return j;
}

// One line per run: the mean per step of each part, and how busy the
// device was (its time over the run's wall time).
std::string StepLine(const DeviceRun& r) {
  if (r.times.steps == 0) return "n/a (the trainer does not time its steps)";
  const double n = r.times.steps;
  const double busy = r.run.seconds > 0 ? r.times.device / r.run.seconds : 0;
  return absl::StrFormat(
      "batch %d: %.4g edges/s; per step (µs) plan %.1f, submit %.1f, device %.1f, wait %.1f, "
      "finish %.1f; %d steps on %d slots; device busy %.0f%% of the run",
      r.batch_size, r.run.edges_per_second(), r.times.plan / n * 1e6, r.times.submit / n * 1e6,
      r.times.device / n * 1e6, r.times.wait / n * 1e6, r.times.finish / n * 1e6, r.times.steps,
      r.slots, 100 * busy);
}

// "n/a (why)" for a figure that was not measured.
std::string NotMeasured(const absl::Status& s) { return absl::StrCat("n/a (", s.message(), ")"); }

void Print(const TrainOptions& o, const Measured& m) {
  const int scale = absl::GetFlag(FLAGS_scale);
  const uint64_t nodes = uint64_t{1} << scale;
  const uint64_t graph_edges = absl::GetFlag(FLAGS_edge_factor) * nodes;
  const double eps = m.run.edges_per_second();
  const double loss_per_edge = m.run.edges > 0 ? m.run.loss / m.run.edges : 0;
  const double achieved = eps * m.flops_per_edge;
  nlohmann::ordered_json j;
  j["bench"] = "gpu_train";
  j["device"] = m.device;
  j["gpu"] = m.gpu;
  j["scale"] = scale;
  j["nodes"] = nodes;
  j["graph_edges"] = graph_edges;
  j["dim"] = o.model.dim;
  j["batch_size"] = o.pipeline.batch_size;
  j["chunk_size"] = o.pipeline.chunk_size;
  j["uniform_negs"] = o.pipeline.num_uniform_negs;
  j["edges"] = m.run.edges;
  j["seconds"] = m.run.seconds;
  j["edges_per_second"] = eps;
  j["loss_per_edge"] = loss_per_edge;
  j["gemm_flops_per_edge"] = m.flops_per_edge;
  j["achieved_flops"] = achieved;
  j["sgemm_flops"] = OrNull(m.sgemm, [](const SgemmRate& r) { return r.flops_per_second(); });
  j["achieved_over_sgemm"] =
      OrNull(m.sgemm, [&](const SgemmRate& r) { return achieved / r.flops_per_second(); });
  j["peak_device_bytes"] = OrNull(m.peak_bytes, [](uint64_t b) { return b; });
  j["steps"] = StepJson(m.timed);
  j["steps_big_batch"] = OrNull(m.big, [](const DeviceRun& r) { return StepJson(r); });
  j["cpu_device"] = m.cpu_device;
  j["cpu_edges_per_second"] = OrNull(m.cpu, [](const RunResult& r) { return r.edges_per_second(); });
  j["device_over_cpu"] =
      OrNull(m.cpu, [&](const RunResult& r) { return eps / r.edges_per_second(); });

  const std::string sgemm =
      m.sgemm.ok() ? absl::StrFormat("%.4g GFLOP/s (%d × 3 strided-batched products per round)",
                                     m.sgemm->flops_per_second() / 1e9, m.sgemm_count)
                   : NotMeasured(m.sgemm.status());
  const std::string ratio = m.sgemm.ok()
                                ? absl::StrFormat("%.3f", achieved / m.sgemm->flops_per_second())
                                : std::string("n/a");
  const std::string peak = m.peak_bytes.ok()
                               ? absl::StrFormat("%.2f GiB beyond the CUDA context", *m.peak_bytes / double(1 << 30))
                               : NotMeasured(m.peak_bytes.status());
  const std::string cpu =
      m.cpu.ok() ? absl::StrFormat("%s: %.4g edges/s (%d edges in %.1f s)", m.cpu_device,
                                   m.cpu->edges_per_second(), m.cpu->edges, m.cpu->seconds)
                 : NotMeasured(m.cpu.status());
  const std::string over_cpu =
      m.cpu.ok() ? absl::StrFormat("%.2f", eps / m.cpu->edges_per_second()) : std::string("n/a");

  absl::PrintF("gpu_train_bench: R-MAT scale %d (%d nodes, %d edges), dim %d, batch %d, chunk %d, "
              "%d uniform negatives, op none, dot, softmax\n",
              scale, nodes, graph_edges, o.model.dim, o.pipeline.batch_size, o.pipeline.chunk_size,
              o.pipeline.num_uniform_negs);
  absl::PrintF("  gpu:                %s\n", m.gpu);
  absl::PrintF("  %-19s %.4g edges/s (%d edges in %.1f s, loss/edge %.4f)\n", m.device + ":", eps,
               m.run.edges, m.run.seconds, loss_per_edge);
  absl::PrintF("  where the time goes: %s\n", StepLine(m.timed));
  absl::PrintF("                      %s\n",
               m.big.ok() ? StepLine(*m.big) : NotMeasured(m.big.status()));
  absl::PrintF("  GEMM FLOP per edge: 12 · cand · dim = 12 · %d · %d = %.0f (per chunk and side "
               "3 products of 2·chunk·cand·dim; 2 sides; / chunk)\n",
               m.cand, o.model.dim, m.flops_per_edge);
  absl::PrintF("  achieved:           %.4g GFLOP/s (edges/s × FLOP per edge)\n", achieved / 1e9);
  absl::PrintF("  cuBLAS sgemm:       %s\n", sgemm);
  absl::PrintF("  achieved / sgemm:   %s\n", ratio);
  absl::PrintF("  peak device memory: %s\n", peak);
  absl::PrintF("  CPU trainer:        %s\n", cpu);
  absl::PrintF("  device / CPU:       %s\n", over_cpu);
  absl::PrintF("%s\n", j.dump());
}

}  // namespace
}  // namespace ember::bench

int main(int argc, char** argv) {
  ember::BlasStartup(argc, argv);  // first: may re-exec (train/blas/blas_startup.h)
  absl::SetProgramUsageMessage("training throughput of a trainer against cuBLAS and the CPU");
  absl::ParseCommandLine(argc, argv);
  ember::TrainOptions options;
  options.model.op = ember::Operator::kNone;
  options.model.comparator = ember::Comparator::kDot;
  options.model.loss = ember::Loss::kSoftmax;
  options.model.dim = absl::GetFlag(FLAGS_dim);
  options.pipeline.batch_size = absl::GetFlag(FLAGS_batch_size);
  options.pipeline.chunk_size = absl::GetFlag(FLAGS_chunk_size);
  options.pipeline.num_uniform_negs = absl::GetFlag(FLAGS_negs);
  options.optimizer.lr = static_cast<float>(absl::GetFlag(FLAGS_lr));
  options.seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<ember::bench::Measured> m = ember::bench::Measure(options);
  if (!m.ok()) {
    std::fprintf(stderr, "gpu_train_bench: %s\n", std::string(m.status().message()).c_str());
    return 1;
  }
  ember::bench::Print(options, *m);
  return 0;
}
