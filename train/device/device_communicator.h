// Collectives among the devices of one process, one rank per device: the
// seam behind which NCCL sits (train/cuda/nccl_communicator.h), with an
// in-process host implementation (MakeHostCommunicator) that computes the
// same sums, for tests and machines without GPUs.
//
// Plain C++ (no Abseil), as device_ops.h: calls that can fail return an
// error message, empty on success.
#ifndef EMBER_TRAIN_DEVICE_DEVICE_COMMUNICATOR_H_
#define EMBER_TRAIN_DEVICE_DEVICE_COMMUNICATOR_H_

#include <cstddef>
#include <memory>
#include <string>

namespace ember {

class DeviceCommunicator {
 public:
  virtual ~DeviceCommunicator() = default;
  // "nccl (cuda:0, cuda:1)", "host (2 ranks)".
  virtual std::string name() const = 0;
  virtual int ranks() const = 0;
  // data[r] is rank r's buffer of `count` floats in host memory, for every
  // r < ranks(); afterwards each holds the element-wise sum over all ranks.
  // One call at a time.
  virtual std::string AllReduceSum(float* const* data, size_t count) = 0;
};

// `ranks` ranks summed on the host, in rank order.
std::unique_ptr<DeviceCommunicator> MakeHostCommunicator(int ranks);

}  // namespace ember

#endif  // EMBER_TRAIN_DEVICE_DEVICE_COMMUNICATOR_H_
