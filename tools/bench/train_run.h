// The in-memory training run behind gpu_train_bench: an R-MAT graph held as
// edges of one partition, that partition's rows, and a timed run of one
// trainer over disjoint batches. No storage, no disk.
#ifndef EMBER_TOOLS_BENCH_TRAIN_RUN_H_
#define EMBER_TOOLS_BENCH_TRAIN_RUN_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/types.h"
#include "train/options/train_options.h"
#include "train/trainers/trainer.h"

namespace ember::bench {

// The R-MAT graph of tools/gen/rmat_generator.h (Graph500 a, b, c = 0.57, 0.19,
// 0.19, scrambled ids): 2^scale nodes, edge_factor · 2^scale edges of
// relation 0, in generation order (already random). Deterministic for a seed
// at any thread count. InvalidArgument unless 1 <= scale <= 32 and
// edge_factor >= 1.
absl::StatusOr<std::vector<Edge>> MakeRmatEdges(int scale, uint64_t edge_factor, uint64_t seed);

// Partition 0 holding `rows` rows: embeddings N(0, init_scale²) as
// train/model/init.h draws them for `seed`, Adagrad state zero.
PartitionData MakePartition(uint64_t rows, int dim, float init_scale, uint64_t seed);

// GEMM work of one trained edge, counting only the three products per chunk
// and side (train/model/chunk_scorer.h), each 2·m·n·k FLOPs:
//   scores S = Q·Kᵀ (chunk × cand × dim), dQ = G·K, dK = Gᵀ·Q  →  3 · 2·chunk·cand·dim
// per side, for a chunk of `chunk` edges, so per edge and both sides
//   12 · cand · dim,  cand = chunk + negs (+ chunk with endpoint negatives).
double GemmFlopsPerEdge(const TrainOptions& options, bool endpoint_negs);

struct RunLimits {
  double seconds = 60;           // stop dealing batches after this. Default: 60.
  uint64_t max_edges = 0;        // stop after this many edges; 0: one pass.
};

struct RunResult {
  uint64_t edges = 0;     // edges trained
  uint64_t batches = 0;
  double seconds = 0;     // wall time of the run
  double loss = 0;        // summed loss of the trained edges
  double edges_per_second() const { return seconds > 0 ? edges / seconds : 0; }
};

// Trains consecutive batches of options.pipeline.batch_size edges of `edges` (batch
// k is edges [k·B, (k+1)·B)) with trainer->slots() threads, each taking the
// next batch not yet taken, until one pass, max_edges or `seconds` is
// reached (a batch begun is finished). `task` names the partition(s) the
// edges index. Returns the first error a batch returned.
absl::StatusOr<RunResult> TrainTimed(Trainer* trainer, const BucketTask& task,
                                     std::span<const Edge> edges, const TrainOptions& options,
                                     const RunLimits& limits);

}  // namespace ember::bench

#endif  // EMBER_TOOLS_BENCH_TRAIN_RUN_H_
