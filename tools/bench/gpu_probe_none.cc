// gpu_probe.h for a build without CUDA.
#include "absl/status/status.h"
#include "tools/bench/gpu_probe.h"

namespace ember::bench {
namespace {

absl::Status NoCuda() {
  return absl::UnavailableError("this build has no CUDA (nvcc was not found when it was configured)");
}

}  // namespace

absl::StatusOr<std::string> DescribeGpu(int) { return NoCuda(); }

absl::StatusOr<SgemmRate> MeasureChunkSgemm(int, const ChunkGemmShape&, int) { return NoCuda(); }

absl::StatusOr<std::unique_ptr<DeviceMemoryPeak>> DeviceMemoryPeak::Start(int, int) {
  return NoCuda();
}

}  // namespace ember::bench
