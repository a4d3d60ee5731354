#include "train/train_loop.h"

#include "train/blas/blas_startup.h"
#include "train/internal/train_loop_impl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"
#include "partition/train_memory.h"
#include "storage/base/file_system.h"
#include "storage/base/json_reader.h"
#include "storage/base/mutex.h"
#include "storage/base/status_macros.h"
#include "storage/graph.h"
#include "train/batch/round_batches.h"
#include "train/eval/evaluator.h"
#include "train/model/checkpoint.h"
#include "train/schedule/bucket_scheduler.h"
#include "train/schedule/memory_plan.h"
#include "train/schedule/parameter_sync.h"
#include "train/schedule/partition_buffer.h"
#include "train/stream/batch_pipeline.h"
#include "train/stream/round_source.h"
#include "train/trainers/trainer_factory.h"

namespace ember {

absl::Status TrainLoop::RestoreOrInit() {
  const Manifest& m = graph_->manifest();
  const int param_size = RelationRecordSize(options_.model);
  checkpointer_ =
      std::make_unique<Checkpointer>(graph_, options_, shape_, layout_->checkpoint_writer());
  ASSIGN_OR_RETURN(RestoredCheckpoint restored, checkpointer_->Restore());
  resumed_ = restored.resumed;
  start_epoch_ = restored.start_epoch;
  start_round_ = restored.start_round;
  if (resumed_) {
    relations_ = std::move(restored.relations);
    if (restored.features.has_value()) {
      features_ = std::make_unique<FeatureTable>(std::move(*restored.features));
    }
  } else {
    relations_ = RelationParams();
    relations_.num_relations = m.relations.size();
    relations_.param_size = param_size;
    relations_.params.resize(size_t{relations_.num_relations} * param_size);
    for (uint32_t r = 0; r < relations_.num_relations; ++r) {
      InitRelationRecord(options_.model, relations_.Of(r));
    }
    relations_.state.assign(relations_.params.size(), 0.0f);
  }
  if (relations_.state.size() != relations_.params.size()) {
    relations_.state.assign(relations_.params.size(), 0.0f);
  }
  // Relations added by an append since the checkpoint start fresh.
  while (relations_.num_relations < m.relations.size()) {
    relations_.params.resize(relations_.params.size() + param_size);
    relations_.state.resize(relations_.params.size(), 0.0f);
    ++relations_.num_relations;
    InitRelationRecord(options_.model, relations_.Of(relations_.num_relations - 1));
  }
  const FeaturizedMode mode = options_.model.featurized;
  if (mode != FeaturizedMode::kOff) {
    if (m.num_features == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--featurized ", std::string(FeaturizedModeName(mode)), " needs node features, but ",
          graph_->dir(), " has none; import them with --node-features FILE"));
    }
    if (options_.only_new_edges) {
      return absl::InvalidArgumentError(
          "--only-new-edges cannot be combined with --featurized (feature rows are shared by "
          "old and new nodes, so old embeddings could not stay frozen)");
    }
    if (features_ == nullptr) {
      features_ = std::make_unique<FeatureTable>(InitFeatureTable(
          static_cast<uint32_t>(m.num_features), options_.model.dim, options_.optimizer.init_scale,
          options_.seed));
    }
  }
  PartitionBufferOptions bo;
  bo.id_rows = HasIdRows(mode);
  bo.features = mode != FeaturizedMode::kOff;
  bo.capacity = capacity_;
  bo.dim = options_.model.dim;
  bo.init_scale = options_.optimizer.init_scale;
  bo.seed = options_.seed;
  // A rank sharing rank 0's graph writes its checkpoint share beside it.
  bo.stage_tables = !layout_->checkpoint_writer();
  if (options_.only_new_edges) {
    if (m.previous_partition_sizes.size() != P_ || !resumed_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--only-new-edges needs a trained graph with appended edges (ember import --append ",
          graph_->dir(), " FILE...)"));
    }
    bo.frozen_rows = m.previous_partition_sizes;
  }
  ASSIGN_OR_RETURN(buffer_, PartitionBuffer::Make(graph_, bo, restored.locations,
                                                 checkpointer_->write_version(), &io_));
  return absl::OkStatus();
}

