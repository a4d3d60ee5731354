// How the host runs kernel bodies (kernel_bodies.h): every index in turn.
// The host launchers of step_sequence.h (host_device_ops.cc, the fallback
// probe tools/bench/gpu_fallback_probe.cu) derive from it and add Gemm.
// Plain C++, no library.
#ifndef EMBER_TRAIN_DEVICE_HOST_LOOPS_H_
#define EMBER_TRAIN_DEVICE_HOST_LOOPS_H_

#include <cstdint>
#include <cstring>

namespace ember::device {

struct HostLoops {
  template <class F>
  void ForEach(const F& kernel) {
    const int64_t n = kernel.size();
    for (int64_t i = 0; i < n; ++i) kernel(i);
  }
  void Zero(float* p, int64_t floats) {
    if (floats > 0) std::memset(p, 0, sizeof(float) * floats);
  }
};

}  // namespace ember::device

#endif  // EMBER_TRAIN_DEVICE_HOST_LOOPS_H_
