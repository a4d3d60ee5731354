#include "train/distributed/rank_schedule.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"

namespace ember {
namespace {

// Assigns the buckets of one round to ranks; see the header for the rule.
// `holders` are the holders before the round. Returns a rank per bucket.
std::vector<uint32_t> AssignRanks(const std::vector<Bucket>& buckets,
                                  const std::vector<uint64_t>& edges,
                                  const std::vector<uint32_t>& holders,
                                  const RankScheduleOptions& o) {
  const uint32_t N = o.world_size;
  const size_t n = buckets.size();
  uint64_t total = 0, largest = 0;
  for (uint64_t e : edges) {
    total += e;
    largest = std::max(largest, e);
  }
  const uint64_t bound = std::max<uint64_t>(largest, (total + N - 1) / N);
  const double limit = o.holder_slack * static_cast<double>(bound);
  std::vector<size_t> by_size(n);
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return edges[a] > edges[b]; });
  std::vector<uint64_t> load(N, 0);
  std::vector<uint32_t> slots(N, 0);
  std::vector<uint32_t> rank_of(n, 0);
  for (size_t i : by_size) {
    const Bucket& b = buckets[i];
    const uint64_t e = edges[i];
    auto missing = [&](uint32_t r) {
      if (e == 0) return 0;
      return (holders[b.src] != r ? 1 : 0) + (b.dst != b.src && holders[b.dst] != r ? 1 : 0);
    };
    auto free = [&](uint32_t r) { return slots[r] < o.trainers_per_rank; };
    // A holder of a partition of the bucket, if one keeps within the limit.
    int64_t best = -1;
    for (uint32_t r : {holders[b.src], holders[b.dst]}) {
      if (!free(r) || static_cast<double>(load[r] + e) > limit) continue;
      if (best < 0) {
        best = r;
        continue;
      }
      const auto rb = static_cast<uint32_t>(best);
      if (std::make_tuple(missing(r), load[r], r) < std::make_tuple(missing(rb), load[rb], rb)) {
        best = r;
      }
    }
    if (best < 0) {  // least loaded rank with a free slot (LPT)
      for (uint32_t r = 0; r < N; ++r) {
        if (!free(r)) continue;
        const auto rb = static_cast<uint32_t>(best);
        if (best < 0 ||
            std::make_tuple(load[r], missing(r), r) < std::make_tuple(load[rb], missing(rb), rb)) {
          best = r;
        }
      }
    }
    // FormRounds gives at most N * T buckets, so a slot is always free.
    const auto r = static_cast<uint32_t>(best);
    rank_of[i] = r;
    load[r] += e;
    ++slots[r];
  }
  return rank_of;
}

}  // namespace

std::vector<uint32_t> DefaultHolders(uint32_t num_partitions, uint32_t world_size) {
  std::vector<uint32_t> out(num_partitions);
  for (uint32_t p = 0; p < num_partitions; ++p) {
    out[p] = static_cast<uint32_t>(uint64_t{p} * world_size / num_partitions);
  }
  return out;
}

absl::StatusOr<RankSchedule> ComputeRankSchedule(const RankScheduleOptions& o) {
  const uint32_t P = o.num_partitions;
  if (P == 0) return absl::InvalidArgumentError("rank schedule: num_partitions is 0");
  if (o.world_size == 0) return absl::InvalidArgumentError("rank schedule: world_size is 0");
  if (o.trainers_per_rank == 0) {
    return absl::InvalidArgumentError("rank schedule: trainers_per_rank is 0");
  }
  if (!(o.holder_slack >= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank schedule: holder_slack ", o.holder_slack, " is below 1"));
  }
  const uint64_t buckets = uint64_t{P} * P;
  if (!o.bucket_edges.empty() && o.bucket_edges.size() != buckets) {
    return absl::InvalidArgumentError(absl::StrCat("rank schedule: bucket_edges has ",
                                                   o.bucket_edges.size(), " entries, P * P is ",
                                                   buckets));
  }
  if (!o.holders.empty() && o.holders.size() != P) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank schedule: holders has ", o.holders.size(), " entries, P is ", P));
  }
  for (uint32_t p = 0; p < o.holders.size(); ++p) {
    if (o.holders[p] >= o.world_size) {
      return absl::InvalidArgumentError(absl::StrCat("rank schedule: partition ", p,
                                                     " is held by rank ", o.holders[p],
                                                     ", world size is ", o.world_size));
    }
  }
  RankSchedule s;
  s.num_partitions = P;
  s.world_size = o.world_size;
  s.trainers_per_rank = o.trainers_per_rank;
  s.initial_holders = o.holders.empty() ? DefaultHolders(P, o.world_size) : o.holders;
  std::vector<uint32_t> holders = s.initial_holders;
  const std::vector<Bucket> order =
      BucketOrder(o.order, P, o.buffer_capacity, o.seed + o.epoch);
  const std::vector<std::vector<Bucket>> rounds =
      FormRounds(order, o.world_size * o.trainers_per_rank,
                 o.lookahead > 0 ? o.lookahead : RoundLookahead(P, /*all_resident=*/true));
  std::vector<char> busy_before(P, 0);  // partitions trained in the round before
  for (size_t g = 0; g < rounds.size(); ++g) {
    const std::vector<Bucket>& rb = rounds[g];
    std::vector<uint64_t> edges(rb.size());
    for (size_t i = 0; i < rb.size(); ++i) {
      edges[i] = o.bucket_edges.empty() ? 1 : o.bucket_edges[uint64_t{rb[i].src} * P + rb[i].dst];
    }
    const std::vector<uint32_t> rank_of = AssignRanks(rb, edges, holders, o);
    GlobalRound round;
    round.index = g;
    std::vector<uint32_t> next_slot(o.world_size, 0);
    std::vector<char> busy(P, 0);
    for (size_t i = 0; i < rb.size(); ++i) {
      const uint32_t r = rank_of[i];
      round.buckets.push_back({rb[i], r, next_slot[r]++, edges[i]});
      if (edges[i] == 0) continue;
      for (uint32_t p : {rb[i].src, rb[i].dst}) {
        if (busy[p]) continue;  // the diagonal names its partition twice
        busy[p] = 1;
        if (holders[p] != r) {
          round.transfers.push_back({p, holders[p], r, busy_before[p] == 0});
          holders[p] = r;
        }
      }
    }
    std::sort(round.transfers.begin(), round.transfers.end(),
              [](const Transfer& a, const Transfer& b) { return a.partition < b.partition; });
    busy_before = std::move(busy);
    s.rounds.push_back(std::move(round));
  }
  s.final_holders = std::move(holders);
  return s;
}

