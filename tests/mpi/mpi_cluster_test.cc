// The MPI cluster as a whole: ranks, places, and MPI's start-up rules.
#include "train/distributed/mpi/mpi_cluster.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/mpi/mpi_test_env.h"
#include "train/distributed/launcher.h"

namespace ember {
namespace {

TEST(MpiClusterTest, RanksAndPlaces) {
  Cluster& cluster = TestCluster();
  EXPECT_LT(cluster.rank(), cluster.world_size());
  EXPECT_EQ(cluster.transport()->rank(), cluster.rank());
  absl::StatusOr<std::vector<std::string>> ranks =
      cluster.AllGather(std::to_string(cluster.rank()));
  ASSERT_TRUE(ranks.ok());
  for (uint32_t r = 0; r < cluster.world_size(); ++r) EXPECT_EQ((*ranks)[r], std::to_string(r));
  EXPECT_NE(cluster.where().find(" pid "), std::string::npos) << cluster.where();
  // What mpirun announced in the environment, read without MPI.
  EXPECT_EQ(LauncherWorldSize(), cluster.world_size());
  EXPECT_EQ(LauncherRank(), cluster.rank());
}

TEST(MpiClusterTest, MpiStartsOncePerProcess) {
  auto again = StartMpiCluster();
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
}

// The collectives' call limit is checked before MPI is touched.
TEST(MpiClusterTest, ACallLimitOutsideItsRangeIsRefused) {
  EXPECT_TRUE(MpiCollectiveOptions().Validate().ok());
  for (uint64_t bad : {uint64_t{0}, uint64_t{7}, kMaxMessageBytes + 1}) {
    MpiCollectiveOptions o;
    o.max_call_bytes = bad;
    EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(StartMpiCluster({}, o).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace ember
