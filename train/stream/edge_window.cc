#include "train/stream/edge_window.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/base/node_hash.h"
#include "storage/base/splitmix.h"
#include "storage/base/status_macros.h"

namespace ember {

uint64_t WindowSeed(uint64_t seed, uint64_t number) {
  return number == 0 ? seed : Mix64(seed, number);
}

BucketWindowReader::BucketWindowReader(const Graph* graph, IoExecutor* io,
                                       const BucketReadSpec& spec, uint64_t window_edges, int depth)
    : graph_(graph),
      io_(io),
      spec_(spec),
      window_edges_(std::max<uint64_t>(1, window_edges)),
      depth_(static_cast<size_t>(std::max(1, depth))),
      sampling_(spec.sample < 1.0),
      copies_per_weight_(spec.weight_sample_mean > 0 ? 1.0 / spec.weight_sample_mean : 0.0),
      keep_below_(
          static_cast<uint64_t>(std::ldexp(std::clamp(spec.sample, 0.0, 1.0), 64) * (1 - 1e-12))) {
  MutexLock lock(&mu_);
  ScheduleRead();
}

BucketWindowReader::~BucketWindowReader() {
  MutexLock lock(&mu_);
  cancelled_ = true;
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !reading_; };
  mu_.Await(absl::Condition(&idle));
}

void BucketWindowReader::ScheduleRead() {
  if (reading_ || finished_ || cancelled_ || ready_.size() > depth_) return;
  reading_ = true;
  const absl::Status launched = io_->Submit([this] { ReadWindow(); });
  if (launched.ok()) return;
  // A thread that cannot start is the reader's error, returned by Next(),
  // not an exception out of a pipeline stage.
  reading_ = false;
  status_ = absl::ResourceExhaustedError(
      absl::StrCat("cannot start the edge reader thread: ", launched.message()));
  finished_ = true;
}

std::unique_ptr<EdgeWindow> BucketWindowReader::NewWindow() const {
  auto w = std::make_unique<EdgeWindow>();
  w->number = windows_read_;
  uint64_t hint = window_edges_;
  if (spec_.expected_edges > 0) {
    hint = std::min(hint, spec_.expected_edges > edges_read_ ? spec_.expected_edges - edges_read_
                                                             : uint64_t{0});
  }
  w->edges.reserve(hint);
  if (spec_.weights) w->weights.reserve(hint);
  return w;
}

absl::StatusOr<std::unique_ptr<EdgeWindow>> BucketWindowReader::FillWindow() {
  if (cursor_ == nullptr) {
    ASSIGN_OR_RETURN(cursor_,
                     graph_->OpenEdgeBlocks(spec_.split, spec_.src, spec_.dst,
                                            spec_.min_generation));
  }
  std::unique_ptr<EdgeWindow> window = NewWindow();
  std::vector<Edge>& edges = window->edges;
  std::vector<float>& weights = window->weights;
  while (edges.size() < window_edges_ && !scan_done_) {
    if (block_at_ == block_.size()) {
      ASSIGN_OR_RETURN(const bool more, cursor_->Next());
      scan_done_ = !more;
      block_ = more ? cursor_->block() : EdgeBlockView();
      block_at_ = 0;
      continue;
    }
    if (sampling_ || copies_per_weight_ > 0) {
      for (; block_at_ < block_.size() && edges.size() < window_edges_; ++block_at_) {
        const Edge e = block_[block_at_];
        const uint64_t key = (uint64_t{e.src} << 32) | e.dst;
        const uint64_t scanned = edges_scanned_++;
        if (sampling_ && Mix64(spec_.sample_seed ^ e.rel, key) >= keep_below_) continue;
        uint32_t copies = 1;
        float w = 1.0f;
        if (copies_per_weight_ > 0 || spec_.weights) block_.CopyWeightsTo(block_at_, 1, &w);
        if (copies_per_weight_ > 0) {
          const double r = std::min<double>(w * copies_per_weight_, kMaxWeightCopies);
          copies = static_cast<uint32_t>(r);
          const double u =
              static_cast<double>(Mix64(spec_.seed ^ Mix64(e.rel, scanned), key) >> 11) * 0x1.0p-53;
          if (u < r - copies) ++copies;
        }
        edges.insert(edges.end(), copies, e);
        if (spec_.weights) weights.insert(weights.end(), copies, w);
      }
    } else {
      const size_t take = std::min<size_t>(window_edges_ - edges.size(), block_.size() - block_at_);
      const size_t at = edges.size();
      edges.resize(at + take);
      block_.CopyTo(block_at_, take, edges.data() + at);
      if (spec_.weights) {
        weights.resize(at + take);
        block_.CopyWeightsTo(block_at_, take, weights.data() + at);
      }
      block_at_ += take;
    }
  }
  if (edges.empty()) return nullptr;
  edges_read_ += edges.size();
  ++windows_read_;
  return window;
}

void BucketWindowReader::ReadWindow() {
  {
    MutexLock lock(&mu_);
    if (cancelled_) {
      reading_ = false;
      return;
    }
  }
  absl::StatusOr<std::unique_ptr<EdgeWindow>> window = FillWindow();
  if (window.ok() && *window != nullptr) {
    EdgeWindow& w = **window;
    SplitMix64(WindowSeed(spec_.seed, w.number))
        .ShuffleAlong(std::span<Edge>(w.edges), std::span<float>(w.weights));
  }
  MutexLock lock(&mu_);
  reading_ = false;
  if (!window.ok()) {
    if (!cancelled_) status_ = window.status();
    finished_ = true;
  } else if (*window == nullptr) {
    finished_ = true;
  } else {
    ready_.push_back(*std::move(window));
    finished_ = scan_done_;
    ScheduleRead();
  }
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
    ScheduleRead();
    return w;
  }
  RETURN_IF_ERROR(status_);
  return std::shared_ptr<EdgeWindow>();
}

}  // namespace ember
