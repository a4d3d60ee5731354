// The run's I/O executor: a bounded pool whose threads start on demand.
#include "train/schedule/io_executor.h"

#include <functional>
#include <vector>

#include "storage/base/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace ember {
namespace {

// Tasks that block until released occupy one thread each: the executor
// starts no more than its bound, and the tasks beyond it wait their turn
// and then run, in submission order.
TEST(IoExecutorTest, StartsThreadsOnDemandUpToItsBound) {
  IoExecutor io(3);
  EXPECT_EQ(io.threads(), 0);
  absl::Notification release;
  Mutex mu;
  std::vector<int> started;
  int finished = 0;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(io.Submit([&, i] {
                    {
                      MutexLock lock(&mu);
                      started.push_back(i);
                    }
                    release.WaitForNotification();
                    MutexLock lock(&mu);
                    ++finished;
                  })
                    .ok());
  }
  // Submit starts the threads itself: three by now, for the three blocked
  // tasks.
  EXPECT_EQ(io.threads(), 3);
  {
    MutexLock lock(&mu);
    auto three = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return started.size() >= 3; };
    mu.Await(absl::Condition(&three));
    EXPECT_EQ(started.size(), 3u);
  }
  release.Notify();
  MutexLock lock(&mu);
  auto all = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return finished == 6; };
  mu.Await(absl::Condition(&all));
  EXPECT_EQ(std::vector<int>(started.begin() + 3, started.end()), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(io.threads(), 3);
}

// A task may submit its continuation (a reader reads its next window so);
// the destructor runs what is queued before it joins.
TEST(IoExecutorTest, TasksSubmitContinuationsThatRunBeforeTheEnd) {
  int runs = 0;  // touched by the executor's one thread, then after the join
  std::function<void(int)> step;
  {
    IoExecutor io(1);
    step = [&](int left) {
      ++runs;
      if (left > 0) EXPECT_TRUE(io.Submit([&step, left] { step(left - 1); }).ok());
    };
    ASSERT_TRUE(io.Submit([&] { step(9); }).ok());
  }
  EXPECT_EQ(runs, 10);
}

}  // namespace
}  // namespace ember
