// The cluster's collectives (Cluster::AllGather, SumDoubles, SumFloats,
// Barrier) over one communicator. Every rank of `comm` must make the same
// calls in the same order, from one thread at a time; each returns once
// every rank has contributed. Errors (an MPI error, ranks that disagree on
// a length) are returned on every rank alike where the ranks can tell.
#ifndef EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_COLLECTIVES_H_
#define EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_COLLECTIVES_H_

#include <mpi.h>

#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ember {

// Every rank's `mine`, indexed by rank. InvalidArgument on every rank when
// the strings together exceed 2^31 - 1 bytes (MPI's int counts).
absl::StatusOr<std::vector<std::string>> MpiAllGather(MPI_Comm comm, const std::string& mine);

// values = rank 0's + rank 1's + ... + rank N-1's, added in that order on
// every rank (each rank gathers every vector and adds them itself), so the
// bits depend on neither the reduction tree nor timing. Memory: N x the
// values of one gather step (at most kGatherDoubles doubles in all).
absl::Status MpiSumDoubles(MPI_Comm comm, std::span<double> values);
inline constexpr size_t kGatherDoubles = size_t{1} << 22;

// values = the sum over ranks, by MPI_Allreduce (any order), in steps of
// at most 2^31 - 1 floats.
absl::Status MpiSumFloats(MPI_Comm comm, std::span<float> values);

absl::Status MpiBarrier(MPI_Comm comm);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_COLLECTIVES_H_
