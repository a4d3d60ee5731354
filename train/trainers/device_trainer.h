// The device trainer: a Trainer whose steps run on a device (DeviceOps), the
// CUDA trainer when the ops are a GPU's.
//
// Each batch is one step (PBG's unit): the host plans it (device_batch_plan.h)
// into one pinned buffer, which is copied to the device on the slot's
// stream; the device gathers the batch's distinct rows, scores every chunk
// of both sides with batched GEMMs, and applies one row-wise Adagrad step
// per distinct row with its gradients summed over the batch (the CPU trainer
// steps per chunk). The loss and the relation gradients come back with one
// copy; relation parameters stay on the host (this trainer's copy, read and
// merged by parameter_sync.h as the CPU trainer's), updated with dense
// Adagrad after each step, and the device sees each step's snapshot of the
// relations it uses.
//
// Rows: a bucket's partitions are copied to the device on first use and
// stay there, newer than the host copy (RowHome::kDevice), until the
// partition buffer asks for them back (SyncToHost) or evicts them (Release).
// Slots: each slot has its own buffers and timer; slots pair up on a
// stream (double-buffered: slot 2s + 1 plans its batch on the host while
// slot 2s's step runs on stream s, then enqueues behind it), so the host's
// planning overlaps the device's work within each stream. The last stream
// moves partitions.
//
// Featurized models: the device holds its own copy of the feature table;
// each step composes its distinct rows from it (featurized.h) and applies
// one row-wise Adagrad step per distinct feature. The copy's changes are
// merged into the host table between stretches (Trainer::MergeFeatures),
// as relation parameters are: stale by at most a stretch, as Hogwild
// trainers' reads are by a few steps.
//
// Models: the combinations that train in mixed form (SupportsMixedChunks):
// chunks always mix relations in batch order.
#ifndef EMBER_TRAIN_TRAINERS_DEVICE_TRAINER_H_
#define EMBER_TRAIN_TRAINERS_DEVICE_TRAINER_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/device/device_ops.h"
#include "train/trainers/trainer.h"

namespace ember {

// OK when device trainers can train `options`' model; FailedPrecondition
// naming what cannot, and the alternative, otherwise.
absl::Status CheckDeviceModel(const TrainOptions& options);

// A trainer with one slot per stream of `ops` but the last (which moves
// partitions); the slots use the first (streams - 1 + 1) / 2 streams in
// pairs. REQUIRES: ops->streams() >= 2.
absl::StatusOr<std::unique_ptr<Trainer>> MakeDeviceTrainer(std::unique_ptr<DeviceOps> ops,
                                                           const TrainOptions& options,
                                                           const RelationParams& relations,
                                                           FeatureTable* features);

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINERS_DEVICE_TRAINER_H_
