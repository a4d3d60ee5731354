#include "train/schedule/bucket_scheduler.h"

#include <algorithm>

namespace ember {
namespace {

class RoundScheduler final : public BucketScheduler {
 public:
  RoundScheduler(const std::vector<Bucket>& order, uint32_t round_size, uint32_t lookahead,
                 uint64_t first_round)
      : next_(first_round) {
    uint64_t i = 0;
    for (std::vector<Bucket>& buckets : FormRounds(order, round_size, lookahead)) {
      Round r;
      r.index = i++;
      r.buckets = std::move(buckets);
      for (const Bucket& b : r.buckets) {
        for (uint32_t p : {b.src, b.dst}) {
          if (std::find(r.partitions.begin(), r.partitions.end(), p) == r.partitions.end()) {
            r.partitions.push_back(p);
          }
        }
      }
      buckets_ += r.buckets.size();
      rounds_.push_back(std::move(r));
    }
    for (uint64_t r = 0; r < std::min<uint64_t>(first_round, rounds_.size()); ++r) {
      taken_ += rounds_[r].buckets.size();
    }
  }

  std::optional<Round> Next() override {
    if (next_ >= rounds_.size()) return std::nullopt;
    taken_ += rounds_[next_].buckets.size();
    return rounds_[next_++];
  }

  std::vector<std::vector<uint32_t>> Upcoming(size_t n) const override {
    std::vector<std::vector<uint32_t>> out;
    for (uint64_t r = next_; r < rounds_.size() && out.size() < n; ++r) {
      out.push_back(rounds_[r].partitions);
    }
    return out;
  }

  uint64_t buckets_per_epoch() const override { return buckets_; }
  uint64_t buckets_taken() const override { return taken_; }

 private:
  std::vector<Round> rounds_;
  uint64_t next_ = 0;
  uint64_t buckets_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace

std::unique_ptr<BucketScheduler> MakeRoundScheduler(BucketOrderKind kind, uint32_t P,
                                                    uint32_t capacity, uint32_t round_size,
                                                    uint64_t seed, uint64_t first_round,
                                                    std::span<const uint64_t> skip_empty,
                                                    uint32_t lookahead) {
  std::vector<Bucket> order = BucketOrder(kind, P, capacity, seed);
  if (!skip_empty.empty()) order = WithoutEmptyBuckets(std::move(order), skip_empty, P);
  return std::make_unique<RoundScheduler>(order, round_size, lookahead, first_round);
}

}  // namespace ember
