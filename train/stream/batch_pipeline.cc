#include "train/stream/batch_pipeline.h"

#include <algorithm>
#include <chrono>

#include <tbb/task_arena.h>

#include "storage/base/mutex.h"
#include "storage/base/parallel.h"
#include "storage/base/status_macros.h"

namespace ember {

struct BatchPipeline::Rep {
  explicit Rep(std::vector<Trainer*> t, int threads)
      : trainers(std::move(t)), in_flight(trainers.size(), 0), arena(std::max(1, threads)) {}
  std::vector<Trainer*> trainers;
  Mutex mu;
  std::vector<int> in_flight ABSL_GUARDED_BY(mu);
  tbb::task_arena arena;
};

BatchPipeline::BatchPipeline(std::vector<Trainer*> trainers, int threads)
    : rep_(std::make_unique<Rep>(std::move(trainers), threads)) {
  EMBER_CHECK(!rep_->trainers.empty());
}

BatchPipeline::~BatchPipeline() = default;

size_t BatchPipeline::total_slots() const {
  size_t n = 0;
  for (Trainer* t : rep_->trainers) n += static_cast<size_t>(t->slots());
  return n;
}

// The required trainer once it has a free slot, or the trainer with the
// largest share of free slots once one has any: TrainBatch takes at most
// slots() concurrent calls (trainer.h), a statically assigned trainer
// included. Waiting holds a oneTBB worker only while every slot it could
// use is training, and each of those releases its slot when done.
size_t BatchPipeline::Acquire(int required) {
  MutexLock lock(&rep_->mu);
  auto free_slot = [this](size_t t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rep_->mu) {
    return rep_->in_flight[t] < std::max(1, rep_->trainers[t]->slots());
  };
  size_t best = 0;
  if (required >= 0) {
    best = static_cast<size_t>(required);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rep_->mu) { return free_slot(best); };
    rep_->mu.Await(absl::Condition(&ready));
  } else {
    auto any = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rep_->mu) {
      for (size_t t = 0; t < rep_->trainers.size(); ++t) {
        if (free_slot(t)) return true;
      }
      return false;
    };
    rep_->mu.Await(absl::Condition(&any));
    double best_load = 1e300;
    for (size_t t = 0; t < rep_->trainers.size(); ++t) {
      if (!free_slot(t)) continue;
      const double load = double(rep_->in_flight[t]) / rep_->trainers[t]->slots();
      if (load < best_load) {
        best_load = load;
        best = t;
      }
    }
  }
  ++rep_->in_flight[best];
  return best;
}

void BatchPipeline::Release(size_t trainer) {
  MutexLock lock(&rep_->mu);
  --rep_->in_flight[trainer];
}

absl::Status BatchPipeline::Run(BatchSource* source, size_t tokens,
                                PipelineObserver* observer) {
  using Clock = std::chrono::steady_clock;
  Mutex error_mu;
  absl::Status error;
  auto fail = [&](absl::Status s) {
    MutexLock lock(&error_mu);
    if (error.ok()) error = std::move(s);
  };
  auto failed = [&] {
    MutexLock lock(&error_mu);
    return !error.ok();
  };
  struct Trained {
    std::unique_ptr<PipelineBatch> batch;
    BatchDone done;
  };
  // Items pass as pointers (parallel.h); each stage owns what it is handed.
  rep_->arena.execute([&] {
    ParallelPipeline(
        std::max<size_t>(1, tokens),
        MakeStage<void, PipelineBatch*>(
            StageMode::kSerialInOrder,
            [&](FlowControl& fc) -> PipelineBatch* {
              auto b = std::make_unique<PipelineBatch>();
              absl::StatusOr<bool> more = failed() ? false : source->Next(b.get());
              if (!more.ok()) fail(more.status());
              if (!more.ok() || !*more) {
                fc.stop();
                return nullptr;
              }
              return b.release();
            }) &
            MakeStage<PipelineBatch*, Trained*>(
                StageMode::kParallel,
                [&](PipelineBatch* batch) {
                  std::unique_ptr<PipelineBatch> b(batch);
                  auto out = std::make_unique<Trained>();
                  if (failed()) return out.release();
                  const size_t t = Acquire(b->trainer);
                  const auto t0 = Clock::now();
                  absl::StatusOr<double> loss =
                      rep_->trainers[t]->TrainBatch(*b->task, b->weighted_range(), b->edges());
                  out->done.record.seconds =
                      std::chrono::duration<double>(Clock::now() - t0).count();
                  Release(t);
                  if (!loss.ok()) {
                    fail(loss.status());
                    return out.release();
                  }
                  out->done.trainer = t;
                  out->done.loss = *loss;
                  out->done.record.edges = b->range.hi - b->range.lo;
                  out->done.record.nnz = b->range.nnz;
                  out->batch = std::move(b);
                  return out.release();
                }) &
            MakeStage<Trained*, void>(StageMode::kSerialOutOfOrder, [&](Trained* trained) {
              std::unique_ptr<Trained> t(trained);
              if (t->batch == nullptr) return;
              t->done.batch = t->batch.get();
              if (observer != nullptr) observer->BatchTrained(t->done);
            }));
  });
  return error;
}

}  // namespace ember
