// What gpu_train_bench measures on the GPU itself: cuBLAS sgemm at the
// trainer's chunk shapes, and the device memory a run takes. Built from
// gpu_probe_cuda.cc where CUDA is (EMBER_HAVE_CUDA), else from
// gpu_probe_none.cc, whose calls all return Unavailable.
#ifndef EMBER_TOOLS_BENCH_GPU_PROBE_H_
#define EMBER_TOOLS_BENCH_GPU_PROBE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ember::bench {

// "NVIDIA H200, 139.8 GiB, compute 9.0, driver 13.0, runtime 13.0" for
// device `device`; Unavailable without CUDA or without that device.
absl::StatusOr<std::string> DescribeGpu(int device);

// One chunk step's GEMMs on one side, row-major as train/model/chunk_scorer.h
// computes them (cand = chunk + negs [+ chunk]):
//   scores S = Q·Kᵀ   (chunk × cand, inner dim)
//   dQ       = G·K    (chunk × dim,  inner cand)
//   dK       = Gᵀ·Q   (cand × dim,   inner chunk)
struct ChunkGemmShape {
  int chunk = 50;
  int cand = 100;
  int dim = 100;
  int count = 40;  // products of each kind per call: chunks per batch × 2 sides
  double flops() const { return 3.0 * count * 2.0 * chunk * cand * double(dim); }
};

struct SgemmRate {
  double flops = 0;    // FLOPs timed
  double seconds = 0;  // device time (CUDA events)
  double flops_per_second() const { return seconds > 0 ? flops / seconds : 0; }
};

// Times `reps` rounds of the three products of `shape`, each one
// cublasSgemmStridedBatched call of shape.count products, on device
// `device`, after a warm-up. Unavailable without CUDA or without the device.
absl::StatusOr<SgemmRate> MeasureChunkSgemm(int device, const ChunkGemmShape& shape, int reps);

// Peak device memory in use while it lives: samples cudaMemGetInfo every
// `period_ms` on its own thread and reports (free when started) − (least
// free seen). Memory other processes take meanwhile counts too.
class DeviceMemoryPeak {
 public:
  // Unavailable without CUDA or without the device.
  static absl::StatusOr<std::unique_ptr<DeviceMemoryPeak>> Start(int device, int period_ms);
  virtual ~DeviceMemoryPeak() = default;
  // Stops sampling (idempotent) and returns the peak in bytes.
  virtual uint64_t Stop() = 0;
};

}  // namespace ember::bench

#endif  // EMBER_TOOLS_BENCH_GPU_PROBE_H_
