// The training loop's part across ranks (TrainGraphOnCluster): the epoch's
// schedule and residency, the moves before each round, progress and
// measures summed over every rank, and checkpoints through rank 0.
#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "storage/base/status_macros.h"
#include "train/internal/train_loop_impl.h"

namespace ember {

absl::Status TrainLoop::CheckpointAcrossRanks(int epoch, uint64_t next_round, int epochs_done) {
  const uint64_t before = next_round == 0 ? rank_schedule_->rounds.size() : next_round;
  const std::vector<uint32_t> holders = rank_schedule_->HoldersBefore(before);
  // Each partition written counts as progress on every rank: a checkpoint
  // longer than --rank-timeout in all is not a stall.
  RETURN_IF_ERROR(WritePartitionsAtRankZero(*cluster_, *buffer_, holders, rank_timeout_,
                                            [this](uint32_t) { Progress(); }));
  absl::Status s = absl::OkStatus();
  if (writer()) s = WriteCheckpoint(epoch, next_round, epochs_done, /*rows_written=*/true);
  RETURN_IF_ERROR(AgreeOnStatus(*cluster_, s));
  Progress();
  // Keep the version count in step with rank 0.
  if (!writer()) checkpointer_->CountCommitted(buffer_.get());
  return absl::OkStatus();
}

std::vector<RankSetting> TrainLoop::RankSettings(uint32_t trainers) const {
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
      {"--trainers", absl::StrCat(trainers), "", "--trainers or --devices"},
      {"--seed", absl::StrCat(options_.seed)},
      {"--bucket-order", std::string(BucketOrderName(sched.bucket_order))},
      {"--epochs", absl::StrCat(options_.epochs)},
      {"--checkpoint-every", absl::StrCat(sched.checkpoint_every)},
      {"--from-scratch", yes_no(options_.from_scratch)},
      {"--deterministic", yes_no(p.deterministic)},
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

absl::Status TrainLoop::ScheduleEpochAcrossRanks(int epoch, uint64_t first_round) {
  const Manifest& m = graph_->manifest();
  RankScheduleOptions o;
  o.seed = options_.seed;
  o.num_partitions = P_;
  o.world_size = world_size();
  o.trainers_per_rank = static_cast<uint32_t>(trainers_.size());
  o.order = options_.schedule.bucket_order;
  o.buffer_capacity = order_capacity_;
  o.bucket_edges = m.train_bucket_edges;
  const bool run_start = next_holders_.empty();
  if (run_start) {
    ASSIGN_OR_RETURN(next_holders_, HoldersAtEpoch(o, epoch));
  }
  o.epoch = static_cast<uint64_t>(epoch);
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
  if (peak > memory_.buffer_partitions) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "rank ", me, " (", cluster_->where(), ") holds up to ", peak,
        " partitions at once in this epoch, but --memory-budget ",
        options_.schedule.memory_budget >> 20, " MiB has room for ", memory_.buffer_partitions,
        "; raise --memory-budget or run more ranks"));
  }
  const std::vector<uint32_t> h = rank_schedule_->HoldersBefore(first_round);
  std::vector<uint32_t> mine;
  for (uint32_t p = 0; p < P_; ++p) {
    if (h[p] == me) mine.push_back(p);
  }
  if (run_start) {
    // One at a time, each load counting as progress: a rank's share may
    // take longer than --rank-timeout to read.
    for (uint32_t p : mine) {
      RETURN_IF_ERROR(buffer_->Acquire(std::span<const uint32_t>(&p, 1), {}));
      Progress();
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const std::vector<uint32_t> resident, buffer_->Resident());
  if (resident != mine) {
    return absl::InternalError(absl::StrCat("rank ", me, " starts epoch ", epoch, " holding ",
                                            resident.size(), " partitions, not the ",
                                            mine.size(), " its schedule names"));
  }
  return absl::OkStatus();
}


uint64_t TrainLoop::PartitionBytes(uint32_t p) const {
  return graph_->manifest().partition_sizes[p] * (uint64_t(options_.model.dim) + 1) *
         sizeof(float);
}


