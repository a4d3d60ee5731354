// Benchmark only: a trainer made slower by a stated factor, to measure how
// batches are dealt across trainers of unequal speed (a GPU beside a CPU)
// on a machine whose trainers are all equal CPU trainers.
//
// The slowed trainer runs the inner trainer's TrainBatch and then waits
// until the call has taken `factor` times as long as the inner call took.
// Waiting (not spinning) is the point: a slower device keeps its caller
// waiting without taking a core from the other trainers. It also keeps at
// most slots() batches in flight, as a device with that many lanes would:
// a call beyond them waits for a lane (the pipeline never makes one, but
// the trainer does not rely on it). Everything else
// (relations, row residency) is the inner trainer's.
#ifndef EMBER_TRAIN_TRAINERS_SLOWED_TRAINER_H_
#define EMBER_TRAIN_TRAINERS_SLOWED_TRAINER_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "train/trainers/trainer.h"

namespace ember {

// Parses "INDEX:FACTOR" (e.g. "1:3"): trainer INDEX >= 0, FACTOR >= 1 (a
// decimal). InvalidArgument naming `text` otherwise.
absl::StatusOr<TrainerSlowdown> ParseTrainerSlowdown(std::string_view text);

// Wraps `inner`, whose device() becomes e.g. "cpu (slowed 3x)".
// REQUIRES: inner non-null, factor >= 1.
std::unique_ptr<Trainer> MakeSlowedTrainer(std::unique_ptr<Trainer> inner, double factor);

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINERS_SLOWED_TRAINER_H_
