// Streaming a bucket's edges in bounded windows.
//
// A BucketWindowReader reads one bucket's edge blocks in key order on its
// own thread (blocking I/O stays off the oneTBB workers) and hands out
// windows of at most `window_edges` edges: each decoded block is copied once,
// into the window, and the full window is shuffled in place (seeded by the
// bucket's seed and the window's number, so the same on every platform and
// run). A window that holds the whole bucket is a whole-bucket shuffle. At
// most `depth` windows wait ready ahead of the consumer, so a reader holds at
// most depth + 1 windows.
#ifndef EMBER_TRAIN_STREAM_EDGE_WINDOW_H_
#define EMBER_TRAIN_STREAM_EDGE_WINDOW_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/base/mutex.h"
#include "storage/graph.h"
#include "storage/types.h"

namespace ember {

// Shared by the batches planned over it; freed when the last is done.
struct EdgeWindow {
  std::vector<Edge> edges;
  uint64_t number = 0;  // 0-based within its bucket
};

// The seed of window `number` of a bucket whose seed is `seed`: the bucket's
// own for window 0, so that a single window shuffles exactly as a
// whole-bucket shuffle by `seed` does.
uint64_t WindowSeed(uint64_t seed, uint64_t number);

struct BucketReadSpec {
  Split split = Split::kTrain;
  uint32_t src = 0, dst = 0;
  uint32_t min_generation = 0;  // Graph::ForEachEdgeBlock
  uint64_t seed = 0;            // shuffle seed of the bucket
  // Keep only a seeded sample of about this share of the edges, in (0, 1]:
  // an edge is kept when a hash of it and `sample_seed` falls below the
  // share, so the sample is the same every epoch. 1: every edge.
  double sample = 1.0;
  uint64_t sample_seed = 0;
  // Edges expected (a capacity hint; 0: unknown). Windows reserve
  // min(window_edges, expected - read so far) so that they never regrow.
  uint64_t expected_edges = 0;
};

class BucketWindowReader {
 public:
  // Starts reading at once. REQUIRES: window_edges >= 1, depth >= 1;
  // `graph` outlives the reader.
  BucketWindowReader(const Graph* graph, const BucketReadSpec& spec, uint64_t window_edges,
                     int depth = 1);
  // Stops the reader thread (abandoning what is unread) and joins it.
  ~BucketWindowReader();
  BucketWindowReader(const BucketWindowReader&) = delete;
  BucketWindowReader& operator=(const BucketWindowReader&) = delete;

  // The next window, or null after the last one; blocks until it is read.
  // Returns the reader's storage error, if any, once the windows before it
  // are taken. Called from one thread at a time.
  absl::StatusOr<std::shared_ptr<EdgeWindow>> Next();

 private:
  void Read();
  // Shuffles *window and queues it, waiting while `depth_` windows are
  // queued. Cancelled if the reader is being destroyed.
  absl::Status Push(std::unique_ptr<EdgeWindow> window);
  std::unique_ptr<EdgeWindow> NewWindow(uint64_t read_so_far, uint64_t number) const;

  const Graph* const graph_;
  const BucketReadSpec spec_;
  const uint64_t window_edges_;
  const size_t depth_;
  Mutex mu_;
  std::deque<std::shared_ptr<EdgeWindow>> ready_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // no window will follow ready_
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_STREAM_EDGE_WINDOW_H_
