// Options of `ember train`. Plain struct; flags map onto it in tools/.
#ifndef EMBER_TRAIN_OPTIONS_TRAIN_OPTIONS_H_
#define EMBER_TRAIN_OPTIONS_TRAIN_OPTIONS_H_

#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "partition/bucket_order.h"
#include "storage/base/enum_names.h"
#include "train/batch/batch_former.h"
#include "train/eval/evaluator.h"
#include "train/model/model_options.h"

namespace ember {

struct TrainProgress {
  int epoch = 0;             // 0-based epoch being trained
  int epochs = 0;            // target epoch count
  uint64_t bucket = 0;       // buckets done this epoch
  uint64_t buckets = 0;      // buckets per epoch
  uint64_t edges_done = 0;   // train edges done this epoch
  uint64_t edges_total = 0;  // train edges per epoch
  double loss = 0;           // mean loss per edge so far this epoch
  double edges_per_second = 0;
};

// How a batch of several relations is cut into negative-sharing chunks.
enum class RelationBatching : uint8_t {
  kMixed = 0,    // chunks of any relations (more in-chunk negatives, bigger
                 // GEMMs); models without SupportsMixedChunks train grouped
  kGrouped = 1,  // one relation per chunk (PBG)
};
template <>
struct EnumNames<RelationBatching> {
  static constexpr std::string_view kWhat = "relation batching";
  static constexpr EnumNameTable<RelationBatching, 2> kTable = {{
      {RelationBatching::kMixed, "mixed"},
      {RelationBatching::kGrouped, "grouped"},
  }};
};
inline absl::StatusOr<RelationBatching> ParseRelationBatching(std::string_view name) {
  return EnumFromName<RelationBatching>(name);
}
inline std::string_view RelationBatchingName(RelationBatching kind) { return EnumToName(kind); }

// Whether each chunk's endpoints also serve as negatives of the other side.
enum class EndpointNegatives : uint8_t {
  kAuto = 0,  // on for graphs of several relations, off for one (README:
              // on single-relation R-MAT they cost 25 % of the speed and
              // did not help; on knowledge graphs they double MRR)
  kOn = 1,
  kOff = 2,
};
// "auto", "on" or "true", "off" or "false".
template <>
struct EnumNames<EndpointNegatives> {
  static constexpr std::string_view kWhat = "endpoint negatives";
  static constexpr EnumNameTable<EndpointNegatives, 5> kTable = {{
      {EndpointNegatives::kAuto, "auto"},
      {EndpointNegatives::kOn, "on"},
      {EndpointNegatives::kOff, "off"},
      {EndpointNegatives::kOn, "true"},
      {EndpointNegatives::kOff, "false"},
  }};
};

// What training does with a weighted graph's edge weights (`--weights`;
// import --weight-column). Unweighted graphs train the same under each.
enum class EdgeWeightMode : uint8_t {
  kLoss = 0,    // each positive edge's loss (and gradient) is scaled by its weight
  kSample = 1,  // edges are drawn at a rate proportional to their weight
  kIgnore = 2,  // every edge counts once, as if unweighted
};
template <>
struct EnumNames<EdgeWeightMode> {
  static constexpr std::string_view kWhat = "edge weight mode";
  static constexpr EnumNameTable<EdgeWeightMode, 3> kTable = {{
      {EdgeWeightMode::kLoss, "loss"},
      {EdgeWeightMode::kSample, "sample"},
      {EdgeWeightMode::kIgnore, "ignore"},
  }};
};
inline std::string_view EdgeWeightModeName(EdgeWeightMode mode) { return EnumToName(mode); }

// PBG's step size: the default, and what --lr auto keeps unless its probes
// show another to be better (train/tune/probe.h).
inline constexpr float kLrDefault = 0.1f;
// Measured on `gen kg` (4000 entities, seeds 3, 5, 7, and 20000 entities; 5
// epochs, dim 100, lr 0.1): against 1 (PBG's default, relation_lr = lr),
// 3 raises filtered test MRR by 9-21 % for ComplEx and DistMult (e.g.
// 0.306 -> 0.362, seed 5), 10 adds nothing more, TransE moves by -7 %
// (within its noise), and single-relation SBM and R-MAT are unchanged
// within noise. A relation's parameters take one summed gradient from
// every edge of it in a chunk, so their Adagrad state grows far faster
// than a node row's and their steps shrink first.
inline constexpr float kRelationLrScaleDefault = 3.0f;

// How the parameters move: Adagrad's step and the starting point.
struct OptimizerOptions {
  // Adagrad learning rate (embeddings and relation parameters). Default:
  // kLrDefault.
  float lr = kLrDefault;
  // Relation parameters step at relation_lr_scale × lr (PBG's relation_lr
  // as a multiple, so that it follows --lr auto); > 0 and finite. Default:
  // kRelationLrScaleDefault.
  float relation_lr_scale = kRelationLrScaleDefault;
  // Choose `lr` by probes (train/tune/probe.h ChooseLr) when the run starts from
  // scratch and the graph has validation edges; a resumed run keeps the lr
  // stored with its checkpoint. Default: false (the CLI's --lr auto sets it).
  bool lr_auto = false;
  // Std-dev of the normal init of embeddings. Default: 1e-3 (PBG).
  float init_scale = 1e-3f;