std::vector<Bucket> RankSchedule::BucketsOf(uint32_t rank, uint64_t round) const {
  std::vector<Bucket> out;
  if (round >= rounds.size()) return out;
  for (const RankBucket& b : rounds[round].buckets) {
    if (b.rank == rank) out.push_back(b.bucket);
  }
  return out;
}

RankSchedule::Prefetch RankSchedule::PrefetchFor(uint32_t rank, uint64_t round) const {
  Prefetch out;
  if (round >= rounds.size()) return out;
  for (const Transfer& t : rounds[round].transfers) {
    if (t.to == rank) out.receive.push_back(t);
    if (t.from == rank) out.send.push_back(t);
  }
  for (const RankBucket& b : rounds[round].buckets) {
    if (b.rank != rank || b.edges == 0) continue;
    for (uint32_t p : {b.bucket.src, b.bucket.dst}) {
      const bool received = std::any_of(out.receive.begin(), out.receive.end(),
                                        [p](const Transfer& t) { return t.partition == p; });
      if (!received && std::find(out.local.begin(), out.local.end(), p) == out.local.end()) {
        out.local.push_back(p);
      }
    }
  }
  std::sort(out.local.begin(), out.local.end());
  return out;
}

std::vector<uint32_t> RankSchedule::HoldersBefore(uint64_t round) const {
  std::vector<uint32_t> h = initial_holders;
  for (uint64_t g = 0; g < std::min<uint64_t>(round, rounds.size()); ++g) {
    for (const Transfer& t : rounds[g].transfers) h[t.partition] = t.to;
  }
  return h;
}

RankRoundScheduler::RankRoundScheduler(const RankSchedule* schedule, uint32_t rank,
                                       uint64_t first_round)
    : schedule_(schedule), rank_(rank), next_(first_round) {
  for (uint64_t g = 0; g < schedule_->rounds.size(); ++g) {
    std::vector<int32_t> keys;
    const uint64_t mine = Make(g, &keys).buckets.size();
    buckets_ += mine;
    if (g < first_round) taken_ += mine;
  }
}

Round RankRoundScheduler::Make(uint64_t g, std::vector<int32_t>* keys) const {
  Round r;
  r.index = g;
  keys->clear();
  const std::vector<RankBucket>& all = schedule_->rounds[g].buckets;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].rank != rank_ || all[i].edges == 0) continue;
    r.buckets.push_back(all[i].bucket);
    keys->push_back(static_cast<int32_t>(i));
    for (uint32_t p : {all[i].bucket.src, all[i].bucket.dst}) {
      if (std::find(r.partitions.begin(), r.partitions.end(), p) == r.partitions.end()) {
        r.partitions.push_back(p);
      }
    }
  }
  return r;
}

std::optional<Round> RankRoundScheduler::Next() {
  if (next_ >= schedule_->rounds.size()) return std::nullopt;
  std::vector<int32_t> keys;
  Round r = Make(next_++, &keys);
  taken_ += r.buckets.size();
  return r;
}

std::vector<int32_t> RankRoundScheduler::KeysOf(uint64_t g) const {
  std::vector<int32_t> keys;
  if (g < schedule_->rounds.size()) Make(g, &keys);
  return keys;
}

std::vector<std::vector<uint32_t>> RankRoundScheduler::Upcoming(size_t n) const {
  std::vector<std::vector<uint32_t>> out;
  std::vector<int32_t> keys;
  for (uint64_t g = next_; g < schedule_->rounds.size() && out.size() < n; ++g) {
    out.push_back(Make(g, &keys).partitions);
  }
  return out;
}

}  // namespace ember
