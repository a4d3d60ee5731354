// Benchmark only (`ember train --bench-slow-trainer INDEX:FACTOR`): a
// trainer made slower by a stated factor, to measure how batches are dealt
// across trainers of unequal speed (a GPU beside a CPU) on a machine whose
// trainers are all equal CPU trainers. It reaches a run through the trainer
// factory's wrap hook (TrainOptions::bench.wrap_trainer).
//
// The slowed trainer runs the inner trainer's TrainBatch and then waits
// until the call has taken `factor` times as long as the inner call took.
// Waiting (not spinning) is the point: a slower device keeps its caller
// waiting without taking a core from the other trainers. It also keeps at
// most slots() batches in flight, as a device with that many lanes would:
// a call beyond them waits for a lane (the pipeline never makes one, but
// the trainer does not rely on it). Everything else
// (relations, row residency) is the inner trainer's.
#ifndef EMBER_TOOLS_BENCH_HOOKS_SLOWED_TRAINER_H_
#define EMBER_TOOLS_BENCH_HOOKS_SLOWED_TRAINER_H_

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/options/train_options.h"
#include "train/trainers/trainer.h"

namespace ember {

// One trainer of a run made slower by a factor.
struct TrainerSlowdown {
  // Index of the slowed trainer among the run's trainers; >= 0.
  int trainer = 0;
  // Each batch of that trainer takes this many times as long; >= 1 and
  // finite. Default: 1.
  double factor = 1;

  absl::Status Validate() const;
};

// Parses "INDEX:FACTOR" (e.g. "1:3"): trainer INDEX >= 0, FACTOR >= 1 (a
// decimal). InvalidArgument naming `text` otherwise.
absl::StatusOr<TrainerSlowdown> ParseTrainerSlowdown(std::string_view text);

// The wrap hook (TrainOptions::bench.wrap_trainer) that slows trainer
// `slowdown.trainer` and leaves the others as made; the hook fails with
// InvalidArgument when the run has no trainer of that index.
// InvalidArgument when `slowdown` is not valid.
absl::StatusOr<TrainerWrap> SlowTrainerWrap(const TrainerSlowdown& slowdown);

// Wraps `inner`, whose device() becomes e.g. "cpu (slowed 3x)".
// REQUIRES: inner non-null, factor >= 1.
std::unique_ptr<Trainer> MakeSlowedTrainer(std::unique_ptr<Trainer> inner, double factor);

}  // namespace ember

#endif  // EMBER_TOOLS_BENCH_HOOKS_SLOWED_TRAINER_H_
