// The fallback GPU probe: the device trainer's real kernel bodies and step
// sequence (train/device/kernel_bodies.h, step_sequence.h) on synthetic
// batches, with nothing but the CUDA toolkit: no Abseil, no OpenBLAS, no
// Debian library, so that nvcc alone builds it on a GPU machine where
// ember's bundle cannot start (tools/gpu-check.sh does so then).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. tools/bench/gpu_fallback_probe.cu -o probe -ldl
//   ./probe [--batch 1000] [--steps 200] [--rows 1048576] [--dim 100]
//   g++ -x c++ -std=c++17 -O2 -I. tools/bench/gpu_fallback_probe.cu -o probe-cpu -ldl
//   ./probe-cpu --cpu-only [--rows 5000]
//
// Model: op none, dot, softmax, one relation; chunk 50, 50 uniform
// negatives per chunk and side, as gpu_train_bench. Each batch is planned on
// the host as device_batch_plan.h plans one (distinct rows, index arrays).
//
// With a GPU: (1) check: one step on the GPU against the same step run by
// the same bodies on the host (a plain loop launcher and a plain GEMM),
// comparing every query row's loss, every distinct row's gradient, and the
// rows and Adagrad state after the step; (2) timing: --steps steps cycling
// 8 planned batches, each step's upload, launches and download on one
// stream then a wait, with per step host planning, packing, submission,
// device time (events) and waiting; then the same steps enqueued back to
// back (the device bound); then per launch device times. cuBLAS is loaded
// at run time (libcublas.so.<major> on the loader's path); without it the
// products run on the probe's own simple kernel, and the output says so.
//
// --cpu-only (any build; the g++ build has nothing else): the host step on
// one batch, its summed loss checked against softmax losses computed
// directly from the rows, rows the batch does not touch checked unchanged,
// and the host step timed.
//
// Exit: 0 passed; 1 a check or a CUDA call failed; 2 bad usage; 3 no GPU
// (the output says why).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#ifdef __CUDACC__
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <link.h>
#endif

#include "train/device/host_loops.h"
#include "train/device/step_sequence.h"

