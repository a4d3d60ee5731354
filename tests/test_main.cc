// GoogleTest's main, after the GEMM start-up every ember binary runs
// (train/blas/blas_startup.h): the tests' GEMMs run on the kernel the CPU
// deserves, with the process-wide OpenBLAS thread count ember uses.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "train/blas/blas_startup.h"

int main(int argc, char** argv) {
  ember::BlasStartup(argc, argv);
  testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
