#include "tools/bench/hooks/slowed_trainer.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "storage/base/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

class SlowedTrainer final : public Trainer {
 public:
  SlowedTrainer(std::unique_ptr<Trainer> inner, double factor)
      : inner_(std::move(inner)), factor_(factor) {}

  std::string device() const override {
    return absl::StrCat(inner_->device(), " (slowed ", factor_, "x)");
  }
  int slots() const override { return inner_->slots(); }
  RelationParams& relations() override { return inner_->relations(); }
  size_t device_peak_bytes() const override { return inner_->device_peak_bytes(); }
  absl::Status MergeFeatures(FeatureTable* table) override {
    return inner_->MergeFeatures(table);
  }
  absl::Status RefreshFeatures(const FeatureTable& table) override {
    return inner_->RefreshFeatures(table);
  }
  RowHome Home(uint32_t partition) const override { return inner_->Home(partition); }
  absl::Status SyncToHost(PartitionData* host) override { return inner_->SyncToHost(host); }
  void Release(uint32_t partition) override { inner_->Release(partition); }

  absl::StatusOr<double> TrainBatch(const BucketTask& task, const BatchRange& batch,
                                    std::span<const Edge> edges) override {
    {
      MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &SlowedTrainer::LaneFree));
      ++busy_;
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<double> loss = inner_->TrainBatch(task, batch, edges);
    // The emulated device's extra time (see the header: waiting is the point).
    absl::SleepFor(absl::FromChrono(std::chrono::steady_clock::now() - start) * (factor_ - 1));
    MutexLock lock(&mu_);
    --busy_;
    return loss;
  }

 private:
  bool LaneFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return busy_ < inner_->slots(); }

  const std::unique_ptr<Trainer> inner_;
  const double factor_;
  Mutex mu_;
  int busy_ ABSL_GUARDED_BY(mu_) = 0;  // batches in flight
};

}  // namespace

absl::Status TrainerSlowdown::Validate() const {
  if (trainer < 0 || !(factor >= 1) || !std::isfinite(factor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--bench-slow-trainer: needs a trainer index >= 0 and a factor >= 1, got ", trainer,
        ":", factor));
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainerSlowdown> ParseTrainerSlowdown(std::string_view text) {
  const absl::string_view t(text.data(), text.size());
  const std::vector<absl::string_view> parts = absl::StrSplit(t, absl::MaxSplits(':', 1));
  TrainerSlowdown out;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &out.trainer) ||
      !absl::SimpleAtod(parts[1], &out.factor) || !out.Validate().ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--bench-slow-trainer: expected INDEX:FACTOR with a trainer index >= 0 and a factor "
        ">= 1 (e.g. 1:3), got '", t, "'"));
  }
  return out;
}

absl::StatusOr<TrainerWrap> SlowTrainerWrap(const TrainerSlowdown& slowdown) {
  RETURN_IF_ERROR(slowdown.Validate());
  return TrainerWrap([slowdown](size_t index, size_t count, std::unique_ptr<Trainer> trainer)
                         -> absl::StatusOr<std::unique_ptr<Trainer>> {
    if (static_cast<size_t>(slowdown.trainer) >= count) {
      return absl::InvalidArgumentError(absl::StrCat("--bench-slow-trainer ", slowdown.trainer,
                                                     ": the run has ", count,
                                                     " trainers (indices from 0)"));
    }
    if (index != static_cast<size_t>(slowdown.trainer)) return trainer;
    return MakeSlowedTrainer(std::move(trainer), slowdown.factor);
  });
}

std::unique_ptr<Trainer> MakeSlowedTrainer(std::unique_ptr<Trainer> inner, double factor) {
  EMBER_CHECK(inner != nullptr && factor >= 1);
  return std::make_unique<SlowedTrainer>(std::move(inner), factor);
}

}  // namespace ember