namespace probe {

using ember::device::RunStepSequence;
using ember::device::StepArgs;
using ember::device::StepShape;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Config {
  int dim = 100, chunk = 50, negs = 50, batch = 1000;
  int64_t rows = int64_t{1} << 20;
  int steps = 200;
  int plans = 8;
  float lr = 0.1f;
  uint64_t seed = 1;
  bool cpu_only = false;
};

// One batch planned as device_batch_plan.h plans it: the edges' endpoints
// and negatives numbered as distinct rows (all in table 0), and the index
// arrays of both sides' chunks.
struct Plan {
  StepShape sh;
  std::vector<uint32_t> src, dst;    // the edges
  std::vector<uint32_t> neg;         // negs per chunk and side: [side][chunk][j]
  std::vector<int32_t> q_row, k_row;
  std::vector<uint8_t> u_table;
  std::vector<uint32_t> u_node;
};

Plan MakePlan(const Config& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Plan p;
  StepShape& sh = p.sh;
  sh.dim = c.dim;
  sh.chunk = c.chunk;
  sh.negs = c.negs;
  sh.chunks = (c.batch + c.chunk - 1) / c.chunk;
  sh.last_valid = c.batch - (sh.chunks - 1) * c.chunk;
  sh.op = ember::device::kOpNone;
  sh.cmp = ember::device::kCmpDot;
  sh.loss = ember::device::kLossSoftmax;
  for (int e = 0; e < c.batch; ++e) {
    p.src.push_back(static_cast<uint32_t>(rng() % c.rows));
    p.dst.push_back(static_cast<uint32_t>(rng() % c.rows));
  }
  for (int64_t j = 0; j < 2 * int64_t{sh.chunks} * c.negs; ++j) {
    p.neg.push_back(static_cast<uint32_t>(rng() % c.rows));
  }
  std::unordered_map<uint32_t, int32_t> distinct;
  auto x = [&](uint32_t node) {
    auto [it, added] = distinct.try_emplace(node, static_cast<int32_t>(p.u_node.size()));
    if (added) {
      p.u_node.push_back(node);
      p.u_table.push_back(0);
    }
    return it->second;
  };
  const int n = sh.candidates();
  p.q_row.assign(sh.query_rows(), -1);
  p.k_row.assign(sh.candidate_rows(), -1);
  for (int side = 0; side < 2; ++side) {
    const std::vector<uint32_t>& query = side == 0 ? p.src : p.dst;
    const std::vector<uint32_t>& answer = side == 0 ? p.dst : p.src;
    for (int ci = 0; ci < sh.chunks; ++ci) {
      const int64_t b = int64_t{side} * sh.chunks + ci;
      const int valid = sh.valid_rows(b);
      for (int i = 0; i < valid; ++i) {
        p.q_row[b * c.chunk + i] = x(query[ci * c.chunk + i]);
        p.k_row[b * n + i] = x(answer[ci * c.chunk + i]);
      }
      for (int j = 0; j < c.negs; ++j) {
        p.k_row[b * n + c.chunk + j] = x(p.neg[(int64_t{side} * sh.chunks + ci) * c.negs + j]);
      }
    }
  }
  return p;
}

// Floats of each work buffer of one step (StepArgs' work buffers).
struct WorkSizes {
  int64_t x, q, k, s;
  explicit WorkSizes(const StepShape& sh, int64_t distinct)
      : x(distinct * sh.dim),
        q(sh.query_rows() * sh.dim),
        k(sh.candidate_rows() * sh.dim),
        s(sh.matrices() * sh.chunk * sh.candidates()) {}
  int64_t total(const StepShape& sh) const {
    return 2 * x + 2 * q + 2 * k + s + 3 * sh.query_rows() + 2 * sh.candidate_rows();
  }
};

// Points a's work buffers into `work` (WorkSizes::total floats).
void PlaceWork(const StepShape& sh, int64_t distinct, float* work, StepArgs* a) {
  const WorkSizes w(sh, distinct);
  float* p = work;
  auto take = [&p](int64_t floats) {
    float* at = p;
    p += floats;
    return at;
  };
  a->x = take(w.x);
  a->dx = take(w.x);
  a->q = take(w.q);
  a->dq = take(w.q);
  a->k = take(w.k);
  a->dk = take(w.k);
  a->s = take(w.s);
  a->q_aux = take(sh.query_rows());
  a->coef_q = take(sh.query_rows());
  a->row_loss = take(sh.query_rows());
  a->k_aux = take(sh.candidate_rows());
  a->coef_k = take(sh.candidate_rows());
}

// The host launcher (as train/device/host_device_ops.cc) with a plain GEMM.
struct HostLauncher : ember::device::HostLoops {
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
            int64_t stride_a, const float* b, int ldb, int64_t stride_b, float* c, int ldc,
            int64_t stride_c, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      const float* ai = a + i * stride_a;
      const float* bi = b + i * stride_b;
      float* ci = c + i * stride_c;
      for (int r = 0; r < m; ++r) {
        for (int col = 0; col < n; ++col) {
          float sum = 0.0f;
          for (int kk = 0; kk < k; ++kk) {
            sum += (trans_a ? ai[int64_t{kk} * lda + r] : ai[int64_t{r} * lda + kk]) *
                   (trans_b ? bi[int64_t{col} * ldb + kk] : bi[int64_t{kk} * ldb + col]);
          }
          ci[int64_t{r} * ldc + col] = sum;
        }
      }
    }
  }
};

// The rows of a table of `rows` × dim, N(0, 0.1²), and zero Adagrad state.
void InitRows(const Config& c, std::vector<float>* emb, std::vector<float>* state) {
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  emb->resize(c.rows * c.dim);
  for (float& v : *emb) v = normal(rng);
  state->assign(c.rows, 0.0f);
}

