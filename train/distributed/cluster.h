// The cluster seam: what one rank of a training job across processes sees
// of the others. The training loop uses it for everything that crosses
// ranks (the partition transport, parameter sums, the graph-identity check,
// checkpoint hand-offs); implementations: InProcessCluster (N ranks as
// threads of one process; the unit tests use it) and, where MPI is built,
// the MPI cluster (train/distributed/mpi/).
//
// Collectives (AllGather, SumDoubles, SumFloats, Barrier) must be called by
// every rank in the same order; each returns once every rank has
// contributed. They may be called from one thread per rank at a time,
// concurrently with transfers on transport().
#ifndef EMBER_TRAIN_DISTRIBUTED_CLUSTER_H_
#define EMBER_TRAIN_DISTRIBUTED_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/distributed/partition_transport.h"

namespace ember {

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t world_size() const = 0;
  // Where this rank runs, for messages ("host" or "host pid N").
  virtual std::string where() const = 0;
  // Moves partitions between ranks; owned by the cluster.
  virtual PartitionTransport* transport() = 0;
  // Every rank's `mine`, indexed by rank.
  virtual absl::StatusOr<std::vector<std::string>> AllGather(const std::string& mine) = 0;
  // Element-wise sums across ranks, in place; every rank gets the same
  // result. SumDoubles adds in rank order (0 + 1 + ... + N-1), so its bits
  // do not depend on timing; SumFloats may add in any order.
  virtual absl::Status SumDoubles(std::span<double> values) = 0;
  virtual absl::Status SumFloats(std::span<float> values) = 0;
  virtual absl::Status Barrier() = 0;
  // Ends the whole job because of `status` (not OK), from any thread, e.g.
  // the rank watchdog's (rank_watchdog.h): a rank that waits for a stalled
  // or failed one in a collective would otherwise wait forever. Over MPI it
  // prints `status` naming this rank and aborts every process of the job
  // (it does not return); in process, every collective and transfer in
  // progress or later, on every rank, fails with `status`.
  virtual void Abort(const absl::Status& status) = 0;
};

// N ranks in one process: Create, then run rank r's work on its own thread
// with rank(r). Collectives block until all N threads reach them (a rank
// that never comes blocks the others until Abort: tests only).
class InProcessCluster {
 public:
  static absl::StatusOr<std::unique_ptr<InProcessCluster>> Create(uint32_t world_size,
                                                                  TransportOptions options = {});
  ~InProcessCluster();
  InProcessCluster(const InProcessCluster&) = delete;
  InProcessCluster& operator=(const InProcessCluster&) = delete;

  Cluster* rank(uint32_t r);
  // The largest partition message seen and the messages sent so far.
  uint64_t max_message_bytes() const;
  uint64_t messages() const;

  struct Rep;

 private:
  explicit InProcessCluster(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_CLUSTER_H_
