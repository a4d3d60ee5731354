// The training loop across the ranks of a Cluster (process_layout.h;
// TrainGraphOnCluster): every rank computes the epoch's schedule and holds
// its share of the partitions for the whole run; partitions move holder to
// holder before each round, relations are summed at round ends, progress
// and measures are summed over every rank, and checkpoints are written in
// two phases, each rank its share (into its own copy of the graph, or
// beside rank 0's shared one for rank 0 to take in), then rank 0's commit.
// A watchdog ends the job when this rank stops making progress.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "partition/train_memory.h"
#include "storage/base/status_macros.h"
#include "train/distributed/cluster_sync.h"
#include "train/distributed/epoch_model.h"
#include "train/distributed/rank_schedule.h"
#include "train/distributed/rank_watchdog.h"
#include "train/internal/process_layout.h"
#include "train/rank_copies.h"
#include "train/rank_exchange.h"

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;

class RankLayout final : public ProcessLayout {
 public:
  RankLayout(Graph* graph, const TrainOptions& options, Cluster* cluster)
      : graph_(graph),
        options_(options),
        cluster_(cluster),
        P_(graph->manifest().num_partitions),
        own_copies_(options.rank_copies),
        rank_timeout_(absl::Seconds(options.rank_timeout_seconds)) {}

  bool writer() const override { return cluster_->rank() == 0; }
  bool checkpoint_writer() const override { return writer() || own_copies_; }

  RunPlan PlanRun(uint32_t buffer_partitions, uint32_t trainers) override {
    // A rank holds its share of the partitions in memory for the whole run
    // (ScheduleEpoch checks that the share fits the budget's buffer); rounds
    // span every trainer of every rank. The bucket order reads the buffer
    // one process would plan (--bucket-order beta), which the ranks agree
    // on at the start, or P for orders that read none.
    budget_partitions_ = buffer_partitions;
    trainers_ = trainers;
    order_capacity_ = options_.schedule.bucket_order == BucketOrderKind::kBeta
                          ? std::min(buffer_partitions, P_)
                          : P_;
    round_size_ = trainers * cluster_->world_size();
    // A rank training its own copy keeps what its budget has room for and
    // the rest of its share in its copy; otherwise it holds its share in
    // memory. Across ranks the order's capacity is what shapes the schedule.
    const uint32_t capacity = own_copies_ ? std::min(buffer_partitions, P_) : P_;
    lookahead_ = RoundLookahead(P_, /*all_resident=*/true);
    return RunPlan{capacity, round_size_,
                   RunShape{order_capacity_, round_size_, cluster_->world_size(), lookahead_}};
  }

  absl::Status SetUp(const std::function<absl::Status()>& set_up_here) override;

  std::unique_ptr<ParameterSync> MakeSync(FeatureTable* features) override {
    std::unique_ptr<ClusterSync> sync =
        MakeClusterSync(cluster_, options_.pipeline.deterministic, round_size_, features);
    cluster_sync_ = sync.get();
    return sync;
  }

  absl::StatusOr<BucketScheduler*> ScheduleEpoch(int epoch, uint64_t first_round,
                                                 PartitionBuffer& buffer) override;

  std::vector<std::vector<Bucket>> RoundsOfEpoch() const override {
    std::vector<std::vector<Bucket>> rounds;
    for (const GlobalRound& g : rank_schedule_->rounds) {
      rounds.emplace_back();
      for (const RankBucket& b : g.buckets) rounds.back().push_back(b.bucket);
    }
    return rounds;
  }

  absl::Status BeforeRound(const Round& next, PartitionBuffer& buffer,
                           const std::function<bool(uint64_t)>& pause_after) override;

  // Every partition this rank holds is resident; the next round's arrive
  // from their holders (BeforeRound), not the disk.
  void Prefetch(const Round& /*next*/, PartitionBuffer& /*buffer*/) override {}

  uint64_t BucketsOf(const Round& done) const override {
    return rank_schedule_->rounds[done.index].buckets.size();
  }

  // Progress is reported per round, summed over every rank (AfterStretch).
  void BatchTrained(const TrainProgress& /*progress*/) override {}

  absl::Status AfterStretch(const StretchEnd& end) override {
    train_seconds_ += end.train_seconds;
    sync_seconds_ += end.sync_seconds;
    RETURN_IF_ERROR(ReportGlobalProgress(end));
    Progress();
    return absl::OkStatus();
  }

