#include "train/distributed/mpi/internal/mpi_transport.h"

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/base/mutex.h"
#include "absl/time/clock.h"
#include "train/distributed/mpi/internal/mpi_status.h"

namespace ember {
namespace {

// Requests one transfer keeps posted at a time: enough to keep a link busy
// with small chunks, few enough that 1-byte chunks do not flood MPI.
constexpr size_t kWindow = 64;
// With requests posted but none finishing, the thread polls this many times
// (yielding between) before it starts sleeping kIdleSleep between polls:
// MPI progresses only inside MPI calls, so someone must keep calling.
constexpr int kPollsBeforeSleep = 32;
constexpr absl::Duration kIdleSleep = absl::Microseconds(50);

// One message: a run of at most max_chunk_bytes (< 2^31) bytes.
struct Piece {
  uint8_t* data;
  int bytes;
};

// Appends the pieces [data, data + bytes) is cut into (ChunkBytes).
void AppendPieces(void* data, uint64_t bytes, uint64_t max_chunk, std::vector<Piece>* out) {
  auto* p = static_cast<uint8_t*>(data);
  for (uint64_t n : ChunkBytes(bytes, max_chunk)) {
    out->push_back(Piece{p, static_cast<int>(n)});
    p += n;
  }
}

// One transfer, owned by the communication thread from Begin until it is
// retired (completed and no request of it posted).
struct Transfer {
  Transfer(bool receive, uint32_t partition, uint32_t peer)
      : completer(partition, peer, receive), receive(receive), partition(partition), peer(peer) {}

  // "receiving partition 3 from rank 1", for messages.
  std::string What() const {
    return absl::StrCat(receive ? "receiving" : "sending", " partition ", partition,
                        receive ? " from" : " to", " rank ", peer);
  }
  bool retired() const { return completed && in_flight == 0; }

  TransportCompleter completer;
  const bool receive;
  const uint32_t partition;
  const uint32_t peer;
  PartitionWireHeader header;
  PartitionState state;       // send: what is sent; receive: what is filled
  std::vector<Piece> pieces;  // the messages of the current phase
  size_t posted = 0;          // pieces[0, posted) have been posted
  size_t finished = 0;        // posted pieces that completed
  size_t in_flight = 0;       // posted - finished
  bool in_header = true;      // receive: pieces are the header's
  bool completed = false;     // the handle is completed (success or failure)
};

}  // namespace

struct MpiTransport::Rep {
  using ReceiveKey = std::pair<uint32_t, uint32_t>;  // from, partition

  MPI_Comm comm = MPI_COMM_NULL;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  int tag_ub = 0;
  TransportOptions options;
  std::thread thread;

  Mutex mu;
  std::vector<std::unique_ptr<Transfer>> incoming ABSL_GUARDED_BY(mu);  // not yet begun
  std::set<ReceiveKey> receiving ABSL_GUARDED_BY(mu);  // receives not yet completed
  bool stopping ABSL_GUARDED_BY(mu) = false;

  // The communication thread's own: transfers begun and not retired, and
  // the posted requests with, index for index, the transfer and the piece
  // of it each serves (pieces may finish out of order: a short last chunk
  // goes eagerly while a long one before it waits for its rendezvous).
  std::vector<std::unique_ptr<Transfer>> active;
  std::vector<MPI_Request> requests;
  std::vector<Transfer*> request_owner;
  std::vector<size_t> request_piece;
  std::vector<int> finished_indices;  // MPI_Testsome's output, kept between polls
  std::vector<MPI_Status> finished_statuses;

  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopping || !incoming.empty(); }

