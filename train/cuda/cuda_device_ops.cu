#include "train/cuda/cuda_device_ops.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include "train/cuda/run_time_library.h"
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
    RunTimeLibrary lib("cuBLAS", {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13",
                                  "libcublas.so"});
    auto* c = new Cublas;
    lib.Find(&c->create, "cublasCreate_v2");
    lib.Find(&c->destroy, "cublasDestroy_v2");
    lib.Find(&c->set_stream, "cublasSetStream_v2");
    lib.Find(&c->sgemm_strided_batched, "cublasSgemmStridedBatched");
    if (!lib.ok()) {
      *error = "cuBLAS for the CUDA trainer: " + lib.error();
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

// Warp-wide sum and max (every lane gets the result).
__device__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Rows [0, rows) one per warp, grid-stride: calls row(r, lane).
template <class Row>
__device__ void ForEachRowByWarp(int64_t rows, const Row& row) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; r < rows; r += warps) {
    row(r, lane);
  }
}

// ScoreRows (kernel_bodies.h) for softmax with dot or cos (no l2 terms), a
// warp per score row: the same exclusions, loss and dLoss/dS. `rows` is
// k.size() (host-only).
__global__ void SoftmaxScoreRowsByWarp(device::ScoreRows k, int64_t rows) {
  ForEachRowByWarp(rows, [&k](int64_t r, int lane) {
    const device::StepShape& sh = k.sh;
    const int c = sh.chunk, n = sh.candidates();
    const int64_t b = r / c;
    const int i = static_cast<int>(r % c);
    float* s = k.a.s + r * n;
    const int valid = sh.valid_rows(b);
    if (i >= valid) {
      for (int j = lane; j < n; j += 32) s[j] = 0.0f;
      if (lane == 0) k.a.row_loss[r] = 0.0f;
      return;
    }
    const int32_t* k_row = k.a.k_row + b * n;
    const int endpoint_col = c + sh.negs;
    float m = -INFINITY;
    for (int j = lane; j < n; j += 32) {
      const int e = j - endpoint_col;
      if ((j >= valid && j < c) || (e >= 0 && (e >= valid || k_row[j] == k_row[i]))) {
        s[j] = device::kExcluded;
      }
      m = fmaxf(m, s[j]);
    }
    m = WarpMax(m);
    __syncwarp();
    const float pos = s[i];
    // As RowLossAndGrad: the positive's gradient from the others' mass.
    float others = 0.0f;
    for (int j = lane; j < n; j += 32) others += j == i ? 0.0f : expf(s[j] - m);
    others = WarpSum(others);
    const float z = others + expf(pos - m);
    if (lane == 0) k.a.row_loss[r] = logf(z) + m - pos;
    __syncwarp();
    for (int j = lane; j < n; j += 32) s[j] = j == i ? -others / z : expf(s[j] - m) / z;
  });
}

// AdagradRow (kernel_bodies.h) by the lanes of one warp.
__device__ void AdagradRowByWarp(float* row, float* state, const float* g, int dim, float lr,
                                 int lane) {
  float sq = 0.0f;
  for (int k = lane; k < dim; k += 32) sq += g[k] * g[k];
  const float s = *state + WarpSum(sq) / static_cast<float>(dim);
  __syncwarp();
  if (lane == 0) *state = s;
  const float step = lr / (sqrtf(s) + device::kAdagradEps);
  for (int k = lane; k < dim; k += 32) row[k] -= step * g[k];
}

__global__ void AdagradRowsByWarp(device::AdagradRows k, int64_t rows) {
  ForEachRowByWarp(rows, [&k](int64_t u, int lane) {
    const int t = k.a.u_table[u];
    const uint64_t node = k.a.u_node[u];
    if (node < k.a.frozen[t]) return;
    AdagradRowByWarp(k.a.rows[t] + node * k.sh.dim, k.a.state[t] + node, k.a.dx + u * k.sh.dim,
                     k.sh.dim, k.a.lr, lane);
  });
}

__global__ void AdagradFeaturesByWarp(device::AdagradFeatures k, int64_t rows) {
  ForEachRowByWarp(rows, [&k](int64_t f, int lane) {
    const uint64_t row = k.a.f_id[f];
    AdagradRowByWarp(k.a.features + row * k.sh.dim, k.a.feature_state + row,
                     k.a.dfeat + f * k.sh.dim, k.sh.dim, k.a.lr, lane);
  });
}

