// PartitionTransport over MPI two-sided calls (MPI_Isend / MPI_Irecv), on a
// communicator of its own. Send and Receive return at once; one
// communication thread posts every request, drives them with MPI_Testsome
// (Debian's Open MPI has no asynchronous progress, so someone must poll)
// and completes the handles.
//
// Matching: every message of a partition travels with tag = partition on
// this transport's communicator, and MPI does not let messages of one
// (source, tag, communicator) overtake each other; so concurrent transfers
// of different partitions between one pair stay apart, and a receive reads
// exactly the messages its sender sent, in order: the header, which it
// checks (CheckWireHeader) and sizes its buffers from, then the chunks.
// A transfer keeps at most kWindow requests posted at a time.
//
// Failures (an MPI error, a bad header, a chunk of the wrong size) fail the
// handle with a status naming the partition and the peer. A partition id
// above the communicator's MPI_TAG_UB is refused.
#ifndef EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_TRANSPORT_H_
#define EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_TRANSPORT_H_

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "train/distributed/partition_transport.h"

namespace ember {

class MpiTransport final : public PartitionTransport {
 public:
  // Collective over `parent` (every rank calls it): duplicates it and starts
  // the communication thread. REQUIRES: MPI started with
  // MPI_THREAD_MULTIPLE.
  static absl::StatusOr<std::unique_ptr<MpiTransport>> Start(MPI_Comm parent,
                                                             TransportOptions options);
  // Stops the thread and frees the communicator. A transfer still pending
  // fails with Aborted; its buffers are kept (leaked) because MPI may still
  // write them until MPI_Finalize. REQUIRES: before MPI_Finalize.
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  uint32_t rank() const override;
  uint32_t world_size() const override;
  TransportHandle Send(uint32_t to, PartitionState state) override;
  // A second receive of the same partition from the same rank while one is
  // pending is refused (FailedPrecondition), as in-process.
  TransportHandle Receive(uint32_t from, uint32_t partition) override;

  struct Rep;

 private:
  explicit MpiTransport(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_TRANSPORT_H_
