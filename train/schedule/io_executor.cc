#include "train/schedule/io_executor.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ember {

IoExecutor::IoExecutor(int max_threads) : max_threads_(std::max(1, max_threads)) {}

IoExecutor::~IoExecutor() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    threads = std::move(threads_);
  }
  for (std::thread& t : threads) t.join();
}

int IoExecutor::threads() const {
  MutexLock lock(&mu_);
  return static_cast<int>(threads_.size());
}

absl::Status IoExecutor::Submit(absl::AnyInvocable<void() &&> task) {
  MutexLock lock(&mu_);
  queue_.push_back(std::move(task));
  // While stopping, the running threads drain the queue before they end.
  if (queue_.size() <= static_cast<size_t>(idle_) ||
      threads_.size() >= static_cast<size_t>(max_threads_) || stopping_) {
    return absl::OkStatus();
  }
  try {
    threads_.emplace_back([this] { Work(); });
  } catch (const std::system_error& e) {
    if (!threads_.empty()) return absl::OkStatus();  // a running thread takes it
    queue_.pop_back();
    return absl::ResourceExhaustedError(absl::StrCat("cannot start an I/O thread: ", e.what()));
  }
  return absl::OkStatus();
}

void IoExecutor::Work() {
  while (true) {
    absl::AnyInvocable<void() &&> task;
    {
      MutexLock lock(&mu_);
      ++idle_;
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      --idle_;
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(task)();
  }
}

}  // namespace ember