  absl::Status Checkpoint(const CheckpointRequest& request) override;
  // Checkpoints are a protocol between the ranks (Checkpoint).
  bool WritesCheckpointsBesideTraining() const override { return false; }

  void CountEpoch(EpochStats* stats) const override {
    stats->edges = global_edges_;
    stats->loss = global_loss_;
  }

  absl::Status MeasureEpoch(int epoch, bool predict, EpochStats* stats) override;

 private:
  // What every rank must share because it shapes the schedule or the
  // model (CheckRanksAgree compares them at the start).
  std::vector<RankSetting> RankSettings() const;
  // The schedule of epoch `epoch` for `world_size` ranks of this run's
  // shape (this rank's trainers, order capacity and look-ahead), from the
  // default holders.
  RankScheduleOptions ScheduleFor(int epoch, uint32_t world_size) const;
  // This epoch's schedule, and the partitions this rank holds at its start
  // loaded (first epoch of the run) or checked.
  absl::Status ComputeSchedule(int epoch, uint64_t first_round, PartitionBuffer& buffer);
  // Ranks whose graphs are not one shared directory and who have no copies
  // of their own: rank 0 writes every partition, one at a time, from its
  // buffer or from a copy its holder sends it, then commits.
  absl::Status CheckpointThroughRankZero(const CheckpointRequest& request,
                                         const std::vector<uint32_t>& holders);
  // Into own copies, once every rank's share is durable (`writers` wrote
  // each partition; `resident`: this rank's resident partitions): rank 0's
  // commit, then the others' (Checkpointer::CommitShare).
  absl::Status CommitCopies(const CheckpointRequest& request, const std::vector<uint32_t>& holders,
                            const std::vector<uint32_t>& writers,
                            const std::vector<uint32_t>& resident);
  // The test hook's verdict on this rank after `step` (OK without one).
  absl::Status AfterStep(CheckpointStep step) const {
    const auto& hook = options_.hooks.checkpoint_step;
    return hook ? hook(cluster_->rank(), step) : absl::OkStatus();
  }
  // Edges and loss summed over every rank, reported.
  absl::Status ReportGlobalProgress(const StretchEnd& end);
  // This rank made progress (the watchdog's beat).
  void Progress() {
    if (watchdog_ != nullptr) watchdog_->Beat();
  }
  // Bytes of partition p's rows and optimizer state.
  uint64_t PartitionBytes(uint32_t p) const;

  Graph* const graph_;
  const TrainOptions& options_;
  Cluster* const cluster_;
  const uint32_t P_;
  const bool own_copies_;  // options.rank_copies
  // Not own copies, and every rank's graph is rank 0's directory
  // (SharesRankZeroGraph, at SetUp): the ranks write their shares beside it.
  bool shares_graph_ = false;
  const absl::Duration rank_timeout_;
  // The partitions this rank's memory budget has room for, and its
  // trainers (PlanRun).
  uint32_t budget_partitions_ = 1;
  uint32_t trainers_ = 1;
  // The capacity the bucket order reads (--bucket-order beta: this rank's
  // buffer as one process would plan it; P for orders that read none).
  uint32_t order_capacity_ = 1;
  uint32_t round_size_ = 1;
  // FormRounds' window, recorded in the run's shape (PlanRun).
  uint32_t lookahead_ = 0;
  // The epoch's schedule, this rank's view of it, and the holders the next
  // epoch starts from.
  std::unique_ptr<RankSchedule> rank_schedule_;
  std::unique_ptr<RankRoundScheduler> rank_rounds_;
  std::vector<uint32_t> next_holders_;
  ClusterSync* cluster_sync_ = nullptr;  // owned by the loop (MakeSync)
  // The epoch's edges and mean loss over every rank, as of the last
  // ReportGlobalProgress.
  uint64_t global_edges_ = 0;
  double global_loss_ = 0;
  // This epoch on this rank: seconds training, moving partitions and
  // summing parameters, and the partition bytes it sent.
  double train_seconds_ = 0;
  double transfer_seconds_ = 0;
  double sync_seconds_ = 0;
  uint64_t bytes_at_boundary_ = 0;  // sent at round boundaries
  uint64_t bytes_overlapped_ = 0;   // sent while the round before trained
  uint64_t moves_at_boundary_ = 0;  // sends and receives at round boundaries
  uint64_t checkpoint_bytes_ = 0;   // rows this rank wrote into its graph
  // Into own copies: seconds handing partitions to their writers, and
  // writing this rank's share.
  double checkpoint_handoff_seconds_ = 0;
  double checkpoint_write_seconds_ = 0;
  // Moves of round early_round_ of this epoch, started while the round
  // before it trained; kNoEarlyRound when none are under way. Set when
  // they start, cleared when that round takes them and at each epoch's
  // start.
  static constexpr uint64_t kNoEarlyRound = ~uint64_t{0};
  PendingMoves early_moves_;
  uint64_t early_round_ = kNoEarlyRound;
  // Ends the job (Cluster::Abort) when this rank makes no progress for
  // options.rank_timeout_seconds: no round finished and no partition
  // written or loaded. Started by SetUp. Declared last, so destroyed
  // first: the layout's teardown is not watched (the loop's is not
  // either: the loop declares its layout last).
  std::unique_ptr<RankWatchdog> watchdog_;
};

