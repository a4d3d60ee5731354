#include "train/distributed/partition_transport.h"

#include <cstring>
#include <deque>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "storage/base/mutex.h"

namespace ember {

absl::Status TransportOptions::Validate() const {
  if (max_chunk_bytes < 1 || max_chunk_bytes > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("transport: max_chunk_bytes ",
                                                   max_chunk_bytes, " is outside [1, ",
                                                   kMaxMessageBytes, "]"));
  }
  return absl::OkStatus();
}

std::vector<uint64_t> ChunkBytes(uint64_t total_bytes, uint64_t max_chunk_bytes) {
  std::vector<uint64_t> out;
  for (uint64_t left = total_bytes; left > 0;) {
    const uint64_t n = std::min(left, max_chunk_bytes);
    out.push_back(n);
    left -= n;
  }
  return out;
}

PartitionWireHeader WireHeaderOf(const PartitionState& state) {
  PartitionWireHeader h;
  h.magic = kPartitionWireMagic;
  h.partition = state.partition;
  h.dim = state.dim;
  h.rows = state.rows;
  h.embedding_floats = state.embeddings.size();
  h.optimizer_floats = state.optimizer.size();
  return h;
}

absl::Status CheckTransportPeer(uint32_t self, uint32_t peer, uint32_t world_size) {
  if (peer >= world_size || peer == self) {
    return absl::InvalidArgumentError(absl::StrCat("transport: rank ", self,
                                                   " cannot exchange with rank ", peer,
                                                   " (world size ", world_size, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckWireHeader(const PartitionWireHeader& h, uint32_t expected_partition,
                             uint32_t from) {
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("transport: partition ", expected_partition,
                                            " from rank ", from, ": ", why));
  };
  if (h.magic != kPartitionWireMagic) return bad("header has the wrong magic");
  if (h.partition != expected_partition) {
    return bad(absl::StrCat("header names partition ", h.partition));
  }
  if (h.embedding_floats != 0 && h.embedding_floats != h.rows * h.dim) {
    return bad(absl::StrCat(h.embedding_floats, " embedding floats for ", h.rows, " rows of dim ",
                            h.dim));
  }
  if (h.optimizer_floats != 0 && h.optimizer_floats != h.rows) {
    return bad(absl::StrCat(h.optimizer_floats, " optimizer floats for ", h.rows, " rows"));
  }
  return absl::OkStatus();
}

struct TransportHandle::State {
  State(uint32_t partition, uint32_t peer, bool receive)
      : partition(partition), peer(peer), receive(receive) {}
  const uint32_t partition;
  const uint32_t peer;
  const bool receive;
  Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  PartitionState result ABSL_GUARDED_BY(mu);

  void Finish(absl::Status s, PartitionState r = {}) {
    MutexLock lock(&mu);
    status = std::move(s);
    result = std::move(r);
    done = true;
  }
};

TransportHandle TransportHandle::Failed(absl::Status status) {
  auto s = std::make_shared<State>(0, 0, false);
  s->Finish(std::move(status));
  return TransportHandle(std::move(s));
}

TransportCompleter::TransportCompleter(uint32_t partition, uint32_t peer, bool receive)
    : state_(std::make_shared<TransportHandle::State>(partition, peer, receive)) {}

void TransportCompleter::Complete(absl::Status status, PartitionState result) {
  state_->Finish(std::move(status), std::move(result));
}

bool TransportHandle::done() const {
  if (!state_) return true;
  MutexLock lock(&state_->mu);
  return state_->done;
}

absl::Status TransportHandle::Wait(absl::Duration timeout) {
  if (!state_) return absl::FailedPreconditionError("transport: waiting on an empty handle");
  MutexLock lock(&state_->mu);
  if (!state_->mu.AwaitWithTimeout(absl::Condition(&state_->done), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "transport: ", state_->receive ? "receiving" : "sending", " partition ",
        state_->partition, state_->receive ? " from" : " to", " rank ", state_->peer,
        " did not complete within ", absl::FormatDuration(timeout)));
  }
  return state_->status;
}

PartitionState TransportHandle::TakeState() {
  if (!state_) return {};
  MutexLock lock(&state_->mu);
  return std::move(state_->result);
}

// ---------------------------------------------------------------------------
// In-process network.

namespace {

using Message = std::vector<uint8_t>;

void AppendChunks(const void* data, uint64_t bytes, uint64_t max_chunk,
                  std::deque<Message>* out) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (uint64_t n : ChunkBytes(bytes, max_chunk)) {
    out->emplace_back(p, p + n);
    p += n;
  }
}

// Fills `bytes` bytes at `dst` from the front of `q`, message by message.
absl::Status TakeChunks(void* dst, uint64_t bytes, uint64_t max_chunk, std::deque<Message>* q,
                        uint32_t partition, uint32_t from) {
  auto* p = static_cast<uint8_t*>(dst);
  for (uint64_t left = bytes; left > 0;) {
    if (q->empty()) {
      return absl::DataLossError(absl::StrCat("transport: partition ", partition, " from rank ",
                                              from, ": ", left, " bytes missing"));
    }
    Message m = std::move(q->front());
    q->pop_front();
    if (m.size() > left || m.size() > max_chunk || m.empty()) {
      return absl::DataLossError(absl::StrCat("transport: partition ", partition, " from rank ",
                                              from, ": a chunk of ", m.size(), " bytes with ",
                                              left, " expected"));
    }
    std::memcpy(p, m.data(), m.size());
    p += m.size();
    left -= m.size();
  }
  return absl::OkStatus();
}

}  // namespace

