// Google Benchmark's main, after the GEMM start-up every ember binary runs
// (train/blas/blas_startup.h), so a benchmark's GEMMs run on the kernel the
// CPU deserves. The kernel goes into the benchmark context.
#include "benchmark/benchmark.h"
#include "train/blas/blas_startup.h"

int main(int argc, char** argv) {
  ember::BlasStartup(argc, argv);
  benchmark::AddCustomContext("blas_kernel", ember::BlasKernel());
  benchmark::AddCustomContext("blas_backend", ember::BlasBackend());
  benchmark::AddCustomContext("blas_deserved", ember::DeservedCore(ember::ReadCpuFeatures()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
