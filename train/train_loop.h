// `ember train`: epochs over the P x P buckets of a graph, in an order that
// keeps a buffer of partitions in memory, with one or several trainers, and
// atomic checkpoints that a killed run resumes from.
#ifndef EMBER_TRAIN_TRAIN_LOOP_H_
#define EMBER_TRAIN_TRAIN_LOOP_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "train/distributed/cluster.h"
#include "train/distributed/epoch_model.h"
#include "train/eval/evaluator.h"
#include "train/options/train_options.h"

namespace ember {

struct EpochStats {
  int epoch = 0;  // 1-based: epochs done after this one
  float lr = 0;   // the step size trained with
  // The chunk products' precision (ModelOptions::precision); with the GEMM
  // backend and kernel, the line's "gemm" object.
  Precision precision = Precision::kFp32;
  double loss = 0;  // mean loss per edge (both sides) over the epoch
  uint64_t edges = 0;
  double seconds = 0;
  double edges_per_second = 0;
  uint64_t partition_loads = 0;
  uint64_t checkpoint_version = 0;
  // Wall time of the epoch-end checkpoint (0 in memory), after `seconds`.
  double checkpoint_seconds = 0;
  // The checkpoint was copied and written beside the next epoch
  // (checkpoint_seconds is then the copy's time and the wait for the one
  // before); it is committed by the next checkpoint, a stop or the run's end.
  bool checkpoint_beside = false;
  // With eval_valid and a valid split: the validation after this epoch
  // (filtered.mrr, its mrr_ci95, the sample size; DescribeProtocol).
  std::optional<EvalResult> valid;
  // Batches of the epoch (this run) and their spread: coefficient of
  // variation of per-batch time, and cv and max/mean of per-batch feature
  // non-zeros (of the edges' endpoints; 0 without features).
  uint64_t batches = 0;
  // Of those, the batches each trainer trained, in the order of the run's
  // trainers (trainer_factory.h).
  std::vector<uint64_t> batches_per_trainer;
  double batch_seconds_cv = 0;
  double batch_nnz_cv = 0;
  double batch_nnz_max_over_mean = 0;
  // The measured cost of an edge in non-zeros (BatchCostModel) at epoch end.
  uint32_t edge_cost = 0;
  // Share of trainer time spent waiting at the end of rounds for the other
  // trainers: 1 - Σ busy / (trainers × Σ round wall time).
  double idle_share = 0;
  // Across ranks: what the epoch measured (per rank on average; bytes over
  // every rank) and what the cost model predicts for this many ranks and
  // twice as many (train/distributed/epoch_model.h).
  std::optional<EpochMeasure> ranks_measure;
  std::optional<EpochPrediction> predicted;
  std::optional<EpochPrediction> predicted_doubled;
};

struct TrainSummary {
  bool resumed = false;
  int start_epoch = 0;  // epochs done before this run
  uint64_t start_round = 0;
  std::vector<EpochStats> epochs;
  uint64_t checkpoint_version = 0;
  bool stopped = false;  // stop_after_buckets fired
  float lr = 0;          // the step size trained with
  // The trainers' devices ("cpu", "cuda:0 (NVIDIA H200)", ...), and the
  // device memory the device trainers held at most, summed (0 without).
  std::vector<std::string> devices;
  uint64_t device_peak_bytes = 0;
};

// Trains the graph at `graph_dir` (opened read-write, so one trainer at a
// time). Appends one JSON line per epoch to GRAPH/metrics.jsonl.
// One epoch as its JSON line in GRAPH/metrics.jsonl (and `train --json`),
// without the newline.
std::string EpochJsonLine(const EpochStats& s);

// With options.optimizer.lr_auto, a fresh run of a graph with validation edges trains
// with the step `choose_lr` returns (train/tune/auto_lr.h probes for it;
// without a chooser such a run is InvalidArgument); a resumed run takes the
// step stored with its checkpoint.
using LrChooser = std::function<absl::StatusOr<float>(Graph& graph, const TrainOptions& options)>;
absl::StatusOr<TrainSummary> TrainGraph(const std::string& graph_dir, const TrainOptions& options,
                                        const LrChooser& choose_lr = nullptr);

// One rank's part of a run across the ranks of `cluster` (cluster.h); with
// a null cluster or one rank, TrainGraph. Every rank calls it with the same
// options and its own copy of the graph (one shared path or identical
// copies); at the start the ranks compare their copies and every option
// that shapes the schedule or the model (CheckRanksAgree: dim, operator,
// comparator, loss, seed, bucket order and the buffer beta's order reads,
// trainers, epochs, checkpoint interval, ...) and all stop, naming the
// option and both values, where they differ. Each rank holds its share of the partitions in memory
// under options.schedule.memory_budget; partitions move holder to holder between
// rounds (RankSchedule); relation parameters are summed across ranks at
// every round end (ClusterSync); rank 0 alone writes checkpoints, metrics
// and validation. With options.pipeline.deterministic the run equals one process
// with as many trainers in all, bit for bit. A run stopped mid-epoch
// resumes only with as many ranks; at an epoch boundary with any number.
// With options.rank_copies, or a `graph_dir` naming kRankInPath (replaced by
// the rank: "kg.%r" is kg.0, kg.1, ...; 0 in one process), each rank
// trains and checkpoints its own copy (TrainOptions::rank_copies).
inline constexpr char kRankInPath[] = "%r";
absl::StatusOr<TrainSummary> TrainGraphOnCluster(const std::string& graph_dir,
                                                 const TrainOptions& options, Cluster* cluster,
                                                 const LrChooser& choose_lr = nullptr);
// InvalidArgument for what a run across ranks does not train yet
// (--only-new-edges, in-memory probes).
absl::Status CheckTrainableAcrossRanks(const TrainOptions& options);

// Trains `graph` from scratch without writing to it (TrainOptions::in_memory,
// which this sets): the probes' way to train on the user's graph, with no
// copy, checkpoint or reload. With options.validation.enabled, the last epoch's
// stats carry its validation. Returns nullopt, having trained nothing, when
// the model does not fit in memory at once under options.schedule.memory_budget (or
// is featurized); train a copy with TrainGraph then.
// `graph` may be opened read-only.
absl::StatusOr<std::optional<TrainSummary>> TrainWithoutWriting(Graph& graph,
                                                                 TrainOptions options);

// Whether TrainWithoutWriting would train `graph` with `options` in memory
// (true) or return nullopt (false), found by planning its memory only:
// nothing is read or trained. The probes' cost depends on it.
absl::StatusOr<bool> TrainsWithoutWritingInMemory(Graph& graph, TrainOptions options);

}  // namespace ember

#endif  // EMBER_TRAIN_TRAIN_LOOP_H_