struct InProcessNetwork::Rep {
  struct Channel {
    std::deque<Message> messages;  // whole partitions only (Send appends atomically)
    std::shared_ptr<TransportHandle::State> pending;  // a posted receive
  };
  using Key = std::tuple<uint32_t, uint32_t, uint32_t>;  // from, to, partition

  class Endpoint final : public PartitionTransport {
   public:
    Endpoint(Rep* rep, uint32_t rank) : rep_(rep), rank_(rank) {}
    uint32_t rank() const override { return rank_; }
    uint32_t world_size() const override { return rep_->world_size; }
    TransportHandle Send(uint32_t to, PartitionState state) override {
      return rep_->Send(rank_, to, std::move(state));
    }
    TransportHandle Receive(uint32_t from, uint32_t partition) override {
      return rep_->Receive(from, rank_, partition);
    }

   private:
    Rep* rep_;
    uint32_t rank_;
  };

  uint32_t world_size = 0;
  TransportOptions options;
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  mutable Mutex mu;
  std::map<Key, Channel> channels ABSL_GUARDED_BY(mu);
  uint64_t max_message ABSL_GUARDED_BY(mu) = 0;
  uint64_t messages ABSL_GUARDED_BY(mu) = 0;
  absl::Status aborted ABSL_GUARDED_BY(mu);  // set by Abort

  absl::Status CheckPeer(uint32_t self, uint32_t peer) const {
    return CheckTransportPeer(self, peer, world_size);
  }

  TransportHandle Send(uint32_t from, uint32_t to, PartitionState state) {
    if (absl::Status s = CheckPeer(from, to); !s.ok()) return TransportHandle::Failed(s);
    const PartitionWireHeader h = WireHeaderOf(state);
    if (absl::Status s = CheckWireHeader(h, state.partition, from); !s.ok()) {
      return TransportHandle::Failed(absl::InvalidArgumentError(s.message()));
    }
    // Chunks are copied out of the lock; only the hand-over is serialized.
    std::deque<Message> out;
    AppendChunks(&h, sizeof(h), options.max_chunk_bytes, &out);
    AppendChunks(state.embeddings.data(), state.embeddings.size() * sizeof(float),
                 options.max_chunk_bytes, &out);
    AppendChunks(state.optimizer.data(), state.optimizer.size() * sizeof(float),
                 options.max_chunk_bytes, &out);
    std::shared_ptr<TransportHandle::State> matched;
    {
      MutexLock lock(&mu);
      if (!aborted.ok()) return TransportHandle::Failed(aborted);
      Channel& c = channels[Key{from, to, state.partition}];
      for (Message& m : out) {
        max_message = std::max<uint64_t>(max_message, m.size());
        ++messages;
        c.messages.push_back(std::move(m));
      }
      if (c.pending) {
        matched = std::move(c.pending);
        c.pending.reset();
        Complete(matched.get(), &c);
      }
    }
    auto done = std::make_shared<TransportHandle::State>(state.partition, to, false);
    done->Finish(absl::OkStatus());  // buffered: the network holds the bytes
    return TransportHandle(std::move(done));
  }