  // Hands `t` to the communication thread: its handle, or a failed one when
  // the transport is stopping or (a receive) the same receive is pending.
  TransportHandle Enqueue(std::unique_ptr<Transfer> t) {
    TransportHandle handle = t->completer.handle();
    MutexLock lock(&mu);
    if (stopping) {
      return TransportHandle::Failed(
          absl::FailedPreconditionError(absl::StrCat("transport: ", t->What(), ": stopped")));
    }
    if (t->receive) {
      if (!receiving.insert(ReceiveKey{t->peer, t->partition}).second) {
        return TransportHandle::Failed(absl::FailedPreconditionError(
            absl::StrCat("transport: rank ", rank, " already receives partition ", t->partition,
                         " from rank ", t->peer)));
      }
    }
    incoming.push_back(std::move(t));
    return handle;
  }

  absl::Status CheckPartition(uint32_t partition) const {
    if (partition > static_cast<uint32_t>(tag_ub)) {
      return absl::InvalidArgumentError(
          absl::StrCat("transport: partition ", partition, " exceeds MPI's largest tag, ", tag_ub));
    }
    return absl::OkStatus();
  }

  // The communication thread.
  void Run() {
    int idle_polls = 0;
    for (;;) {
      std::vector<std::unique_ptr<Transfer>> begun;
      {
        MutexLock lock(&mu);
        if (requests.empty()) {
          // Nothing for MPI to progress: sleep until there is work.
          mu.Await(absl::Condition(this, &Rep::HasWork));
        }
        if (stopping) break;
        begun.swap(incoming);
      }
      for (std::unique_ptr<Transfer>& t : begun) {
        Transfer* raw = t.get();
        active.push_back(std::move(t));
        Begin(raw);
      }
      if (!requests.empty()) {
        if (Poll() > 0) {
          idle_polls = 0;
        } else if (++idle_polls < kPollsBeforeSleep) {
          std::this_thread::yield();
        } else {
          absl::SleepFor(kIdleSleep);
        }
      }
      std::erase_if(active, [](const std::unique_ptr<Transfer>& t) { return t->retired(); });
    }
    Shutdown();
  }

  void Begin(Transfer* t) {
    const uint64_t chunk = options.max_chunk_bytes;
    AppendPieces(&t->header, sizeof(t->header), chunk, &t->pieces);
    if (!t->receive) {
      AppendPieces(t->state.embeddings.data(), t->state.embeddings.size() * sizeof(float), chunk,
                   &t->pieces);
      AppendPieces(t->state.optimizer.data(), t->state.optimizer.size() * sizeof(float), chunk,
                   &t->pieces);
    }
    Post(t);
  }

  // Posts t's next pieces, up to kWindow in flight.
  void Post(Transfer* t) {
    while (!t->completed && t->in_flight < kWindow && t->posted < t->pieces.size()) {
      const Piece& piece = t->pieces[t->posted];
      MPI_Request request = MPI_REQUEST_NULL;
      const int tag = static_cast<int>(t->partition);
      const int peer = static_cast<int>(t->peer);
      const int rc = t->receive
                         ? MPI_Irecv(piece.data, piece.bytes, MPI_BYTE, peer, tag, comm, &request)
                         : MPI_Isend(piece.data, piece.bytes, MPI_BYTE, peer, tag, comm, &request);
      if (rc != MPI_SUCCESS) {
        Fail(t, MpiStatus(rc, t->receive ? "MPI_Irecv" : "MPI_Isend"));
        return;
      }
      requests.push_back(request);
      request_owner.push_back(t);
      request_piece.push_back(t->posted);
      ++t->posted;
      ++t->in_flight;
    }
  }

