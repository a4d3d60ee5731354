#include "train/train_loop.h"
#include "train/internal/train_loop_impl.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "partition/train_memory.h"
#include "storage/graph.h"
#include "storage/base/file_system.h"
#include "storage/base/json_reader.h"
#include "storage/base/status_macros.h"
#include "train/stream/batch_pipeline.h"
#include "train/schedule/bucket_scheduler.h"
#include "train/model/checkpoint.h"
#include "train/eval/evaluator.h"
#include "train/schedule/memory_plan.h"
#include "train/schedule/parameter_sync.h"
#include "train/schedule/partition_buffer.h"
#include "train/batch/round_batches.h"
#include "train/stream/round_source.h"
#include "train/trainers/trainer_factory.h"
#include "train/distributed/cluster_sync.h"
#include "train/rank_exchange.h"

namespace ember {

absl::StatusOr<SavedPosition> ReadSavedPosition(const Graph& graph) {
  const JsonReader r(graph.dir() + "/MANIFEST.json", absl::StatusCode::kDataLoss);
  const nlohmann::json state =
      nlohmann::json::parse(graph.manifest().training.state_json, nullptr, false);
  const nlohmann::json* t = JsonReader::Find(state, "trainer");
  SavedPosition out;
  if (t == nullptr) return out;
  const std::string field = "training.state.trainer";
  RETURN_IF_ERROR(r.Object(*t, field));
  RETURN_IF_ERROR(r.Optional(*t, "next_round", absl::StrCat(field, ".next_round"),
                             &out.next_round));
  RETURN_IF_ERROR(r.Optional(*t, "seed", absl::StrCat(field, ".seed"), &out.seed));
  RETURN_IF_ERROR(r.Optional(*t, "bucket_order", absl::StrCat(field, ".bucket_order"),
                             &out.bucket_order));
  RETURN_IF_ERROR(r.Optional(*t, "buffer_partitions",
                             absl::StrCat(field, ".buffer_partitions"),
                             &out.buffer_partitions));
  RETURN_IF_ERROR(r.Optional(*t, "round_size", absl::StrCat(field, ".round_size"),
                             &out.round_size));
  RETURN_IF_ERROR(r.Optional(*t, "lr", absl::StrCat(field, ".lr"), &out.lr));
  RETURN_IF_ERROR(r.Optional(*t, "world_size", absl::StrCat(field, ".world_size"),
                             &out.world_size));
  return out;
}

nlohmann::json TrainLoop::TrainerState(int epoch, uint64_t next_round) const {
  return {{"epoch", epoch},
          {"next_round", next_round},
          {"lr", options_.lr},
          {"seed", options_.seed},
          {"bucket_order", std::string(BucketOrderName(options_.bucket_order))},
          {"buffer_partitions", capacity_},
          {"round_size", round_size_},
          {"world_size", world_size()}};
}

absl::Status TrainLoop::RestoreOrInit() {
  const Manifest& m = graph_->manifest();
  const int param_size = RelationParamSize(options_.model.op, options_.model.dim);
  committed_version_ = m.training.checkpoint_version;
  committed_locations_.assign(P_, 0);
  write_version_ = committed_version_ + 1;
  std::vector<uint64_t> locations(P_, 0);
  std::optional<StoredModel> stored;
  // An in-memory run starts from scratch and leaves the checkpoint alone.
  if (!options_.in_memory) {
    if (committed_version_ > 0) {
      ASSIGN_OR_RETURN(stored, LoadStoredModel(*graph_));
      committed_locations_ = stored->partition_versions;
    }
    if (writer()) {
      RETURN_IF_ERROR(
          RemoveUncommittedCheckpoints(*graph_, committed_version_, committed_locations_));
    }
  }
  if (stored.has_value()) {
    if (!options_.from_scratch) {
      const ModelOptions& s = stored->model;
      if (s.dim != options_.model.dim || s.op != options_.model.op ||
          s.comparator != options_.model.comparator ||
          s.featurized != options_.model.featurized) {
        return absl::FailedPreconditionError(absl::StrCat(
            graph_->dir(), " holds a checkpoint trained with --dim ", s.dim, " --operator ",
            std::string(OperatorName(s.op)), " --comparator ",
            std::string(ComparatorName(s.comparator)), " --featurized ",
            std::string(FeaturizedModeName(s.featurized)),
            "; pass the same options to resume, or --from-scratch to start over"));
      }
      relations_ = std::move(stored->relations);
      if (s.featurized != FeaturizedMode::kOff) {
        features_ = std::make_unique<FeatureTable>(std::move(stored->features));
      }
      locations = committed_locations_;
      ASSIGN_OR_RETURN(const SavedPosition saved, ReadSavedPosition(*graph_));
      start_epoch_ = m.training.epochs_done;
      start_round_ = saved.next_round;
      if (start_round_ > 0 && std::max<uint32_t>(saved.world_size, 1) != world_size()) {
        return absl::FailedPreconditionError(absl::StrCat(
            graph_->dir(), " was stopped mid-epoch by a run of ",
            std::max<uint32_t>(saved.world_size, 1), " rank(s); resume it with as many ranks "
            "(this run has ", world_size(), "), or pass --from-scratch"));
      }
      if (start_round_ > 0 &&
          (saved.seed != options_.seed ||
           saved.bucket_order != BucketOrderName(options_.bucket_order) ||
           saved.buffer_partitions != capacity_ || saved.round_size != round_size_)) {
        return absl::FailedPreconditionError(absl::StrCat(
            graph_->dir(), " was stopped mid-epoch; resume it with the same --seed, "
            "--bucket-order, --buffer-partitions and --trainers (seed ", saved.seed,
            ", bucket_order ", saved.bucket_order, ", buffer_partitions ",
            saved.buffer_partitions, ", round_size ", saved.round_size,
            "), or pass --from-scratch"));
      }
      resumed_ = true;
    }
  }
  if (!resumed_) {
    relations_ = RelationParams();
    relations_.num_relations = m.relations.size();
    relations_.param_size = param_size;
    relations_.params.resize(size_t{relations_.num_relations} * param_size);
    for (uint32_t r = 0; r < relations_.num_relations; ++r) {
      InitRelationParams(options_.model.op, options_.model.dim, relations_.Of(r));
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
    InitRelationParams(options_.model.op, options_.model.dim,
                       relations_.Of(relations_.num_relations - 1));
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
          static_cast<uint32_t>(m.num_features), options_.model.dim, options_.init_scale,
          options_.seed));
    }
  }
  PartitionBufferOptions bo;
  bo.id_rows = HasIdRows(mode);
  bo.features = mode != FeaturizedMode::kOff;
  bo.capacity = capacity_;
  bo.dim = options_.model.dim;
  bo.init_scale = options_.init_scale;
  bo.seed = options_.seed;
  if (options_.only_new_edges) {
    if (m.previous_partition_sizes.size() != P_ || !resumed_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--only-new-edges needs a trained graph with appended edges (ember import --append ",
          graph_->dir(), " FILE...)"));
    }
    bo.frozen_rows = m.previous_partition_sizes;
  }
  RETURN_IF_ERROR(bo.Validate());
  buffer_ = std::make_unique<PartitionBuffer>(graph_, bo, locations, write_version_);
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
  s->edge_cost = PlanningEdgeCost();
  s->idle_share = trainer_available_seconds_ > 0
                      ? std::max(0.0, 1.0 - trainer_busy_seconds_ / trainer_available_seconds_)
                      : 0;
}

