// The run's one executor for blocking I/O (edge windows, partition loads):
// a pool of at most `max_threads` threads, kept off the oneTBB workers that
// training needs. A thread starts when a task finds every running thread
// busy (and fewer than max_threads run), and lives until the executor is
// destroyed. Tasks start in submission order.
//
// A task must not wait for another task of the same executor (with every
// thread taken, the other would never start); a task that needs more reading
// submits its continuation instead.
//
// Thread-safety: Submit may be called from any thread.
#ifndef EMBER_TRAIN_SCHEDULE_IO_EXECUTOR_H_
#define EMBER_TRAIN_SCHEDULE_IO_EXECUTOR_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "storage/base/mutex.h"

namespace ember {

class IoExecutor {
 public:
  // REQUIRES: max_threads >= 1. Starts no thread yet.
  explicit IoExecutor(int max_threads);
  // Runs the tasks still queued, then joins the threads.
  ~IoExecutor();
  IoExecutor(const IoExecutor&) = delete;
  IoExecutor& operator=(const IoExecutor&) = delete;

  // Queues `task`. ResourceExhausted, with `task` dropped unrun, when no
  // thread runs and none can start (std::thread's std::system_error: out of
  // threads or memory); where one runs, the task waits for it instead.
  absl::Status Submit(absl::AnyInvocable<void() &&> task);

  int max_threads() const { return max_threads_; }
  // Threads started so far.
  int threads() const;

 private:
  void Work();

  const int max_threads_;
  mutable Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;  // threads waiting for a task
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ember

#endif  // EMBER_TRAIN_SCHEDULE_IO_EXECUTOR_H_
