#include "train/stream/edge_window.h"

#include <algorithm>
#include <cmath>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/base/node_hash.h"
#include "storage/base/splitmix.h"
#include "storage/base/status_macros.h"

namespace ember {

uint64_t WindowSeed(uint64_t seed, uint64_t number) {
  return number == 0 ? seed : Mix64(seed, number);
}

BucketWindowReader::BucketWindowReader(const Graph* graph, const BucketReadSpec& spec,
                                       uint64_t window_edges, int depth)
    : graph_(graph),
      spec_(spec),
      window_edges_(std::max<uint64_t>(1, window_edges)),
      depth_(static_cast<size_t>(std::max(1, depth))) {
  // A thread that cannot start (std::system_error) is the reader's error,
  // returned by Next(), not an exception out of a pipeline stage.
  try {
    thread_ = std::thread([this] { Read(); });
  } catch (const std::system_error& e) {
    MutexLock lock(&mu_);
    status_ = absl::ResourceExhaustedError(
        absl::StrCat("cannot start the edge reader thread: ", e.what()));
    finished_ = true;
  }
}

BucketWindowReader::~BucketWindowReader() {
  {
    MutexLock lock(&mu_);
    cancelled_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<EdgeWindow> BucketWindowReader::NewWindow(uint64_t read_so_far,
                                                          uint64_t number) const {
  auto w = std::make_unique<EdgeWindow>();
  w->number = number;
  uint64_t hint = window_edges_;
  if (spec_.expected_edges > 0) {
    hint = std::min(hint, spec_.expected_edges > read_so_far ? spec_.expected_edges - read_so_far
                                                             : uint64_t{0});
  }
  w->edges.reserve(hint);
  return w;
}

absl::Status BucketWindowReader::Push(std::unique_ptr<EdgeWindow> window) {
  SplitMix64(WindowSeed(spec_.seed, window->number)).Shuffle(std::span<Edge>(window->edges));
  MutexLock lock(&mu_);
  auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelled_ || ready_.size() < depth_;
  };
  mu_.Await(absl::Condition(&room));
  if (cancelled_) return absl::CancelledError("reader closed");
  ready_.push_back(std::move(window));
  return absl::OkStatus();
}

void BucketWindowReader::Read() {
  uint64_t read = 0, number = 0;
  std::unique_ptr<EdgeWindow> window = NewWindow(0, number);
  const bool sampling = spec_.sample < 1.0;
  const uint64_t keep_below =
      static_cast<uint64_t>(std::ldexp(std::clamp(spec_.sample, 0.0, 1.0), 64) * (1 - 1e-12));
  std::vector<Edge> kept;
  absl::Status status = graph_->ForEachEdgeBlock(
      spec_.split, spec_.src, spec_.dst,
      [&](std::span<const Edge> block) -> absl::Status {
        if (sampling) {
          kept.clear();
          for (const Edge& e : block) {
            const uint64_t h = Mix64(spec_.sample_seed ^ e.rel, (uint64_t{e.src} << 32) | e.dst);
            if (h < keep_below) kept.push_back(e);
          }
          block = kept;
        }
        while (!block.empty()) {
          const size_t room = window_edges_ - window->edges.size();
          const size_t take = std::min(room, block.size());
          window->edges.insert(window->edges.end(), block.begin(), block.begin() + take);
          block = block.subspan(take);
          read += take;
          if (window->edges.size() == window_edges_) {
            RETURN_IF_ERROR(Push(std::move(window)));
            window = NewWindow(read, ++number);
          }
        }
        return absl::OkStatus();
      },
      spec_.min_generation);
  if (status.ok() && !window->edges.empty()) status = Push(std::move(window));
  MutexLock lock(&mu_);
  if (!cancelled_) status_ = status;
  finished_ = true;
}

absl::StatusOr<std::shared_ptr<EdgeWindow>> BucketWindowReader::Next() {
  MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !ready_.empty() || finished_;
  };
  mu_.Await(absl::Condition(&ready));
  if (!ready_.empty()) {
    std::shared_ptr<EdgeWindow> w = std::move(ready_.front());
    ready_.pop_front();
    return w;
  }
  RETURN_IF_ERROR(status_);
  return std::shared_ptr<EdgeWindow>();
}

}  // namespace ember
