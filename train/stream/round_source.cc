#include "train/stream/round_source.h"

#include "absl/strings/str_cat.h"
#include "storage/base/node_hash.h"
#include "storage/base/status_macros.h"
#include "train/schedule/partition_buffer.h"
#include "train/batch/round_batches.h"

namespace ember {

uint64_t BucketSeed(uint64_t seed, int epoch, const Bucket& b, uint32_t P) {
  return Mix64(Mix64(seed, static_cast<uint64_t>(epoch)), uint64_t{b.src} * P + b.dst);
}

struct RoundBatchSource::Slot {
  std::shared_ptr<const BucketTask> task;
  std::unique_ptr<BucketWindowReader> reader;
  std::shared_ptr<EdgeWindow> window;
  std::vector<BatchRange> batches;  // planned over window
  size_t next = 0;                  // next batch to hand out
  uint64_t batch_index = 0;         // batches planned so far in the bucket
  bool finished = false;
};

struct RoundBatchSource::Active {
  Round round;
  uint32_t edge_cost = 0;  // the round's windows are planned with it
  std::vector<Slot> slots;
  size_t cursor = 0;
};

namespace {

// A bucket's task and the pins on its partitions: shared by the bucket's
// batches, so the pins go with the last of them.
struct PinnedTask {
  BucketTask task;
  PartitionPin src, dst;
};

}  // namespace

absl::Status RoundSourceOptions::Validate() const {
  if (batch_size < 1 || window_edges < 1 || reader_depth < 1 || trainers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "round source: batch_size, window_edges, reader_depth and trainers must be >= 1, got ",
        batch_size, ", ", window_edges, ", ", reader_depth, ", ", trainers));
  }
  if (!(edge_sample > 0 && edge_sample <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("round source: edge_sample must be in (0, 1], got ", edge_sample));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RoundBatchSource>> RoundBatchSource::Make(
    const Graph* graph, PartitionBuffer* buffer, IoExecutor* io, BucketScheduler* scheduler,
    PipelineObserver* observer, const RoundSourceOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<RoundBatchSource>(
      new RoundBatchSource(graph, buffer, io, scheduler, observer, options));
}

RoundBatchSource::RoundBatchSource(const Graph* graph, PartitionBuffer* buffer, IoExecutor* io,
                                   BucketScheduler* scheduler, PipelineObserver* observer,
                                   const RoundSourceOptions& options)
    : graph_(graph),
      buffer_(buffer),
      io_(io),
      scheduler_(scheduler),
      observer_(observer),
      options_(options) {}

RoundBatchSource::~RoundBatchSource() = default;

std::vector<std::unique_ptr<BucketWindowReader>> RoundBatchSource::OpenReaders(
    const Round& round) {
  const Manifest& m = graph_->manifest();
  const uint32_t P = m.num_partitions;
  std::vector<std::unique_ptr<BucketWindowReader>> readers;
  for (const Bucket& b : round.buckets) {
    BucketReadSpec spec;
    spec.split = Split::kTrain;
    spec.src = b.src;
    spec.dst = b.dst;
    spec.min_generation = options_.min_generation;
    spec.sample = options_.edge_sample;
    spec.sample_seed = Mix64(options_.seed, 0x5a3b1e);
    spec.seed = BucketSeed(options_.seed, options_.epoch, b, P) ^ 0x5eed5eedULL;
    if (options_.min_generation == 0 && options_.edge_sample == 1.0 &&
        !m.train_bucket_edges.empty()) {
      spec.expected_edges = m.train_bucket_edges[uint64_t{b.src} * P + b.dst];
    }
    readers.push_back(std::make_unique<BucketWindowReader>(graph_, io_, spec,
                                                           options_.window_edges,
                                                           options_.reader_depth));
  }
  return readers;
}

const Round* RoundBatchSource::PeekNext() {
  if (!next_round_.has_value() && !done_) {
    next_round_ = scheduler_->Next();
    if (next_round_.has_value()) {
      next_readers_ = OpenReaders(*next_round_);
    } else {
      done_ = true;
    }
  }
  return next_round_.has_value() ? &*next_round_ : nullptr;
}

absl::StatusOr<bool> RoundBatchSource::StartRound() {
  if (PeekNext() == nullptr) return false;
  current_ = std::make_unique<Active>();
  current_->round = std::move(*next_round_);
  next_round_.reset();
  std::vector<std::unique_ptr<BucketWindowReader>> readers = std::move(next_readers_);
  const Manifest& m = graph_->manifest();
  const uint32_t P = m.num_partitions;
  for (size_t i = 0; i < current_->round.buckets.size(); ++i) {
    const Bucket& b = current_->round.buckets[i];
    auto pinned = std::make_shared<PinnedTask>();
    pinned->src = buffer_->Pin(b.src);
    pinned->dst = buffer_->Pin(b.dst);
    BucketTask& task = pinned->task;
    task.src_partition = b.src;
    task.dst_partition = b.dst;
    task.src = pinned->src.data();
    task.dst = pinned->dst.data();
    task.seed = BucketSeed(options_.seed, options_.epoch, b, P);
    task.same_type = m.TypeOfPartition(b.src) == m.TypeOfPartition(b.dst);
    Slot slot;
    slot.task = std::shared_ptr<const BucketTask>(pinned, &pinned->task);
    slot.reader = std::move(readers[i]);
    current_->slots.push_back(std::move(slot));
  }
  current_->edge_cost = observer_->RoundStarted(current_->round, PeekNext());
  return true;
}

absl::StatusOr<bool> RoundBatchSource::Refill(Slot* slot) {
  ASSIGN_OR_RETURN(std::shared_ptr<EdgeWindow> w, slot->reader->Next());
  if (w == nullptr) {
    slot->finished = true;
    slot->window.reset();
    slot->reader.reset();
    return false;
  }
  const BucketTask& task = *slot->task;
  slot->batches = PlanWindowBatches(
      options_.batching, task, std::span<Edge>(w->edges), options_.batch_size,
      WindowSeed(Mix64(task.seed, 0xba7c4u), w->number),
      current_->edge_cost,
      options_.group_by_relation, slot->batch_index);
  slot->batch_index += slot->batches.size();
  slot->next = 0;
  slot->window = std::move(w);
  return true;
}

absl::StatusOr<bool> RoundBatchSource::Next(PipelineBatch* out) {
  while (true) {
    if (current_ == nullptr) {
      ASSIGN_OR_RETURN(bool started, StartRound());
      if (!started) return false;
    }
    Active& a = *current_;
    const size_t k = a.slots.size();
    for (size_t tries = 0; tries < k; ++tries) {
      const size_t i = a.cursor;
      a.cursor = (a.cursor + 1) % k;
      Slot& s = a.slots[i];
      if (s.finished) continue;
      if (s.next == s.batches.size()) {
        ASSIGN_OR_RETURN(bool refilled, Refill(&s));
        if (!refilled) continue;
      }
      out->window = s.window;
      out->task = s.task;
      out->range = s.batches[s.next++];
      if (options_.trainer_per_bucket && options_.trainers > 1) {
        out->trainer = static_cast<int>(i);
      } else {
        out->trainer = options_.batching == BatchingKind::kFixed && options_.trainers > 1 &&
                               options_.static_split
                           ? static_cast<int>(FixedTrainerOf(i, k, out->range.index,
                                                             options_.trainers))
                           : -1;
      }
      return true;
    }
    // Every bucket of the round is handed out.
    const Round done = std::move(a.round);
    current_.reset();
    const Round* next = PeekNext();
    ASSIGN_OR_RETURN(const bool go, observer_->RoundEmitted(done, next));
    if (next == nullptr || !go) return false;
  }
}

}  // namespace ember