  absl::Status Validate() const;
};

// How edges become batches on their way to a trainer: windows, batch and
// chunk sizes, negatives.
struct PipelineOptions {
  // Positive edges per batch (variance-aware batching: the work of an
  // average batch of this many edges); >= 1. Default: 1000.
  int batch_size = 1000;
  // Default: kFixed.
  BatchingKind batching = BatchingKind::kFixed;
  // Edges per negative-sharing chunk; >= 1. Default: 50.
  int chunk_size = 50;
  // Uniform negatives per chunk and side; >= 0. Default: 50.
  int num_uniform_negs = 50;
  // Default: kMixed.
  RelationBatching relation_batching = RelationBatching::kMixed;
  // Each chunk's sources also serve as candidate destinations and its
  // destinations as candidate sources, so that every edge h r t meets
  // h r h and t r t as negatives (chunk_scorer.h). Default: kAuto.
  EndpointNegatives endpoint_negatives = EndpointNegatives::kAuto;
  // Edges per shuffled window of a bucket; 0: sized from the budget (a
  // window as large as the bucket is a whole-bucket shuffle). Default: 0.
  uint64_t window_edges = 0;
  // One batch in flight, and variance-aware batches planned with a fixed
  // edge cost instead of the measured one: with threads == 1, bit-identical
  // results whether resumed or not. Default: false.
  bool deterministic = false;

  absl::Status Validate() const;
};

// Which buckets train when, within what memory, and how often the run
// checkpoints.
struct ScheduleOptions {
  // Default: inside-out (PBG).
  BucketOrderKind bucket_order = BucketOrderKind::kInsideOut;
  // Peak-memory target for partition rows, edges in flight and storage
  // buffers (partition/train_memory.h); the binary itself comes on top;
  // > 0. Default: 2 GiB.
  uint64_t memory_budget = uint64_t{2} << 30;
  // Partitions held in memory; 0: as many as the budget allows. Default: 0.
  uint32_t buffer_partitions = 0;
  // Also checkpoint every N buckets (0: only at the end of each epoch).
  // Default: 0.
  uint32_t checkpoint_every = 0;
  // Write an epoch's checkpoint beside the next epoch where the run allows
  // it (docs/cli.md); false: before the next epoch starts. Default: true.
  bool checkpoint_beside = true;

  absl::Status Validate() const;
};

// The trainers of a run and the threads they share.
struct DeviceOptions {
  // Total worker threads, split among trainers; >= 1 (the CLI resolves
  // --threads 0 to all cores). Default: 1.
  int threads = 1;
  // Trainers working at once on buckets with disjoint partitions, as CPU
  // trainers sharing `threads` (shorthand for `list`); between 1 and
  // `threads` when `list` is empty. Default: 1.
  int trainers = 1;
  // The trainers by device, comma-separated (trainer_factory.h): "cpu",
  // "cpu:THREADS", "cuda:N". Empty: `trainers` CPU trainers. Default: "".
  std::string list;

  absl::Status Validate() const;
};

// Validation after each epoch (when the graph has a valid split): filtered
// MRR with its 95 % interval (train/eval/evaluator.h) of the same seeded sample
// of valid edges every epoch, so that epochs compare on the same queries.
struct ValidationOptions {
  // Default: false.
  bool enabled = false;
  // 0: rank against every node; N: against N sampled negatives, which
  // flatters (evaluator.h). Default: 0.
  uint64_t negatives = 0;
  // Valid edges in the sample; 0: all of them. Smaller than `ember eval`'s
  // 10,000 because it runs every epoch: 2,000 edges bound the 95 %
  // interval of MRR to at most ±0.022 (1.96 · 0.5 / √2000) at a fifth of
  // the cost, enough to follow the trend between epochs. Default: 2000.
  uint64_t max_edges = 2000;
  // Keep each ranked edge's reciprocal rank (EvalOptions::edge_rr): probes
  // compare step sizes edge by edge (train/tune/probe.h). Default: false.
  bool edge_rr = false;

