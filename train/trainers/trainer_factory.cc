#include "train/trainers/trainer_factory.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "storage/base/status_macros.h"
#include "train/model/adagrad.h"
#include "train/model/model_options.h"
#include "train/model/vec_math.h"
#include "train/trainers/cpu_trainer.h"
#include "train/device/device_ops.h"
#include "train/trainers/device_trainer.h"
#ifdef EMBER_HAVE_CUDA
#include "train/cuda/cuda_device_ops.h"
#include "train/cuda/nccl_communicator.h"
#endif

namespace ember {
namespace {

using MakeFn = absl::StatusOr<std::unique_ptr<Trainer>> (*)(const DeviceSpec&,
                                                            const TrainOptions&,
                                                            const RelationParams&,
                                                            FeatureTable*);

absl::StatusOr<std::unique_ptr<Trainer>> MakeCpu(const DeviceSpec& d, const TrainOptions& o,
                                                 const RelationParams& r, FeatureTable* f) {
  return MakeCpuTrainer(o, d.threads, r, f);
}

absl::StatusOr<std::unique_ptr<Trainer>> MakeEmulated(const DeviceSpec& d, const TrainOptions& o,
                                                      const RelationParams& r, FeatureTable* f) {
  return MakeDeviceTrainer(MakeHostDeviceOps(DeviceSlots(d) + 1), o, r, f);
}

#ifdef EMBER_HAVE_CUDA
absl::StatusOr<std::unique_ptr<Trainer>> MakeCuda(const DeviceSpec& d, const TrainOptions& o,
                                                  const RelationParams& r, FeatureTable* f) {
  RETURN_IF_ERROR(CheckDeviceModel(o));
  std::string error;
  std::unique_ptr<DeviceOps> ops = MakeCudaDeviceOps(d.index, DeviceSlots(d) + 1, &error);
  if (ops == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("--devices ", d.Name(), ": ", error));
  }
  return MakeDeviceTrainer(std::move(ops), o, r, f);
}
#else
absl::StatusOr<std::unique_ptr<Trainer>> MakeCuda(const DeviceSpec& d, const TrainOptions&,
                                                  const RelationParams&, FeatureTable*) {
  return absl::FailedPreconditionError(absl::StrCat(
      "--devices ", d.Name(), ": this ember was built without the CUDA trainer (it is built "
      "where nvcc is found; see README); use --devices cpu"));
}
#endif

struct Kind {
  std::string_view name;
  bool takes_index;  // "kind:N" names device N, else "kind:T" sets threads
  MakeFn make;
};

// The trainer kinds this build can make.
constexpr Kind kKinds[] = {
    {"cpu", false, &MakeCpu},
    {"cuda", true, &MakeCuda},
    // The CUDA trainer's algorithm on the host (device_ops.h), for tests;
    // "emulated:S" runs S slots.
    {"emulated", false, &MakeEmulated},
};

const Kind* FindKind(std::string_view name) {
  for (const Kind& k : kKinds) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace

std::string DeviceSpec::Name() const {
  const Kind* k = FindKind(kind);
  if (k != nullptr && k->takes_index) return absl::StrCat(kind, ":", index);
  return threads > 0 ? absl::StrCat(kind, ":", threads) : kind;
}

int DeviceSlots(const DeviceSpec& device) {
  if (device.kind == "cuda") return kCudaSlots;
  return std::max(1, device.threads);
}

absl::StatusOr<std::unique_ptr<DeviceCommunicator>> MakeNcclCommunicatorFor(
    std::span<const DeviceSpec> devices) {
  std::vector<int> indices;
  for (const DeviceSpec& d : devices) {
    if (d.kind != "cuda") {
      return absl::InvalidArgumentError(absl::StrCat("NCCL: ", d.Name(), " is not a GPU"));
    }
    indices.push_back(d.index);
  }
#ifdef EMBER_HAVE_CUDA
  std::string error;
  std::unique_ptr<DeviceCommunicator> comm = MakeNcclCommunicator(indices, &error);
  if (comm == nullptr) return absl::FailedPreconditionError(absl::StrCat("NCCL: ", error));
  return comm;
#else
  return absl::FailedPreconditionError("NCCL: this ember was built without CUDA");
#endif
}

absl::StatusOr<std::vector<DeviceSpec>> ParseDevices(std::string_view text) {
  std::vector<DeviceSpec> out;
  // Debian's Abseil has its own string_view.
  for (absl::string_view entry : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    const std::vector<absl::string_view> parts = absl::StrSplit(entry, absl::MaxSplits(':', 1));
    const Kind* kind = FindKind(std::string_view(parts[0].data(), parts[0].size()));
    if (kind == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--devices: unknown device '", entry, "' (expected cpu, cpu:THREADS, cuda:N or emulated[:SLOTS])"));
    }
    DeviceSpec d;
    d.kind = std::string(parts[0]);
    if (parts.size() == 2) {
      int n = 0;
      if (!absl::SimpleAtoi(parts[1], &n) || n < (kind->takes_index ? 0 : 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--devices: bad number in '", entry, "' (", kind->takes_index ? "a device index >= 0"
                                                                          : "threads >= 1",
            ")"));
      }
      (kind->takes_index ? d.index : d.threads) = n;
    } else if (kind->takes_index) {
      return absl::InvalidArgumentError(
          absl::StrCat("--devices: '", entry, "' needs a device index, e.g. ", entry, ":0"));
    }
    out.push_back(d);
  }
  return out;
}

absl::StatusOr<std::vector<DeviceSpec>> ResolveDevices(const TrainOptions& options) {
  RETURN_IF_ERROR(options.devices.Validate());
  std::vector<DeviceSpec> devices;
  if (options.devices.list.empty()) {
    devices.assign(options.devices.trainers, DeviceSpec{.kind = "cpu"});
  } else {
    ASSIGN_OR_RETURN(devices, ParseDevices(options.devices.list));
  }
  int fixed = 0, sharing = 0;
  for (const DeviceSpec& d : devices) {
    if (d.kind != "cpu") continue;
    if (d.threads > 0) {
      fixed += d.threads;
    } else {
      ++sharing;
    }
  }
  const int left = std::max(0, options.devices.threads - fixed);
  int i = 0;
  for (DeviceSpec& d : devices) {
    if (d.kind != "cpu" || d.threads > 0) continue;
    d.threads = std::max(1, left / sharing + (i++ < left % sharing ? 1 : 0));
  }
  return devices;
}

absl::StatusOr<std::vector<std::unique_ptr<Trainer>>> MakeTrainers(
    std::span<const DeviceSpec> devices, const TrainOptions& options,
    const RelationParams& relations, FeatureTable* features) {
  std::vector<std::unique_ptr<Trainer>> out;
  for (const DeviceSpec& d : devices) {
    if (options.model.precision != Precision::kFp32 && d.kind != "cpu") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--precision ", std::string(PrecisionName(options.model.precision)),
          " runs on CPU trainers only, not on ", d.Name(), "; use --precision fp32"));
    }
    const Kind* kind = FindKind(d.kind);
    if (kind == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown device kind '", d.kind, "'"));
    }
    ASSIGN_OR_RETURN(auto trainer, kind->make(d, options, relations, features));
    if (options.bench.wrap_trainer) {
      ASSIGN_OR_RETURN(trainer,
                       options.bench.wrap_trainer(out.size(), devices.size(), std::move(trainer)));
    }
    out.push_back(std::move(trainer));
  }
  return out;
}


