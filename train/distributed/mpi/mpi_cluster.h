// The cluster over MPI: one process per rank, launched by mpirun (or any
// launcher of the MPI ember was built with). No MPI header leaks from here.
//
// The transport (MPI_Isend/MPI_Irecv driven by a communication thread) and
// the collectives use two communicators of their own, duplicated from
// MPI_COMM_WORLD, so that collectives called on one thread never match
// transport messages moving on the other.
#ifndef EMBER_TRAIN_DISTRIBUTED_MPI_MPI_CLUSTER_H_
#define EMBER_TRAIN_DISTRIBUTED_MPI_MPI_CLUSTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "train/distributed/cluster.h"
#include "train/distributed/partition_transport.h"

namespace ember {

// The cluster's collectives (Cluster::AllGather, SumDoubles, SumFloats).
struct MpiCollectiveOptions {
  // The most bytes one MPI call of a collective moves into a rank's buffer
  // (over every rank, for a gather); a larger payload takes several calls.
  // In [world size x 8, 2^31 - 1] (a double from every rank, and MPI's int
  // counts); the same on every rank. Default: 2^31 - 1. Tests pass less.
  uint64_t max_call_bytes = kMaxMessageBytes;
  // InvalidArgument outside [8, 2^31 - 1] (the world size is checked at
  // start).
  absl::Status Validate() const;
};

// Starts MPI (MPI_Init_thread asking for MPI_THREAD_MULTIPLE) and this
// rank's cluster. Collective: every rank of the launch calls it. MPI starts
// once per process: a second call, even after the first cluster is gone,
// fails (FailedPrecondition); so does an MPI that offers less than
// MPI_THREAD_MULTIPLE. Destroying the cluster stops its communication
// thread, frees its communicators and calls MPI_Finalize (collective too:
// every rank destroys its cluster, after its transfers are done).
absl::StatusOr<std::unique_ptr<Cluster>> StartMpiCluster(TransportOptions options = {},
                                                         MpiCollectiveOptions collectives = {});

// Ends the whole job at once with `exit_code` (MPI_Abort on
// MPI_COMM_WORLD): what a rank that fails does, so that the others do not
// wait forever for it. Without MPI started, just exits.
[[noreturn]] void AbortMpiJob(int exit_code);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_MPI_MPI_CLUSTER_H_
