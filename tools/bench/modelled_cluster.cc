#include "tools/bench/modelled_cluster.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"

namespace ember::bench {
namespace {

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

}  // namespace

SteadyTime ModelledQueue::Reserve(double seconds, SteadyTime now) {
  free_ = std::max(free_, now) + Seconds(seconds);
  return free_;
}

SteadyTime ModelledQueue::ReserveBoth(ModelledQueue& a, ModelledQueue& b, double seconds,
                                      SteadyTime now) {
  const SteadyTime done = std::max({a.free_, b.free_, now}) + Seconds(seconds);
  a.free_ = b.free_ = done;
  return done;
}

class ModelledLinks::RankTransport final : public PartitionTransport {
 public:
  RankTransport(ModelledLinks* links, PartitionTransport* inner) : links_(links), inner_(inner) {}
  uint32_t rank() const override { return inner_->rank(); }
  uint32_t world_size() const override { return inner_->world_size(); }
  TransportHandle Send(uint32_t to, PartitionState state) override {
    absl::Status peer = CheckTransportPeer(rank(), to, world_size());
    if (!peer.ok()) return TransportHandle::Failed(std::move(peer));
    return links_->Post(inner_, rank(), to, std::move(state));
  }
  TransportHandle Receive(uint32_t from, uint32_t partition) override {
    return inner_->Receive(from, partition);
  }

 private:
  ModelledLinks* const links_;
  PartitionTransport* const inner_;
};

class ModelledLinks::RankCluster final : public Cluster {
 public:
  RankCluster(ModelledLinks* links, Cluster* inner)
      : inner_(inner), transport_(links, inner->transport()) {}
  uint32_t rank() const override { return inner_->rank(); }
  uint32_t world_size() const override { return inner_->world_size(); }
  std::string where() const override { return inner_->where(); }
  PartitionTransport* transport() override { return &transport_; }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& mine) override {
    return inner_->AllGather(mine);
  }
  absl::Status SumDoubles(std::span<double> values) override { return inner_->SumDoubles(values); }
  absl::Status SumFloats(std::span<float> values) override { return inner_->SumFloats(values); }
  absl::Status Barrier() override { return inner_->Barrier(); }
  void Abort(const absl::Status& status) override { inner_->Abort(status); }

 private:
  Cluster* const inner_;
  RankTransport transport_;
};

ModelledLinks::ModelledLinks(InProcessCluster& cluster, uint32_t world_size,
                             double bytes_per_second)
    : bytes_per_second_(bytes_per_second), out_(world_size), in_(world_size), traffic_(world_size) {
  for (uint32_t r = 0; r < world_size; ++r) {
    ranks_.push_back(std::make_unique<RankCluster>(this, cluster.rank(r)));
  }
  deliverer_ = std::thread([this] { DeliverLoop(); });
}

ModelledLinks::~ModelledLinks() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  wake_.notify_all();
  deliverer_.join();
}

Cluster* ModelledLinks::rank(uint32_t r) { return ranks_[r].get(); }

std::vector<RankTraffic> ModelledLinks::traffic() const {
  std::lock_guard<std::mutex> lock(mu_);
  return traffic_;
}

TransportHandle ModelledLinks::Post(PartitionTransport* inner, uint32_t from, uint32_t to,
                                    PartitionState state) {
  const uint64_t bytes = sizeof(PartitionWireHeader) +
                         sizeof(float) * (state.embeddings.size() + state.optimizer.size());
  auto completer = std::make_shared<TransportCompleter>(state.partition, to, /*receive=*/false);
  TransportHandle handle = completer->handle();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const SteadyTime due = ModelledQueue::ReserveBoth(
        out_[from], in_[to], bytes / bytes_per_second_, std::chrono::steady_clock::now());
    ++traffic_[from].sends;
    traffic_[from].bytes_sent += bytes;
    ++traffic_[to].receives;
    traffic_[to].bytes_received += bytes;
    pending_.push(Delivery{due, posted_++, inner, to,
                           std::make_shared<PartitionState>(std::move(state)), completer});
  }
  wake_.notify_all();
  return handle;
}

