// The trainer factory: `--devices` names the trainers of a run, and a table
// keyed by device kind makes them. Adding a trainer kind is one file with
// its Make function and one entry in the table in trainer_factory.cc.
//
// Syntax: a comma-separated list of devices, one trainer each:
//   cpu          a CPU trainer (threads: an equal share of --threads)
//   cpu:T        a CPU trainer with T threads
//   cuda:N       the CUDA trainer on GPU N (needs a build with CUDA)
//   emulated[:S] the CUDA trainer's algorithm run on the host, S slots
//                (device_ops.h; for tests on machines without a GPU)
// `--trainers K` is shorthand for K `cpu` entries.
#ifndef EMBER_TRAIN_TRAINERS_TRAINER_FACTORY_H_
#define EMBER_TRAIN_TRAINERS_TRAINER_FACTORY_H_

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "train/device/device_communicator.h"
#include "train/model/checkpoint.h"
#include "train/model/feature_table.h"
#include "train/options/train_options.h"
#include "train/trainers/trainer.h"

namespace ember {

struct DeviceSpec {
  std::string kind;  // "cpu", "cuda"
  int index = 0;     // cuda:N
  int threads = 0;   // cpu:T (0: a share of the run's threads)
  std::string Name() const;
};

// Batches a CUDA trainer trains at once, one host thread each, in pairs on
// a stream (device_trainer.h). A step's host planning takes about 40 us per
// 1000 edges (device_plan_bench) and its 8 to 12 launches wait on the
// device, so one slot keeps a GPU far from busy; 8 slots (about 8 host
// threads, 4 streams) are chosen to overlap them, before measurement on a
// GPU (gpu_train_bench prints where each step's time goes).
inline constexpr int kCudaSlots = 8;

// Batches the device's trainer trains at once: a CPU trainer's threads,
// kCudaSlots for a GPU.
int DeviceSlots(const DeviceSpec& device);

// InvalidArgument naming the bad entry.
absl::StatusOr<std::vector<DeviceSpec>> ParseDevices(std::string_view text);

// The NCCL communicator among `devices`, all cuda:N (for MakeNcclSync,
// parameter_sync.h). FailedPrecondition naming the reason where this build
// has no CUDA, a device is missing, or NCCL cannot be loaded;
// InvalidArgument for a device that is not a GPU.
absl::StatusOr<std::unique_ptr<DeviceCommunicator>> MakeNcclCommunicatorFor(
    std::span<const DeviceSpec> devices);

// The trainers a run asks for: options.devices.list if set, else .trainers CPU trainers;
// CPU threads resolved against .threads (shares split evenly, at least 1 each).
// InvalidArgument when the device options fail DeviceOptions::Validate().
absl::StatusOr<std::vector<DeviceSpec>> ResolveDevices(const TrainOptions& options);

// One trainer per device, each starting from `relations`, each passed
// through options.bench.wrap_trainer when set (its error is returned).
// FailedPrecondition for a kind this build cannot make (e.g. cuda without
// CUDA), naming it.
absl::StatusOr<std::vector<std::unique_ptr<Trainer>>> MakeTrainers(
    std::span<const DeviceSpec> devices, const TrainOptions& options,
    const RelationParams& relations, FeatureTable* features);

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINERS_TRAINER_FACTORY_H_