// The host step on `plan` over emb/state; its summed loss, and the
// distinct rows' gradients into *dx and each query row's loss into *row_loss.
double HostStep(const Config& c, const Plan& plan, std::vector<float>* emb,
                std::vector<float>* state, std::vector<float>* dx, std::vector<float>* row_loss) {
  const StepShape& sh = plan.sh;
  const int64_t distinct = static_cast<int64_t>(plan.u_node.size());
  std::vector<float> work(WorkSizes(sh, distinct).total(sh));
  StepArgs a;
  a.q_row = plan.q_row.data();
  a.k_row = plan.k_row.data();
  a.u_table = plan.u_table.data();
  a.u_node = plan.u_node.data();
  a.distinct = distinct;
  a.rows[0] = a.rows[1] = emb->data();
  a.state[0] = a.state[1] = state->data();
  a.lr = c.lr;
  PlaceWork(sh, distinct, work.data(), &a);
  HostLauncher launch;
  RunStepSequence(launch, sh, a);
  dx->assign(a.dx, a.dx + distinct * sh.dim);
  row_loss->assign(a.row_loss, a.row_loss + sh.query_rows());
  double loss = 0;
  for (float l : *row_loss) loss += l;
  return loss;
}

// The batch's softmax loss computed directly from the rows, edge by edge:
// for each side, the dot of the query with its answer, the chunk's other
// answers and the chunk's negatives.
double DirectLoss(const Config& c, const Plan& p, const std::vector<float>& emb) {
  auto dot = [&](uint32_t u, uint32_t v) {
    double s = 0;
    for (int k = 0; k < c.dim; ++k) s += double(emb[size_t{u} * c.dim + k]) * emb[size_t{v} * c.dim + k];
    return s;
  };
  double loss = 0;
  const StepShape& sh = p.sh;
  for (int side = 0; side < 2; ++side) {
    const std::vector<uint32_t>& query = side == 0 ? p.src : p.dst;
    const std::vector<uint32_t>& answer = side == 0 ? p.dst : p.src;
    for (int ci = 0; ci < sh.chunks; ++ci) {
      const int valid = sh.valid_rows(ci);
      for (int i = 0; i < valid; ++i) {
        const uint32_t q = query[ci * c.chunk + i];
        std::vector<double> s;
        for (int j = 0; j < valid; ++j) s.push_back(dot(q, answer[ci * c.chunk + j]));
        for (int j = 0; j < c.negs; ++j) {
          s.push_back(dot(q, p.neg[(int64_t{side} * sh.chunks + ci) * c.negs + j]));
        }
        const double m = *std::max_element(s.begin(), s.end());
        double z = 0;
        for (double v : s) z += std::exp(v - m);
        loss += std::log(z) + m - s[i];
      }
    }
  }
  return loss;
}

bool Near(double got, double want, double tolerance) {
  return std::fabs(got - want) <= tolerance * (1 + std::fabs(want));
}

// The largest relative difference of got and want, counting the entries
// beyond tolerance into *bad.
double Compare(const float* want, const float* got, int64_t n, double tolerance, int64_t* bad) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(got[i]) - want[i]) / (1 + std::fabs(double(want[i])));
    worst = std::max(worst, d);
    if (!(d <= tolerance)) ++*bad;
  }
  return worst;
}

