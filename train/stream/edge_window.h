// Streaming a bucket's edges in bounded windows.
//
// A BucketWindowReader reads one bucket's edge blocks in key order on the
// run's I/O executor (blocking I/O stays off the oneTBB workers), one task
// per window, and hands out windows of at most `window_edges` edges: each
// stored block is copied once, straight into the window, and the full
// window is shuffled in place (seeded by the bucket's seed and the window's
// number, so the same on every platform and run). A window that holds the
// whole bucket is a whole-bucket shuffle. The reader reads ahead while at
// most `depth` windows wait ready for the consumer, so it holds at most
// depth + 1 windows.
#ifndef EMBER_TRAIN_STREAM_EDGE_WINDOW_H_
#define EMBER_TRAIN_STREAM_EDGE_WINDOW_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/base/mutex.h"
#include "storage/graph.h"
#include "storage/types.h"
#include "train/schedule/io_executor.h"

namespace ember {

// Shared by the batches planned over it; freed when the last is done.
struct EdgeWindow {
  std::vector<Edge> edges;
  // With BucketReadSpec::weights: edges[i]'s weight, moved with it by every
  // reordering; empty otherwise (every weight 1).
  std::vector<float> weights;
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
  // Read the edges' weights into EdgeWindow::weights (a weighted graph
  // trained with --weights loss). Default: false.
  bool weights = false;
  // > 0 (a weighted graph trained with --weights sample): each edge of
  // weight w enters the windows r = w / weight_sample_mean times in
  // expectation: floor(r) times, and once more with probability r -
  // floor(r), drawn from a hash of the edge, its position and `seed` (so
  // anew each epoch, and the same in every run), at most kMaxWeightCopies
  // times. A window may then exceed window_edges by one edge's copies.
  // 0: every edge once. Default: 0.
  double weight_sample_mean = 0;
  // Edges expected (a capacity hint; 0: unknown). Windows reserve
  // min(window_edges, expected - read so far) so that they never regrow.
  uint64_t expected_edges = 0;
};

class BucketWindowReader {
 public:
  // The most copies of one edge that BucketReadSpec::weight_sample_mean draws.
  static constexpr uint32_t kMaxWeightCopies = 1024;

  // Starts reading at once, on `io`. REQUIRES: window_edges >= 1,
  // depth >= 1; `graph` and `io` outlive the reader.
  BucketWindowReader(const Graph* graph, IoExecutor* io, const BucketReadSpec& spec,
                     uint64_t window_edges, int depth = 1);
  // Abandons what is unread; waits for a window read under way.
  ~BucketWindowReader();
  BucketWindowReader(const BucketWindowReader&) = delete;
  BucketWindowReader& operator=(const BucketWindowReader&) = delete;

  // The next window, or null after the last one; blocks until it is read.
  // Returns the reader's error (storage, or ResourceExhausted when no I/O
  // thread could start), if any, once the windows before it are taken.
  // Called from one thread at a time.
  absl::StatusOr<std::shared_ptr<EdgeWindow>> Next();

 private:
  // Submits the next window's read when the reader may read ahead.
  void ScheduleRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One task on the executor: reads, shuffles and queues one window.
  void ReadWindow();
  // The next window of the bucket, or null when it has no more edges.
  absl::StatusOr<std::unique_ptr<EdgeWindow>> FillWindow();
  std::unique_ptr<EdgeWindow> NewWindow() const;

  const Graph* const graph_;
  IoExecutor* const io_;
  const BucketReadSpec spec_;
  const uint64_t window_edges_;
  const size_t depth_;
  const bool sampling_;
  const double copies_per_weight_;  // 1 / weight_sample_mean; 0: no weight sampling
  const uint64_t keep_below_;  // a sampled edge's hash is below it

  // Where the scan stands: touched only by the one read task under way
  // (reading_), so without the lock.
  std::unique_ptr<EdgeBlockCursor> cursor_;
  EdgeBlockView block_;  // the cursor's current block
  size_t block_at_ = 0;  // its edges already taken
  bool scan_done_ = false;
  uint64_t edges_read_ = 0;
  uint64_t edges_scanned_ = 0;  // stored edges passed, for weight sampling's draws
  uint64_t windows_read_ = 0;

  Mutex mu_;
  std::deque<std::shared_ptr<EdgeWindow>> ready_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = false;   // a read task is queued or runs
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // no window will follow ready_
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ember

#endif  // EMBER_TRAIN_STREAM_EDGE_WINDOW_H_
