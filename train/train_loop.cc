#include "train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <numeric>
#include <optional>

#include <tbb/task_group.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "storage/node_hash.h"
#include "storage/splitmix.h"
#include "storage/status_macros.h"
#include "train/checkpoint.h"
#include "train/evaluator.h"
#include "train/partition_buffer.h"
#include "train/round_batches.h"
#include "train/trainer.h"

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<uint32_t> PartitionsOf(const std::vector<Bucket>& round) {
  std::vector<uint32_t> out;
  for (const Bucket& b : round) {
    for (uint32_t p : {b.src, b.dst}) {
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  }
  return out;
}

uint64_t BucketSeed(uint64_t seed, int epoch, const Bucket& b, uint32_t P) {
  return Mix64(Mix64(seed, static_cast<uint64_t>(epoch)), uint64_t{b.src} * P + b.dst);
}

// Same shuffle on every platform.
void Shuffle(std::vector<Edge>* edges, uint64_t seed) { SplitMix64(seed).Shuffle(*edges); }

// The edges of every bucket of a round, read and shuffled.
using RoundEdges = std::vector<std::vector<Edge>>;

absl::StatusOr<RoundEdges> ReadRound(const Graph& graph, const std::vector<Bucket>& round,
                                     uint64_t seed, int epoch, uint32_t min_generation) {
  RoundEdges out(round.size());
  const uint32_t P = graph.manifest().num_partitions;
  for (size_t i = 0; i < round.size(); ++i) {
    RETURN_IF_ERROR(
        graph.ReadBucket(Split::kTrain, round[i].src, round[i].dst, &out[i], min_generation));
    Shuffle(&out[i], BucketSeed(seed, epoch, round[i], P) ^ 0x5eed5eedULL);
  }
  return out;
}

class TrainLoop {
 public:
  TrainLoop(std::unique_ptr<Graph> graph, const TrainOptions& options)
      : graph_(std::move(graph)), options_(options), P_(graph_->manifest().num_partitions) {}

  absl::StatusOr<TrainSummary> Run();

 private:
  absl::Status RestoreOrInit();
  absl::Status Checkpoint(int epoch, uint64_t next_round, int epochs_done);
  absl::Status TrainRound(int epoch, const std::vector<Bucket>& round, RoundEdges& edges);
  void ResetBatchStats();
  // The edge cost batches are planned with: measured, except that measured
  // times must not steer a deterministic run.
  uint32_t PlanningEdgeCost() const {
    return options_.deterministic ? BatchCostModel::kPriorEdgeCost : cost_model_.EdgeCost();
  }
  void FillBatchStats(EpochStats* s) const;
  void MergeRelations(const std::vector<size_t>& active);
  nlohmann::json TrainerState(int epoch, uint64_t next_round) const;
  absl::Status AppendMetrics(const EpochStats& s);

  std::unique_ptr<Graph> graph_;
  TrainOptions options_;
  const uint32_t P_;
  uint32_t capacity_ = 1;
  uint32_t round_size_ = 1;
  RelationParams relations_;
  std::vector<uint64_t> committed_locations_;  // what the manifest references
  uint64_t committed_version_ = 0;
  uint64_t write_version_ = 1;
  std::unique_ptr<PartitionBuffer> buffer_;
  std::vector<std::unique_ptr<Trainer>> trainers_;
  std::unique_ptr<FeatureTable> features_;  // featurized models only
  // This epoch's per-batch time and non-zeros, and trainer time (busy and
  // available).
  SpreadAccumulator batch_seconds_, batch_nnz_;
  BatchCostModel cost_model_;  // over this run's batches
  double trainer_busy_seconds_ = 0;
  double trainer_available_seconds_ = 0;
  int start_epoch_ = 0;
  uint64_t start_round_ = 0;
  bool resumed_ = false;

  absl::Mutex progress_mu_;
  TrainProgress progress_ ABSL_GUARDED_BY(progress_mu_);
  double epoch_loss_ ABSL_GUARDED_BY(progress_mu_) = 0;
  Clock::time_point epoch_start_;
};

nlohmann::json TrainLoop::TrainerState(int epoch, uint64_t next_round) const {
  return {{"epoch", epoch},
          {"next_round", next_round},
          {"seed", options_.seed},
          {"bucket_order", std::string(BucketOrderName(options_.bucket_order))},
          {"buffer_partitions", capacity_},
          {"round_size", round_size_}};
}

absl::Status TrainLoop::RestoreOrInit() {
  const Manifest& m = graph_->manifest();
  const int param_size = RelationParamSize(options_.model.op, options_.model.dim);
  committed_version_ = m.training.checkpoint_version;
  committed_locations_.assign(P_, 0);
  write_version_ = committed_version_ + 1;
  std::vector<uint64_t> locations(P_, 0);
  std::optional<StoredModel> stored;
  if (committed_version_ > 0) {
    ASSIGN_OR_RETURN(stored, LoadStoredModel(*graph_));
    committed_locations_ = stored->partition_versions;
  }
  RETURN_IF_ERROR(
      RemoveUncommittedCheckpoints(*graph_, committed_version_, committed_locations_));
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
      nlohmann::json state = nlohmann::json::parse(m.training.state_json, nullptr, false);
      const nlohmann::json t = state.value("trainer", nlohmann::json::object());
      start_epoch_ = m.training.epochs_done;
      start_round_ = t.value("next_round", uint64_t{0});
      if (start_round_ > 0 &&
          (t.value("seed", uint64_t{0}) != options_.seed ||
           t.value("bucket_order", std::string()) != BucketOrderName(options_.bucket_order) ||
           t.value("buffer_partitions", 0u) != capacity_ ||
           t.value("round_size", 0u) != round_size_)) {
        return absl::FailedPreconditionError(absl::StrCat(
            graph_->dir(), " was stopped mid-epoch; resume it with the same --seed, "
            "--bucket-order, --buffer-partitions and --trainers (",
            t.dump(), "), or pass --from-scratch"));
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
  buffer_ = std::make_unique<PartitionBuffer>(graph_.get(), bo, locations, write_version_);
  return absl::OkStatus();
}

void TrainLoop::MergeRelations(const std::vector<size_t>& active) {
  if (trainers_.size() == 1 || relations_.params.empty()) {
    relations_ = trainers_[0]->relations();
    return;
  }
  // Sum of each active trainer's change since the last merge: what one
  // trainer applying all updates would have done, to first order.
  RelationParams merged = relations_;
  for (size_t t : active) {
    const RelationParams& r = trainers_[t]->relations();
    for (size_t i = 0; i < merged.params.size(); ++i) {
      merged.params[i] += r.params[i] - relations_.params[i];
      merged.state[i] += r.state[i] - relations_.state[i];
    }
  }
  relations_ = std::move(merged);
  for (auto& t : trainers_) t->relations() = relations_;
}

absl::Status TrainLoop::TrainRound(int epoch, const std::vector<Bucket>& round,
                                   RoundEdges& edges) {
  const size_t k = round.size();
  const size_t n = trainers_.size();  // rounds hold at most n buckets
  std::vector<BucketTask> tasks(k);
  std::vector<std::vector<BatchRange>> batches(k);
  const uint32_t edge_cost = PlanningEdgeCost();
  for (size_t b = 0; b < k; ++b) {
    BucketTask& task = tasks[b];
    task.src_partition = round[b].src;
    task.dst_partition = round[b].dst;
    task.edges = std::span<const Edge>(edges[b]);
    task.src = buffer_->Get(round[b].src);
    task.dst = buffer_->Get(round[b].dst);
    task.seed = BucketSeed(options_.seed, epoch, round[b], P_);
    batches[b] = PlanBucketBatches(options_.batching, static_cast<uint32_t>(b), task, &edges[b],
                                   static_cast<uint32_t>(options_.batch_size),
                                   Mix64(task.seed, 0xba7c4u), edge_cost);
  }
  const RoundQueues queues = DealRoundBatches(options_.batching, batches, n);
  auto on_batch = [this](uint64_t count, double loss) {
    absl::MutexLock lock(&progress_mu_);
    progress_.edges_done += count;
    epoch_loss_ += loss;
    progress_.loss = epoch_loss_ / std::max<uint64_t>(progress_.edges_done, 1);
    const double secs = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    progress_.edges_per_second = secs > 0 ? progress_.edges_done / secs : 0;
    if (options_.progress) options_.progress(progress_);
  };
  const auto start = Clock::now();
  std::vector<absl::StatusOr<TrainerRunStats>> results(n);
  if (n == 1) {
    results[0] = trainers_[0]->TrainBatches(tasks, queues.of_trainer[0], on_batch);
  } else {
    tbb::task_group group;
    for (size_t t = 0; t < n; ++t) {
      group.run([&, t] {
        results[t] = trainers_[t]->TrainBatches(tasks, queues.of_trainer[t], on_batch);
      });
    }
    group.wait();
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<size_t> active;
  for (size_t t = 0; t < n; ++t) {
    RETURN_IF_ERROR(results[t].status());
    active.push_back(t);
    trainer_busy_seconds_ += std::min(wall, results[t]->busy_seconds);
    for (const BatchRecord& r : results[t]->batches) {
      batch_seconds_.Add(r.seconds);
      batch_nnz_.Add(static_cast<double>(r.nnz));
      cost_model_.Add(r);
    }
  }
  trainer_available_seconds_ += wall * n;
  MergeRelations(active);
  return absl::OkStatus();
}

void TrainLoop::ResetBatchStats() {
  batch_seconds_ = SpreadAccumulator();
  batch_nnz_ = SpreadAccumulator();
  trainer_busy_seconds_ = 0;
  trainer_available_seconds_ = 0;
}

void TrainLoop::FillBatchStats(EpochStats* s) const {
  s->batches = batch_seconds_.count();
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
  return absl::OkStatus();
}

absl::Status TrainLoop::AppendMetrics(const EpochStats& s) {
  nlohmann::json j = {{"epoch", s.epoch},
                      {"loss", s.loss},
                      {"edges", s.edges},
                      {"seconds", s.seconds},
                      {"edges_per_second", s.edges_per_second},
                      {"partition_loads", s.partition_loads},
                      {"checkpoint_version", s.checkpoint_version},
                      {"batches", s.batches},
                      {"batch_seconds_cv", s.batch_seconds_cv},
                      {"batch_nnz_cv", s.batch_nnz_cv},
                      {"batch_nnz_max_over_mean", s.batch_nnz_max_over_mean},
                      {"edge_cost", s.edge_cost},
                      {"idle_share", s.idle_share}};
  if (s.valid_mrr.has_value()) j["valid_mrr"] = *s.valid_mrr;
  const std::string path = graph_->dir() + "/metrics.jsonl";
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return absl::InternalError(absl::StrCat("cannot append to ", path));
  const std::string line = j.dump() + "\n";
  const bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size();
  if (std::fclose(f) != 0 || !ok) return absl::InternalError(absl::StrCat("write failed: ", path));
  return absl::OkStatus();
}

absl::StatusOr<TrainSummary> TrainLoop::Run() {
  const Manifest& m = graph_->manifest();
  if (m.edges.train == 0) {
    return absl::FailedPreconditionError(absl::StrCat(graph_->dir(), " has no train edges"));
  }
  capacity_ = options_.buffer_partitions == 0 ? P_
                                              : std::clamp<uint32_t>(options_.buffer_partitions,
                                                                     std::min<uint32_t>(2, P_), P_);
  const uint32_t trainers = static_cast<uint32_t>(options_.trainers);
  round_size_ = capacity_ >= P_ ? trainers : std::max<uint32_t>(1, std::min(trainers, capacity_ / 2));
  RETURN_IF_ERROR(RestoreOrInit());

  TrainSummary summary;
  summary.resumed = resumed_;
  summary.start_epoch = start_epoch_;
  summary.start_round = start_round_;
  if (start_epoch_ >= options_.epochs) {
    summary.checkpoint_version = committed_version_;
    return summary;
  }
  const int threads = options_.threads;
  const int per_trainer = std::max(1, threads / options_.trainers);
  for (int t = 0; t < options_.trainers; ++t) {
    ASSIGN_OR_RETURN(auto trainer,
                     MakeCpuTrainer(options_, per_trainer, relations_, features_.get()));
    trainers_.push_back(std::move(trainer));
  }
  uint64_t buckets_this_run = 0;
  for (int epoch = start_epoch_; epoch < options_.epochs; ++epoch) {
    const std::vector<Bucket> order =
        BucketOrder(options_.bucket_order, P_, capacity_, options_.seed + epoch);
    const uint32_t min_generation = options_.only_new_edges ? m.edge_generation : 0;
    const std::vector<std::vector<Bucket>> rounds = FormRounds(order, round_size_);
    std::vector<std::vector<uint32_t>> needs;
    for (const auto& r : rounds) needs.push_back(PartitionsOf(r));
    const uint64_t first_round = epoch == start_epoch_ ? start_round_ : 0;
    const uint64_t loads_before = buffer_->loads();
    {
      absl::MutexLock lock(&progress_mu_);
      progress_ = TrainProgress();
      progress_.epoch = epoch;
      progress_.epochs = options_.epochs;
      progress_.buckets = order.size();
      progress_.edges_total = m.edges.train;
      for (uint64_t r = 0; r < first_round; ++r) {
        progress_.bucket += rounds[r].size();
        for (const Bucket& b : rounds[r]) progress_.edges_total -= m.train_bucket_edges.empty() ? 0 : m.train_bucket_edges[uint64_t{b.src} * P_ + b.dst];
      }
      epoch_loss_ = 0;
    }
    ResetBatchStats();
    epoch_start_ = Clock::now();
    std::future<absl::StatusOr<RoundEdges>> next_edges;
    auto future_needs = [&](uint64_t from) {
      const uint64_t end = std::min<uint64_t>(needs.size(), from + 64);
      return std::vector<std::vector<uint32_t>>(needs.begin() + std::min<uint64_t>(from, end),
                                                needs.begin() + end);
    };
    for (uint64_t r = first_round; r < rounds.size(); ++r) {
      const auto ahead = future_needs(r + 1);
      RETURN_IF_ERROR(buffer_->Acquire(needs[r], ahead));
      RoundEdges edges;
      if (next_edges.valid()) {
        ASSIGN_OR_RETURN(edges, next_edges.get());
      } else {
        ASSIGN_OR_RETURN(edges, ReadRound(*graph_, rounds[r], options_.seed, epoch, min_generation));
      }
      if (r + 1 < rounds.size()) {
        buffer_->Prefetch(needs[r + 1], needs[r], future_needs(r + 2));
        next_edges = std::async(std::launch::async, [this, &rounds, r, epoch, min_generation] {
          return ReadRound(*graph_, rounds[r + 1], options_.seed, epoch, min_generation);
        });
      }
      RETURN_IF_ERROR(TrainRound(epoch, rounds[r], edges));
      {
        absl::MutexLock lock(&progress_mu_);
        progress_.bucket += rounds[r].size();
      }
      buckets_this_run += rounds[r].size();
      if (options_.checkpoint_every > 0 && r + 1 < rounds.size() &&
          buckets_this_run % options_.checkpoint_every < rounds[r].size()) {
        if (next_edges.valid()) next_edges.wait();
        RETURN_IF_ERROR(Checkpoint(epoch, r + 1, epoch));
      }
      if (options_.stop_after_buckets > 0 && buckets_this_run >= options_.stop_after_buckets) {
        if (next_edges.valid()) next_edges.wait();
        RETURN_IF_ERROR(buffer_->Quiesce());
        summary.stopped = true;
        summary.checkpoint_version = committed_version_;
        return summary;
      }
    }
    EpochStats stats;
    stats.epoch = epoch + 1;
    {
      absl::MutexLock lock(&progress_mu_);
      stats.edges = progress_.edges_done;
      stats.loss = progress_.loss;
    }
    stats.seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    stats.edges_per_second = stats.seconds > 0 ? stats.edges / stats.seconds : 0;
    FillBatchStats(&stats);
    RETURN_IF_ERROR(Checkpoint(epoch + 1, 0, epoch + 1));
    stats.partition_loads = buffer_->loads() - loads_before;
    stats.checkpoint_version = committed_version_;
    if (options_.eval_valid && m.edges.valid > 0) {
      ASSIGN_OR_RETURN(StoredModel stored, LoadStoredModel(*graph_));
      EvalOptions eo;
      eo.split = Split::kValid;
      eo.negatives = options_.eval_negatives;
      eo.max_edges = options_.eval_max_edges;
      eo.seed = options_.seed;
      eo.threads = options_.threads;
      ASSIGN_OR_RETURN(EvalResult er, Evaluate(*graph_, stored, eo));
      stats.valid_mrr = er.filtered.mrr;
    }
    RETURN_IF_ERROR(AppendMetrics(stats));
    summary.epochs.push_back(stats);
  }
  summary.checkpoint_version = committed_version_;
  return summary;
}

}  // namespace

absl::Status TrainOptions::Validate() const {
  RETURN_IF_ERROR(model.Validate());
  if (epochs < 0) return absl::InvalidArgumentError("--epochs must be >= 0");
  if (!(lr > 0)) return absl::InvalidArgumentError("--lr must be > 0");
  if (batch_size < 1) return absl::InvalidArgumentError("--batch-size must be >= 1");
  if (chunk_size < 1) return absl::InvalidArgumentError("--chunk-size must be >= 1");
  if (num_uniform_negs < 0) return absl::InvalidArgumentError("--num-uniform-negs must be >= 0");
  if (threads < 1) return absl::InvalidArgumentError("threads must be >= 1 (resolved by the caller)");
  if (trainers < 1 || trainers > threads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trainers ", trainers, " must be between 1 and --threads (", threads, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainSummary> TrainGraph(const std::string& graph_dir,
                                        const TrainOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  GraphOpenOptions open;
  open.read_only = false;
  ASSIGN_OR_RETURN(auto graph, Graph::Open(graph_dir, open));
  TrainLoop loop(std::move(graph), options);
  return loop.Run();
}

}  // namespace ember