absl::Status RankLayout::SetUp(const std::function<absl::Status()>& set_up_here) {
  // A rank that stops making progress ends the job: MPI's collectives
  // cannot time out, and the other ranks would wait for it forever.
  Cluster* const cluster = cluster_;
  const uint32_t rank = cluster_->rank();
  const double timeout = options_.rank_timeout_seconds;
  watchdog_ =
      std::make_unique<RankWatchdog>(rank_timeout_, [cluster, rank, timeout](absl::Duration quiet) {
        cluster->Abort(absl::DeadlineExceededError(
            absl::StrCat("rank ", rank, " (", cluster->where(), ") made no progress for ",
                         absl::FormatDuration(quiet), " (--rank-timeout ", timeout,
                         "): no round finished and no partition was written or loaded; a rank is "
                         "stalled or gone; stopping the job")));
      });
  // Own copies first take rank 0's checkpoint where they stopped between
  // its commit and theirs (set_up_here reads and cleans the copy).
  if (own_copies_) RETURN_IF_ERROR(RollForwardToRankZero(*cluster_, *graph_));
  // Every rank sets up, then all agree before the first collective that
  // needs a working peer; then they check that they train one graph.
  RETURN_IF_ERROR(AgreeOnStatus(*cluster_, set_up_here()));
  Progress();
  RETURN_IF_ERROR(CheckRanksAgree(*cluster_, *graph_, RankSettings()));
  if (!own_copies_) {
    ASSIGN_OR_RETURN(shares_graph_, SharesRankZeroGraph(*cluster_, *graph_));
  }
  return absl::OkStatus();
}