absl::Status TrainLoop::Checkpoint(int epoch, uint64_t next_round, int epochs_done) {
  if (distributed()) return CheckpointAcrossRanks(epoch, next_round, epochs_done);
  return WriteCheckpoint(epoch, next_round, epochs_done);
}

absl::Status TrainLoop::CheckCheckpointSpace() const {
  if (options_.in_memory || !writer()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const uint64_t needed,
                   NextCheckpointBytes(*graph_, static_cast<uint32_t>(options_.model.dim),
                                       HasIdRows(options_.model.featurized)));
  absl::Status s = CheckFreeSpace(graph_->dir(), needed);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(s.message(), "; the last checkpoint (",
                                             committed_version_, ") is whole: free space, "
                                             "then run the same command to resume"));
}

absl::Status TrainLoop::WriteCheckpoint(int epoch, uint64_t next_round, int epochs_done) {
  RETURN_IF_ERROR(buffer_->WriteResident());
  const uint64_t version = write_version_;
  RETURN_IF_ERROR(graph_->WriteBlob(RelationBlobName(version), EncodeRelationBlob(relations_)));
  if (features_ != nullptr) {
    std::array<uint32_t, 2> header;
    const auto parts = FeatureTableBlobParts(*features_, &header);
    RETURN_IF_ERROR(graph_->WriteBlob(FeatureTableBlobName(version), parts));
  }
  RETURN_IF_ERROR(graph_->SyncTables());
  Manifest m = graph_->manifest();
  m.training.checkpoint_version = version;
  m.training.epochs_done = epochs_done;
  m.training.dim = options_.model.dim;
  const std::vector<uint64_t>& locations = buffer_->locations();
  nlohmann::json state = {{"model", nlohmann::json::parse(ModelOptionsToJson(options_.model))},
                          {"partition_versions", locations},
                          {"trainer", TrainerState(epoch, next_round)}};
  m.training.state_json = state.dump();
  RETURN_IF_ERROR(graph_->CommitManifest(m));
  // The new checkpoint is durable; drop what only the old one used.
  for (uint32_t p = 0; p < P_; ++p) {
    const uint64_t old = committed_locations_[p];
    if (old != 0 && old != locations[p]) {
      RETURN_IF_ERROR(graph_->DeleteTableVersion(Table::kEmbeddings, p, old));
      RETURN_IF_ERROR(graph_->DeleteTableVersion(Table::kOptimizer, p, old));
    }
  }
  if (committed_version_ != 0 && committed_version_ != version) {
    RETURN_IF_ERROR(graph_->DeleteBlob(RelationBlobName(committed_version_)));
    // Absent (and ignored) when the old checkpoint was not featurized.
    RETURN_IF_ERROR(graph_->DeleteBlob(FeatureTableBlobName(committed_version_)));
  }
  committed_locations_ = locations;
  committed_version_ = version;
  write_version_ = version + 1;
  buffer_->set_write_version(write_version_);
  const bool more_follows = next_round > 0 || epochs_done < options_.epochs;
  return more_follows ? CheckCheckpointSpace() : absl::OkStatus();
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
                      {"batches", s.batches},
                      {"batches_per_trainer", s.batches_per_trainer},
                      {"batch_seconds_cv", s.batch_seconds_cv},
                      {"batch_nnz_cv", s.batch_nnz_cv},
                      {"batch_nnz_max_over_mean", s.batch_nnz_max_over_mean},
                      {"edge_cost", s.edge_cost},
                      {"idle_share", s.idle_share}};
  if (s.ranks_measure.has_value()) {
    const EpochMeasure& m = *s.ranks_measure;
    j["ranks"] = m.ranks;
    j["rounds"] = m.rounds;
    j["bytes_moved"] = m.bytes_at_boundary + m.bytes_overlapped;
    j["bytes_overlapped"] = m.bytes_overlapped;
    j["train_seconds"] = m.train_seconds;
    j["transfer_seconds"] = m.transfer_seconds;
    j["sync_seconds"] = m.sync_seconds;
    j["checkpoint_seconds"] = m.checkpoint_seconds;
  }
  if (s.predicted.has_value() && s.predicted_doubled.has_value()) {
    j["predicted_seconds"] = s.predicted->total();
    j["predicted_seconds_doubled_ranks"] = s.predicted_doubled->total();
  }
  if (s.valid.has_value()) {
    j["valid_mrr"] = s.valid->filtered.mrr;
    j["valid_mrr_ci95"] = s.valid->filtered.mrr_ci95;
    j["valid_edges"] = s.valid->edges;
    j["valid_protocol"] = DescribeProtocol(*s.valid);
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
  tokens_ = options_.deterministic ? 1 : 2 * slots;
  TrainMemoryInput in;
  in.graph_dir = graph_->dir();
  in.budget = options_.memory_budget;
  in.partition_sizes = m.partition_sizes;
  in.num_nodes = m.num_nodes;
  in.dim = options_.model.dim;
  in.id_rows = HasIdRows(mode);
  in.features = mode != FeaturizedMode::kOff;
  if (in.features) {
    in.feature_table_bytes = m.num_features * RowBytesPerNode(options_.model.dim);
    ASSIGN_OR_RETURN(in.partition_feature_entries, PartitionFeatureEntries(*graph_));
  }
  in.requested_buffer = options_.buffer_partitions;
  in.round_buckets = devices.size();
  in.tokens = tokens_;
  in.window_edges = options_.window_edges;
  ASSIGN_OR_RETURN(memory_, PlanTrainMemory(in));
  capacity_ = memory_.buffer_partitions;
  const uint32_t trainers = static_cast<uint32_t>(devices.size());
  round_size_ =
      capacity_ >= P_ ? trainers : std::max<uint32_t>(1, std::min(trainers, capacity_ / 2));
  if (distributed()) {
    // A rank holds its share of the partitions in memory for the whole run
    // (ScheduleEpochAcrossRanks checks that the share fits); rounds span
    // every trainer of every rank.
    order_capacity_ = std::min(capacity_, P_);
    capacity_ = P_;
    round_size_ = trainers * world_size();
  }
  return absl::OkStatus();
}

