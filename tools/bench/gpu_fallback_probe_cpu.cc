// The fallback probe (gpu_fallback_probe.cu) compiled as plain C++: its
// host step and checks (--cpu-only), so that the suite runs them without nvcc.
#include "tools/bench/gpu_fallback_probe.cu"
