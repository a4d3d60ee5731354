#include "train/cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>

#include "train/cuda/run_time_library.h"

namespace ember {
namespace {

std::string CudaError(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

// The NCCL functions used, from libnccl.so.2 loaded at run time.
struct Nccl {
  decltype(&ncclCommInitAll) init_all = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;

  std::string Error(const char* what, ncclResult_t r) const {
    return std::string(what) + ": " + error_string(r);
  }

  // The loaded library, or null with *error naming what failed.
  static const Nccl* Get(std::string* error) {
    static std::string load_error;
    static const Nccl* const loaded = Load(&load_error);
    if (loaded == nullptr) *error = load_error;
    return loaded;
  }

 private:
  static const Nccl* Load(std::string* error) {
    RunTimeLibrary lib("NCCL", {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"});
    auto* n = new Nccl;
    lib.Find(&n->init_all, "ncclCommInitAll");
    lib.Find(&n->destroy, "ncclCommDestroy");
    lib.Find(&n->all_reduce, "ncclAllReduce");
    lib.Find(&n->group_start, "ncclGroupStart");
    lib.Find(&n->group_end, "ncclGroupEnd");
    lib.Find(&n->error_string, "ncclGetErrorString");
    if (!lib.ok()) {
      *error = "NCCL: " + lib.error();
      delete n;
      return nullptr;
    }
    return n;
  }
};

class NcclCommunicator final : public DeviceCommunicator {
 public:
  NcclCommunicator(const Nccl* nccl, std::vector<int> devices)
      : nccl_(nccl), devices_(std::move(devices)) {}

  ~NcclCommunicator() override {
    for (size_t r = 0; r < devices_.size(); ++r) {
      Report("cudaSetDevice", cudaSetDevice(devices_[r]));
      if (r < buffers_.size() && buffers_[r] != nullptr) Report("cudaFree", cudaFree(buffers_[r]));
      if (r < streams_.size()) Report("cudaStreamDestroy", cudaStreamDestroy(streams_[r]));
      if (r < comms_.size() && comms_[r] != nullptr) {
        const ncclResult_t e = nccl_->destroy(comms_[r]);
        if (e != ncclSuccess) {
          std::fprintf(stderr, "ember nccl: %s\n", nccl_->Error("ncclCommDestroy", e).c_str());
        }
      }
    }
  }

  std::string Init() {
    comms_.assign(devices_.size(), nullptr);
    const ncclResult_t r =
        nccl_->init_all(comms_.data(), static_cast<int>(devices_.size()), devices_.data());
    if (r != ncclSuccess) {
      comms_.clear();
      return nccl_->Error("ncclCommInitAll", r);
    }
    for (int d : devices_) {
      if (const cudaError_t e = cudaSetDevice(d); e != cudaSuccess) return CudaError("cudaSetDevice", e);
      cudaStream_t s;
      if (const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
          e != cudaSuccess) {
        return CudaError("cudaStreamCreate", e);
      }
      streams_.push_back(s);
    }
    buffers_.assign(devices_.size(), nullptr);
    return "";
  }

  std::string name() const override {
    std::string n = "nccl (";
    for (size_t r = 0; r < devices_.size(); ++r) {
      n += (r > 0 ? ", cuda:" : "cuda:") + std::to_string(devices_[r]);
    }
    return n + ")";
  }
  int ranks() const override { return static_cast<int>(devices_.size()); }

  std::string AllReduceSum(float* const* data, size_t count) override {
    if (count == 0) return "";
    const size_t bytes = sizeof(float) * count;
    for (size_t r = 0; r < devices_.size(); ++r) {
      if (const cudaError_t e = cudaSetDevice(devices_[r]); e != cudaSuccess) {
        return CudaError("cudaSetDevice", e);
      }
      if (bytes > capacity_) {
        if (buffers_[r] != nullptr) Report("cudaFree", cudaFree(buffers_[r]));
        buffers_[r] = nullptr;
        if (const cudaError_t e = cudaMalloc(&buffers_[r], bytes); e != cudaSuccess) {
          buffers_[r] = nullptr;
          return CudaError("cudaMalloc", e);
        }
      }
      if (const cudaError_t e =
              cudaMemcpyAsync(buffers_[r], data[r], bytes, cudaMemcpyHostToDevice, streams_[r]);
          e != cudaSuccess) {
        return CudaError("cudaMemcpyAsync", e);
      }
    }
    capacity_ = std::max(capacity_, bytes);
    ncclResult_t n = nccl_->group_start();
    if (n != ncclSuccess) return nccl_->Error("ncclGroupStart", n);
    for (size_t r = 0; r < devices_.size(); ++r) {
      n = nccl_->all_reduce(buffers_[r], buffers_[r], count, ncclFloat32, ncclSum, comms_[r],
                            streams_[r]);
      if (n != ncclSuccess) {
        (void)nccl_->group_end();
        return nccl_->Error("ncclAllReduce", n);
      }
    }
    n = nccl_->group_end();
    if (n != ncclSuccess) return nccl_->Error("ncclGroupEnd", n);
    for (size_t r = 0; r < devices_.size(); ++r) {
      if (const cudaError_t e = cudaSetDevice(devices_[r]); e != cudaSuccess) {
        return CudaError("cudaSetDevice", e);
      }
      if (const cudaError_t e =
              cudaMemcpyAsync(data[r], buffers_[r], bytes, cudaMemcpyDeviceToHost, streams_[r]);
          e != cudaSuccess) {
        return CudaError("cudaMemcpyAsync", e);
      }
    }
    for (size_t r = 0; r < devices_.size(); ++r) {
      if (const cudaError_t e = cudaStreamSynchronize(streams_[r]); e != cudaSuccess) {
        return CudaError("cudaStreamSynchronize", e);
      }
    }
    return "";
  }

 private:
  static void Report(const char* what, cudaError_t e) {
    if (e != cudaSuccess) std::fprintf(stderr, "ember nccl: %s\n", CudaError(what, e).c_str());
  }

  const Nccl* const nccl_;
  const std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> buffers_;  // per rank, capacity_ bytes each
  size_t capacity_ = 0;
};

}  // namespace

std::unique_ptr<DeviceCommunicator> MakeNcclCommunicator(const std::vector<int>& devices,
                                                         std::string* error) {
  int n = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) {
    *error = CudaError("no CUDA device", e);
    return nullptr;
  }
  for (int d : devices) {
    if (d < 0 || d >= n) {
      *error = "no CUDA device " + std::to_string(d) + " (this machine has " + std::to_string(n) + ")";
      return nullptr;
    }
  }
  if (devices.empty()) {
    *error = "no devices to communicate among";
    return nullptr;
  }
  const Nccl* nccl = Nccl::Get(error);
  if (nccl == nullptr) return nullptr;
  auto comm = std::make_unique<NcclCommunicator>(nccl, devices);
  *error = comm->Init();
  if (!error->empty()) return nullptr;
  return comm;
}

}  // namespace ember