void TrainLoop::Started(const Round& round, const Round* next) {
  // Across ranks every partition a rank holds is resident; the next
  // round's arrive from their holders (ExchangeBeforeRound), not the disk.
  if (next != nullptr && !distributed()) {
    std::vector<uint32_t> pinned = round.partitions;
    for (const auto& r : recent_rounds_) pinned.insert(pinned.end(), r.begin(), r.end());
    buffer_->Prefetch(next->partitions, std::move(pinned), scheduler_->Upcoming(kLookaheadRounds));
  }
}

void TrainLoop::Emitted(const Round& done, uint64_t batches) {
  if (batches > 0) {
    recent_rounds_.push_back(done.partitions);
    if (recent_rounds_.size() > tokens_) recent_rounds_.pop_front();
  }
  // Across ranks, every rank counts the global round, so that every rank
  // agrees on when a checkpoint or stop is due.
  const uint64_t buckets =
      distributed() ? rank_schedule_->rounds[done.index].buckets.size() : done.buckets.size();
  buckets_this_run_ += buckets;
  buckets_since_checkpoint_ += buckets;
  absl::MutexLock lock(&progress_mu_);
  progress_.bucket += buckets;
}

absl::StatusOr<bool> TrainLoop::MayContinue(const Round& done, const Round& next) {
  if (sync_->SyncsEveryRound() || CheckpointDue() || StopDue()) return false;
  return buffer_->AllResident(next.partitions);
}