  TransportHandle Receive(uint32_t from, uint32_t to, uint32_t partition) {
    if (absl::Status s = CheckPeer(to, from); !s.ok()) return TransportHandle::Failed(s);
    auto state = std::make_shared<TransportHandle::State>(partition, from, true);
    MutexLock lock(&mu);
    if (!aborted.ok()) return TransportHandle::Failed(aborted);
    Channel& c = channels[Key{from, to, partition}];
    if (c.pending) {
      return TransportHandle::Failed(absl::FailedPreconditionError(
          absl::StrCat("transport: rank ", to, " already receives partition ", partition,
                       " from rank ", from)));
    }
    if (c.messages.empty()) {
      c.pending = state;
    } else {
      Complete(state.get(), &c);
    }
    return TransportHandle(std::move(state));
  }

  // Reassembles one partition from the front of `c` into `r`.
  void Complete(TransportHandle::State* r, Channel* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    PartitionWireHeader h;
    PartitionState out;
    absl::Status s =
        TakeChunks(&h, sizeof(h), options.max_chunk_bytes, &c->messages, r->partition, r->peer);
    if (s.ok()) s = CheckWireHeader(h, r->partition, r->peer);
    if (s.ok()) {
      out.partition = h.partition;
      out.rows = h.rows;
      out.dim = h.dim;
      out.embeddings.resize(h.embedding_floats);
      out.optimizer.resize(h.optimizer_floats);
      s = TakeChunks(out.embeddings.data(), h.embedding_floats * sizeof(float),
                     options.max_chunk_bytes, &c->messages, r->partition, r->peer);
    }
    if (s.ok()) {
      s = TakeChunks(out.optimizer.data(), h.optimizer_floats * sizeof(float),
                     options.max_chunk_bytes, &c->messages, r->partition, r->peer);
    }
    r->Finish(s, s.ok() ? std::move(out) : PartitionState{});
  }
};

absl::StatusOr<std::unique_ptr<InProcessNetwork>> InProcessNetwork::Create(
    uint32_t world_size, TransportOptions options) {
  if (world_size == 0) return absl::InvalidArgumentError("transport: world size 0");
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto rep = std::make_unique<Rep>();
  rep->world_size = world_size;
  rep->options = options;
  for (uint32_t r = 0; r < world_size; ++r) {
    rep->endpoints.push_back(std::make_unique<Rep::Endpoint>(rep.get(), r));
  }
  return std::unique_ptr<InProcessNetwork>(new InProcessNetwork(std::move(rep)));
}

InProcessNetwork::InProcessNetwork(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
InProcessNetwork::~InProcessNetwork() = default;

PartitionTransport* InProcessNetwork::rank(uint32_t r) {
  return r < rep_->endpoints.size() ? rep_->endpoints[r].get() : nullptr;
}

uint64_t InProcessNetwork::max_message_bytes() const {
  MutexLock lock(&rep_->mu);
  return rep_->max_message;
}

uint64_t InProcessNetwork::messages() const {
  MutexLock lock(&rep_->mu);
  return rep_->messages;
}

void InProcessNetwork::Abort(const absl::Status& status) {
  MutexLock lock(&rep_->mu);
  if (!rep_->aborted.ok()) return;
  rep_->aborted = status.ok() ? absl::AbortedError("transport: aborted") : status;
  for (auto& [key, c] : rep_->channels) {
    if (c.pending == nullptr) continue;
    c.pending->Finish(rep_->aborted);
    c.pending.reset();
  }
}

}  // namespace ember
