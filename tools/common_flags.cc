#include "tools/common_flags.h"

#include <thread>

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, out, "", "Output path (graph directory or file).");
ABSL_FLAG(uint64_t, seed, 0, "Random seed; the same seed gives the same result.");
ABSL_FLAG(int, threads, 0, "Worker threads; 0 = all hardware threads.");
ABSL_FLAG(bool, overwrite, false, "Replace an existing output.");
ABSL_FLAG(bool, json, false, "Print results as JSON on stdout.");
ABSL_FLAG(int, partitions, 1, "Number of node partitions P.");
ABSL_FLAG(bool, quiet, false, "No progress output.");

namespace ember::tools {

int ThreadCount() {
  int t = absl::GetFlag(FLAGS_threads);
  if (t > 0) return t;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace ember::tools