absl::Status RankLayout::Checkpoint(const CheckpointRequest& request) {
  const uint64_t before =
      request.next_round == 0 ? rank_schedule_->rounds.size() : request.next_round;
  const std::vector<uint32_t> holders = rank_schedule_->HoldersBefore(before);
  if (!own_copies_ && !shares_graph_) return CheckpointThroughRankZero(request, holders);
  const uint32_t me = cluster_->rank();
  PartitionBuffer& buffer = *request.buffer;
  // Phase 1: each rank writes at most ceil(P/N) partitions, durably: its
  // own, and copies of those a rank holding more hands it (first: a load
  // for a hand-off may evict). Into its own copy, or, sharing rank 0's
  // graph, rank 0 into the shards and the others as table files beside
  // them (PartitionBufferOptions::stage_tables).
  const std::vector<uint32_t> writers = BalancedWriters(holders, cluster_->world_size());
  const auto handing_off = Clock::now();
  absl::Status s =
      HandOffForWriting(*cluster_, buffer, holders, writers, rank_timeout_, [this] { Progress(); });
  const auto writing = Clock::now();
  checkpoint_handoff_seconds_ += std::chrono::duration<double>(writing - handing_off).count();
  // Its own partitions in memory are written now; those out of core are in
  // its copy already, as of their eviction.
  absl::StatusOr<std::vector<uint32_t>> resident = buffer.Resident();
  if (s.ok()) s = resident.status();
  RETURN_IF_ERROR(AgreeOnStatus(*cluster_, s));
  std::vector<uint32_t> kept, synced_apart;
  for (uint32_t p : *resident) {
    if (holders[p] == me && writers[p] == me) kept.push_back(p);
  }
  for (uint32_t p = 0; p < P_; ++p) {
    if (writers[p] == me && !std::binary_search(kept.begin(), kept.end(), p)) {
      synced_apart.push_back(p);
    }
  }
  // One partition of each rank's at a time, agreed after each: a rank
  // done with its share counts the others' writing as progress.
  const uint32_t steps = LargestShare(writers, cluster_->world_size());
  for (uint32_t i = 0; i < steps; ++i) {
    RETURN_IF_ERROR(AgreeOnStatus(*cluster_, i < kept.size() ? buffer.WriteDurably(kept[i]) : s));
    Progress();
  }
  // Into own copies: the rest of its share durable (received copies, and
  // partitions out of core written at their eviction) and the blobs.
  if (own_copies_) {
    s = request.checkpointer->WriteShare(synced_apart, *request.relations, request.features);
  }
  checkpoint_write_seconds_ += std::chrono::duration<double>(Clock::now() - writing).count();
  if (s.ok()) {
    for (uint32_t p = 0; p < P_; ++p) {
      if (writers[p] == me) checkpoint_bytes_ += PartitionBytes(p);
    }
    s = AfterStep(CheckpointStep::kShareWritten);
  }
  RETURN_IF_ERROR(AgreeOnStatus(*cluster_, s));
  Progress();
  // Phase 2: rank 0's commit is the checkpoint's.
  if (own_copies_) return CommitCopies(request, holders, writers, *resident);
  // Sharing rank 0's graph: rank 0 takes in what the others wrote, a
  // partition at a time (each progress on every rank), then commits.
  for (uint32_t p = 0; p < P_; ++p) {
    if (writers[p] == 0) continue;
    RETURN_IF_ERROR(AgreeOnStatus(*cluster_, writer() ? buffer.TakeInStaged(p) : absl::OkStatus()));
    Progress();
  }
  s = absl::OkStatus();
  if (writer()) {
    s = request.Write(/*rows_written=*/true);
    if (s.ok()) s = graph_->RemoveIncomingTables();
  }
  if (s.ok()) s = AfterStep(CheckpointStep::kRankZeroCommitted);
  RETURN_IF_ERROR(AgreeOnStatus(*cluster_, s));
  Progress();
  // Keep the version count in step with rank 0.
  if (!writer()) request.checkpointer->CountCommitted(request.buffer);
  return absl::OkStatus();
}

absl::Status RankLayout::CheckpointThroughRankZero(const CheckpointRequest& request,
                                                   const std::vector<uint32_t>& holders) {
  if (writer()) {
    for (uint32_t p = 0; p < P_; ++p) checkpoint_bytes_ += PartitionBytes(p);
  }
  // Each partition written counts as progress on every rank: a checkpoint
  // longer than --rank-timeout in all is not a stall.
  RETURN_IF_ERROR(WritePartitionsAtRankZero(*cluster_, *request.buffer, holders, rank_timeout_,
                                            [this](uint32_t) { Progress(); }));
  absl::Status s = absl::OkStatus();
  if (writer()) s = request.Write(/*rows_written=*/true);
  RETURN_IF_ERROR(AgreeOnStatus(*cluster_, s));
  Progress();
  // Keep the version count in step with rank 0.
  if (!writer()) request.checkpointer->CountCommitted(request.buffer);
  return absl::OkStatus();
}

