#include "train/cuda/cuda_device_ops.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "train/device/step_sequence.h"

namespace ember {
namespace {

std::string CudaError(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

// For calls whose caller cannot take a status (frees, destroys, destructors):
// a failure is printed, not dropped, so a run that leaks or corrupts says so.
void Report(const char* what, cudaError_t e) {
  if (e != cudaSuccess) std::fprintf(stderr, "ember cuda: %s\n", CudaError(what, e).c_str());
}

std::string CublasError(const char* what, cublasStatus_t s) {
  return std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s));
}

// cuBLAS, loaded when a GPU trainer is made rather than linked: its
// libraries are over 500 MB, and every run of ember would otherwise map
// them (about 200 MB resident for `ember --help`) and need them to start.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;

  // The loaded library, or null with *error naming what failed.
  static const Cublas* Get(std::string* error) {
    static const Cublas* const loaded = Load(&load_error_);
    if (loaded == nullptr) *error = load_error_;
    return loaded;
  }

 private:
  static const Cublas* Load(std::string* error) {
    void* lib = nullptr;
    for (const char* name : {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13",
                             "libcublas.so"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (lib == nullptr) {
      *error = std::string("cannot load cuBLAS (libcublas.so.13): ") + dlerror();
      return nullptr;
    }
    auto* c = new Cublas;
    bool ok = true;
    auto find = [&](auto* fn, const char* symbol) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(lib, symbol));
      ok = ok && *fn != nullptr;
    };
    find(&c->create, "cublasCreate_v2");
    find(&c->destroy, "cublasDestroy_v2");
    find(&c->set_stream, "cublasSetStream_v2");
    find(&c->sgemm_strided_batched, "cublasSgemmStridedBatched");
    if (!ok) {
      *error = "libcublas.so.13 lacks a function the CUDA trainer calls";
      delete c;
      return nullptr;
    }
    return c;
  }
  static inline std::string load_error_;
};

// Grid-stride loop: any grid covers any size.
template <class F>
__global__ void ForEachKernel(F kernel, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    kernel(i);
  }
}

struct CudaLauncher {
  const Cublas* cublas;
  cudaStream_t stream;
  cublasHandle_t blas;
  int sms;
  std::string error;

  template <class F>
  void ForEach(const F& kernel) {
    const int64_t n = kernel.size();
    if (n == 0 || !error.empty()) return;
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{sms} * 32);
    ForEachKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(kernel, n);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) error = CudaError("kernel launch", e);
  }
  void Zero(float* p, int64_t floats) {
    if (floats <= 0 || !error.empty()) return;
    const cudaError_t e = cudaMemsetAsync(p, 0, sizeof(float) * floats, stream);
    if (e != cudaSuccess) error = CudaError("cudaMemsetAsync", e);
  }
  // Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ.
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
            int64_t stride_a, const float* b, int ldb, int64_t stride_b, float* c, int ldc,
            int64_t stride_c, int64_t count) {
    if (!error.empty()) return;
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t s = cublas->sgemm_strided_batched(
        blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
        &one, b, ldb, stride_b, a, lda, stride_a, &zero, c, ldc, stride_c,
        static_cast<int>(count));
    if (s != CUBLAS_STATUS_SUCCESS) error = CublasError("cublasSgemmStridedBatched", s);
  }
};

