// DeviceOps on the host: the kernel bodies run as loops, the products go to
// OpenBLAS.
#include <cblas.h>

#include <atomic>
#include <chrono>
#include <vector>
#include <cstdlib>
#include <cstring>

#include "train/device/host_loops.h"
#include "train/device/step_sequence.h"
#include "train/device/device_ops.h"

namespace ember {
namespace {

struct HostLauncher : device::HostLoops {
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
            int64_t stride_a, const float* b, int ldb, int64_t stride_b, float* c, int ldc,
            int64_t stride_c, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                  trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a + i * stride_a, lda,
                  b + i * stride_b, ldb, 0.0f, c + i * stride_c, ldc);
    }
  }
};

class HostDeviceOps final : public DeviceOps {
 public:
  HostDeviceOps(int streams, bool skip_steps)
      : streams_(streams), skip_steps_(skip_steps), timers_(streams) {}

  std::string name() const override { return skip_steps_ ? "emulated (steps skipped)" : "emulated"; }
  int streams() const override { return streams_; }

  std::string Alloc(size_t bytes, void** out) override {
    *out = std::malloc(bytes + sizeof(size_t));
    if (*out == nullptr) return "out of host memory";
    *static_cast<size_t*>(*out) = bytes;
    *out = static_cast<size_t*>(*out) + 1;
    const size_t now = in_use_ += bytes;
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return "";
  }
  void Free(void* p) override {
    if (p == nullptr) return;
    size_t* base = static_cast<size_t*>(p) - 1;
    in_use_ -= *base;
    std::free(base);
  }
  std::string AllocPinned(size_t bytes, void** out) override {
    *out = std::malloc(bytes);
    return *out == nullptr ? "out of host memory" : "";
  }
  void FreePinned(void* p) override { std::free(p); }
  size_t bytes_in_use() const override { return in_use_; }
  size_t peak_bytes() const override { return peak_; }

  std::string CopyToDevice(int, void* device, const void* host, size_t bytes) override {
    if (bytes > 0) std::memcpy(device, host, bytes);
    return "";
  }
  std::string CopyToHost(int, void* host, const void* device, size_t bytes) override {
    if (bytes > 0) std::memcpy(host, device, bytes);
    return "";
  }
  std::string Step(int, const device::StepShape& shape, const device::StepArgs& args) override {
    if (skip_steps_) {
      // What the trainer reads back: no loss, no relation gradients.
      HostLauncher launch;
      launch.Zero(args.row_loss, shape.query_rows());
      launch.Zero(args.drel, args.slots * shape.rel_size);
      return "";
    }
    HostLauncher launch;
    device::RunStepSequence(launch, shape, args);
    return "";
  }
  std::string Synchronize(int) override { return ""; }

  std::string StartTimer(int, int timer) override {
    timers_[timer].start = Clock::now();
    return "";
  }
  std::string StopTimer(int, int timer) override {
    timers_[timer].stop = Clock::now();
    return "";
  }
  std::string WaitTimer(int) override { return ""; }
  std::string TimerSeconds(int timer, double* seconds) override {
    *seconds = std::chrono::duration<double>(timers_[timer].stop - timers_[timer].start).count();
    return "";
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Timer {
    Clock::time_point start, stop;
  };

  const int streams_;
  const bool skip_steps_;
  std::vector<Timer> timers_;
  std::atomic<size_t> in_use_{0}, peak_{0};
};

}  // namespace

std::unique_ptr<DeviceOps> MakeHostDeviceOps(int streams, bool skip_steps) {
  return std::make_unique<HostDeviceOps>(streams, skip_steps);
}

}  // namespace ember
