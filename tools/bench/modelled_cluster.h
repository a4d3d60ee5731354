// Machines modelled by bandwidth, for benchmarks that run the real
// schedule, transport and checkpoint protocol with many ranks as threads of
// one process (cluster_sim.cc), where every rank shares this machine's
// cores and disk.
//
// ModelledLinks: each rank has a full-duplex port of `bytes_per_second`
// each way. A send of b bytes (a partition's header, rows and optimizer
// state) from s to d occupies s's out port and d's in port for
// b / bytes_per_second from when both are free, in the order sends are
// posted; the partition reaches the inner transport when that time is up
// (and the send completes then). Counts each rank's sends, receives and
// bytes.
//
// ModelledDisks: each rank's copy of the graph is on a disk of its own of
// `bytes_per_second`: a write of b bytes under that directory occupies the
// rank's disk for b / bytes_per_second and a sync for `sync_seconds`, in
// the order they come. Writes are buffered as in a page cache (a writer
// waits only while more than kDirtyBytes are queued); a sync waits until the
// disk has done everything queued before it. The sync itself is not done
// (the model stands for the disk, and the ranks' fsyncs to this machine's
// one disk would be a cost no real cluster pays). Reads and paths outside
// the copies pass through.
// Counts each rank's bytes written and syncs.
#ifndef EMBER_TOOLS_BENCH_MODELLED_CLUSTER_H_
#define EMBER_TOOLS_BENCH_MODELLED_CLUSTER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "storage/base/file_system.h"
#include "train/distributed/cluster.h"

namespace ember::bench {

using SteadyTime = std::chrono::steady_clock::time_point;

// A rank's port or disk: serves its requests one after another.
class ModelledQueue {
 public:
  // Occupies the queue for `seconds` from when it is free (or now): the
  // time this request is done.
  SteadyTime Reserve(double seconds, SteadyTime now);
  // Occupies both queues together for `seconds` (a send: the sender's out
  // port and the receiver's in port).
  static SteadyTime ReserveBoth(ModelledQueue& a, ModelledQueue& b, double seconds, SteadyTime now);

 private:
  SteadyTime free_{};
};

struct RankTraffic {
  uint64_t sends = 0;
  uint64_t receives = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

class ModelledLinks {
 public:
  // Wraps every rank of `cluster` (whose transports carry the partitions).
  ModelledLinks(InProcessCluster& cluster, uint32_t world_size, double bytes_per_second);
  ~ModelledLinks();  // delivers what is left, then joins its thread
  ModelledLinks(const ModelledLinks&) = delete;
  ModelledLinks& operator=(const ModelledLinks&) = delete;

  // Rank r as its trainer sees it: the inner rank's collectives, with
  // partitions over the modelled links.
  Cluster* rank(uint32_t r);
  std::vector<RankTraffic> traffic() const;

 private:
  class RankCluster;
  class RankTransport;
  struct Delivery {
    SteadyTime due;
    uint64_t order = 0;  // ties: in the order posted
    PartitionTransport* inner = nullptr;
    uint32_t to = 0;
    std::shared_ptr<PartitionState> state;
    std::shared_ptr<TransportCompleter> completer;
    bool operator>(const Delivery& o) const { return due != o.due ? due > o.due : order > o.order; }
  };

  TransportHandle Post(PartitionTransport* inner, uint32_t from, uint32_t to, PartitionState state);
  void DeliverLoop();

  const double bytes_per_second_;
  std::vector<std::unique_ptr<RankCluster>> ranks_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<ModelledQueue> out_, in_;
  std::vector<RankTraffic> traffic_;
  std::priority_queue<Delivery, std::vector<Delivery>, std::greater<Delivery>> pending_;
  uint64_t posted_ = 0;
  bool closing_ = false;
  std::thread deliverer_;
};

struct DiskTraffic {
  uint64_t bytes_written = 0;
  uint64_t syncs = 0;
};

class ModelledDisks final : public FileSystemWrapper {
 public:
  // rank_dirs[r]: rank r's copy of the graph.
  ModelledDisks(std::vector<std::string> rank_dirs, double bytes_per_second, double sync_seconds);

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                             WriteMode mode) override;
  absl::Status SyncPath(const std::string& path) override;
  std::vector<DiskTraffic> traffic() const;

  // Rank r's disk takes `bytes` (a write; returns once buffered) or a
  // sync (returns when done).
  void Write(int rank, uint64_t bytes);
  void Sync(int rank);

  static constexpr double kDirtyBytes = 16 << 20;

 private:
  int RankOf(const std::string& path) const;  // -1: not under a copy

  const std::vector<std::string> rank_dirs_;
  const double bytes_per_second_;
  const double sync_seconds_;
  mutable std::mutex mu_;
  std::vector<ModelledQueue> disks_;
  std::vector<DiskTraffic> traffic_;
};

}  // namespace ember::bench

#endif  // EMBER_TOOLS_BENCH_MODELLED_CLUSTER_H_