void TrainLoop::ResetBatchStats() {
  batch_seconds_ = SpreadAccumulator();
  batch_nnz_ = SpreadAccumulator();
  batches_per_trainer_.assign(trainers_.size(), 0);
  trainer_busy_seconds_ = 0;
  trainer_available_seconds_ = 0;
}

void TrainLoop::FillBatchStats(EpochStats* s) const {
  s->batches = batch_seconds_.count();
  s->batches_per_trainer = batches_per_trainer_;
  s->batch_seconds_cv = batch_seconds_.Stats().cv;
  const SpreadStats n = batch_nnz_.Stats();
  s->batch_nnz_cv = n.cv;
  s->batch_nnz_max_over_mean = n.max_over_mean;
  {
    MutexLock lock(&progress_mu_);
    s->edge_cost = PlanningEdgeCost();
  }
  s->idle_share = trainer_available_seconds_ > 0
                      ? std::max(0.0, 1.0 - trainer_busy_seconds_ / trainer_available_seconds_)
                      : 0;
}

absl::Status TrainLoop::Checkpoint(int epoch, uint64_t next_round, int epochs_done) {
  RETURN_IF_ERROR(FinishCheckpointBeside());
  return layout_->Checkpoint(CheckpointRequest{checkpointer_.get(), buffer_.get(), &relations_,
                                               features_.get(), epoch, next_round, epochs_done});
}

absl::StatusOr<bool> TrainLoop::CheckpointBesideTraining() {
  if (!options_.schedule.checkpoint_beside || !layout_->WritesCheckpointsBesideTraining() ||
      options_.model.featurized != FeaturizedMode::kOff || capacity_ < P_ ||
      memory_.rows_bytes < 2 * uint64_t{P_} * memory_.partition_bytes) {
    return false;
  }
  std::vector<uint32_t> all(P_);
  for (uint32_t p = 0; p < P_; ++p) all[p] = p;
  return buffer_->AllResident(all);
}

absl::Status TrainLoop::StartCheckpointBeside(int epochs_done) {
  RETURN_IF_ERROR(FinishCheckpointBeside());
  // Rows trained on a device are on the host since the stretch's end.
  if (checkpoint_copy_ == nullptr) checkpoint_copy_ = std::make_unique<CopiedCheckpoint>();
  Checkpointer::Copy(buffer_.get(), P_, relations_, epochs_done, checkpoint_copy_.get());
  std::promise<absl::Status> written;
  checkpoint_beside_ = written.get_future();
  const absl::Status launched =
      io_.Submit([checkpointer = checkpointer_.get(), copy = checkpoint_copy_.get(),
                  written = std::move(written)]() mutable {
        written.set_value(checkpointer->WriteCopied(*copy));
      });
  if (!launched.ok()) {
    checkpoint_beside_ = {};
    return absl::Status(launched.code(),
                        absl::StrCat("cannot start the checkpoint writer: ", launched.message()));
  }
  return absl::OkStatus();
}

absl::Status TrainLoop::FinishCheckpointBeside() {
  if (!checkpoint_beside_.valid()) return absl::OkStatus();
  const absl::Status written = checkpoint_beside_.get();
  checkpoint_beside_ = {};
  RETURN_IF_ERROR(written);
  buffer_->MarkWritten(checkpointer_->committed_version());
  buffer_->set_write_version(checkpointer_->write_version());
  if (metrics_after_checkpoint_.has_value()) {
    RETURN_IF_ERROR(AppendMetrics(*metrics_after_checkpoint_));
    metrics_after_checkpoint_.reset();
  }
  return absl::OkStatus();
}

