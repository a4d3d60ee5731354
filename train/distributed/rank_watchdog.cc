#include "train/distributed/rank_watchdog.h"

namespace ember {

RankWatchdog::RankWatchdog(absl::Duration timeout, std::function<void(absl::Duration)> on_stall)
    : timeout_(timeout), on_stall_(std::move(on_stall)), last_(absl::Now()) {
  thread_ = std::thread([this] { Watch(); });
}

RankWatchdog::~RankWatchdog() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void RankWatchdog::Beat() {
  MutexLock lock(&mu_);
  last_ = absl::Now();
}

void RankWatchdog::Watch() {
  MutexLock lock(&mu_);
  while (!stop_) {
    const absl::Duration quiet = absl::Now() - last_;
    if (quiet >= timeout_) {
      mu_.Unlock();
      on_stall_(quiet);
      mu_.Lock();
      return;
    }
    mu_.AwaitWithTimeout(absl::Condition(&stop_), timeout_ - quiet);
  }
}

}  // namespace ember
