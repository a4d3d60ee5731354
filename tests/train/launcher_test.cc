#include "train/distributed/launcher.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

const char* const kVariables[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_RANK",
                                  "PMI_RANK", "PMIX_RANK"};

// Clears the launcher variables for one test and restores them after, so
// that the test means the same under mpirun as outside it.
class LauncherTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST_F(LauncherTest, NoLauncherMeansOneRankOfRankZero) {
  EXPECT_EQ(LauncherWorldSize(), 1u);
  EXPECT_EQ(LauncherRank(), 0u);
}

TEST_F(LauncherTest, ReadsOpenMpi) {
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  EXPECT_EQ(LauncherWorldSize(), 4u);
  EXPECT_EQ(LauncherRank(), 3u);
}

TEST_F(LauncherTest, ReadsPmiAndPmix) {
  setenv("PMI_SIZE", "2", 1);
  setenv("PMIX_RANK", "1", 1);
  EXPECT_EQ(LauncherWorldSize(), 2u);
  EXPECT_EQ(LauncherRank(), 1u);
  setenv("PMI_RANK", "0", 1);  // PMI_RANK comes before PMIX_RANK
  EXPECT_EQ(LauncherRank(), 0u);
}

TEST_F(LauncherTest, OpenMpiWinsOverPmi) {
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  setenv("PMI_SIZE", "2", 1);
  setenv("OMPI_COMM_WORLD_RANK", "5", 1);
  setenv("PMI_RANK", "1", 1);
  EXPECT_EQ(LauncherWorldSize(), 8u);
  EXPECT_EQ(LauncherRank(), 5u);
}

TEST_F(LauncherTest, MalformedValuesCountAsUnset) {
  for (const char* bad : {"", "0", "-2", "2x", " 2", "+2", "4294967296", "two"}) {
    setenv("OMPI_COMM_WORLD_SIZE", bad, 1);
    EXPECT_EQ(LauncherWorldSize(), 1u) << "'" << bad << "'";
  }
  setenv("PMI_SIZE", "3", 1);  // the next variable is read instead
  EXPECT_EQ(LauncherWorldSize(), 3u);
  setenv("OMPI_COMM_WORLD_RANK", "r1", 1);
  EXPECT_EQ(LauncherRank(), 0u);
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);  // rank 0 is a rank, size 0 is not a size
  setenv("PMI_RANK", "7", 1);
  EXPECT_EQ(LauncherRank(), 0u);
}

}  // namespace
}  // namespace ember
