// The seam through which a partition's rows and optimizer state move from
// the rank that holds them to the rank that trains them next (RankSchedule's
// Transfer). Implementations: an in-process one (N simulated ranks in one
// process sharing mailboxes; the unit tests use it) and, where MPI is built,
// one over MPI_Isend/MPI_Irecv.
//
// Wire format, shared by every implementation: one header message
// (PartitionWireHeader, little-endian as in memory), then the embeddings'
// bytes and then the optimizer's bytes, each cut into chunks of at most
// max_chunk_bytes (ChunkBytes). No message exceeds max_chunk_bytes, which
// is at most 2^31 - 1 so that an MPI count of bytes fits an int (Open MPI
// 4.1 has no large-count calls). Messages between one pair of ranks for one
// partition arrive in the order sent.
#ifndef EMBER_TRAIN_DISTRIBUTED_PARTITION_TRANSPORT_H_
#define EMBER_TRAIN_DISTRIBUTED_PARTITION_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ember {

// What moves: one partition's trainable state.
struct PartitionState {
  uint32_t partition = 0;
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::vector<float> embeddings;  // rows x dim row-major, or empty (no id rows)
  std::vector<float> optimizer;   // rows (row-wise Adagrad), or empty
  friend bool operator==(const PartitionState&, const PartitionState&) = default;
};

struct TransportOptions {
  // The largest message, in bytes; 1 .. kMaxMessageBytes (2^31 - 1).
  // Default: 2^31 less a page, a whole number of pages.
  uint64_t max_chunk_bytes = (uint64_t{1} << 31) - 4096;
  absl::Status Validate() const;
};

inline constexpr uint64_t kMaxMessageBytes = (uint64_t{1} << 31) - 1;

struct PartitionWireHeader {
  uint64_t magic = 0;  // kPartitionWireMagic
  uint32_t partition = 0;
  uint32_t dim = 0;
  uint64_t rows = 0;
  uint64_t embedding_floats = 0;
  uint64_t optimizer_floats = 0;
};
inline constexpr uint64_t kPartitionWireMagic = 0x31544150524d4245ull;  // "EMBRPAT1"

// The header that announces `state` (magic, sizes from its vectors).
PartitionWireHeader WireHeaderOf(const PartitionState& state);

// OK when rank `self` may exchange with rank `peer` (another rank of the
// world); InvalidArgument naming both otherwise.
absl::Status CheckTransportPeer(uint32_t self, uint32_t peer, uint32_t world_size);

// The sizes of the chunks `total_bytes` is cut into: each in
// [1, max_chunk_bytes], summing to total_bytes; none for 0 bytes.
// REQUIRES: max_chunk_bytes >= 1.
std::vector<uint64_t> ChunkBytes(uint64_t total_bytes, uint64_t max_chunk_bytes);

// Checks a received header against itself (magic, embeddings == rows x dim
// or 0, optimizer == rows or 0) and against the partition expected;
// DataLoss names the partition and the sender.
absl::Status CheckWireHeader(const PartitionWireHeader& h, uint32_t expected_partition,
                             uint32_t from);

// A transfer's completion. Copyable; every copy names the same transfer.
class TransportHandle {
 public:
  struct State;
  TransportHandle() = default;
  explicit TransportHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
  // An already finished handle carrying `status` (a refused call).
  static TransportHandle Failed(absl::Status status);

  bool done() const;
  // Waits until the transfer completes or `timeout` passes (then
  // DeadlineExceeded naming the partition and peer; the transfer goes on).
  // Returns the transfer's status.
  absl::Status Wait(absl::Duration timeout);
  // Receive handles: the partition received, after Wait returned OK; moves
  // it out (a second call returns an empty state).
  PartitionState TakeState();

 private:
  std::shared_ptr<State> state_;
};

// The implementation's side of a pending transfer: handle() is what Send or
// Receive returns; Complete finishes it (and every copy of it) once.
// Thread-safe; the completer may live on another thread than the handle.
class TransportCompleter {
 public:
  // A pending transfer of `partition` with rank `peer` (receive: from it;
  // send: to it); names both in Wait's DeadlineExceeded.
  TransportCompleter(uint32_t partition, uint32_t peer, bool receive);
  TransportHandle handle() const { return TransportHandle(state_); }
  // REQUIRES: not yet completed. `result`: the partition received (receive
  // handles, on OK), which TakeState hands out.
  void Complete(absl::Status status, PartitionState result = {});

 private:
  std::shared_ptr<TransportHandle::State> state_;
};

class PartitionTransport {
 public:
  virtual ~PartitionTransport() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t world_size() const = 0;
  // Sends `state` to rank `to` (!= rank()); the transport owns it until the
  // handle completes. At most one send of a partition to one rank may be in
  // flight at a time. A bad `to` gives a failed handle.
  virtual TransportHandle Send(uint32_t to, PartitionState state) = 0;
  // Receives partition `partition` from rank `from`; may be posted before
  // or after the matching Send. A bad `from` gives a failed handle.
  virtual TransportHandle Receive(uint32_t from, uint32_t partition) = 0;
};

// N ranks in one process, one PartitionTransport each (index = rank), all
// sharing one set of mailboxes; each chunk is copied into its own message
// as a network would, and max_message_bytes() reports the largest seen.
// Completion happens on whichever thread makes the match (no thread of its
// own); the transports outlive no call made on them.
class InProcessNetwork {
 public:
  static absl::StatusOr<std::unique_ptr<InProcessNetwork>> Create(uint32_t world_size,
                                                                  TransportOptions options);
  ~InProcessNetwork();
  InProcessNetwork(const InProcessNetwork&) = delete;
  InProcessNetwork& operator=(const InProcessNetwork&) = delete;

  PartitionTransport* rank(uint32_t r);
  uint64_t max_message_bytes() const;
  uint64_t messages() const;
  // Fails every receive pending and every later send and receive, on every
  // rank, with `status` (not OK). Thread-safe.
  void Abort(const absl::Status& status);

  struct Rep;

 private:
  explicit InProcessNetwork(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_PARTITION_TRANSPORT_H_
