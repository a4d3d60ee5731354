// DeviceCommunicator over NCCL among GPUs of this process (one rank per
// GPU, ncclCommInitAll): each AllReduceSum copies the ranks' host buffers
// to their GPUs, all-reduces them there in one NCCL group, and copies the
// sums back. NCCL is loaded at run time, as cuBLAS is
// (cuda_device_ops.cu): libnccl.so.2 on the loader's path, then the
// toolkit's folder. Plain C++ (no CUDA headers).
#ifndef EMBER_TRAIN_CUDA_NCCL_COMMUNICATOR_H_
#define EMBER_TRAIN_CUDA_NCCL_COMMUNICATOR_H_

#include <memory>
#include <string>
#include <vector>

#include "train/device/device_communicator.h"

namespace ember {

// The communicator of `devices` (CUDA indices, one rank each); null with
// *error naming what is missing (a device, the driver, NCCL) or failed.
std::unique_ptr<DeviceCommunicator> MakeNcclCommunicator(const std::vector<int>& devices,
                                                         std::string* error);

}  // namespace ember

#endif  // EMBER_TRAIN_CUDA_NCCL_COMMUNICATOR_H_