int CpuOnly(const Config& c) {
  std::printf("gpu_fallback_probe --cpu-only: batch %d, chunk %d, %d negatives, dim %d, %lld rows\n",
              c.batch, c.chunk, c.negs, c.dim, static_cast<long long>(c.rows));
  const Plan plan = MakePlan(c, c.seed + 1);
  std::vector<float> emb, state, dx, row_loss;
  InitRows(c, &emb, &state);
  const std::vector<float> before = emb;
  const double direct = DirectLoss(c, plan, emb);
  const Clock::time_point t = Clock::now();
  const double loss = HostStep(c, plan, &emb, &state, &dx, &row_loss);
  const double seconds = Since(t);
  bool ok = true;
  std::printf("  loss: step %.6g, direct %.6g\n", loss, direct);
  if (!Near(loss, direct, 1e-4)) {
    std::printf("  FAIL: the step's loss is not the directly computed softmax loss\n");
    ok = false;
  }
  std::vector<char> touched(c.rows, 0);
  for (uint32_t u : plan.u_node) touched[u] = 1;
  int64_t moved = 0, stray = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    const bool changed = !std::equal(emb.begin() + r * c.dim, emb.begin() + (r + 1) * c.dim,
                                     before.begin() + r * c.dim);
    if (changed && !touched[r]) ++stray;
    if (changed && touched[r]) ++moved;
  }
  std::printf("  rows: %lld of %zu distinct rows moved, %lld others\n",
              static_cast<long long>(moved), plan.u_node.size(), static_cast<long long>(stray));
  if (stray != 0 || moved == 0) {
    std::printf("  FAIL: the step must move the batch's rows and no others\n");
    ok = false;
  }
  std::printf("  host step: %.3f ms (%.4g edges/s)\n", seconds * 1e3, c.batch / seconds);
  std::printf("%s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace probe

#ifdef __CUDACC__
namespace probe {

#define PROBE_CUDA(call)                                                                 \
  do {                                                                                   \
    const cudaError_t probe_e = (call);                                                  \
    if (probe_e != cudaSuccess) {                                                        \
      std::fprintf(stderr, "gpu_fallback_probe: %s: %s (%s)\n", #call,                  \
                   cudaGetErrorName(probe_e), cudaGetErrorString(probe_e));              \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// cuBLAS's strided batched sgemm, loaded at run time; null when absent.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm = nullptr;
  cublasHandle_t handle = nullptr;
  std::string where;
};

Cublas LoadCublas(cudaStream_t stream) {
  Cublas c;
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    c.where = "not found (" + name + ": " + dlerror() + "); products on the probe's own kernel";
    return c;
  }
  link_map* map = nullptr;
  c.where = dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr ? map->l_name : name;
  c.create = reinterpret_cast<decltype(c.create)>(dlsym(lib, "cublasCreate_v2"));
  c.set_stream = reinterpret_cast<decltype(c.set_stream)>(dlsym(lib, "cublasSetStream_v2"));
  c.sgemm = reinterpret_cast<decltype(c.sgemm)>(dlsym(lib, "cublasSgemmStridedBatched"));
  cublasStatus_t s = CUBLAS_STATUS_NOT_INITIALIZED;
  if (c.create != nullptr && c.set_stream != nullptr && c.sgemm != nullptr &&
      (s = c.create(&c.handle)) == CUBLAS_STATUS_SUCCESS &&
      (s = c.set_stream(c.handle, stream)) == CUBLAS_STATUS_SUCCESS) {
    return c;
  }
  std::fprintf(stderr, "gpu_fallback_probe: %s unusable (cuBLAS status %d)\n", c.where.c_str(),
               static_cast<int>(s));
  std::exit(1);
}

template <class F>
__global__ void ForEachKernel(F kernel, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    kernel(i);
  }
}

// Row-major C_i = op(A_i) op(B_i), one thread per element of C (the
// products' fallback when cuBLAS is absent).
__global__ void PlainGemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda,
                          int64_t sa, const float* b, int ldb, int64_t sb, float* c, int ldc,
                          int64_t sc, int64_t count) {
  const int64_t total = int64_t{m} * n * count;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e / (int64_t{m} * n);
    const int r = static_cast<int>(e / n % m), col = static_cast<int>(e % n);
    const float* ai = a + i * sa;
    const float* bi = b + i * sb;
    float sum = 0.0f;
    for (int kk = 0; kk < k; ++kk) {
      sum += (ta ? ai[int64_t{kk} * lda + r] : ai[int64_t{r} * lda + kk]) *
             (tb ? bi[int64_t{col} * ldb + kk] : bi[int64_t{kk} * ldb + col]);
    }
    c[i * sc + int64_t{r} * ldc + col] = sum;
  }
}

