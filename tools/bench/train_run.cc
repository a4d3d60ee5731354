#include "tools/bench/train_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "storage/base/mutex.h"
#include "storage/base/parallel.h"
#include "train/model/init.h"
#include "tools/gen/rmat_generator.h"

namespace ember::bench {

absl::StatusOr<std::vector<Edge>> MakeRmatEdges(int scale, uint64_t edge_factor, uint64_t seed) {
  if (scale < 1 || scale > 32) {
    return absl::InvalidArgumentError(
        absl::StrCat("--scale ", scale, ": out of [1, 32] (node ids are 32-bit)"));
  }
  tools::gen::RmatOptions rmat;
  rmat.scale = scale;
  rmat.edge_factor = edge_factor;
  rmat.seed = seed;
  if (absl::Status s = rmat.Validate(); !s.ok()) return s;
  std::vector<Edge> edges(rmat.num_edges());
  ParallelFor(0, rmat.num_chunks(), [&](uint64_t chunk) {
    std::vector<tools::gen::RmatEdge> out;
    tools::gen::RmatChunk(rmat, chunk, &out);
    Edge* to = edges.data() + chunk * rmat.chunk_edges;
    for (const tools::gen::RmatEdge& e : out) {
      *to++ = Edge{.src = static_cast<uint32_t>(e.src), .rel = 0,
                   .dst = static_cast<uint32_t>(e.dst)};
    }
  });
  return edges;
}

PartitionData MakePartition(uint64_t rows, int dim, float init_scale, uint64_t seed) {
  PartitionData p;
  p.partition = 0;
  p.rows = rows;
  p.dim = dim;
  p.embeddings.resize(rows * dim);
  p.optimizer.assign(rows, 0.0f);
  InitEmbeddings(InitDistribution::kNormal, init_scale, seed, 0, static_cast<int64_t>(rows), dim,
                 p.embeddings.data());  // in parallel row ranges itself
  return p;
}

double GemmFlopsPerEdge(const TrainOptions& options, bool endpoint_negs) {
  const double chunk = options.pipeline.chunk_size;
  const double cand = chunk + options.pipeline.num_uniform_negs + (endpoint_negs ? chunk : 0);
  return 12.0 * cand * options.model.dim;
}

absl::StatusOr<RunResult> TrainTimed(Trainer* trainer, const BucketTask& task,
                                     std::span<const Edge> edges, const TrainOptions& options,
                                     const RunLimits& limits) {
  const uint64_t batch = static_cast<uint64_t>(options.pipeline.batch_size);
  const uint64_t total = limits.max_edges == 0 ? edges.size()
                                               : std::min<uint64_t>(limits.max_edges, edges.size());
  const uint64_t num_batches = (total + batch - 1) / batch;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.seconds));

  std::atomic<uint64_t> next{0};
  Mutex mu;
  RunResult result;
  absl::Status first_error;
  auto worker = [&] {
    uint64_t edges_done = 0, batches_done = 0;
    double loss = 0;
    absl::Status error;
    for (uint64_t k = next++; k < num_batches && Clock::now() < deadline; k = next++) {
      BatchRange range;
      range.lo = k * batch;
      range.hi = std::min(total, range.lo + batch);
      range.index = k;
      range.work = range.hi - range.lo;
      absl::StatusOr<double> l =
          trainer->TrainBatch(task, range, edges.subspan(range.lo, range.hi - range.lo));
      if (!l.ok()) {
        error = l.status();
        next = num_batches;  // the others stop at their next batch
        break;
      }
      loss += *l;
      edges_done += range.hi - range.lo;
      ++batches_done;
    }
    MutexLock lock(&mu);
    result.edges += edges_done;
    result.batches += batches_done;
    result.loss += loss;
    if (first_error.ok()) first_error = error;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, trainer->slots()); ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!first_error.ok()) return first_error;
  return result;
}

}  // namespace ember::bench
