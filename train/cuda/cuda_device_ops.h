// DeviceOps on an NVIDIA GPU: one CUDA stream and cuBLAS handle per stream
// slot; kernels are the bodies of kernel_bodies.h launched as grids; the
// products are cublasSgemmStridedBatched. Plain C++ (no CUDA headers), so
// the trainer factory can include it.
#ifndef EMBER_TRAIN_CUDA_CUDA_DEVICE_OPS_H_
#define EMBER_TRAIN_CUDA_CUDA_DEVICE_OPS_H_

#include <memory>
#include <string>

#include "train/device/device_ops.h"

namespace ember {

// The ops of GPU `device` with `streams` streams; null with *error set when
// there is no such device (or no driver), the error naming it.
std::unique_ptr<DeviceOps> MakeCudaDeviceOps(int device, int streams, std::string* error);

// The number of CUDA devices here (0 when there is no driver or device).
int CudaDeviceCount();

}  // namespace ember

#endif  // EMBER_TRAIN_CUDA_CUDA_DEVICE_OPS_H_