void TrainLoop::OnBatchDone(const BatchDone& d) {
  last_done_[d.trainer] = Clock::now();
  ++batches_per_trainer_[d.trainer];
  batch_seconds_.Add(d.record.seconds);
  batch_nnz_.Add(static_cast<double>(d.record.nnz));
  cost_model_.Add(d.record);
  edge_cost_.store(PlanningEdgeCost(), std::memory_order_relaxed);
  absl::MutexLock lock(&progress_mu_);
  progress_.edges_done += d.record.edges;
  epoch_loss_ += d.loss;
  progress_.loss = epoch_loss_ / std::max<uint64_t>(progress_.edges_done, 1);
  const double secs = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  progress_.edges_per_second = secs > 0 ? progress_.edges_done / secs : 0;
  // Across ranks progress is reported per round, summed over every rank.
  if (options_.progress && !distributed()) options_.progress(progress_);
}

absl::Status TrainLoop::TrainEpoch(int epoch, uint64_t first_round, bool* stopped) {
  const Manifest& m = graph_->manifest();
  RankRoundScheduler* rank_rounds = nullptr;
  if (distributed()) {
    auto s = std::make_unique<RankRoundScheduler>(rank_schedule_.get(), cluster_->rank(),
                                                  first_round);
    rank_rounds = s.get();
    scheduler_ = std::move(s);
  } else {
    scheduler_ = MakeRoundScheduler(options_.bucket_order, P_, capacity_, round_size_,
                                    options_.seed + epoch, first_round);
  }
  RoundSourceOptions so;
  so.batching = options_.batching;
  so.batch_size = static_cast<uint32_t>(options_.batch_size);
  so.window_edges = memory_.window_edges;
  so.seed = options_.seed;
  so.epoch = epoch;
  so.min_generation = options_.only_new_edges ? m.edge_generation : 0;
  so.edge_sample = options_.edge_sample;
  so.group_by_relation = relations_.num_relations > 1 && !UsesMixedChunks(options_);
  so.trainers = trainers_.size();
  so.static_split = one_device_kind_;
  so.trainer_per_bucket = options_.deterministic;
  RETURN_IF_ERROR(so.Validate());
  RoundBatchSource source(graph_, buffer_.get(), scheduler_.get(), this, so, &edge_cost_);
  while (const Round* next = source.PeekNext()) {
    if (distributed()) {
      RETURN_IF_ERROR(StartRoundAcrossRanks(*next, *rank_rounds));
    } else {
      RETURN_IF_ERROR(
          buffer_->Acquire(next->partitions, scheduler_->Upcoming(kLookaheadRounds)));
    }
    recent_rounds_.clear();  // the last stretch has drained
    const auto start = Clock::now();
    last_done_.assign(trainers_.size(), start);
    RETURN_IF_ERROR(pipeline_->Run(&source, tokens_,
                                   [this](const BatchDone& d) { OnBatchDone(d); }));
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    train_seconds_ += wall;
    for (const Clock::time_point& t : last_done_) {
      trainer_busy_seconds_ += std::min(wall, std::chrono::duration<double>(t - start).count());
    }
    trainer_available_seconds_ += wall * trainers_.size();
    const auto summing = Clock::now();
    RETURN_IF_ERROR(sync_->SyncRelations(trainer_ptrs_, &relations_));
    sync_seconds_ += std::chrono::duration<double>(Clock::now() - summing).count();
    RETURN_IF_ERROR(sync_->SyncFeatures(trainer_ptrs_, features_.get()));
    // Rows trained on a device back to the host copies: validation reads them,
    // and with several trainers the next round may train them elsewhere.
    if (rows_off_host_) RETURN_IF_ERROR(buffer_->SyncToHost(/*release=*/trainers_.size() > 1));
    if (distributed()) RETURN_IF_ERROR(ReportGlobalProgress());
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
  const EvalOptions eo = ValidationOptions(options_);
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

absl::StatusOr<TrainSummary> TrainLoop::Run() {
  const Manifest& m = graph_->manifest();
  if (m.edges.train == 0) {
    return absl::FailedPreconditionError(absl::StrCat(graph_->dir(), " has no train edges"));
  }
  ASSIGN_OR_RETURN(const std::vector<DeviceSpec> devices, ResolveDevices(options_));
  for (const DeviceSpec& d : devices) {
    one_device_kind_ &= d.kind == devices[0].kind;
    rows_off_host_ |= d.kind != "cpu";
  }
  if (distributed()) {
    // Every rank sets up, then all agree before the first collective that
    // needs a working peer; then they check that they train one graph.
    absl::Status setup = PlanMemory(devices);
    if (setup.ok()) setup = RestoreOrInit();
    if (setup.ok()) setup = CheckCheckpointSpace();
    RETURN_IF_ERROR(AgreeOnStatus(*cluster_, setup));
    RETURN_IF_ERROR(CheckSameGraphAndTrainers(*cluster_, *graph_,
                                              static_cast<uint32_t>(devices.size())));
  } else {
    RETURN_IF_ERROR(PlanMemory(devices));
    if (options_.in_memory &&
        (capacity_ < P_ || options_.model.featurized != FeaturizedMode::kOff)) {
      fits_in_memory_ = false;  // nothing trained, nothing written
      return TrainSummary();
    }
    RETURN_IF_ERROR(RestoreOrInit());
    RETURN_IF_ERROR(CheckCheckpointSpace());
  }

  TrainSummary summary;
  summary.resumed = resumed_;
  summary.start_epoch = start_epoch_;
  summary.start_round = start_round_;
  if (start_epoch_ >= options_.epochs) {
    summary.checkpoint_version = committed_version_;
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
  if (distributed()) {
    auto sync = MakeClusterSync(cluster_, options_.deterministic, round_size_, features_.get());
    cluster_sync_ = sync.get();
    sync_ = std::move(sync);
  } else {
    sync_ = MakeInProcessSync(trainers_.size());
  }
  for (int epoch = start_epoch_; epoch < options_.epochs; ++epoch) {
    const uint64_t first_round = epoch == start_epoch_ ? start_round_ : 0;
    const uint64_t loads_before = buffer_->loads();
    if (distributed()) RETURN_IF_ERROR(ScheduleEpochAcrossRanks(epoch, first_round));
    {
      // Progress counts what this run trains of the epoch (across ranks:
      // the global rounds, every rank's buckets).
      std::vector<std::vector<Bucket>> rounds;
      if (distributed()) {
        for (const GlobalRound& g : rank_schedule_->rounds) {
          rounds.emplace_back();
          for (const RankBucket& b : g.buckets) rounds.back().push_back(b.bucket);
        }
      } else {
        auto counter = MakeRoundScheduler(options_.bucket_order, P_, capacity_, round_size_,
                                          options_.seed + epoch, 0);
        while (std::optional<Round> r = counter->Next()) rounds.push_back(std::move(r->buckets));
      }
      absl::MutexLock lock(&progress_mu_);
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
    train_seconds_ = transfer_seconds_ = sync_seconds_ = 0;
    bytes_at_boundary_ = bytes_overlapped_ = 0;
    epoch_start_ = Clock::now();
    bool stopped = false;
    RETURN_IF_ERROR(TrainEpoch(epoch, first_round, &stopped));
    if (stopped) {
      summary.stopped = true;
      summary.checkpoint_version = committed_version_;
      return summary;
    }
    EpochStats stats;
    stats.epoch = epoch + 1;
    stats.lr = options_.lr;
    {
      absl::MutexLock lock(&progress_mu_);
      stats.edges = progress_.edges_done;
      stats.loss = progress_.loss;
    }
    if (distributed()) {  // every rank's, as of the epoch's last round
      stats.edges = global_edges_;
      stats.loss = global_loss_;
    }
    stats.seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    stats.edges_per_second = stats.seconds > 0 ? stats.edges / stats.seconds : 0;
    FillBatchStats(&stats);
    stats.partition_loads = buffer_->loads() - loads_before;
    if (options_.in_memory) {
      if (options_.eval_valid && m.edges.valid > 0 && epoch + 1 == options_.epochs) {
        ASSIGN_OR_RETURN(stats.valid, Validate());
      }
      summary.epochs.push_back(stats);
      continue;
    }
    const auto checkpointing = Clock::now();
    RETURN_IF_ERROR(Checkpoint(epoch + 1, 0, epoch + 1));
    buckets_since_checkpoint_ = 0;
    stats.checkpoint_version = committed_version_;
    if (distributed()) {
      RETURN_IF_ERROR(MeasureEpochAcrossRanks(
          epoch, std::chrono::duration<double>(Clock::now() - checkpointing).count(),
          /*predict=*/epoch == start_epoch_, &stats));
    }
    // Across ranks rank 0 alone validates (from the checkpoint it wrote)
    // and appends the metrics line.
    if (writer()) {
      if (options_.eval_valid && m.edges.valid > 0) {
        ASSIGN_OR_RETURN(stats.valid, Validate());
      }
      RETURN_IF_ERROR(AppendMetrics(stats));
    }
    summary.epochs.push_back(stats);
  }
  summary.checkpoint_version = committed_version_;
  for (const auto& t : trainers_) {
    summary.devices.push_back(t->device());
    summary.device_peak_bytes += t->device_peak_bytes();
  }
  return summary;
}



namespace {

// --lr auto: a resumed run takes the lr stored with its checkpoint; a fresh
// one asks `choose_lr` when the graph has validation edges and otherwise
// keeps options->lr.
absl::Status ResolveAutoLr(Graph& graph, const LrChooser& choose_lr, TrainOptions* options) {
  const Manifest& m = graph.manifest();
  if (m.training.checkpoint_version > 0 && !options->from_scratch) {
    ASSIGN_OR_RETURN(const SavedPosition saved, ReadSavedPosition(graph));
    if (saved.lr > 0) options->lr = static_cast<float>(saved.lr);
    return absl::OkStatus();
  }
  if (m.edges.valid == 0) return absl::OkStatus();
  if (!choose_lr) {
    return absl::InvalidArgumentError(
        "--lr auto needs a step-size chooser (TrainGraphAutoLr in train/tune/auto_lr.h)");
  }
  ASSIGN_OR_RETURN(options->lr, choose_lr(graph, *options));
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
  summary.lr = options.lr;
  return summary;
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
  return absl::OkStatus();
}

absl::StatusOr<TrainSummary> TrainGraphOnCluster(const std::string& graph_dir,
                                                 const TrainOptions& options, Cluster* cluster,
                                                 const LrChooser& choose_lr) {
  RETURN_IF_ERROR(options.Validate());
  const bool across_ranks = cluster != nullptr && cluster->world_size() > 1;
  if (across_ranks) RETURN_IF_ERROR(CheckTrainableAcrossRanks(options));
  GraphOpenOptions open;
  // Across ranks rank 0 alone writes; the others read edges and, at the
  // start, the committed checkpoint.
  open.read_only = across_ranks && cluster->rank() != 0;
  // Memtables and the block cache of every shard share the budget's
  // storage share, half each.
  const uint64_t storage = SplitTrainBudget(options.memory_budget).storage;
  open.write_buffer_bytes = std::max<uint64_t>(storage / 2, 1 << 20);
  open.block_cache_bytes = std::max<uint64_t>(storage / 2, 1 << 20);
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Open(graph_dir, open));
  TrainOptions resolved = options;
  if (options.lr_auto) RETURN_IF_ERROR(ResolveAutoLr(*graph, choose_lr, &resolved));
  absl::StatusOr<TrainSummary> summary;
  {
    // The loop's background work ends when it is destroyed; only then may
    // the graph be closed.
    TrainLoop loop(graph.get(), resolved, cluster);
    summary = loop.Run();
  }
  if (!summary.ok()) return summary;
  RETURN_IF_ERROR(graph->Close());
  summary->lr = resolved.lr;
  return summary;
}

}  // namespace ember
