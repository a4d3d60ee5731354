// mpi_test's main: starts the MPI cluster, runs the tests on every rank,
// exits non-zero on a rank whose tests failed (mpirun then exits non-zero
// too). A fatal failure (ASSERT_*) on one rank ends the whole job at once
// (AbortMpiJob): that rank leaves the test early, so the others would wait
// for it in a collective or a transfer until the CTest timeout. Only rank 0
// prints GoogleTest's full report; the other ranks print their failures.
// No BLAS start-up: nothing here multiplies matrices.
#include <cstdio>
#include <memory>

#include "gtest/gtest.h"
#include "tests/mpi/mpi_test_env.h"
#include "train/distributed/mpi/mpi_cluster.h"

namespace ember {
namespace {

std::unique_ptr<Cluster> test_cluster;

// Prints a rank's failures (ranks other than 0), and ends the job on a
// fatal one.
class RankFailureListener : public testing::EmptyTestEventListener {
 public:
  RankFailureListener(uint32_t rank, bool print) : rank_(rank), print_(print) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    if (print_) {
      std::fprintf(stderr, "rank %u: %s:%d: failure\n%s\n", rank_,
                   result.file_name() ? result.file_name() : "?", result.line_number(),
                   result.message());
    }
    if (result.fatally_failed()) {
      std::fprintf(stderr, "rank %u: fatal test failure; aborting the whole job\n", rank_);
      std::fflush(stderr);
      std::fflush(stdout);
      AbortMpiJob(1);
    }
  }

 private:
  const uint32_t rank_;
  const bool print_;
};

}  // namespace

Cluster& TestCluster() { return *test_cluster; }

}  // namespace ember

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();  // lists; needs no MPI
  ember::TransportOptions options;
  options.max_chunk_bytes = ember::kTestClusterChunkBytes;
  ember::MpiCollectiveOptions collectives;
  collectives.max_call_bytes = ember::kTestClusterCallBytes;
  auto cluster = ember::StartMpiCluster(options, collectives);
  if (!cluster.ok()) {
    std::fprintf(stderr, "mpi_test: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  ember::test_cluster = *std::move(cluster);
  const uint32_t rank = ember::test_cluster->rank();
  if (ember::test_cluster->world_size() < 2) {
    std::fprintf(stderr, "mpi_test: run it under mpirun with 2 or more ranks\n");
    ember::test_cluster.reset();
    return 1;
  }
  testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new ember::RankFailureListener(rank, /*print=*/rank != 0));
  const int result = RUN_ALL_TESTS();
  ember::test_cluster.reset();  // MPI_Finalize
  if (result != 0) std::fprintf(stderr, "mpi_test: rank %u failed\n", rank);
  return result;
}