  // Tests every posted request once; handles those that finished. Returns
  // how many did.
  int Poll() {
    const int n = static_cast<int>(requests.size());
    std::vector<int>& indices = finished_indices;
    std::vector<MPI_Status>& statuses = finished_statuses;
    indices.resize(n);
    statuses.resize(n);
    int count = 0;
    const int rc = MPI_Testsome(n, requests.data(), &count, indices.data(), statuses.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
      // The requests' states are unknown: fail everything, forget them.
      const absl::Status s = MpiStatus(rc, "MPI_Testsome");
      for (MPI_Request& r : requests) {
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
      }
      requests.clear();
      request_owner.clear();
      request_piece.clear();
      for (const std::unique_ptr<Transfer>& t : active) Fail(t.get(), s);
      LeakActive();
      return 0;
    }
    if (count == MPI_UNDEFINED) count = 0;
    for (int i = 0; i < count; ++i) {
      const int error = rc == MPI_ERR_IN_STATUS ? statuses[i].MPI_ERROR : MPI_SUCCESS;
      Finished(request_owner[indices[i]], request_piece[indices[i]], statuses[i], error);
    }
    // Drop the finished requests (MPI_Testsome set them to MPI_REQUEST_NULL);
    // those Finished posted were appended and are kept.
    size_t kept = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      requests[kept] = requests[i];
      request_owner[kept] = request_owner[i];
      request_piece[kept] = request_piece[i];
      ++kept;
    }
    requests.resize(kept);
    request_owner.resize(kept);
    request_piece.resize(kept);
    return count;
  }

  // Piece `index` of t finished.
  void Finished(Transfer* t, size_t index, const MPI_Status& status, int error) {
    ++t->finished;
    --t->in_flight;
    if (t->completed) return;  // failed before: draining
    if (error != MPI_SUCCESS) {
      Fail(t, MpiStatus(error, absl::StrCat("chunk ", index, " of ", t->pieces.size())));
      return;
    }
    if (t->receive) {
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      if (bytes != t->pieces[index].bytes) {
        Fail(t, absl::DataLossError(absl::StrCat("a chunk of ", bytes, " bytes where ",
                                                 t->pieces[index].bytes, " were expected")));
        return;
      }
    }
    if (t->finished < t->pieces.size()) {
      Post(t);
    } else if (t->receive && t->in_header) {
      BeginBody(t);
    } else {
      Succeed(t);
    }
  }

  // A receive's header has arrived: check it, size the buffers, receive
  // the chunks.
  void BeginBody(Transfer* t) {
    const PartitionWireHeader& h = t->header;
    if (absl::Status s = CheckWireHeader(h, t->partition, t->peer); !s.ok()) {
      Complete(t, std::move(s));
      return;
    }
    PartitionState& out = t->state;
    out.partition = h.partition;
    out.rows = h.rows;
    out.dim = h.dim;
    out.embeddings.resize(h.embedding_floats);
    out.optimizer.resize(h.optimizer_floats);
    t->in_header = false;
    t->pieces.clear();
    t->posted = t->finished = 0;
    const uint64_t chunk = options.max_chunk_bytes;
    AppendPieces(out.embeddings.data(), out.embeddings.size() * sizeof(float), chunk, &t->pieces);
    AppendPieces(out.optimizer.data(), out.optimizer.size() * sizeof(float), chunk, &t->pieces);
    if (t->pieces.empty()) {
      Succeed(t);
    } else {
      Post(t);
    }
  }

  void Succeed(Transfer* t) { Complete(t, absl::OkStatus()); }

  // Fails t with `s` (prefixed with what t is) and cancels its posted
  // receives; t retires once they have drained.
  void Fail(Transfer* t, const absl::Status& s) {
    if (t->completed) return;
    Complete(t, absl::Status(s.code(), absl::StrCat("transport: ", t->What(), ": ", s.message())));
    if (!t->receive) return;  // a posted send cannot be taken back; it drains
    for (size_t i = 0; i < requests.size(); ++i) {
      if (request_owner[i] == t && requests[i] != MPI_REQUEST_NULL) MPI_Cancel(&requests[i]);
    }
  }

  // Completes t's handle: first forgets the receive, so that the waiter
  // may post the next receive of the partition at once.
  void Complete(Transfer* t, absl::Status s) {
    if (t->receive) {
      MutexLock lock(&mu);
      receiving.erase(ReceiveKey{t->peer, t->partition});
    }
    t->completed = true;
    if (t->receive && s.ok()) {
      t->completer.Complete(std::move(s), std::move(t->state));
    } else {
      t->completer.Complete(std::move(s));
    }
  }

  // Stopping: fails what is pending, takes back what MPI allows, and keeps
  // the buffers of what it may still touch.
  void Shutdown() {
    std::vector<std::unique_ptr<Transfer>> never_begun;
    {
      MutexLock lock(&mu);
      never_begun.swap(incoming);
    }
    const absl::Status stopped = absl::AbortedError("the transport stopped first");
    for (std::unique_ptr<Transfer>& t : never_begun) Fail(t.get(), stopped);
    for (const std::unique_ptr<Transfer>& t : active) Fail(t.get(), stopped);
    for (MPI_Request& r : requests) {
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    }
    requests.clear();
    request_owner.clear();
    request_piece.clear();
    LeakActive();
  }

  // Releases the active transfers without freeing them: MPI may still read
  // or write their buffers until MPI_Finalize.
  void LeakActive() {
    for (std::unique_ptr<Transfer>& t : active) {
      if (!t->retired()) (void)t.release();
    }
    active.clear();
  }
};

