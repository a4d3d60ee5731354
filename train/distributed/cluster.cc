#include "train/distributed/cluster.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "storage/base/mutex.h"

namespace ember {

// A generation-counted meeting point: each rank deposits its contribution,
// the last one in publishes the whole set, and every rank reads it before
// the next collective may start (all ranks call collectives in one order).
struct InProcessCluster::Rep {
  class Member final : public Cluster {
   public:
    Member(Rep* rep, uint32_t rank) : rep_(rep), rank_(rank) {}
    uint32_t rank() const override { return rank_; }
    uint32_t world_size() const override { return rep_->world_size; }
    std::string where() const override { return absl::StrCat("in-process rank ", rank_); }
    PartitionTransport* transport() override { return rep_->network->rank(rank_); }

    absl::StatusOr<std::vector<std::string>> AllGather(const std::string& mine) override {
      return rep_->Meet(rank_, mine);
    }
    absl::Status SumDoubles(std::span<double> values) override {
      return Sum(values);
    }
    absl::Status SumFloats(std::span<float> values) override { return Sum(values); }
    absl::Status Barrier() override { return rep_->Meet(rank_, "").status(); }
    void Abort(const absl::Status& status) override { rep_->Abort(status); }

   private:
    // Adds in rank order: the same bits on every rank and every run.
    template <typename T>
    absl::Status Sum(std::span<T> values) {
      const std::string mine(reinterpret_cast<const char*>(values.data()),
                             values.size() * sizeof(T));
      absl::StatusOr<std::vector<std::string>> all = rep_->Meet(rank_, mine);
      if (!all.ok()) return all.status();
      for (uint32_t r = 0; r < all->size(); ++r) {
        if ((*all)[r].size() != mine.size()) {
          return absl::InvalidArgumentError(absl::StrCat("cluster: rank ", r, " summed ",
                                                         (*all)[r].size() / sizeof(T),
                                                         " values, rank ", rank_, " ",
                                                         values.size()));
        }
      }
      for (size_t i = 0; i < values.size(); ++i) {
        T sum = 0;
        for (const std::string& s : *all) sum += reinterpret_cast<const T*>(s.data())[i];
        values[i] = sum;
      }
      return absl::OkStatus();
    }

    Rep* rep_;
    uint32_t rank_;
  };

  uint32_t world_size = 0;
  std::unique_ptr<InProcessNetwork> network;
  std::vector<std::unique_ptr<Member>> members;

  Mutex mu;
  uint64_t generation ABSL_GUARDED_BY(mu) = 0;
  uint32_t arrived ABSL_GUARDED_BY(mu) = 0;
  uint32_t departed ABSL_GUARDED_BY(mu) = 0;
  std::vector<std::string> deposits ABSL_GUARDED_BY(mu);
  std::vector<std::string> published ABSL_GUARDED_BY(mu);
  // Set by Abort: every collective fails with it from then on.
  absl::Status aborted ABSL_GUARDED_BY(mu);

  void Abort(const absl::Status& status) {
    const absl::Status reason = status.ok() ? absl::AbortedError("cluster: aborted") : status;
    {
      MutexLock lock(&mu);
      if (!aborted.ok()) return;  // the first reason stands
      aborted = reason;
    }
    network->Abort(reason);
  }

  absl::StatusOr<std::vector<std::string>> Meet(uint32_t rank, const std::string& mine) {
    MutexLock lock(&mu);
    // Wait until every rank has read the previous collective's result.
    mu.Await(absl::Condition(
        +[](Rep* r)
             ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu) { return r->departed == 0 || !r->aborted.ok(); },
        this));
    if (!aborted.ok()) return aborted;
    const uint64_t mine_generation = generation;
    deposits[rank] = mine;
    if (++arrived == world_size) {
      published = std::move(deposits);
      deposits.assign(world_size, std::string());
      arrived = 0;
      departed = world_size;
      ++generation;
    } else {
      struct Args {
        Rep* rep;
        uint64_t generation;
      } args{this, mine_generation};
      mu.Await(absl::Condition(
          +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return a->rep->generation != a->generation || !a->rep->aborted.ok();
          },
          &args));
      if (!aborted.ok()) return aborted;
    }
    std::vector<std::string> out = published;
    --departed;
    return out;
  }
};

InProcessCluster::InProcessCluster(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
InProcessCluster::~InProcessCluster() = default;

absl::StatusOr<std::unique_ptr<InProcessCluster>> InProcessCluster::Create(
    uint32_t world_size, TransportOptions options) {
  auto rep = std::make_unique<Rep>();
  auto network = InProcessNetwork::Create(world_size, options);
  if (!network.ok()) return network.status();
  rep->world_size = world_size;
  rep->network = std::move(*network);
  {
    MutexLock lock(&rep->mu);
    rep->deposits.assign(world_size, std::string());
  }
  for (uint32_t r = 0; r < world_size; ++r) {
    rep->members.push_back(std::make_unique<Rep::Member>(rep.get(), r));
  }
  return std::unique_ptr<InProcessCluster>(new InProcessCluster(std::move(rep)));
}

Cluster* InProcessCluster::rank(uint32_t r) { return rep_->members.at(r).get(); }
uint64_t InProcessCluster::max_message_bytes() const { return rep_->network->max_message_bytes(); }
uint64_t InProcessCluster::messages() const { return rep_->network->messages(); }

}  // namespace ember
