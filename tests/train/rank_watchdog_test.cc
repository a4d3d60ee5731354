#include "train/distributed/rank_watchdog.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace ember {
namespace {

TEST(RankWatchdogTest, FiresOnceAfterTheTimeoutWithoutBeats) {
  std::atomic<int> fired{0};
  absl::Duration quiet;
  {
    RankWatchdog dog(absl::Milliseconds(50), [&](absl::Duration d) {
      quiet = d;
      ++fired;
    });
    while (fired.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  EXPECT_EQ(fired.load(), 1);
  EXPECT_GE(quiet, absl::Milliseconds(50));
}

TEST(RankWatchdogTest, BeatsKeepItQuietAndDestructionStopsIt) {
  std::atomic<int> fired{0};
  {
    RankWatchdog dog(absl::Milliseconds(200), [&](absl::Duration) { ++fired; });
    for (int i = 0; i < 20; ++i) {  // 20 beats 20 ms apart: 400 ms in all
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      dog.Beat();
    }
  }
  EXPECT_EQ(fired.load(), 0);
}

}  // namespace
}  // namespace ember