// The CUDA launcher (as train/cuda/cuda_device_ops.cu); with `marks`, an
// event after every launch, named in `names`, for per-launch times.
struct CudaLauncher {
  const Cublas* cublas;
  cudaStream_t stream;
  int sms;
  std::vector<cudaEvent_t>* marks = nullptr;
  std::vector<std::string>* names = nullptr;
  size_t next = 0;

  void Mark(const std::string& name) {
    PROBE_CUDA(cudaGetLastError());
    if (marks == nullptr) return;
    if (next == marks->size()) {
      cudaEvent_t e;
      PROBE_CUDA(cudaEventCreate(&e));
      marks->push_back(e);
      names->push_back(name);
    }
    PROBE_CUDA(cudaEventRecord((*marks)[next++], stream));
  }
  int64_t Blocks(int64_t n) const {
    return std::max<int64_t>(1, std::min<int64_t>((n + 255) / 256, int64_t{sms} * 32));
  }
  template <class F>
  void ForEach(const F& kernel) {
    const int64_t n = kernel.size();
    if (n == 0) return;
    ForEachKernel<<<static_cast<unsigned>(Blocks(n)), 256, 0, stream>>>(kernel, n);
    Mark(typeid(F).name());
  }
  void Zero(float* p, int64_t floats) {
    if (floats <= 0) return;
    PROBE_CUDA(cudaMemsetAsync(p, 0, sizeof(float) * floats, stream));
    Mark("memset");
  }
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
            int64_t stride_a, const float* b, int ldb, int64_t stride_b, float* c, int ldc,
            int64_t stride_c, int64_t count) {
    const std::string shape = std::string("gemm ") + (trans_a ? "T" : "N") + (trans_b ? "T" : "N") +
                              " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                              std::to_string(k) + " x" + std::to_string(count);
    if (cublas->handle == nullptr) {
      PlainGemm<<<static_cast<unsigned>(Blocks(int64_t{m} * n * count)), 256, 0, stream>>>(
          trans_a, trans_b, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, count);
      Mark(shape);
      return;
    }
    // Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ.
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t s = cublas->sgemm(
        cublas->handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
        n, m, k, &one, b, ldb, stride_b, a, lda, stride_a, &zero, c, ldc, stride_c,
        static_cast<int>(count));
    if (s != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "gpu_fallback_probe: cublasSgemmStridedBatched: status %d\n",
                   static_cast<int>(s));
      std::exit(1);
    }
    Mark(shape);
  }
};

// One planned batch's inputs: packed in pinned memory, copied to the device.
struct DeviceBatch {
  const Plan* plan = nullptr;
  size_t bytes = 0;
  char* pinned = nullptr;
  char* device = nullptr;
  size_t q_row = 0, k_row = 0, u_table = 0, u_node = 0;
};

template <class T>
size_t Put(char* base, size_t at, const std::vector<T>& v) {
  if (base != nullptr && !v.empty()) std::memcpy(base + at, v.data(), sizeof(T) * v.size());
  return at + (sizeof(T) * v.size() + 255) / 256 * 256;
}

// Packs the plan into b->pinned (sizing b on the first call when null).
void Pack(DeviceBatch* b) {
  const Plan& p = *b->plan;
  size_t at = 0;
  b->q_row = at;
  at = Put(b->pinned, at, p.q_row);
  b->k_row = at;
  at = Put(b->pinned, at, p.k_row);
  b->u_table = at;
  at = Put(b->pinned, at, p.u_table);
  b->u_node = at;
  at = Put(b->pinned, at, p.u_node);
  b->bytes = at;
}

struct Gpu {
  cudaStream_t stream;
  Cublas cublas;
  int sms = 0;
  float* emb = nullptr;
  float* state = nullptr;
  float* work = nullptr;
  int64_t work_floats = 0;
};