std::string EpochJsonLine(const EpochStats& s) {
  nlohmann::json j = {{"epoch", s.epoch},
                      {"lr", s.lr},
                      {"loss", s.loss},
                      {"edges", s.edges},
                      {"seconds", s.seconds},
                      {"edges_per_second", s.edges_per_second},
                      {"partition_loads", s.partition_loads},
                      {"checkpoint_version", s.checkpoint_version},
                      {"checkpoint_seconds", s.checkpoint_seconds},
                      {"checkpoint_beside", s.checkpoint_beside},
                      {"batches", s.batches},
                      {"batches_per_trainer", s.batches_per_trainer},
                      {"batch_seconds_cv", s.batch_seconds_cv},
                      {"batch_nnz_cv", s.batch_nnz_cv},
                      {"batch_nnz_max_over_mean", s.batch_nnz_max_over_mean},
                      {"edge_cost", s.edge_cost},
                      {"idle_share", s.idle_share},
                      {"gemm",
                       {{"backend", BlasBackend()},
                        {"kernel", BlasKernel()},
                        {"precision", std::string(PrecisionName(s.precision))}}}};
  if (s.ranks_measure.has_value()) {
    const EpochMeasure& m = *s.ranks_measure;
    j["ranks"] = m.ranks;
    j["rounds"] = m.rounds;
    j["bytes_moved"] = m.bytes_at_boundary + m.bytes_overlapped;
    j["bytes_overlapped"] = m.bytes_overlapped;
    j["moves_busiest_rank"] = m.moves_busiest_rank;
    j["train_seconds"] = m.train_seconds;
    j["transfer_seconds"] = m.transfer_seconds;
    j["sync_seconds"] = m.sync_seconds;
    j["checkpoint_bytes"] = m.checkpoint_bytes;
    j["checkpoint_bytes_rank0"] = m.checkpoint_bytes_rank0;
  }
  if (s.predicted.has_value() && s.predicted_doubled.has_value()) {
    j["predicted_seconds"] = s.predicted->total();
    j["predicted_seconds_doubled_ranks"] = s.predicted_doubled->total();
    j["predicted_moves_busiest_rank"] = s.predicted->moves_busiest_rank;
  }
  if (s.valid.has_value()) {
    j["valid_mrr"] = s.valid->filtered.mrr;
    j["valid_mrr_ci95"] = s.valid->filtered.mrr_ci95;
    j["valid_edges"] = s.valid->edges;
    j["valid_protocol"] = DescribeProtocol(*s.valid);
    j["valid_seconds"] = s.valid->seconds;
  }
  return j.dump();
}


absl::Status TrainLoop::AppendMetrics(const EpochStats& s) {
  const std::string path = graph_->dir() + "/metrics.jsonl";
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                   CurrentFileSystem()->OpenForWrite(path, WriteMode::kAppend));
  RETURN_IF_ERROR(f->Append(EpochJsonLine(s) + "\n"));
  return f->Close();
}

absl::Status TrainLoop::PlanMemory(const std::vector<DeviceSpec>& devices) {
  const Manifest& m = graph_->manifest();
  const FeaturizedMode mode = options_.model.featurized;
  size_t slots = 0;
  for (const DeviceSpec& d : devices) slots += DeviceSlots(d);
  tokens_ = options_.pipeline.deterministic ? 1 : 2 * slots;
  TrainMemoryInput in;
  in.graph_dir = graph_->dir();
  in.budget = options_.schedule.memory_budget;
  in.partition_sizes = m.partition_sizes;
  in.num_nodes = m.num_nodes;
  in.dim = options_.model.dim;
  in.id_rows = HasIdRows(mode);
  in.features = mode != FeaturizedMode::kOff;
  if (in.features) {
    in.feature_table_bytes = m.num_features * RowBytesPerNode(options_.model.dim);
    ASSIGN_OR_RETURN(in.partition_feature_entries, PartitionFeatureEntries(*graph_));
  }
  in.requested_buffer = options_.schedule.buffer_partitions;
  in.round_buckets = devices.size();
  in.tokens = tokens_;
  in.window_edges = options_.pipeline.window_edges;
  ASSIGN_OR_RETURN(memory_, PlanTrainMemory(in));
  const RunPlan plan =
      layout_->PlanRun(memory_.buffer_partitions, static_cast<uint32_t>(devices.size()));
  capacity_ = plan.buffer_partitions;
  shape_ = plan.shape;
  return absl::OkStatus();
}

uint32_t TrainLoop::RoundStarted(const Round& /*round*/, const Round* next) {
  if (next != nullptr) layout_->Prefetch(*next, *buffer_);
  MutexLock lock(&progress_mu_);
  return PlanningEdgeCost();
}

absl::StatusOr<bool> TrainLoop::RoundEmitted(const Round& done, const Round* next) {
  const uint64_t buckets = layout_->BucketsOf(done);
  buckets_this_run_ += buckets;
  buckets_since_checkpoint_ += buckets;
  {
    MutexLock lock(&progress_mu_);
    progress_.bucket += buckets;
  }
  if (next == nullptr || sync_->SyncsEveryRound() || CheckpointDue() || StopDue()) return false;
  return buffer_->AllResident(next->partitions);
}