absl::Status RankLayout::CommitCopies(const CheckpointRequest& request,
                                      const std::vector<uint32_t>& holders,
                                      const std::vector<uint32_t>& writers,
                                      const std::vector<uint32_t>& resident) {
  const uint32_t me = cluster_->rank();
  PartitionBuffer& buffer = *request.buffer;
  // The table version of each partition, from the rank that wrote it.
  std::string mine;
  for (uint32_t p = 0; p < P_; ++p) {
    if (writers[p] == me) absl::StrAppend(&mine, p, "=", buffer.locations()[p], ",");
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> all, cluster_->AllGather(mine));
  std::vector<uint64_t> versions(P_, 0);
  for (const std::string& line : all) {
    for (absl::string_view entry : absl::StrSplit(line, ',', absl::SkipEmpty())) {
      const size_t eq = entry.find('=');
      uint32_t p = 0;
      uint64_t v = 0;
      if (eq == absl::string_view::npos || !absl::SimpleAtoi(entry.substr(0, eq), &p) ||
          !absl::SimpleAtoi(entry.substr(eq + 1), &v) || p >= P_) {
        return absl::InternalError(absl::StrCat("rank ", me, ": bad partition version ", entry));
      }
      versions[p] = v;
    }
  }
  // What this rank's buffer still reads from its copy: partitions it holds
  // out of core (handed to another writer, their old version stays).
  std::vector<uint64_t> in_use(P_, 0);
  for (uint32_t p = 0; p < P_; ++p) {
    if (holders[p] == me && !std::binary_search(resident.begin(), resident.end(), p)) {
      in_use[p] = buffer.locations()[p];
    }
  }
  // Rank 0's commit is the checkpoint's: a rank stopped after it and
  // before its own takes rank 0's at the next start (RollForwardToRankZero).
  auto commit = [&] {
    return request.checkpointer->CommitShare(writers, versions, in_use, me, request.epoch,
                                             request.next_round, request.epochs_done);
  };
  absl::Status s = writer() ? commit() : absl::OkStatus();
  if (s.ok()) s = AfterStep(CheckpointStep::kRankZeroCommitted);
  RETURN_IF_ERROR(AgreeOnStatus(*cluster_, s));
  s = writer() ? absl::OkStatus() : commit();
  if (s.ok()) s = AfterStep(CheckpointStep::kCommitted);
  RETURN_IF_ERROR(AgreeOnStatus(*cluster_, s));
  Progress();
  buffer.set_write_version(request.checkpointer->write_version());
  return absl::OkStatus();
}

std::vector<RankSetting> RankLayout::RankSettings() const {
  // The shortest text that reads back as the same float.
  auto exact = [](float x) {
    std::string text;
    for (int digits = 6; digits <= 9; ++digits) {
      text = absl::StrFormat("%.*g", digits, x);
      if (std::strtof(text.c_str(), nullptr) == x) break;
    }
    return text;
  };
  auto yes_no = [](bool b) { return std::string(b ? "true" : "false"); };
  const ModelOptions& m = options_.model;
  const OptimizerOptions& opt = options_.optimizer;
  const PipelineOptions& p = options_.pipeline;
  const ScheduleOptions& sched = options_.schedule;
  std::vector<RankSetting> s = {
      // The schedule.
      {"--trainers", absl::StrCat(trainers_), "", "--trainers or --devices"},
      {"--seed", absl::StrCat(options_.seed)},
      {"--bucket-order", std::string(BucketOrderName(sched.bucket_order))},
      {"--epochs", absl::StrCat(options_.epochs)},
      {"--checkpoint-every", absl::StrCat(sched.checkpoint_every)},
      {"--from-scratch", yes_no(options_.from_scratch)},
      {"--deterministic", yes_no(p.deterministic)},
      {"--rank-copies", yes_no(own_copies_), "", "--rank-copies (or a graph path naming %r)"},
      {"stop_after_buckets (a test hook)", absl::StrCat(options_.hooks.stop_after_buckets)},
      // The model and how it trains.
      {"--dim", absl::StrCat(m.dim)},
      {"--operator", std::string(OperatorName(m.op))},
      {"--comparator", std::string(ComparatorName(m.comparator))},
      {"--loss", std::string(LossName(m.loss))},
      {"--margin", exact(m.margin)},
      {"--featurized", std::string(FeaturizedModeName(m.featurized))},
      {"--reciprocal", yes_no(m.reciprocal)},
      {"--regularizer", std::string(RegularizerName(m.regularizer))},
      {"--reg-weight", exact(m.reg_weight)},
      {"--precision", std::string(PrecisionName(m.precision))},
      {"--lr", exact(opt.lr)},
      {"--relation-lr-scale", exact(opt.relation_lr_scale)},
      {"--init-scale", exact(opt.init_scale)},
      {"--batch-size", absl::StrCat(p.batch_size)},
      {"--batching", std::string(EnumToName(p.batching))},
      {"--chunk-size", absl::StrCat(p.chunk_size)},
      {"--num-uniform-negs", absl::StrCat(p.num_uniform_negs)},
      {"--relation-batching", std::string(RelationBatchingName(p.relation_batching))},
      {"--endpoint-negatives", std::string(EnumToName(p.endpoint_negatives))},
      {"edge_sample", absl::StrFormat("%.17g", options_.edge_sample)},
      {"--weights", std::string(EdgeWeightModeName(options_.edge_weights))},
  };
  // Beta's order reads a buffer capacity, which each rank plans from its
  // own budget: the ranks must plan the same one (other orders read none:
  // it is P on every rank, and listed all the same, so that every rank
  // lists the same settings).
  s.push_back({"--bucket-order beta's buffer of", absl::StrCat(order_capacity_),
               absl::StrCat(" partitions (from --memory-budget ", Mib(sched.memory_budget),
                            sched.buffer_partitions > 0
                                ? absl::StrCat(", --buffer-partitions ", sched.buffer_partitions)
                                : "",
                            ")"),
               "--memory-budget and --buffer-partitions"});
  return s;
}