absl::StatusOr<std::unique_ptr<MpiTransport>> MpiTransport::Start(MPI_Comm parent,
                                                                  TransportOptions options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto rep = std::make_unique<Rep>();
  rep->options = options;
  if (absl::Status s = DupCommunicator(parent, &rep->comm, "the partition transport"); !s.ok()) {
    return s;
  }
  int rank = 0, size = 0, found = 0;
  int* tag_ub = nullptr;
  absl::Status s = MpiStatus(MPI_Comm_rank(rep->comm, &rank), "MPI_Comm_rank");
  if (s.ok()) s = MpiStatus(MPI_Comm_size(rep->comm, &size), "MPI_Comm_size");
  if (s.ok()) {
    s = MpiStatus(MPI_Comm_get_attr(rep->comm, MPI_TAG_UB, &tag_ub, &found), "MPI_TAG_UB");
  }
  if (s.ok() && (!found || tag_ub == nullptr)) s = absl::InternalError("mpi: no MPI_TAG_UB");
  if (!s.ok()) {
    MPI_Comm_free(&rep->comm);
    return s;
  }
  rep->rank = static_cast<uint32_t>(rank);
  rep->world_size = static_cast<uint32_t>(size);
  rep->tag_ub = *tag_ub;
  Rep* raw = rep.get();
  rep->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<MpiTransport>(new MpiTransport(std::move(rep)));
}

MpiTransport::MpiTransport(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

MpiTransport::~MpiTransport() {
  {
    MutexLock lock(&rep_->mu);
    rep_->stopping = true;
  }
  rep_->thread.join();
  MPI_Comm_free(&rep_->comm);
}

uint32_t MpiTransport::rank() const { return rep_->rank; }
uint32_t MpiTransport::world_size() const { return rep_->world_size; }

TransportHandle MpiTransport::Send(uint32_t to, PartitionState state) {
  if (absl::Status s = CheckTransportPeer(rep_->rank, to, rep_->world_size); !s.ok()) {
    return TransportHandle::Failed(s);
  }
  if (absl::Status s = rep_->CheckPartition(state.partition); !s.ok()) {
    return TransportHandle::Failed(s);
  }
  const PartitionWireHeader h = WireHeaderOf(state);
  if (absl::Status s = CheckWireHeader(h, state.partition, rep_->rank); !s.ok()) {
    return TransportHandle::Failed(absl::InvalidArgumentError(s.message()));
  }
  auto t = std::make_unique<Transfer>(/*receive=*/false, state.partition, to);
  t->header = h;
  t->state = std::move(state);
  return rep_->Enqueue(std::move(t));
}

TransportHandle MpiTransport::Receive(uint32_t from, uint32_t partition) {
  if (absl::Status s = CheckTransportPeer(rep_->rank, from, rep_->world_size); !s.ok()) {
    return TransportHandle::Failed(s);
  }
  if (absl::Status s = rep_->CheckPartition(partition); !s.ok()) {
    return TransportHandle::Failed(s);
  }
  return rep_->Enqueue(std::make_unique<Transfer>(/*receive=*/true, partition, from));
}

}  // namespace ember