// kernel_bodies.h mirrors these values for nvcc, which cannot include
// train/model/; the first TU that sees both holds them equal.
static_assert(device::kOpNone == static_cast<int>(Operator::kNone));
static_assert(device::kOpTranslation == static_cast<int>(Operator::kTranslation));
static_assert(device::kOpDiagonal == static_cast<int>(Operator::kDiagonal));
static_assert(device::kOpComplexDiagonal == static_cast<int>(Operator::kComplexDiagonal));
static_assert(kNumOperators == 4);
static_assert(device::kCmpDot == static_cast<int>(Comparator::kDot));
static_assert(device::kCmpCos == static_cast<int>(Comparator::kCos));
static_assert(device::kCmpL2 == static_cast<int>(Comparator::kL2));
static_assert(kNumComparators == 3);
static_assert(device::kLossRanking == static_cast<int>(Loss::kRanking));
static_assert(device::kLossLogistic == static_cast<int>(Loss::kLogistic));
static_assert(device::kLossSoftmax == static_cast<int>(Loss::kSoftmax));
static_assert(kNumLosses == 3);
static_assert(device::kMinSquaredDistance == vec::kMinSquaredDistance);
static_assert(device::kMinNorm == vec::kMinNorm);
static_assert(device::kAdagradEps == kAdagradEps);

}  // namespace ember