absl::Status TrainLoop::MeasureEpochAcrossRanks(int epoch, double checkpoint_seconds,
                                                bool predict, EpochStats* stats) {
  double sums[5] = {static_cast<double>(bytes_at_boundary_),
                    static_cast<double>(bytes_overlapped_), train_seconds_, transfer_seconds_,
                    sync_seconds_};
  RETURN_IF_ERROR(cluster_->SumDoubles(sums));
  const uint32_t n = world_size();
  EpochMeasure m;
  m.ranks = n;
  m.rounds = rank_schedule_->rounds.size();
  m.train_edges = stats->edges;
  m.bytes_at_boundary = static_cast<uint64_t>(sums[0]);
  m.bytes_overlapped = static_cast<uint64_t>(sums[1]);
  m.train_seconds = sums[2] / n;
  m.transfer_seconds = sums[3] / n;
  m.sync_seconds = sums[4] / n;
  m.checkpoint_seconds = checkpoint_seconds;
  uint64_t all = 0;
  for (uint32_t p = 0; p < P_; ++p) all += PartitionBytes(p);
  m.partition_bytes = all / P_;
  stats->ranks_measure = m;
  if (!predict) return absl::OkStatus();
  RankScheduleOptions o;
  o.seed = options_.seed;
  o.epoch = static_cast<uint64_t>(epoch);
  o.num_partitions = P_;
  o.trainers_per_rank = static_cast<uint32_t>(trainers_.size());
  o.order = options_.schedule.bucket_order;
  o.buffer_capacity = order_capacity_;
  o.bucket_edges = graph_->manifest().train_bucket_edges;
  o.world_size = 2 * n;
  ASSIGN_OR_RETURN(const RankSchedule doubled, ComputeRankSchedule(o));
  stats->predicted = PredictEpoch(m, *rank_schedule_);
  stats->predicted_doubled = PredictEpoch(m, doubled);
  return absl::OkStatus();
}


absl::Status TrainLoop::ReportGlobalProgress() {
  double sums[2];
  {
    MutexLock lock(&progress_mu_);
    sums[0] = static_cast<double>(progress_.edges_done);
    sums[1] = epoch_loss_;
  }
  RETURN_IF_ERROR(cluster_->SumDoubles(sums));
  TrainProgress p;
  {
    MutexLock lock(&progress_mu_);
    p = progress_;
  }
  p.edges_done = static_cast<uint64_t>(sums[0]);
  p.loss = sums[1] / std::max(sums[0], 1.0);
  const double secs = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  p.edges_per_second = secs > 0 ? sums[0] / secs : 0;
  global_edges_ = p.edges_done;
  global_loss_ = p.loss;
  if (options_.progress) options_.progress(p);
  return absl::OkStatus();
}


absl::Status TrainLoop::StartRoundAcrossRanks(const Round& next,
                                              const RankRoundScheduler& rank_rounds) {
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
  RETURN_IF_ERROR(FinishMoves(*buffer_, early_moves_, rank_timeout_));
  ASSIGN_OR_RETURN(PendingMoves moves,
                   StartMoves(*cluster_, *buffer_,
                              started_early ? TransfersOf(round, false) : round.transfers));
  bytes_at_boundary_ += moves.bytes_sent;
  RETURN_IF_ERROR(FinishMoves(*buffer_, moves, rank_timeout_));
  transfer_seconds_ += std::chrono::duration<double>(Clock::now() - moving).count();
  ASSIGN_OR_RETURN(const bool here, buffer_->AllResident(next.partitions));
  if (!here) {
    return absl::InternalError(absl::StrCat("rank ", cluster_->rank(), " lacks a partition of its round ", g));
  }
  std::vector<int32_t> keys = rank_rounds.KeysOf(g);
  keys.resize(trainers_.size(), -1);
  cluster_sync_->SetRoundKeys(std::move(keys));
  // The next round's moves of partitions idle in this one travel while
  // it trains, unless a checkpoint or a stop follows it (the hand-off
  // reads the holders the schedule names before the next round).
  const uint64_t b = round.buckets.size();
  const bool pause_follows =
      (options_.schedule.checkpoint_every > 0 &&
       buckets_since_checkpoint_ + b >= options_.schedule.checkpoint_every) ||
      (options_.hooks.stop_after_buckets > 0 &&
       buckets_this_run_ + b >= options_.hooks.stop_after_buckets);
  if (g + 1 < rank_schedule_->rounds.size() && !pause_follows) {
    ASSIGN_OR_RETURN(early_moves_,
                     StartMoves(*cluster_, *buffer_,
                                TransfersOf(rank_schedule_->rounds[g + 1], true)));
    bytes_overlapped_ += early_moves_.bytes_sent;
    early_round_ = g + 1;
  }
  return absl::OkStatus();
}

}  // namespace ember