absl::StatusOr<BucketScheduler*> RankLayout::ScheduleEpoch(int epoch, uint64_t first_round,
                                                           PartitionBuffer& buffer) {
  rank_rounds_.reset();  // it reads the schedule replaced below
  train_seconds_ = transfer_seconds_ = sync_seconds_ = 0;
  bytes_at_boundary_ = bytes_overlapped_ = moves_at_boundary_ = checkpoint_bytes_ = 0;
  checkpoint_handoff_seconds_ = checkpoint_write_seconds_ = 0;
  RETURN_IF_ERROR(ComputeSchedule(epoch, first_round, buffer));
  rank_rounds_ =
      std::make_unique<RankRoundScheduler>(rank_schedule_.get(), cluster_->rank(), first_round);
  return rank_rounds_.get();
}

RankScheduleOptions RankLayout::ScheduleFor(int epoch, uint32_t world_size) const {
  RankScheduleOptions o;
  o.seed = options_.seed;
  o.epoch = static_cast<uint64_t>(epoch);
  o.num_partitions = P_;
  o.world_size = world_size;
  o.trainers_per_rank = trainers_;
  o.order = options_.schedule.bucket_order;
  o.buffer_capacity = order_capacity_;
  o.lookahead = lookahead_;
  o.bucket_edges = graph_->manifest().train_bucket_edges;
  return o;
}

absl::Status RankLayout::ComputeSchedule(int epoch, uint64_t first_round, PartitionBuffer& buffer) {
  RankScheduleOptions o = ScheduleFor(epoch, cluster_->world_size());
  const bool run_start = next_holders_.empty();
  if (run_start) {
    ASSIGN_OR_RETURN(next_holders_, HoldersAtEpoch(o, epoch));
  }
  o.holders = next_holders_;
  ASSIGN_OR_RETURN(RankSchedule schedule, ComputeRankSchedule(o));
  rank_schedule_ = std::make_unique<RankSchedule>(std::move(schedule));
  next_holders_ = rank_schedule_->final_holders;
  // No round of the new epoch has started its moves.
  early_round_ = kNoEarlyRound;
  const uint32_t me = cluster_->rank();
  // The most partitions this rank holds at once, against the budget's.
  // One walk over the rounds' transfers (HoldersBefore per round would be
  // quadratic in the rounds).
  std::vector<uint32_t> holders = rank_schedule_->initial_holders;
  uint32_t held = static_cast<uint32_t>(std::count(holders.begin(), holders.end(), me));
  uint32_t peak = held;
  for (const GlobalRound& g : rank_schedule_->rounds) {
    for (const Transfer& t : g.transfers) {
      held += (t.to == me) - (holders[t.partition] == me);
      holders[t.partition] = t.to;
    }
    peak = std::max(peak, held);
  }
  if (own_copies_) {
    // Out of core in its own copy: each round's partitions must fit.
    uint32_t round_peak = 0;
    for (const GlobalRound& g : rank_schedule_->rounds) {
      std::vector<uint32_t> parts;
      for (const RankBucket& b : g.buckets) {
        if (b.rank != me) continue;
        parts.push_back(b.bucket.src);
        parts.push_back(b.bucket.dst);
      }
      std::sort(parts.begin(), parts.end());
      round_peak = std::max<uint32_t>(
          round_peak,
          static_cast<uint32_t>(std::unique(parts.begin(), parts.end()) - parts.begin()));
    }
    if (round_peak > budget_partitions_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("rank ", me, " (", cluster_->where(), ") trains rounds of up to ",
                       round_peak, " partitions in this epoch, but --memory-budget ",
                       options_.schedule.memory_budget >> 20, " MiB has room for ",
                       budget_partitions_, "; raise --memory-budget or --buffer-partitions"));
    }
  } else if (peak > budget_partitions_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "rank ", me, " (", cluster_->where(), ") holds up to ", peak,
        " partitions at once in this epoch, but --memory-budget ",
        options_.schedule.memory_budget >> 20, " MiB has room for ", budget_partitions_,
        "; raise --memory-budget, run more ranks, or give each rank its own "
        "copy of the graph (--rank-copies), where a rank trains out of core"));
  }
  const std::vector<uint32_t> h = rank_schedule_->HoldersBefore(first_round);
  std::vector<uint32_t> mine;
  for (uint32_t p = 0; p < P_; ++p) {
    if (h[p] == me) mine.push_back(p);
  }
  if (run_start && own_copies_) {
    // Each partition from the copy that holds its committed rows.
    return LoadShareFromCopies(*cluster_, *graph_, buffer, h, rank_timeout_,
                               [this] { Progress(); });
  }
  if (run_start) {
    // One at a time, each load counting as progress: a rank's share may
    // take longer than --rank-timeout to read.
    for (uint32_t p : mine) {
      RETURN_IF_ERROR(buffer.Acquire(std::span<const uint32_t>(&p, 1), {}));
      Progress();
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const std::vector<uint32_t> resident, buffer.Resident());
  // Out of core in its own copy, the rest of its share is on its disk.
  const bool holds_them =
      own_copies_ ? std::includes(mine.begin(), mine.end(), resident.begin(), resident.end())
                  : resident == mine;
  if (!holds_them) {
    return absl::InternalError(absl::StrCat("rank ", me, " starts epoch ", epoch, " holding ",
                                            resident.size(), " partitions, not the ", mine.size(),
                                            " its schedule names"));
  }
  return absl::OkStatus();
}

