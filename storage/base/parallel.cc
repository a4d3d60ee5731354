// Built without ThreadSanitizer's instrumentation in TSan builds (see
// parallel.h and CMakeLists.txt): oneTBB's templates are instantiated here
// only, and the hand-offs oneTBB guarantees are marked with
// __tsan_release / __tsan_acquire (EMBER_TSAN).
#include "storage/base/parallel.h"

#include <algorithm>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>

#include "storage/base/status_macros.h"

#if EMBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace ember {
namespace {

#if EMBER_TSAN
void Release(const void* addr) { __tsan_release(const_cast<void*>(addr)); }
void Acquire(const void* addr) { __tsan_acquire(const_cast<void*>(addr)); }
#else
void Release(const void*) {}
void Acquire(const void*) {}
#endif

// The caller's work before the call happens before every body (fork);
// every body happens before the return (join).
class ForkJoin {
 public:
  ForkJoin() { Release(&fork_); }
  void BodyBegins() const { Acquire(&fork_); }
  void BodyEnds() const { Release(&join_); }
  ~ForkJoin() { Acquire(&join_); }

 private:
  char fork_ = 0;
  char join_ = 0;
};

tbb::filter_mode TbbMode(StageMode mode) {
  switch (mode) {
    case StageMode::kSerialInOrder:
      return tbb::filter_mode::serial_in_order;
    case StageMode::kParallel:
      return tbb::filter_mode::parallel;
    case StageMode::kSerialOutOfOrder:
      return tbb::filter_mode::serial_out_of_order;
  }
  return tbb::filter_mode::serial_in_order;
}

}  // namespace

void ParallelFor(size_t first, size_t last, absl::FunctionRef<void(size_t)> body) {
  if (first >= last) return;
  const ForkJoin fork_join;
  tbb::parallel_for(first, last, [&](size_t i) {
    fork_join.BodyBegins();
    body(i);
    fork_join.BodyEnds();
  });
}

void ParallelForRanges(size_t first, size_t last, size_t grain,
                       absl::FunctionRef<void(size_t begin, size_t end)> body) {
  if (first >= last) return;
  const ForkJoin fork_join;
  tbb::parallel_for(tbb::blocked_range<size_t>(first, last, std::max<size_t>(1, grain)),
                    [&](const tbb::blocked_range<size_t>& r) {
                      fork_join.BodyBegins();
                      body(r.begin(), r.end());
                      fork_join.BodyEnds();
                    });
}

namespace internal {

void RunPipeline(size_t max_tokens, std::vector<PipelineStage> stages) {
  EMBER_CHECK(stages.size() >= 2);
  const ForkJoin fork_join;
  // A serial stage's calls follow each other; order[s] carries that.
  std::vector<char> order(stages.size());
  auto run = [&](size_t s, void* in, FlowControl* fc) -> void* {
    fork_join.BodyBegins();
    const bool serial = stages[s].mode != StageMode::kParallel;
    if (serial) Acquire(&order[s]);
    if (in != nullptr) Acquire(in);
    void* out = stages[s].run(in, fc);
    if (out != nullptr) Release(out);
    if (serial) Release(&order[s]);
    fork_join.BodyEnds();
    return out;
  };
  tbb::filter<void, void*> head = tbb::make_filter<void, void*>(
      TbbMode(stages[0].mode), [&run](tbb::flow_control& tbb_fc) -> void* {
        FlowControl fc;
        void* out = run(0, nullptr, &fc);
        if (fc.stopped()) tbb_fc.stop();
        return out;
      });
  const size_t last = stages.size() - 1;
  for (size_t s = 1; s < last; ++s) {
    head = head & tbb::make_filter<void*, void*>(TbbMode(stages[s].mode), [&run, s](void* in) {
             return run(s, in, nullptr);
           });
  }
  tbb::parallel_pipeline(max_tokens,
                         head & tbb::make_filter<void*, void>(
                                    TbbMode(stages[last].mode),
                                    [&run, last](void* in) { run(last, in, nullptr); }));
}

}  // namespace internal
}  // namespace ember