void TrainLoop::BatchTrained(const BatchDone& d) {
  last_done_[d.trainer] = Clock::now();
  ++batches_per_trainer_[d.trainer];
  batch_seconds_.Add(d.record.seconds);
  batch_nnz_.Add(static_cast<double>(d.record.nnz));
  MutexLock lock(&progress_mu_);
  cost_model_.Add(d.record);
  progress_.edges_done += d.record.edges;
  epoch_loss_ += d.loss;
  progress_.loss = epoch_loss_ / std::max<uint64_t>(progress_.edges_done, 1);
  const double secs = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  progress_.edges_per_second = secs > 0 ? progress_.edges_done / secs : 0;
  layout_->BatchTrained(progress_);
}

absl::Status TrainLoop::CheckLossFinite(int epoch, double loss_sum) const {
  if (std::isfinite(loss_sum)) return absl::OkStatus();
  const uint64_t kept = checkpointer_->committed_version();
  return absl::FailedPreconditionError(absl::StrCat(
      graph_->dir(), ": training diverged in epoch ", epoch + 1, " (the loss is ", loss_sum,
      "), so no checkpoint of it is written; ",
      kept == 0 ? std::string("the graph keeps no trained model")
                : absl::StrCat("the last good checkpoint (version ", kept, ") is kept"),
      ". Lower --lr",
      graph_->manifest().edge_weights
          ? ", or rescale the edge weights (or train with --weights sample or ignore)"
          : "",
      ", then run again"));
}

