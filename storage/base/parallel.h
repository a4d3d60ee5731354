// ember's seam to oneTBB's parallel algorithms: ParallelFor over an index
// range and ParallelPipeline of stages that pass pointers, each run by
// oneTBB in the calling thread's task arena with oneTBB's semantics.
//
// Why a seam: ThreadSanitizer (tools/build.sh tsan) sees a hand-off only
// through code it instruments or calls it intercepts. Debian's libtbb is
// not instrumented, and oneTBB's header templates, instantiated in the
// caller, read task and range state that libtbb's atomics publish, so
// TSan would report oneTBB's internals as races. parallel.cc, the only
// file that instantiates oneTBB's algorithms, is built without TSan, and
// marks for TSan the hand-offs oneTBB guarantees: what the caller did
// before the call happens before every stage and body; an item a stage
// returns, before the next stage's call with it; a serial stage's call,
// before its next call; every stage and body, before the return. The
// bodies and stages themselves are the caller's code, instrumented.
#ifndef EMBER_STORAGE_BASE_PARALLEL_H_
#define EMBER_STORAGE_BASE_PARALLEL_H_

#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"

namespace ember {

// body(i) for every i in [first, last), in parallel (tbb::parallel_for).
void ParallelFor(size_t first, size_t last, absl::FunctionRef<void(size_t)> body);
// body(begin, end) over disjoint ranges that cover [first, last), split
// no finer than `grain` indices (tbb::blocked_range's grain size).
void ParallelForRanges(size_t first, size_t last, size_t grain,
                       absl::FunctionRef<void(size_t begin, size_t end)> body);

// tbb::filter_mode's three modes.
enum class StageMode { kSerialInOrder, kParallel, kSerialOutOfOrder };

// The first stage's way to end the input (tbb::flow_control).
class FlowControl {
 public:
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

 private:
  bool stopped_ = false;
};

// One stage with its item types erased: takes the previous stage's item
// (null for the first stage) and returns the next stage's (null for the
// last).
struct PipelineStage {
  StageMode mode;
  std::function<void*(void*, FlowControl*)> run;
};

// Stages taking In and returning Out (pointers, or void at the ends), as
// tbb::filter<In, Out>; `a & b` chains them.
template <typename In, typename Out>
struct Stages {
  std::vector<PipelineStage> stages;
};

template <typename A, typename B, typename C>
Stages<A, C> operator&(Stages<A, B> first, Stages<B, C> second) {
  for (PipelineStage& s : second.stages) first.stages.push_back(std::move(s));
  return Stages<A, C>{std::move(first.stages)};
}

// A stage as tbb::make_filter<In, Out>(mode, f) makes one: f(FlowControl&)
// -> Out for the first stage (In = void), f(In) -> Out after it, f(In) ->
// void for the last (Out = void). Items are pointers: the stages own them
// as the caller arranges.
template <typename In, typename Out, typename F>
Stages<In, Out> MakeStage(StageMode mode, F f) {
  static_assert(std::is_void_v<In> || std::is_pointer_v<In>, "items are pointers");
  static_assert(std::is_void_v<Out> || std::is_pointer_v<Out>, "items are pointers");
  PipelineStage s{mode, [f = std::move(f)](void* in, FlowControl* fc) -> void* {
                    if constexpr (std::is_void_v<In>) {
                      return static_cast<void*>(f(*fc));
                    } else if constexpr (std::is_void_v<Out>) {
                      f(static_cast<In>(in));
                      return nullptr;
                    } else {
                      return static_cast<void*>(f(static_cast<In>(in)));
                    }
                  }};
  return Stages<In, Out>{{std::move(s)}};
}

namespace internal {
void RunPipeline(size_t max_tokens, std::vector<PipelineStage> stages);
}  // namespace internal

// tbb::parallel_pipeline(max_tokens, chain): at least two stages; the first
// serial.
inline void ParallelPipeline(size_t max_tokens, Stages<void, void> chain) {
  internal::RunPipeline(max_tokens, std::move(chain.stages));
}

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_PARALLEL_H_