uint64_t RankLayout::PartitionBytes(uint32_t p) const {
  return graph_->manifest().partition_sizes[p] * (uint64_t(options_.model.dim) + 1) * sizeof(float);
}

absl::Status RankLayout::MeasureEpoch(int epoch, bool predict, EpochStats* stats) {
  const uint32_t n = cluster_->world_size();
  // The totals over every rank.
  std::vector<double> sums = {static_cast<double>(bytes_at_boundary_),
                              static_cast<double>(bytes_overlapped_),
                              train_seconds_,
                              transfer_seconds_,
                              sync_seconds_,
                              static_cast<double>(checkpoint_bytes_),
                              writer() ? static_cast<double>(checkpoint_bytes_) : 0.0};
  constexpr size_t kTotals = 7;
  // Then three figures of each rank, each in its own slot: its boundary
  // moves, and its checkpoint's hand-offs and write (the slowest rank's
  // count, the one the others wait for).
  const double per_rank[3] = {static_cast<double>(moves_at_boundary_), checkpoint_handoff_seconds_,
                              checkpoint_write_seconds_};
  sums.resize(kTotals + 3 * n, 0.0);
  for (size_t i = 0; i < 3; ++i) sums[kTotals + i * n + cluster_->rank()] = per_rank[i];
  RETURN_IF_ERROR(cluster_->SumDoubles(std::span<double>(sums)));
  auto slot = [&](size_t i, uint32_t r) { return sums[kTotals + i * n + r]; };
  uint32_t busiest = 0, slowest_writer = 0;
  for (uint32_t r = 1; r < n; ++r) {
    if (slot(0, r) > slot(0, busiest)) busiest = r;
    if (slot(1, r) + slot(2, r) > slot(1, slowest_writer) + slot(2, slowest_writer)) {
      slowest_writer = r;
    }
  }
  EpochMeasure m;
  m.ranks = n;
  m.rounds = rank_schedule_->rounds.size();
  m.train_edges = stats->edges;
  m.bytes_at_boundary = static_cast<uint64_t>(sums[0]);
  m.bytes_overlapped = static_cast<uint64_t>(sums[1]);
  m.train_seconds = sums[2] / n;
  m.transfer_seconds = sums[3] / n;
  m.sync_seconds = sums[4] / n;
  m.checkpoint_seconds = stats->checkpoint_seconds;
  m.checkpoint_bytes = static_cast<uint64_t>(sums[5]);
  m.checkpoint_bytes_rank0 = static_cast<uint64_t>(sums[6]);
  m.checkpoint_per_rank = own_copies_ || shares_graph_;
  m.moves_busiest_rank = static_cast<uint64_t>(slot(0, busiest));
  m.checkpoint_handoff_seconds = slot(1, slowest_writer);
  m.checkpoint_write_seconds = slot(2, slowest_writer);
  m.schedule = CostsOf(*rank_schedule_);
  uint64_t all = 0;
  for (uint32_t p = 0; p < P_; ++p) all += PartitionBytes(p);
  m.partition_bytes = all / P_;
  stats->ranks_measure = m;
  if (!predict) return absl::OkStatus();
  ASSIGN_OR_RETURN(const RankSchedule doubled, ComputeRankSchedule(ScheduleFor(epoch, 2 * n)));
  stats->predicted = PredictEpoch(m, *rank_schedule_);
  stats->predicted_doubled = PredictEpoch(m, doubled);
  return absl::OkStatus();
}