class CudaDeviceOps final : public DeviceOps {
 public:
  CudaDeviceOps(const Cublas* cublas, int device, std::string name, int sms)
      : cublas_(cublas), device_(device), name_(std::move(name)), sms_(sms) {}
  ~CudaDeviceOps() override {
    Report("cudaSetDevice", cudaSetDevice(device_));
    for (cublasHandle_t h : blas_) {
      const cublasStatus_t bs = cublas_->destroy(h);
      if (bs != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "ember cuda: %s\n", CublasError("cublasDestroy", bs).c_str());
      }
    }
    for (cudaStream_t s : streams_) Report("cudaStreamDestroy", cudaStreamDestroy(s));
    for (cudaEvent_t e : events_) Report("cudaEventDestroy", cudaEventDestroy(e));
  }

  std::string Init(int streams) {
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return CudaError("cudaSetDevice", e);
    for (int i = 0; i < streams; ++i) {
      cudaStream_t s;
      e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      if (e != cudaSuccess) return CudaError("cudaStreamCreate", e);
      streams_.push_back(s);
      cublasHandle_t h;
      const cublasStatus_t bs = cublas_->create(&h);
      if (bs != CUBLAS_STATUS_SUCCESS) return CublasError("cublasCreate", bs);
      blas_.push_back(h);
      // Unchecked, a failure here would run the GEMMs on the default stream,
      // unordered with the kernels around them.
      const cublasStatus_t ss = cublas_->set_stream(h, s);
      if (ss != CUBLAS_STATUS_SUCCESS) return CublasError("cublasSetStream", ss);
      // Timer i: events 2i (start) and 2i + 1 (stop).
      for (int k = 0; k < 2; ++k) {
        cudaEvent_t ev;
        e = cudaEventCreate(&ev);
        if (e != cudaSuccess) return CudaError("cudaEventCreate", e);
        events_.push_back(ev);
      }
    }
    return "";
  }

  std::string name() const override { return name_; }
  int streams() const override { return static_cast<int>(streams_.size()); }

  std::string Alloc(size_t bytes, void** out) override {
    *out = nullptr;
    if (const cudaError_t d = cudaSetDevice(device_); d != cudaSuccess) {
      return CudaError("cudaSetDevice", d);
    }
    const cudaError_t e = cudaMalloc(out, std::max<size_t>(bytes, 1));
    if (e != cudaSuccess) {
      *out = nullptr;
      return CudaError("cudaMalloc", e) + " of " + std::to_string(bytes) + " bytes on " + name_;
    }
    Track(*out, bytes);
    return "";
  }
  void Free(void* p) override {
    if (p == nullptr) return;
    Report("cudaSetDevice", cudaSetDevice(device_));
    Untrack(p);
    Report("cudaFree", cudaFree(p));
  }
  std::string AllocPinned(size_t bytes, void** out) override {
    const cudaError_t e = cudaMallocHost(out, std::max<size_t>(bytes, 1));
    return e == cudaSuccess ? "" : CudaError("cudaMallocHost", e);
  }
  void FreePinned(void* p) override {
    if (p != nullptr) Report("cudaFreeHost", cudaFreeHost(p));
  }
  size_t bytes_in_use() const override { return in_use_; }
  size_t peak_bytes() const override { return peak_; }

  std::string CopyToDevice(int stream, void* device, const void* host, size_t bytes) override {
    return Copy(stream, device, host, bytes, cudaMemcpyHostToDevice);
  }
  std::string CopyToHost(int stream, void* host, const void* device, size_t bytes) override {
    return Copy(stream, host, device, bytes, cudaMemcpyDeviceToHost);
  }
  std::string Step(int stream, const device::StepShape& shape,
                   const device::StepArgs& args) override {
    if (const cudaError_t d = cudaSetDevice(device_); d != cudaSuccess) {
      return CudaError("cudaSetDevice", d);
    }
    CudaLauncher launch{cublas_, streams_[stream], blas_[stream], sms_, ""};
    device::RunStepSequence(launch, shape, args);
    return launch.error;
  }
  std::string Synchronize(int stream) override {
    if (const cudaError_t d = cudaSetDevice(device_); d != cudaSuccess) {
      return CudaError("cudaSetDevice", d);
    }
    const cudaError_t e = cudaStreamSynchronize(streams_[stream]);
    return e == cudaSuccess ? "" : CudaError("cudaStreamSynchronize", e);
  }

  std::string StartTimer(int stream, int timer) override {
    return Mark(stream, events_[2 * timer]);
  }
  std::string StopTimer(int stream, int timer) override {
    return Mark(stream, events_[2 * timer + 1]);
  }
  std::string TimerSeconds(int timer, double* seconds) override {
    float ms = 0;
    const cudaError_t e = cudaEventElapsedTime(&ms, events_[2 * timer], events_[2 * timer + 1]);
    *seconds = ms / 1e3;
    return e == cudaSuccess ? "" : CudaError("cudaEventElapsedTime", e);
  }

 private:
  std::string Mark(int stream, cudaEvent_t event) {
    if (const cudaError_t d = cudaSetDevice(device_); d != cudaSuccess) {
      return CudaError("cudaSetDevice", d);
    }
    const cudaError_t e = cudaEventRecord(event, streams_[stream]);
    return e == cudaSuccess ? "" : CudaError("cudaEventRecord", e);
  }
  std::string Copy(int stream, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    if (bytes == 0) return "";
    if (const cudaError_t d = cudaSetDevice(device_); d != cudaSuccess) {
      return CudaError("cudaSetDevice", d);
    }
    const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, streams_[stream]);
    return e == cudaSuccess ? "" : CudaError("cudaMemcpyAsync", e);
  }
  void Track(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      sizes_.push_back({p, bytes});
    }
    const size_t now = in_use_ += bytes;
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
  }
  void Untrack(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sizes_.begin(); it != sizes_.end(); ++it) {
      if (it->first != p) continue;
      in_use_ -= it->second;
      sizes_.erase(it);
      return;
    }
  }

  const Cublas* const cublas_;
  const int device_;
  const std::string name_;
  const int sms_;
  std::vector<cudaStream_t> streams_;
  std::vector<cublasHandle_t> blas_;
  std::vector<cudaEvent_t> events_;  // two per timer
  std::mutex mu_;
  std::vector<std::pair<void*, size_t>> sizes_;  // live allocations
  std::atomic<size_t> in_use_{0}, peak_{0};
};

}  // namespace

int CudaDeviceCount() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

std::unique_ptr<DeviceOps> MakeCudaDeviceOps(int device, int streams, std::string* error) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    *error = CudaError("no CUDA device", e);
    return nullptr;
  }
  if (device < 0 || device >= n) {
    *error = "no CUDA device " + std::to_string(device) + " (this machine has " +
             std::to_string(n) + ")";
    return nullptr;
  }
  const Cublas* cublas = Cublas::Get(error);
  if (cublas == nullptr) return nullptr;
  cudaDeviceProp prop;
  if (const cudaError_t pe = cudaGetDeviceProperties(&prop, device); pe != cudaSuccess) {
    *error = CudaError("cudaGetDeviceProperties", pe);
    return nullptr;
  }
  auto ops = std::make_unique<CudaDeviceOps>(
      cublas, device, "cuda:" + std::to_string(device) + " (" + prop.name + ")",
      prop.multiProcessorCount);
  *error = ops->Init(streams);
  if (!error->empty()) return nullptr;
  return ops;
}

}  // namespace ember
