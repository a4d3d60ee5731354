// Ends a job across ranks whose progress stops. MPI's collectives cannot
// time out, so a rank that hangs (a stalled disk, a lost peer that mpirun
// has not noticed) would hold every other rank forever; the watchdog's
// thread calls `on_stall` once no Beat() came for `timeout`. The training
// loop's rank layout (train/internal/rank_layout.cc) owns one per rank,
// beats it as rounds end and as partitions are loaded or written for a
// checkpoint, and ends the job through Cluster::Abort.
#ifndef EMBER_TRAIN_DISTRIBUTED_RANK_WATCHDOG_H_
#define EMBER_TRAIN_DISTRIBUTED_RANK_WATCHDOG_H_

#include <functional>
#include <thread>

#include "absl/time/time.h"
#include "storage/base/mutex.h"

namespace ember {

class RankWatchdog {
 public:
  // `on_stall` runs on the watchdog's thread, at most once, with the time
  // since the last beat (or since construction).
  RankWatchdog(absl::Duration timeout, std::function<void(absl::Duration)> on_stall);
  ~RankWatchdog();  // stops the thread; on_stall no longer runs
  RankWatchdog(const RankWatchdog&) = delete;
  RankWatchdog& operator=(const RankWatchdog&) = delete;

  // A step that makes progress has finished (a round, a partition of a
  // checkpoint written). Thread-safe.
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

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_RANK_WATCHDOG_H_
