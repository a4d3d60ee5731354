// gpu_probe.h with the CUDA runtime and cuBLAS.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "tools/bench/gpu_probe.h"

namespace ember::bench {
namespace {

absl::Status CudaStatus(cudaError_t e, const char* call, int line) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(__FILE__, ":", line, ": ", call, ": ",
                                             cudaGetErrorString(e)));
}
absl::Status CublasStatus(cublasStatus_t e, const char* call, int line) {
  if (e == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(__FILE__, ":", line, ": ", call, ": ",
                                          cublasGetStatusString(e)));
}
#define PROBE_CUDA(call)                                                   \
  do {                                                                     \
    absl::Status probe_status_ = CudaStatus((call), #call, __LINE__);      \
    if (!probe_status_.ok()) return probe_status_;                         \
  } while (0)
#define PROBE_CUBLAS(call)                                                 \
  do {                                                                     \
    absl::Status probe_status_ = CublasStatus((call), #call, __LINE__);    \
    if (!probe_status_.ok()) return probe_status_;                         \
  } while (0)

// Device buffers and handles of one measurement, freed on every path.
struct SgemmResources {
  cublasHandle_t handle = nullptr;
  cudaEvent_t begin = nullptr, end = nullptr;
  float *q = nullptr, *k = nullptr, *g = nullptr, *s = nullptr, *dq = nullptr, *dk = nullptr;
  ~SgemmResources() {
    for (float* p : {q, k, g, s, dq, dk}) cudaFree(p);
    if (begin != nullptr) cudaEventDestroy(begin);
    if (end != nullptr) cudaEventDestroy(end);
    if (handle != nullptr) cublasDestroy(handle);
  }
};

// Row-major C (m × n) = op(X) (m × k) · op(Y) (k × n), `count` times with
// strides, as column-major Cᵀ = op(Y)ᵀ · op(X)ᵀ.
cublasStatus_t RowMajorBatched(cublasHandle_t h, bool tx, bool ty, int m, int n, int k,
                               const float* x, const float* y, float* c, int count) {
  const float one = 1.0f, zero = 0.0f;
  const int ldx = tx ? m : k, ldy = ty ? k : n;
  return cublasSgemmStridedBatched(h, ty ? CUBLAS_OP_T : CUBLAS_OP_N, tx ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   n, m, k, &one, y, ldy, int64_t{k} * n, x, ldx, int64_t{m} * k,
                                   &zero, c, n, int64_t{m} * n, count);
}

class CudaMemoryPeak : public DeviceMemoryPeak {
 public:
  CudaMemoryPeak(int device, int period_ms, size_t free_at_start)
      : free_at_start_(free_at_start), least_free_(free_at_start) {
    sampler_ = std::thread([this, device, period_ms] {
      cudaSetDevice(device);
      do {
        size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) == cudaSuccess) least_free_ = std::min(least_free_, free);
      } while (!stop_.WaitForNotificationWithTimeout(absl::Milliseconds(period_ms)));
    });
  }
  ~CudaMemoryPeak() override { Stop(); }

  uint64_t Stop() override {
    if (sampler_.joinable()) {
      stop_.Notify();
      sampler_.join();
    }
    return free_at_start_ - least_free_;
  }

 private:
  const size_t free_at_start_;
  size_t least_free_;  // written by the sampler only until it is joined
  absl::Notification stop_;
  std::thread sampler_;
};

}  // namespace

absl::StatusOr<std::string> DescribeGpu(int device) {
  cudaDeviceProp prop;
  PROBE_CUDA(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  PROBE_CUDA(cudaDriverGetVersion(&driver));
  PROBE_CUDA(cudaRuntimeGetVersion(&runtime));
  return absl::StrFormat("%s, %.1f GiB, compute %d.%d, %d SMs, driver %d.%d, runtime %d.%d",
                         prop.name, prop.totalGlobalMem / double(1 << 30), prop.major, prop.minor,
                         prop.multiProcessorCount, driver / 1000, driver % 1000 / 10,
                         runtime / 1000, runtime % 1000 / 10);
}

absl::StatusOr<SgemmRate> MeasureChunkSgemm(int device, const ChunkGemmShape& shape, int reps) {
  PROBE_CUDA(cudaSetDevice(device));
  SgemmResources r;
  const size_t n = shape.count;
  const size_t q = n * shape.chunk * shape.dim, k = n * shape.cand * shape.dim,
               scores = n * shape.chunk * shape.cand;
  PROBE_CUDA(cudaMalloc(&r.q, q * sizeof(float)));
  PROBE_CUDA(cudaMalloc(&r.k, k * sizeof(float)));
  PROBE_CUDA(cudaMalloc(&r.g, scores * sizeof(float)));
  PROBE_CUDA(cudaMalloc(&r.s, scores * sizeof(float)));
  PROBE_CUDA(cudaMalloc(&r.dq, q * sizeof(float)));
  PROBE_CUDA(cudaMalloc(&r.dk, k * sizeof(float)));
  // Small finite values: sgemm's speed does not depend on them, but NaNs
  // or denormals from uninitialized memory could.
  for (auto [p, len] : {std::pair{r.q, q}, {r.k, k}, {r.g, scores}}) {
    PROBE_CUDA(cudaMemset(p, 0x3c, len * sizeof(float)));  // 0x3c3c3c3c ≈ 0.0115
  }
  PROBE_CUBLAS(cublasCreate(&r.handle));
  PROBE_CUDA(cudaEventCreate(&r.begin));
  PROBE_CUDA(cudaEventCreate(&r.end));
  const int c = shape.chunk, m = shape.cand, d = shape.dim;
  auto round = [&]() -> absl::Status {
    PROBE_CUBLAS(RowMajorBatched(r.handle, false, true, c, m, d, r.q, r.k, r.s, shape.count));
    PROBE_CUBLAS(RowMajorBatched(r.handle, false, false, c, d, m, r.g, r.k, r.dq, shape.count));
    PROBE_CUBLAS(RowMajorBatched(r.handle, true, false, m, d, c, r.g, r.q, r.dk, shape.count));
    return absl::OkStatus();
  };
  for (int i = 0; i < 10; ++i) {
    if (absl::Status st = round(); !st.ok()) return st;
  }
  PROBE_CUDA(cudaEventRecord(r.begin));
  for (int i = 0; i < reps; ++i) {
    if (absl::Status st = round(); !st.ok()) return st;
  }
  PROBE_CUDA(cudaEventRecord(r.end));
  PROBE_CUDA(cudaEventSynchronize(r.end));
  float ms = 0;
  PROBE_CUDA(cudaEventElapsedTime(&ms, r.begin, r.end));
  return SgemmRate{.flops = shape.flops() * reps, .seconds = ms / 1000.0};
}

absl::StatusOr<std::unique_ptr<DeviceMemoryPeak>> DeviceMemoryPeak::Start(int device,
                                                                          int period_ms) {
  PROBE_CUDA(cudaSetDevice(device));
  size_t free = 0, total = 0;
  PROBE_CUDA(cudaMemGetInfo(&free, &total));
  return std::make_unique<CudaMemoryPeak>(device, period_ms, free);
}

}  // namespace ember::bench