struct CudaLauncher {
  const Cublas* cublas;
  cudaStream_t stream;
  cublasHandle_t blas;
  int sms;
  bool warp_rows;
  std::string error;

  // The kernels with a warp per row where warp_rows: softmax scoring
  // (dot, cos) and Adagrad; every other kernel a thread per index.
  template <class F>
  void ForEach(const F& kernel) {
    if constexpr (std::is_same_v<F, device::ScoreRows>) {
      if (warp_rows && kernel.sh.loss == device::kLossSoftmax && kernel.sh.cmp != device::kCmpL2) {
        return ByWarp(SoftmaxScoreRowsByWarp, kernel);
      }
    } else if constexpr (std::is_same_v<F, device::AdagradRows>) {
      if (warp_rows) return ByWarp(AdagradRowsByWarp, kernel);
    } else if constexpr (std::is_same_v<F, device::AdagradFeatures>) {
      if (warp_rows) return ByWarp(AdagradFeaturesByWarp, kernel);
    }
    ByThread(kernel);
  }
  template <class F>
  void ByWarp(void (*grid)(F, int64_t), const F& kernel) {
    const int64_t rows = kernel.size();
    if (rows == 0 || !error.empty()) return;
    constexpr int kThreads = 256, kWarps = kThreads / 32;
    const int64_t blocks = std::min<int64_t>((rows + kWarps - 1) / kWarps, int64_t{sms} * 32);
    grid<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(kernel, rows);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) error = CudaError("kernel launch", e);
  }
  template <class F>
  void ByThread(const F& kernel) {
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
  CudaDeviceOps(const Cublas* cublas, int device, std::string name, int sms,
                CudaOpsOptions options)
      : cublas_(cublas), device_(device), name_(std::move(name)), sms_(sms), options_(options) {}
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
    for (std::vector<Graph>& graphs : graphs_) {
      for (Graph& g : graphs) Report("cudaGraphExecDestroy", cudaGraphExecDestroy(g.exec));
    }
  }

  std::string Init(int streams) {
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return CudaError("cudaSetDevice", e);
    for (int i = 0; i < streams; ++i) {
      cudaStream_t s;
      e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      if (e != cudaSuccess) return CudaError("cudaStreamCreate", e);
      streams_.push_back(s);
      graphs_.emplace_back();
      stepped_.push_back(false);
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
    // The first step of a stream runs plain: cuBLAS sets up its workspace.
    if (options_.graphs && !graphs_off_ && stepped_[stream]) return GraphStep(stream, shape, args);
    stepped_[stream] = true;
    return PlainStep(stream, shape, args);
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
  std::string WaitTimer(int timer) override {
    if (const cudaError_t d = cudaSetDevice(device_); d != cudaSuccess) {
      return CudaError("cudaSetDevice", d);
    }
    const cudaError_t e = cudaEventSynchronize(events_[2 * timer + 1]);
    return e == cudaSuccess ? "" : CudaError("cudaEventSynchronize", e);
  }
  std::string TimerSeconds(int timer, double* seconds) override {
    float ms = 0;
    const cudaError_t e = cudaEventElapsedTime(&ms, events_[2 * timer], events_[2 * timer + 1]);
    *seconds = ms / 1e3;
    return e == cudaSuccess ? "" : CudaError("cudaEventElapsedTime", e);
  }

 private:
  // A captured step: the graph of the slot whose work buffers start at
  // `key`, and the shape and arguments it was captured or updated with.
  struct Graph {
    const void* key = nullptr;
    cudaGraphExec_t exec = nullptr;
    device::StepShape shape;
    device::StepArgs args;
  };
  // Graphs kept per stream (two slots per stream, with room for regrown
  // buffers).
  static constexpr size_t kGraphsPerStream = 4;

  std::string PlainStep(int stream, const device::StepShape& shape, const device::StepArgs& args) {
    CudaLauncher launch{cublas_, streams_[stream], blas_[stream], sms_, options_.warp_rows, ""};
    device::RunStepSequence(launch, shape, args);
    return launch.error;
  }

  // Graphs off for this object, saying why once; the step then runs plain.
  void GraphsOff(const std::string& why) {
    if (!graphs_off_.exchange(true)) {
      std::fprintf(stderr, "ember cuda: %s: CUDA graphs off, plain launches from now on (%s)\n",
                   name_.c_str(), why.c_str());
    }
  }

  // The step as a CUDA graph: relaunched as it is when shape and arguments
  // are those it holds; else captured anew, and the slot's graph updated
  // in place (same launch sequence, other sizes and pointers) or, where
  // the sequence differs, instantiated anew. Any capture failure turns
  // graphs off and runs the step plain (nothing was enqueued).
  std::string GraphStep(int stream, const device::StepShape& shape, const device::StepArgs& args) {
    cudaStream_t s = streams_[stream];
    std::vector<Graph>& graphs = graphs_[stream];
    const void* key = args.s;
    auto it = std::find_if(graphs.begin(), graphs.end(), [key](const Graph& g) { return g.key == key; });
    const bool same = it != graphs.end() && std::memcmp(&it->shape, &shape, sizeof(shape)) == 0 &&
                      std::memcmp(&it->args, &args, sizeof(args)) == 0;
    if (!same) {
      cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
      if (e != cudaSuccess) {
        GraphsOff(CudaError("cudaStreamBeginCapture", e));
        return PlainStep(stream, shape, args);
      }
      CudaLauncher launch{cublas_, s, blas_[stream], sms_, options_.warp_rows, ""};
      device::RunStepSequence(launch, shape, args);
      cudaGraph_t graph = nullptr;
      e = cudaStreamEndCapture(s, &graph);
      if (e != cudaSuccess || !launch.error.empty()) {
        if (graph != nullptr) Report("cudaGraphDestroy", cudaGraphDestroy(graph));
        (void)cudaGetLastError();
        GraphsOff(launch.error.empty() ? CudaError("cudaStreamEndCapture", e) : launch.error);
        return PlainStep(stream, shape, args);
      }
      if (it != graphs.end()) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(it->exec, graph, &info) != cudaSuccess) {
          (void)cudaGetLastError();  // another launch sequence: instantiate anew
          Report("cudaGraphExecDestroy", cudaGraphExecDestroy(it->exec));
          it->exec = nullptr;
        }
      } else {
        if (graphs.size() == kGraphsPerStream) {
          Report("cudaGraphExecDestroy", cudaGraphExecDestroy(graphs.front().exec));
          graphs.erase(graphs.begin());
        }
        graphs.push_back(Graph{key});
        it = graphs.end() - 1;
      }
      if (it->exec == nullptr) {
        e = cudaGraphInstantiate(&it->exec, graph, 0);
        if (e != cudaSuccess) {
          it->exec = nullptr;
          graphs.erase(it);
          Report("cudaGraphDestroy", cudaGraphDestroy(graph));
          GraphsOff(CudaError("cudaGraphInstantiate", e));
          return PlainStep(stream, shape, args);
        }
      }
      Report("cudaGraphDestroy", cudaGraphDestroy(graph));
      it->shape = shape;
      it->args = args;
    }
    const cudaError_t e = cudaGraphLaunch(it->exec, s);
    return e == cudaSuccess ? "" : CudaError("cudaGraphLaunch", e);
  }

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
  const CudaOpsOptions options_;
  std::atomic<bool> graphs_off_{false};
  std::vector<std::vector<Graph>> graphs_;  // per stream
  std::vector<char> stepped_;                // per stream: a step ran plain
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

CudaOpsOptions CudaOpsOptions::FromEnvironment() {
  CudaOpsOptions o;
  auto off = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, "0") == 0;
  };
  o.graphs = !off("EMBER_CUDA_GRAPHS");
  o.warp_rows = !off("EMBER_CUDA_WARP_ROWS");
  return o;
}

std::unique_ptr<DeviceOps> MakeCudaDeviceOps(int device, int streams, std::string* error,
                                             CudaOpsOptions options) {
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
      prop.multiProcessorCount, options);
  *error = ops->Init(streams);
  if (!error->empty()) return nullptr;
  return ops;
}

}  // namespace ember