absl::Status TrainLoop::TrainEpoch(int epoch, BucketScheduler* scheduler, bool* stopped) {
  const Manifest& m = graph_->manifest();
  RoundSourceOptions so;
  so.batching = options_.pipeline.batching;
  so.batch_size = static_cast<uint32_t>(options_.pipeline.batch_size);
  so.window_edges = memory_.window_edges;
  so.seed = options_.seed;
  so.epoch = epoch;
  so.min_generation = options_.only_new_edges ? m.edge_generation : 0;
  so.edge_sample = options_.edge_sample;
  so.group_by_relation = relations_.num_relations > 1 && !UsesMixedChunks(options_);
  so.read_weights = m.edge_weights && options_.edge_weights == EdgeWeightMode::kLoss;
  if (m.edge_weights && options_.edge_weights == EdgeWeightMode::kSample) {
    so.weight_sample_mean = m.edge_weight_stats.mean;
  }
  so.trainers = trainers_.size();
  so.static_split = one_device_kind_;
  so.trainer_per_bucket = options_.pipeline.deterministic;
  ASSIGN_OR_RETURN(const std::unique_ptr<RoundBatchSource> made,
                   RoundBatchSource::Make(graph_, buffer_.get(), &io_, scheduler, this, so));
  RoundBatchSource& source = *made;
  const auto pause_after = [this](uint64_t more) { return CheckpointDue(more) || StopDue(more); };
  while (const Round* next = source.PeekNext()) {
    RETURN_IF_ERROR(layout_->BeforeRound(*next, *buffer_, pause_after));
    const auto start = Clock::now();
    last_done_.assign(trainers_.size(), start);
    RETURN_IF_ERROR(pipeline_->Run(&source, tokens_, this));
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    for (const Clock::time_point& t : last_done_) {
      trainer_busy_seconds_ += std::min(wall, std::chrono::duration<double>(t - start).count());
    }
    trainer_available_seconds_ += wall * trainers_.size();
    const auto summing = Clock::now();
    RETURN_IF_ERROR(sync_->SyncRelations(trainer_ptrs_, &relations_));
    const double sync_seconds = std::chrono::duration<double>(Clock::now() - summing).count();
    RETURN_IF_ERROR(sync_->SyncFeatures(trainer_ptrs_, features_.get()));
    // Rows trained on a device back to the host copies: validation reads them,
    // and with several trainers the next round may train them elsewhere.
    if (rows_off_host_) RETURN_IF_ERROR(buffer_->SyncToHost(/*release=*/trainers_.size() > 1));
    StretchEnd end{wall, sync_seconds, {}, 0, epoch_start_};
    {
      MutexLock lock(&progress_mu_);
      end.progress = progress_;
      end.loss_sum = epoch_loss_;
    }
    RETURN_IF_ERROR(layout_->AfterStretch(end));
    RETURN_IF_ERROR(CheckLossFinite(epoch, end.loss_sum));
    if (StopDue()) {
      RETURN_IF_ERROR(buffer_->Quiesce());
      *stopped = true;
      return absl::OkStatus();
    }
    if (CheckpointDue() && source.PeekNext() != nullptr) {
      RETURN_IF_ERROR(Checkpoint(epoch, source.PeekNext()->index, epoch));
      buckets_since_checkpoint_ = 0;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> TrainLoop::Validate() {
  const EvalOptions eo = ValidationEvalOptions(options_);
  std::vector<uint32_t> all(P_);
  for (uint32_t p = 0; p < P_; ++p) all[p] = p;
  ASSIGN_OR_RETURN(bool resident, buffer_->AllResident(all));
  if (resident && options_.model.featurized == FeaturizedMode::kOff) {
    // Every row is in memory: rank against it directly.
    return Evaluate(*graph_, options_.model, relations_,
                    [this](uint32_t p) -> absl::StatusOr<const float*> {
                      return buffer_->Get(p)->embeddings.data();
                    },
                    eo);
  }
  ASSIGN_OR_RETURN(StoredModel stored, LoadStoredModel(*graph_));
  return Evaluate(*graph_, stored, eo);
}

absl::StatusOr<bool> TrainLoop::PlanFitsInMemory() {
  if (options_.model.featurized != FeaturizedMode::kOff) return false;  // as Run()
  ASSIGN_OR_RETURN(const std::vector<DeviceSpec> devices, ResolveDevices(options_));
  RETURN_IF_ERROR(PlanMemory(devices));
  return capacity_ >= P_;
}

absl::StatusOr<TrainSummary> TrainLoop::Run() {
  const Manifest& m = graph_->manifest();
  if (m.edges.train == 0) {
    return absl::FailedPreconditionError(absl::StrCat(graph_->dir(), " has no train edges"));
  }
  ASSIGN_OR_RETURN(const std::vector<DeviceSpec> devices, ResolveDevices(options_));
  for (const DeviceSpec& d : devices) {
    one_device_kind_ &= d.kind == devices[0].kind;
    rows_off_host_ |= d.kind != "cpu";
    if (d.kind != "cpu" && graph_->manifest().edge_weights &&
        options_.edge_weights == EdgeWeightMode::kLoss) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--devices ", d.Name(), ": ", graph_->dir(),
          " is a weighted graph, and the device trainer does not scale losses by edge weights "
          "yet; train it with --devices cpu, or with --weights sample or --weights ignore"));
    }
  }
  // Across ranks every rank sets up, then all agree (process_layout.h).
  RETURN_IF_ERROR(layout_->SetUp([&]() -> absl::Status {
    RETURN_IF_ERROR(PlanMemory(devices));
    // Training in memory is one process's (CheckTrainableAcrossRanks).
    if (options_.in_memory &&
        (capacity_ < P_ || options_.model.featurized != FeaturizedMode::kOff)) {
      fits_in_memory_ = false;  // nothing trained, nothing written
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(RestoreOrInit());
    return checkpointer_->CheckSpace();
  }));
  if (!fits_in_memory_) return TrainSummary();

  TrainSummary summary;
  summary.resumed = resumed_;
  summary.start_epoch = start_epoch_;
  summary.start_round = start_round_;
  if (start_epoch_ >= options_.epochs) {
    summary.checkpoint_version = checkpointer_->committed_version();
    return summary;
  }
  ASSIGN_OR_RETURN(trainers_, MakeTrainers(devices, options_, relations_, features_.get()));
  int threads = 0;
  for (const auto& t : trainers_) {
    trainer_ptrs_.push_back(t.get());
    buffer_->AddResidency(t.get());
    threads += t->slots();
  }
  pipeline_ = std::make_unique<BatchPipeline>(trainer_ptrs_, threads);
  sync_ = layout_->MakeSync(features_.get());
  for (int epoch = start_epoch_; epoch < options_.epochs; ++epoch) {
    const uint64_t first_round = epoch == start_epoch_ ? start_round_ : 0;
    const uint64_t loads_before = buffer_->loads();
    ASSIGN_OR_RETURN(BucketScheduler* const scheduler,
                     layout_->ScheduleEpoch(epoch, first_round, *buffer_));
    {
      // Progress counts what this run trains of the epoch (across ranks:
      // the global rounds, every rank's buckets).
      const std::vector<std::vector<Bucket>> rounds = layout_->RoundsOfEpoch();
      MutexLock lock(&progress_mu_);
      progress_ = TrainProgress();
      progress_.epoch = epoch;
      progress_.epochs = options_.epochs;
      for (const auto& r : rounds) progress_.buckets += r.size();
      progress_.edges_total = m.edges.train;
      for (uint64_t r = 0; r < first_round; ++r) {
        for (const Bucket& b : rounds[r]) {
          ++progress_.bucket;
          if (!m.train_bucket_edges.empty()) {
            progress_.edges_total -= m.train_bucket_edges[uint64_t{b.src} * P_ + b.dst];
          }
        }
      }
      epoch_loss_ = 0;
    }
    ResetBatchStats();
    epoch_start_ = Clock::now();
    bool stopped = false;
    RETURN_IF_ERROR(TrainEpoch(epoch, scheduler, &stopped));
    if (stopped) {
      RETURN_IF_ERROR(FinishCheckpointBeside());
      summary.stopped = true;
      summary.checkpoint_version = checkpointer_->committed_version();
      return summary;
    }
    EpochStats stats;
    stats.epoch = epoch + 1;
    stats.lr = options_.optimizer.lr;
    stats.precision = options_.model.precision;
    {
      MutexLock lock(&progress_mu_);
      stats.edges = progress_.edges_done;
      stats.loss = progress_.loss;
    }
    layout_->CountEpoch(&stats);
    stats.seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    stats.edges_per_second = stats.seconds > 0 ? stats.edges / stats.seconds : 0;
    FillBatchStats(&stats);
    stats.partition_loads = buffer_->loads() - loads_before;
    if (options_.in_memory) {
      if (options_.validation.enabled && m.edges.valid > 0 && epoch + 1 == options_.epochs) {
        ASSIGN_OR_RETURN(stats.valid, Validate());
      }
      summary.epochs.push_back(stats);
      continue;
    }
    // The checkpoint's wall time: with more epochs to come, a copy of the
    // rows, written beside the next epoch where the budget allows
    // (committed by the next checkpoint, a stop or the run's end).
    const auto checkpointing = Clock::now();
    RETURN_IF_ERROR(FinishCheckpointBeside());  // the last epoch's
    bool beside = false;
    if (epoch + 1 < options_.epochs) {
      ASSIGN_OR_RETURN(beside, CheckpointBesideTraining());
    }
    stats.checkpoint_beside = beside;
    if (beside) {
      stats.checkpoint_version = checkpointer_->write_version();
      RETURN_IF_ERROR(StartCheckpointBeside(epoch + 1));
    } else {
      RETURN_IF_ERROR(Checkpoint(epoch + 1, 0, epoch + 1));
      stats.checkpoint_version = checkpointer_->committed_version();
    }
    buckets_since_checkpoint_ = 0;
    stats.checkpoint_seconds = std::chrono::duration<double>(Clock::now() - checkpointing).count();
    RETURN_IF_ERROR(layout_->MeasureEpoch(epoch, /*predict=*/epoch == start_epoch_, &stats));
    // Across ranks rank 0 alone validates (from the checkpoint it wrote)
    // and appends the metrics line.
    if (layout_->writer()) {
      if (options_.validation.enabled && m.edges.valid > 0) {
        ASSIGN_OR_RETURN(stats.valid, Validate());
      }
      if (beside) {
        metrics_after_checkpoint_ = stats;
      } else {
        RETURN_IF_ERROR(AppendMetrics(stats));
      }
    }
    summary.epochs.push_back(stats);
  }
  RETURN_IF_ERROR(FinishCheckpointBeside());
  summary.checkpoint_version = checkpointer_->committed_version();
  for (const auto& t : trainers_) {
    summary.devices.push_back(t->device());
    summary.device_peak_bytes += t->device_peak_bytes();
  }
  return summary;
}



namespace {

// --lr auto: a resumed run takes the lr stored with its checkpoint; a fresh
// one asks `choose_lr` when the graph has validation edges and otherwise
// keeps options->optimizer.lr.
absl::Status ResolveAutoLr(Graph& graph, const LrChooser& choose_lr, TrainOptions* options) {
  const Manifest& m = graph.manifest();
  if (m.training.checkpoint_version > 0 && !options->from_scratch) {
    ASSIGN_OR_RETURN(const TrainState saved, ReadTrainState(graph));
    if (saved.position.lr > 0) options->optimizer.lr = static_cast<float>(saved.position.lr);
    return absl::OkStatus();
  }
  if (m.edges.valid == 0) return absl::OkStatus();
  if (!choose_lr) {
    return absl::InvalidArgumentError(
        "--lr auto needs a step-size chooser (TrainGraphAutoLr in train/tune/auto_lr.h)");
  }
  ASSIGN_OR_RETURN(options->optimizer.lr, choose_lr(graph, *options));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<TrainSummary>> TrainWithoutWriting(Graph& graph,
                                                                 TrainOptions options) {
  options.in_memory = true;
  RETURN_IF_ERROR(options.Validate());
  TrainLoop loop(&graph, options);
  ASSIGN_OR_RETURN(TrainSummary summary, loop.Run());
  if (!loop.fits_in_memory()) return std::nullopt;
  summary.lr = options.optimizer.lr;
  return summary;
}

absl::StatusOr<bool> TrainsWithoutWritingInMemory(Graph& graph, TrainOptions options) {
  options.in_memory = true;
  RETURN_IF_ERROR(options.Validate());
  TrainLoop loop(&graph, options);
  return loop.PlanFitsInMemory();
}

absl::StatusOr<TrainSummary> TrainGraph(const std::string& graph_dir,
                                        const TrainOptions& options, const LrChooser& choose_lr) {
  return TrainGraphOnCluster(graph_dir, options, nullptr, choose_lr);
}

absl::Status CheckTrainableAcrossRanks(const TrainOptions& options) {
  auto refuse = [](const char* what) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not supported across ranks yet; train it in one process"));
  };
  if (options.only_new_edges) return refuse("--only-new-edges");
  if (options.in_memory) return refuse("training without writing");
  if (options.rank_copies && options.validation.enabled) {
    return absl::InvalidArgumentError(
        "--eval-valid is not supported across ranks with their own copies yet (rank 0's copy "
        "holds its share of the rows); gather the copies (ember gather) and run ember eval");
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainSummary> TrainGraphOnCluster(const std::string& graph_dir,
                                                 const TrainOptions& options, Cluster* cluster,
                                                 const LrChooser& choose_lr) {
  RETURN_IF_ERROR(options.Validate());
  const bool across_ranks = cluster != nullptr && cluster->world_size() > 1;
  const bool names_rank = absl::StrContains(graph_dir, kRankInPath);
  TrainOptions o = options;
  o.rank_copies = across_ranks && (options.rank_copies || names_rank);
  if (across_ranks) RETURN_IF_ERROR(CheckTrainableAcrossRanks(o));
  const std::string dir = absl::StrReplaceAll(
      graph_dir, {{kRankInPath, absl::StrCat(across_ranks ? cluster->rank() : 0)}});
  GraphOpenOptions open;
  // Across ranks rank 0 alone writes, the others reading edges and, at the
  // start, the committed checkpoint; or each rank writes its own copy.
  open.read_only = across_ranks && cluster->rank() != 0 && !o.rank_copies;
  // Memtables and the block cache of every shard share the budget's
  // storage share, half each.
  const uint64_t storage = SplitTrainBudget(options.schedule.memory_budget).storage;
  open.write_buffer_bytes = std::max<uint64_t>(storage / 2, 1 << 20);
  open.block_cache_bytes = std::max<uint64_t>(storage / 2, 1 << 20);
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Open(dir, open));
  TrainOptions resolved = o;
  if (options.optimizer.lr_auto) RETURN_IF_ERROR(ResolveAutoLr(*graph, choose_lr, &resolved));
  absl::StatusOr<TrainSummary> summary;
  {
    // The loop's background work ends when it is destroyed; only then may
    // the graph be closed.
    TrainLoop loop(graph.get(), resolved, cluster);
    summary = loop.Run();
  }
  if (!summary.ok()) return summary;
  RETURN_IF_ERROR(graph->Close());
  summary->lr = resolved.optimizer.lr;
  return summary;
}

}  // namespace ember