void ModelledLinks::DeliverLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (pending_.empty()) {
      if (closing_) return;
      wake_.wait(lock);
      continue;
    }
    if (pending_.top().due > std::chrono::steady_clock::now()) {
      wake_.wait_until(lock, pending_.top().due);
      continue;
    }
    Delivery d = pending_.top();
    pending_.pop();
    lock.unlock();
    // The inner transport buffers the send until the receiver takes it; on
    // the modelled wire the bytes have left the sender now.
    TransportHandle inner = d.inner->Send(d.to, std::move(*d.state));
    d.completer->Complete(inner.done() ? inner.Wait(absl::ZeroDuration()) : absl::OkStatus());
    lock.lock();
  }
}

ModelledDisks::ModelledDisks(std::vector<std::string> rank_dirs, double bytes_per_second,
                             double sync_seconds)
    : FileSystemWrapper(DefaultFileSystem()),
      rank_dirs_(std::move(rank_dirs)),
      bytes_per_second_(bytes_per_second),
      sync_seconds_(sync_seconds),
      disks_(rank_dirs_.size()),
      traffic_(rank_dirs_.size()) {}

namespace {

// A file on a modelled disk: appends take the disk's time, then go to the
// real file; syncs take the disk's time only.
class ModelledFile final : public WritableFile {
 public:
  ModelledFile(ModelledDisks* disks, int rank, std::unique_ptr<WritableFile> file)
      : WritableFile(file->path()), disks_(disks), rank_(rank), file_(std::move(file)) {}
  absl::Status Append(std::string_view data) override {
    disks_->Write(rank_, data.size());
    return file_->Append(data);
  }
  absl::Status Sync() override {
    disks_->Sync(rank_);
    return absl::OkStatus();
  }
  absl::Status Close() override { return file_->Close(); }

 private:
  ModelledDisks* const disks_;
  const int rank_;
  std::unique_ptr<WritableFile> file_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<WritableFile>> ModelledDisks::OpenForWrite(const std::string& path,
                                                                          WriteMode mode) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = target()->OpenForWrite(path, mode);
  const int rank = RankOf(path);
  if (!file.ok() || rank < 0) return file;
  return std::unique_ptr<WritableFile>(new ModelledFile(this, rank, *std::move(file)));
}

absl::Status ModelledDisks::SyncPath(const std::string& path) {
  const int rank = RankOf(path);
  if (rank < 0) return target()->SyncPath(path);
  Sync(rank);
  return absl::OkStatus();
}

std::vector<DiskTraffic> ModelledDisks::traffic() const {
  std::lock_guard<std::mutex> lock(mu_);
  return traffic_;
}

void ModelledDisks::Write(int rank, uint64_t bytes) {
  SteadyTime done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    traffic_[rank].bytes_written += bytes;
    done = disks_[rank].Reserve(bytes / bytes_per_second_, std::chrono::steady_clock::now());
  }
  // Buffered, as in a page cache: a writer waits only for the part of the
  // backlog beyond kDirtyBytes.
  std::this_thread::sleep_until(done - Seconds(kDirtyBytes / bytes_per_second_));
}

void ModelledDisks::Sync(int rank) {
  SteadyTime done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++traffic_[rank].syncs;
    done = disks_[rank].Reserve(sync_seconds_, std::chrono::steady_clock::now());
  }
  std::this_thread::sleep_until(done);
}

int ModelledDisks::RankOf(const std::string& path) const {
  for (size_t r = 0; r < rank_dirs_.size(); ++r) {
    const std::string& dir = rank_dirs_[r];
    if (path == dir ||
        (absl::StartsWith(path, dir) && path.size() > dir.size() && path[dir.size()] == '/')) {
      return static_cast<int>(r);
    }
  }
  return -1;
}

}  // namespace ember::bench
