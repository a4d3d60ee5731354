// The CPU trainer's step on one thread and on two, in memory, against the GEMM work it
// does: a knowledge graph's default configuration (complex_diagonal, dot,
// softmax, mixed-relation chunks, endpoint negatives, 30 relations) beside
// the single-relation configuration (no operator, one relation, no endpoint
// negatives) that tools/bench/train.sh measures end to end. Each iteration
// trains one batch of 1000 edges (chunk 50, 50 uniform negatives per side,
// dim 100) of a 1 M-node R-MAT graph whose edges carry random relations;
// FLOPS counts the chunk products only (train_run.h's GemmFlopsPerEdge), so
// its ratio to BM_SgemmChunkSequence (score_bench) is the share of the
// ceiling, and the rest of the step (gathers, row and relation updates,
// the operator) is what keeps it below.
//   OPENBLAS_NUM_THREADS=1 build/tools/bench/trainer_bench
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "storage/base/splitmix.h"
#include "tools/bench/train_run.h"
#include "train/model/model_options.h"
#include "train/trainers/cpu_trainer.h"

namespace ember {
namespace {

constexpr int kScale = 20;
constexpr uint32_t kBatchEdges = 1000;
constexpr uint32_t kBatches = 512;  // iterations cycle through these

// One graph for every configuration; its rows are trained in place, run
// after run (copying 400 MB per run would outweigh what is timed).
struct Graph {
  std::vector<Edge> edges;  // kBatches · kBatchEdges, relation set per config
  PartitionData rows;
};

Graph& SharedGraph() {
  static Graph* graph = [] {
    auto* g = new Graph;
    g->edges = bench::MakeRmatEdges(kScale, 16, 1).value();
    g->edges.resize(size_t{kBatches} * kBatchEdges);
    g->rows = bench::MakePartition(uint64_t{1} << kScale, 100, 0.001f, 1);
    return g;
  }();
  return *graph;
}

// One configuration's trainer and edges. args: operator (enum value),
// relations, mixed (0/1), endpoint negatives (0/1).
struct Setup {
  TrainOptions options;
  uint32_t relations = 0;
  std::vector<Edge> edges;
  std::unique_ptr<Trainer> trainer;
  BucketTask task;

  Setup(benchmark::State& state, int threads) {
    options.model.op = static_cast<Operator>(state.range(0));
    options.model.dim = 100;
    relations = static_cast<uint32_t>(state.range(1));
    options.pipeline.relation_batching =
        state.range(2) != 0 ? RelationBatching::kMixed : RelationBatching::kGrouped;
    const bool endpoints = state.range(3) != 0;
    options.pipeline.endpoint_negatives =
        endpoints ? EndpointNegatives::kOn : EndpointNegatives::kOff;
    options.optimizer.lr = 0.1f;
    state.SetLabel(std::string(OperatorName(options.model.op)) + "/" + std::to_string(relations) +
                   " rel/" + (UsesMixedChunks(options) ? "mixed" : "grouped") +
                   (endpoints ? "/endpoints" : ""));
    Graph& shared = SharedGraph();
    edges = shared.edges;
    SplitMix64 rng(7);
    for (Edge& e : edges) e.rel = relations > 1 ? rng.Below(relations) : 0;
    if (!UsesMixedChunks(options)) {  // batches grouped by relation, as planned
      for (size_t lo = 0; lo < edges.size(); lo += kBatchEdges) {
        std::stable_sort(edges.begin() + lo, edges.begin() + lo + kBatchEdges,
                         [](const Edge& x, const Edge& y) { return x.rel < y.rel; });
      }
    }
    RelationParams params;
    params.num_relations = relations;
    params.param_size = RelationRecordSize(options.model);
    params.params.resize(size_t{relations} * params.param_size);
    for (uint32_t r = 0; r < relations; ++r) InitRelationRecord(options.model, params.Of(r));
    trainer = MakeCpuTrainer(options, threads, params, nullptr).value();
    task.src = task.dst = &shared.rows;
    task.seed = 3;
  }

  void SetCounters(benchmark::State& state, double edges_done) const {
    state.counters["edges"] = benchmark::Counter(edges_done, benchmark::Counter::kIsRate);
    state.counters["FLOPS"] = benchmark::Counter(
        edges_done * bench::GemmFlopsPerEdge(options, UsesEndpointNegatives(options, relations)),
        benchmark::Counter::kIsRate);
  }
};

// One batch an iteration on one thread; rates per CPU second.
void BM_TrainBatch(benchmark::State& state) {
  Setup setup(state, 1);
  uint64_t batch = 0;
  for (auto _ : state) {
    BatchRange range;
    range.index = batch;
    range.lo = (batch % kBatches) * kBatchEdges;
    range.hi = range.lo + kBatchEdges;
    range.work = kBatchEdges;
    const double loss =
        setup.trainer
            ->TrainBatch(setup.task, range,
                         std::span<const Edge>(setup.edges).subspan(range.lo, kBatchEdges))
            .value();
    benchmark::DoNotOptimize(loss);
    ++batch;
  }
  setup.SetCounters(state, static_cast<double>(state.iterations()) * kBatchEdges);
}

// Both cores: one trainer of two slots, each taking the next batch (as the
// pipeline deals them), kBatches batches an iteration; rates per wall
// second, so that slots waiting on each other show.
void BM_TrainBatchesTwoSlots(benchmark::State& state) {
  Setup setup(state, 2);
  bench::RunLimits limits;
  limits.seconds = 1e9;
  uint64_t edges_done = 0;
  for (auto _ : state) {
    const bench::RunResult run =
        bench::TrainTimed(setup.trainer.get(), setup.task, setup.edges, setup.options, limits)
            .value();
    edges_done += run.edges;
  }
  setup.SetCounters(state, static_cast<double>(edges_done));
}

constexpr int kNone = static_cast<int>(Operator::kNone);
constexpr int kComplex = static_cast<int>(Operator::kComplexDiagonal);
void Configurations(benchmark::internal::Benchmark* b) {
  b->Args({kNone, 1, 0, 0});      // train.sh's single-relation step
  b->Args({kComplex, 1, 1, 0});   // the operator alone
  b->Args({kComplex, 30, 0, 0});  // grouped (PBG's chunks)
  b->Args({kComplex, 30, 1, 0});  // mixed, no endpoints
  b->Args({kComplex, 30, 1, 1});  // the knowledge-graph default
}
BENCHMARK(BM_TrainBatch)->Apply(Configurations);
BENCHMARK(BM_TrainBatchesTwoSlots)
    ->Apply(Configurations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ember

// main: tools/bench/bench_main.cc (the GEMM start-up first).