  // Checks the evaluation's options when enabled.
  absl::Status Validate() const;
};

// The steps of a checkpoint across ranks that checkpoint into their own
// copies (TrainOptions::rank_copies), in order.
enum class CheckpointStep {
  kShareWritten,       // this rank's partitions durable in its copy
  kRankZeroCommitted,  // rank 0's manifest committed: the checkpoint's commit point
  kCommitted,          // this rank's manifest committed
};

// Hooks for tests; a run leaves them at their defaults. Every value is
// valid.
struct TrainTestHooks {
  // Stop as if killed (no final checkpoint) after this many buckets have
  // been trained in this run. 0: never. Default: 0.
  uint64_t stop_after_buckets = 0;
  // Across own copies: called on every rank after each step of every
  // checkpoint; an error fails that rank there, as a kill would. Empty:
  // none.
  std::function<absl::Status(uint32_t rank, CheckpointStep step)> checkpoint_step;
};

class Trainer;

// Replaces a trainer the factory made (trainer_factory.h MakeTrainers) by
// what it returns, e.g. the trainer wrapped. Called once per trainer, in
// order, with the trainer's index and the number of trainers; an error
// stops the run.
using TrainerWrap = std::function<absl::StatusOr<std::unique_ptr<Trainer>>(
    size_t index, size_t count, std::unique_ptr<Trainer> trainer)>;

// Hooks for benchmarks (tools/bench/); a run leaves them empty.
struct TrainBenchHooks {
  // Applied to every trainer of the run. Empty: the trainers as made.
  TrainerWrap wrap_trainer;
};

// The options of a run: its groups, each checked by its own Validate(),
// and the fields of the run as a whole.
struct TrainOptions {
  ModelOptions model;
  OptimizerOptions optimizer;
  PipelineOptions pipeline;
  ScheduleOptions schedule;
  DeviceOptions devices;
  ValidationOptions validation;

  // Total epochs to reach; a resumed run trains only the missing ones;
  // >= 0. Default: 10.
  int epochs = 10;
  // The run's random seed. Default: 0.
  uint64_t seed = 0;
  // Ignore an existing checkpoint. Default: false.
  bool from_scratch = false;
  // Train only the edges of the latest `import --append` and update only
  // the rows of nodes it added: old nodes' embeddings stay frozen.
  // Default: false.
  bool only_new_edges = false;
  // A weighted graph's edge weights: scale each edge's loss, draw edges in
  // proportion to them, or ignore them. Default: kLoss.
  EdgeWeightMode edge_weights = EdgeWeightMode::kLoss;
  // Train on a seeded sample of about this share of the train edges, the
  // same edges every epoch, in (0, 1] (probes: train/tune/probe.h). Default: 1.
  double edge_sample = 1.0;
  // Train without writing to the graph (probes, train/tune/probe.h
  // TrainWithoutWriting): from scratch, no checkpoint, no metrics line, no
  // table writes; validation runs once, after the last epoch, on the rows
  // in memory. REQUIRES from_scratch, and schedule.checkpoint_every,
  // hooks.stop_after_buckets, only_new_edges and optimizer.lr_auto off.
  // Default: false.
  bool in_memory = false;
  // Across ranks (TrainGraphOnCluster): the longest wait for a partition
  // from another rank before the run stops with an error naming it, and
  // the longest time a rank may go without progress before its watchdog
  // ends the whole job (Cluster::Abort; train/distributed/rank_watchdog.h);
  // > 0. Default: 600 s.
  double rank_timeout_seconds = 600;
  // Across ranks: each rank trains its own copy of the graph (a copy per
  // machine, or on one host a path per rank) and checkpoints the partitions
  // it holds into it, rank 0 committing once every rank's share is durable;
  // the copies' manifests say which rank's copy holds each partition's rows
  // (`ember gather` brings them into one). False: rank 0 writes every
  // checkpoint into its copy, the other ranks read theirs. Default: false.
  bool rank_copies = false;
  // Called often from one thread at a time; throttle in the callee.
  std::function<void(const TrainProgress&)> progress;

  TrainTestHooks hooks;
  TrainBenchHooks bench;

  // Every group's Validate(), then the checks across groups.
  absl::Status Validate() const;
};

// Whether the trainers score endpoint negatives on a graph of
// `num_relations` relations.
inline bool UsesEndpointNegatives(const TrainOptions& options, uint32_t num_relations) {
  return options.pipeline.endpoint_negatives == EndpointNegatives::kOn ||
         (options.pipeline.endpoint_negatives == EndpointNegatives::kAuto && num_relations > 1);
}

// Whether the trainers form mixed-relation chunks.
inline bool UsesMixedChunks(const TrainOptions& options) {
  return options.pipeline.relation_batching == RelationBatching::kMixed &&
         SupportsMixedChunks(options.model);
}

// The per-epoch validation (options.validation): the valid split, ranked
// against validation.negatives (0: all nodes), the same sample of
// validation.max_edges edges (seeded by options.seed) every epoch, on
// devices.threads threads.
EvalOptions ValidationEvalOptions(const TrainOptions& options);

}  // namespace ember

#endif  // EMBER_TRAIN_OPTIONS_TRAIN_OPTIONS_H_
