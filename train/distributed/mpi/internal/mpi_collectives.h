// The cluster's collectives (Cluster::AllGather, SumDoubles, SumFloats,
// Barrier) over one communicator. Every rank of `comm` must make the same
// calls in the same order, from one thread at a time; each returns once
// every rank has contributed. Errors (an MPI error, ranks that disagree on
// a length) are returned on every rank alike where the ranks can tell.
#ifndef EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_COLLECTIVES_H_
#define EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_COLLECTIVES_H_

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ember {

// The most bytes one MPI call of these collectives moves into a rank's
// receive buffer (summed over the ranks for a gather): MPI's counts and
// displacements are ints, and Open MPI 4.1 has no large-count calls. The
// default of every `max_call_bytes` below; tests pass less, so that small
// payloads take several calls.
inline constexpr uint64_t kMpiMaxCallBytes = INT_MAX;

// Every rank's `mine`, indexed by rank, of any total size: in as many
// MPI_Allgatherv calls as it takes to move no more than `max_call_bytes`
// per call (each call shares that room among the ranks with bytes left).
// Memory: the result plus one call's buffer. REQUIRES: max_call_bytes in
// [1, kMpiMaxCallBytes], the same on every rank.
absl::StatusOr<std::vector<std::string>> MpiAllGather(MPI_Comm comm, const std::string& mine,
                                                      uint64_t max_call_bytes = kMpiMaxCallBytes);

// values = rank 0's + rank 1's + ... + rank N-1's, added in that order on
// every rank (each rank gathers every vector and adds them itself), so the
// bits depend on neither the reduction tree nor timing. Memory: N x the
// values of one gather step (at most kGatherDoubles doubles, and at most
// max_call_bytes, in all). REQUIRES: max_call_bytes >= N * sizeof(double)
// and <= kMpiMaxCallBytes, the same on every rank.
absl::Status MpiSumDoubles(MPI_Comm comm, std::span<double> values,
                           uint64_t max_call_bytes = kMpiMaxCallBytes);
inline constexpr size_t kGatherDoubles = size_t{1} << 22;

// values = the sum over ranks, by MPI_Allreduce (any order), in steps of
// at most max_call_bytes. REQUIRES: max_call_bytes in [sizeof(float),
// kMpiMaxCallBytes], the same on every rank.
absl::Status MpiSumFloats(MPI_Comm comm, std::span<float> values,
                          uint64_t max_call_bytes = kMpiMaxCallBytes);

absl::Status MpiBarrier(MPI_Comm comm);

// The bytes each rank contributes to the next call of a gather, when rank r
// has left[r] bytes still to send and one call moves at most `budget`
// (>= 1) bytes in all: ranks with fewer bytes left take all of them, the
// rest share what remains evenly (ties go to the higher ranks). Each piece
// is <= left[r], the pieces sum to at most `budget`, and to at least 1 while
// any rank has bytes left. Pure; every rank computes the same pieces.
std::vector<uint64_t> GatherPieces(std::span<const uint64_t> left, uint64_t budget);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_COLLECTIVES_H_
