// ember's mutex: absl::Mutex's interface (Lock, Await on an absl::Condition,
// scoped MutexLock, thread-safety annotations) over the standard library's
// std::shared_mutex and std::condition_variable_any.
//
// Why not absl::Mutex itself: ThreadSanitizer sees a hand-off only through
// code it instruments or calls it intercepts (pthread's). Debian's Abseil is
// not built with TSan, so absl::Mutex's hand-offs are invisible to it and
// every access guarded by one reads as a race; the standard library's
// mutexes are pthread's, which TSan intercepts (tools/build.sh tsan).
//
// Semantics are absl::Mutex's where ember uses them: Await(cond) blocks,
// with the mutex released, until cond holds, and returns holding it again.
// Conditions are evaluated only with the mutex held exclusively, on any
// thread that releases it (so they may read guarded state, as with absl);
// a release wakes the waiters when one of their conditions holds. Readers
// (ReaderMutexLock) share the mutex and may not change guarded state, so
// their release wakes no one.
#ifndef EMBER_STORAGE_BASE_MUTEX_H_
#define EMBER_STORAGE_BASE_MUTEX_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"  // absl::Condition
#include "absl/time/time.h"

namespace ember {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    WakeIfReady(nullptr);
    mu_.unlock();
  }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

  // Blocks, with the mutex released, until `cond` holds; the caller holds
  // the mutex exclusively before and after.
  void Await(const absl::Condition& cond) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    AwaitUntil(cond, std::nullopt);
  }

  // Await for at most `timeout` (absl::InfiniteDuration(): no limit);
  // returns whether `cond` holds.
  bool AwaitWithTimeout(const absl::Condition& cond, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    if (timeout == absl::InfiniteDuration()) return AwaitUntil(cond, std::nullopt);
    // Clamped to a year, which std::chrono's nanoseconds hold.
    return AwaitUntil(cond, std::chrono::steady_clock::now() +
                                absl::ToChronoNanoseconds(std::clamp(
                                    timeout, absl::ZeroDuration(), absl::Hours(24 * 365))));
  }

 private:
  bool AwaitUntil(const absl::Condition& cond,
                  std::optional<std::chrono::steady_clock::time_point> deadline) {
    if (cond.Eval()) return true;
    waiting_.push_back(&cond);
    bool holds = false;
    while (true) {
      // Releasing the mutex to wait is an unlock too: what this thread
      // changed may let another waiter go on.
      WakeIfReady(&cond);
      if (deadline.has_value()) {
        const bool timed_out = cv_.wait_until(mu_, *deadline) == std::cv_status::timeout;
        holds = cond.Eval();
        if (holds || timed_out) break;
      } else {
        cv_.wait(mu_);
        holds = cond.Eval();
        if (holds) break;
      }
    }
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &cond));
    return holds;
  }

  // Wakes every waiter when one, other than `self`, may go on, as
  // absl::Mutex does on release. REQUIRES: mu_ held exclusively.
  void WakeIfReady(const absl::Condition* self) {
    for (const absl::Condition* c : waiting_) {
      if (c != self && c->Eval()) {
        cv_.notify_all();
        return;
      }
    }
  }

  std::shared_mutex mu_;
  std::condition_variable_any cv_;
  // The conditions of the threads in Await; changed only under mu_ held
  // exclusively.
  std::vector<const absl::Condition*> waiting_;
};

// Holds `mu` exclusively for the scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Holds `mu` shared for the scope: readers only.
class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(Mutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->ReaderLock();
  }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_MUTEX_H_
