// Ends a run across ranks whose rounds stop finishing. MPI's collectives
// cannot time out, so a rank that hangs (a stalled disk, a lost peer that
// mpirun has not noticed) would hold every other rank forever; the
// watchdog's thread calls `on_stall` once no Beat() came for `timeout`.
#ifndef EMBER_TOOLS_CLI_ROUND_WATCHDOG_H_
#define EMBER_TOOLS_CLI_ROUND_WATCHDOG_H_

#include <functional>
#include <thread>

#include "storage/base/mutex.h"
#include "absl/time/time.h"

namespace ember::tools {

class RoundWatchdog {
 public:
  // `on_stall` runs on the watchdog's thread, at most once, with the time
  // since the last beat (or since construction).
  RoundWatchdog(absl::Duration timeout, std::function<void(absl::Duration)> on_stall);
  ~RoundWatchdog();  // stops the thread; on_stall no longer runs
  RoundWatchdog(const RoundWatchdog&) = delete;
  RoundWatchdog& operator=(const RoundWatchdog&) = delete;

  // A round (or another step that makes progress) has finished.
  void Beat();

 private:
  void Watch();

  const absl::Duration timeout_;
  const std::function<void(absl::Duration)> on_stall_;
  Mutex mu_;
  absl::Time last_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ember::tools

#endif  // EMBER_TOOLS_CLI_ROUND_WATCHDOG_H_
