// The cluster the mpi_test binary's main starts (once: MPI starts once per
// process) before it runs the tests; every rank runs the same tests in the
// same order, so each test may use collectives and transfers freely.
#ifndef EMBER_TESTS_MPI_MPI_TEST_ENV_H_
#define EMBER_TESTS_MPI_MPI_TEST_ENV_H_

#include "train/distributed/cluster.h"

namespace ember {

// The max_chunk_bytes the test cluster's transport is started with.
inline constexpr uint64_t kTestClusterChunkBytes = 4096;
// The max_call_bytes its collectives are started with: sums of more than
// 8192 doubles take several calls.
inline constexpr uint64_t kTestClusterCallBytes = 64 << 10;

Cluster& TestCluster();

}  // namespace ember

#endif  // EMBER_TESTS_MPI_MPI_TEST_ENV_H_