// Enqueues b's upload and its step on the GPU's stream.
StepArgs Submit(const Config& c, Gpu& g, const DeviceBatch& b, CudaLauncher& launch) {
  const Plan& p = *b.plan;
  PROBE_CUDA(cudaMemcpyAsync(b.device, b.pinned, b.bytes, cudaMemcpyHostToDevice, g.stream));
  StepArgs a;
  a.q_row = reinterpret_cast<const int32_t*>(b.device + b.q_row);
  a.k_row = reinterpret_cast<const int32_t*>(b.device + b.k_row);
  a.u_table = reinterpret_cast<const uint8_t*>(b.device + b.u_table);
  a.u_node = reinterpret_cast<const uint32_t*>(b.device + b.u_node);
  a.distinct = static_cast<int64_t>(p.u_node.size());
  a.rows[0] = a.rows[1] = g.emb;
  a.state[0] = a.state[1] = g.state;
  a.lr = c.lr;
  PlaceWork(p.sh, a.distinct, g.work, &a);
  RunStepSequence(launch, p.sh, a);
  return a;
}

int Gpus(const Config& c) {
  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  if (ce != cudaSuccess || count == 0) {
    std::printf("gpu_fallback_probe: no CUDA device (%s); run with --cpu-only for the host "
                "check\n", ce != cudaSuccess ? cudaGetErrorString(ce) : "none listed");
    return 3;
  }
  PROBE_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop;
  PROBE_CUDA(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  PROBE_CUDA(cudaDriverGetVersion(&driver));
  PROBE_CUDA(cudaRuntimeGetVersion(&runtime));
  Gpu g;
  g.sms = prop.multiProcessorCount;
  PROBE_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
  g.cublas = LoadCublas(g.stream);
  std::printf("gpu_fallback_probe: %s, sm_%d%d, %d SMs, %.1f GiB; driver %d, runtime %d\n",
              prop.name, prop.major, prop.minor, g.sms, prop.totalGlobalMem / double(1 << 30),
              driver, runtime);
  std::printf("  cuBLAS: %s\n", g.cublas.where.c_str());
  std::printf("  batch %d, chunk %d, %d negatives, dim %d, %lld rows, op none, dot, softmax\n",
              c.batch, c.chunk, c.negs, c.dim, static_cast<long long>(c.rows));

  // Plans (host planning timed) and their packed uploads.
  std::vector<Plan> plans;
  Clock::time_point t = Clock::now();
  for (int i = 0; i < c.plans; ++i) plans.push_back(MakePlan(c, c.seed + 1 + i));
  const double plan_s = Since(t) / c.plans;
  std::vector<DeviceBatch> batches(c.plans);
  for (int i = 0; i < c.plans; ++i) {
    DeviceBatch& b = batches[i];
    b.plan = &plans[i];
    Pack(&b);
    PROBE_CUDA(cudaMallocHost(&b.pinned, b.bytes));
    PROBE_CUDA(cudaMalloc(&b.device, b.bytes));
    g.work_floats = std::max(g.work_floats, WorkSizes(plans[i].sh, plans[i].u_node.size())
                                                .total(plans[i].sh));
  }
  t = Clock::now();
  for (DeviceBatch& b : batches) Pack(&b);
  const double pack_s = Since(t) / c.plans;

  std::vector<float> emb, state;
  InitRows(c, &emb, &state);
  const size_t emb_bytes = sizeof(float) * emb.size(), state_bytes = sizeof(float) * state.size();
  PROBE_CUDA(cudaMalloc(&g.emb, emb_bytes));
  PROBE_CUDA(cudaMalloc(&g.state, state_bytes));
  PROBE_CUDA(cudaMalloc(&g.work, sizeof(float) * g.work_floats));
  PROBE_CUDA(cudaMemcpy(g.emb, emb.data(), emb_bytes, cudaMemcpyHostToDevice));
  PROBE_CUDA(cudaMemcpy(g.state, state.data(), state_bytes, cudaMemcpyHostToDevice));

  // (1) The check: batch 0 on the GPU against the host.
  CudaLauncher launch{&g.cublas, g.stream, g.sms};
  const StepArgs a = Submit(c, g, batches[0], launch);
  const Plan& p0 = plans[0];
  const int64_t distinct = static_cast<int64_t>(p0.u_node.size());
  std::vector<float> got_loss(p0.sh.query_rows()), got_dx(distinct * c.dim);
  std::vector<float> got_emb(emb.size()), got_state(state.size());
  PROBE_CUDA(cudaMemcpyAsync(got_loss.data(), a.row_loss, sizeof(float) * got_loss.size(),
                             cudaMemcpyDeviceToHost, g.stream));
  PROBE_CUDA(cudaMemcpyAsync(got_dx.data(), a.dx, sizeof(float) * got_dx.size(),
                             cudaMemcpyDeviceToHost, g.stream));
  PROBE_CUDA(cudaStreamSynchronize(g.stream));
  PROBE_CUDA(cudaMemcpy(got_emb.data(), g.emb, emb_bytes, cudaMemcpyDeviceToHost));
  PROBE_CUDA(cudaMemcpy(got_state.data(), g.state, state_bytes, cudaMemcpyDeviceToHost));
  std::vector<float> want_dx, want_loss;
  t = Clock::now();
  HostStep(c, p0, &emb, &state, &want_dx, &want_loss);
  const double host_step_s = Since(t);
  constexpr double kTolerance = 2e-3;
  int64_t bad = 0;
  const double loss_err = Compare(want_loss.data(), got_loss.data(), want_loss.size(), kTolerance, &bad);
  const double dx_err = Compare(want_dx.data(), got_dx.data(), want_dx.size(), kTolerance, &bad);
  double row_err = 0;
  for (uint32_t u : p0.u_node) {
    row_err = std::max(row_err, Compare(emb.data() + size_t{u} * c.dim,
                                        got_emb.data() + size_t{u} * c.dim, c.dim, kTolerance, &bad));
    row_err = std::max(row_err, Compare(&state[u], &got_state[u], 1, kTolerance, &bad));
  }
  const bool same_rest = bad == 0 && std::memcmp(emb.data(), got_emb.data(), emb_bytes) == 0;
  std::printf("  check against the host step: row losses %.2g, row gradients %.2g, rows and "
              "state %.2g (largest relative differences; tolerance %.0e), %lld beyond; "
              "untouched rows %s\n",
              loss_err, dx_err, row_err, kTolerance, static_cast<long long>(bad),
              same_rest ? "equal" : "compared above");
  if (bad != 0) {
    std::printf("FAILED: the GPU step differs from the host step\n");
    return 1;
  }

  // (2) Timing, one step at a time: pack, submit, device (events), wait.
  cudaEvent_t start, stop;
  PROBE_CUDA(cudaEventCreate(&start));
  PROBE_CUDA(cudaEventCreate(&stop));
  double submit_s = 0, wait_s = 0, device_s = 0;
  for (int i = 0; i < c.steps; ++i) {
    DeviceBatch& b = batches[i % c.plans];
    Pack(&b);
    t = Clock::now();
    PROBE_CUDA(cudaEventRecord(start, g.stream));
    const StepArgs ai = Submit(c, g, b, launch);
    PROBE_CUDA(cudaEventRecord(stop, g.stream));
    PROBE_CUDA(cudaMemcpyAsync(got_loss.data(), ai.row_loss,
                               sizeof(float) * b.plan->sh.query_rows(), cudaMemcpyDeviceToHost,
                               g.stream));
    submit_s += Since(t);
    t = Clock::now();
    PROBE_CUDA(cudaStreamSynchronize(g.stream));
    wait_s += Since(t);
    float ms = 0;
    PROBE_CUDA(cudaEventElapsedTime(&ms, start, stop));
    device_s += ms / 1e3;
  }
  const double n = c.steps;
  const double step_s = plan_s + pack_s + (submit_s + wait_s) / n;
  std::printf("  per step (us): plan %.1f, pack %.1f, submit %.1f, device %.1f, wait %.1f\n",
              plan_s * 1e6, pack_s * 1e6, submit_s / n * 1e6, device_s / n * 1e6, wait_s / n * 1e6);
  std::printf("  one step at a time: %.4g edges/s (plan + pack + submit + wait); the host "
              "step took %.1f ms\n", c.batch / step_s, host_step_s * 1e3);

  // Back to back: every step enqueued, one wait (the device's bound).
  t = Clock::now();
  PROBE_CUDA(cudaEventRecord(start, g.stream));
  for (int i = 0; i < c.steps; ++i) Submit(c, g, batches[i % c.plans], launch);
  PROBE_CUDA(cudaEventRecord(stop, g.stream));
  PROBE_CUDA(cudaStreamSynchronize(g.stream));
  const double back_s = Since(t);
  float back_ms = 0;
  PROBE_CUDA(cudaEventElapsedTime(&back_ms, start, stop));
  std::printf("  back to back: %.4g edges/s wall, %.4g edges/s device time (%d steps)\n",
              c.steps * c.batch / back_s, c.steps * c.batch / (back_ms / 1e3), c.steps);

  // Per launch: an event after each, over a few steps.
  std::vector<cudaEvent_t> marks;
  std::vector<std::string> names;
  std::vector<double> per(0);
  const int reps = std::min(c.steps, 20);
  for (int i = 0; i < reps; ++i) {
    CudaLauncher timed{&g.cublas, g.stream, g.sms, &marks, &names};
    PROBE_CUDA(cudaEventRecord(start, g.stream));
    Submit(c, g, batches[i % c.plans], timed);
    PROBE_CUDA(cudaStreamSynchronize(g.stream));
    per.resize(marks.size(), 0.0);
    cudaEvent_t prev = start;
    for (size_t k = 0; k < timed.next; ++k) {
      float ms = 0;
      PROBE_CUDA(cudaEventElapsedTime(&ms, prev, marks[k]));
      per[k] += ms * 1e3 / reps;
      prev = marks[k];
    }
  }
  std::printf("  per launch (us, mean of %d steps; the first includes the upload):\n", reps);
  for (size_t k = 0; k < per.size(); ++k) std::printf("    %8.1f  %s\n", per[k], names[k].c_str());
  std::printf("{\"probe\":\"gpu_fallback\",\"gpu\":\"%s\",\"batch\":%d,\"cublas\":%s,"
              "\"plan_us\":%.2f,\"pack_us\":%.2f,\"submit_us\":%.2f,\"device_us\":%.2f,"
              "\"wait_us\":%.2f,\"edges_per_second\":%.6g,\"back_to_back_edges_per_second\":%.6g}\n",
              prop.name, c.batch, g.cublas.handle != nullptr ? "true" : "false", plan_s * 1e6,
              pack_s * 1e6, submit_s / n * 1e6, device_s / n * 1e6, wait_s / n * 1e6,
              c.batch / step_s, c.steps * c.batch / back_s);
  std::printf("PASSED\n");
  return 0;
}

}  // namespace probe
#endif  // __CUDACC__

int main(int argc, char** argv) {
  probe::Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> long long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpu_fallback_probe: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (arg == "--cpu-only") {
      c.cpu_only = true;
    } else if (arg == "--batch") {
      c.batch = static_cast<int>(value());
    } else if (arg == "--steps") {
      c.steps = static_cast<int>(value());
    } else if (arg == "--rows") {
      c.rows = value();
    } else if (arg == "--dim") {
      c.dim = static_cast<int>(value());
    } else {
      std::fprintf(stderr, "usage: %s [--cpu-only] [--batch N] [--steps N] [--rows N] [--dim N]\n",
                   argv[0]);
      return 2;
    }
  }
  if (c.batch < 1 || c.steps < 1 || c.dim < 1 || c.rows < 2) {
    std::fprintf(stderr, "gpu_fallback_probe: --batch, --steps, --dim >= 1, --rows >= 2\n");
    return 2;
  }
  if (c.cpu_only) return probe::CpuOnly(c);
#ifdef __CUDACC__
  return probe::Gpus(c);
#else
  std::printf("gpu_fallback_probe: built without nvcc: no GPU path; run with --cpu-only\n");
  return 3;
#endif
}