absl::Status RankLayout::ReportGlobalProgress(const StretchEnd& end) {
  double sums[2] = {static_cast<double>(end.progress.edges_done), end.loss_sum};
  RETURN_IF_ERROR(cluster_->SumDoubles(sums));
  TrainProgress p = end.progress;
  p.edges_done = static_cast<uint64_t>(sums[0]);
  p.loss = sums[1] / std::max(sums[0], 1.0);
  const double secs = std::chrono::duration<double>(Clock::now() - end.epoch_start).count();
  p.edges_per_second = secs > 0 ? sums[0] / secs : 0;
  global_edges_ = p.edges_done;
  global_loss_ = p.loss;
  if (options_.progress) options_.progress(p);
  return absl::OkStatus();
}

absl::Status RankLayout::BeforeRound(const Round& next, PartitionBuffer& buffer,
                                     const std::function<bool(uint64_t)>& pause_after) {
  const uint64_t g = next.index;
  const GlobalRound& round = rank_schedule_->rounds[g];
  // The moves started while the round before trained, then the rest
  // (all of this round's where none started early).
  const auto moving = Clock::now();
  // Early moves are this epoch's and this round's only, and consumed here:
  // a pause before round g leaves none, whatever an earlier epoch's round g
  // started.
  const bool started_early = early_round_ == g;
  early_round_ = kNoEarlyRound;
  RETURN_IF_ERROR(FinishMoves(buffer, early_moves_, rank_timeout_));
  // Out of core in its own copy, a partition to send may be on its disk,
  // and so may the round's own.
  const std::vector<Transfer> at_boundary =
      started_early ? TransfersOf(round, false) : round.transfers;
  const uint32_t me = cluster_->rank();
  moves_at_boundary_ +=
      std::count_if(at_boundary.begin(), at_boundary.end(),
                    [me](const Transfer& t) { return t.from == me || t.to == me; });
  ASSIGN_OR_RETURN(PendingMoves moves,
                   StartMoves(*cluster_, buffer, at_boundary, /*read_absent=*/own_copies_));
  bytes_at_boundary_ += moves.bytes_sent;
  RETURN_IF_ERROR(FinishMoves(buffer, moves, rank_timeout_));
  transfer_seconds_ += std::chrono::duration<double>(Clock::now() - moving).count();
  if (own_copies_) {
    RETURN_IF_ERROR(buffer.Acquire(next.partitions, {}));
    RETURN_IF_ERROR(buffer.FitCapacity(next.partitions, {}));
  }
  ASSIGN_OR_RETURN(const bool here, buffer.AllResident(next.partitions));
  if (!here) {
    return absl::InternalError(
        absl::StrCat("rank ", cluster_->rank(), " lacks a partition of its round ", g));
  }
  std::vector<int32_t> keys = rank_rounds_->KeysOf(g);
  keys.resize(trainers_, -1);
  cluster_sync_->SetRoundKeys(std::move(keys));
  // The next round's moves of partitions idle in this one travel while
  // it trains, unless a checkpoint or a stop follows it (the hand-off
  // reads the holders the schedule names before the next round).
  if (g + 1 < rank_schedule_->rounds.size() && !pause_after(round.buckets.size())) {
    ASSIGN_OR_RETURN(early_moves_,
                     StartMoves(*cluster_, buffer, TransfersOf(rank_schedule_->rounds[g + 1], true),
                                /*read_absent=*/own_copies_));
    bytes_overlapped_ += early_moves_.bytes_sent;
    early_round_ = g + 1;
  }
  return absl::OkStatus();
}

}  // namespace

std::unique_ptr<ProcessLayout> MakeRankLayout(Graph* graph, const TrainOptions& options,
                                              Cluster* cluster) {
  return std::make_unique<RankLayout>(graph, options, cluster);
}

}  // namespace ember
