// DeviceOps on an NVIDIA GPU: one CUDA stream and cuBLAS handle per stream
// slot; kernels are the bodies of kernel_bodies.h launched as grids (some
// with a warp per row); the products are cublasSgemmStridedBatched; a
// step may run as a CUDA graph (CudaOpsOptions). Plain C++ (no CUDA headers), so
// the trainer factory can include it.
#ifndef EMBER_TRAIN_CUDA_CUDA_DEVICE_OPS_H_
#define EMBER_TRAIN_CUDA_CUDA_DEVICE_OPS_H_

#include <memory>
#include <string>

#include "train/device/device_ops.h"

namespace ember {

struct CudaOpsOptions {
  // Each slot's step as a CUDA graph (per stream, keyed by the slot's work
  // buffers): relaunched when the shape and arguments repeat, else
  // captured and the graph updated in place; plain launches wherever a
  // capture fails (said once on stderr) and for each stream's first step.
  bool graphs = true;
  // The softmax scoring (dot, cos) and Adagrad kernels with a warp per row
  // rather than a thread per row.
  bool warp_rows = true;
  // The defaults, with EMBER_CUDA_GRAPHS=0 or EMBER_CUDA_WARP_ROWS=0
  // turning either off (to compare on a GPU without rebuilding).
  static CudaOpsOptions FromEnvironment();
};

// The ops of GPU `device` with `streams` streams; null with *error set when
// there is no such device (or no driver), the error naming it.
std::unique_ptr<DeviceOps> MakeCudaDeviceOps(int device, int streams, std::string* error,
                                             CudaOpsOptions options = CudaOpsOptions::FromEnvironment());

// The number of CUDA devices here (0 when there is no driver or device).
int CudaDeviceCount();

}  // namespace ember

#endif  // EMBER_TRAIN_CUDA_CUDA_DEVICE_OPS_H_
