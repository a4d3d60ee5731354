#include "partition/bucket_order.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/base/splitmix.h"

namespace ember {
namespace {

using Rng = SplitMix64;

// Distinct streams per kind, so that kinds sharing a seed do not share draws.
constexpr uint64_t kInsideOutSalt = 0x1D5E0A7C3B2F4E61ULL;
constexpr uint64_t kBetaSalt = 0x6B8A2C4F9E1D3057ULL;
constexpr uint64_t kRandomSalt = 0x3C7E5A1B8D2F6049ULL;

uint32_t ClampCapacity(uint32_t num_partitions, uint32_t capacity) {
  return std::max<uint32_t>(2, std::min(capacity, std::max<uint32_t>(num_partitions, 2)));
}

std::vector<Bucket> SequentialOrder(uint32_t p) {
  std::vector<Bucket> order;
  order.reserve(static_cast<size_t>(p) * p);
  for (uint32_t i = 0; i < p; ++i) {
    for (uint32_t j = 0; j < p; ++j) order.push_back({i, j});
  }
  return order;
}

std::vector<Bucket> InsideOutOrder(uint32_t p, uint64_t seed) {
  Rng rng(seed ^ kInsideOutSalt);
  std::vector<Bucket> order;
  order.reserve(static_cast<size_t>(p) * p);
  for (uint32_t layer = p; layer-- > 0;) {
    // PBG's create_layer_of_buckets: the diagonal alone, then one group per
    // p > layer holding the two transposed buckets in random order.
    std::vector<std::vector<Bucket>> groups;
    groups.push_back({{layer, layer}});
    for (uint32_t q = layer + 1; q < p; ++q) {
      std::vector<Bucket> pair = {{q, layer}, {layer, q}};
      rng.Shuffle(pair);
      groups.push_back(std::move(pair));
    }
    rng.Shuffle(groups);
    // Partition `layer` is new unless this is the innermost layer; a layer
    // opened by its diagonal would touch nothing visited, so move the
    // diagonal one place later (any group after it contains an old partition).
    if (layer + 1 < p && groups.front().size() == 1) std::swap(groups[0], groups[1]);
    for (const auto& g : groups) order.insert(order.end(), g.begin(), g.end());
  }
  return order;
}

// Builds BETA by simulating its buffer: each Load brings one partition in
// (evicting one when full) and emits every untrained bucket among residents.
class BetaBuilder {
 public:
  BetaBuilder(uint32_t p, uint32_t c) : p_(p), c_(c), trained_(static_cast<size_t>(p) * p) {
    order_.reserve(static_cast<size_t>(p) * p);
  }

  bool Resident(uint32_t x) const {
    return std::find(buffer_.begin(), buffer_.end(), x) != buffer_.end();
  }

  // Loads x, evicting the first resident for which keep(resident) is false.
  template <typename Keep>
  void Load(uint32_t x, Keep keep) {
    if (buffer_.size() == c_) {
      auto victim = std::find_if(buffer_.begin(), buffer_.end(),
                                 [&](uint32_t r) { return !keep(r); });
      *victim = x;  // the callers always leave one evictable resident
    } else {
      buffer_.push_back(x);
    }
    Emit(x, x);
    for (uint32_t r : buffer_) {
      if (r == x) continue;
      Emit(r, x);
      Emit(x, r);
    }
  }

  std::vector<Bucket> Finish() && { return std::move(order_); }

 private:
  void Emit(uint32_t a, uint32_t b) {
    const size_t k = static_cast<size_t>(a) * p_ + b;
    if (trained_[k]) return;
    trained_[k] = true;
    order_.push_back({a, b});
  }

  uint32_t p_;
  uint32_t c_;
  std::vector<uint32_t> buffer_;
  std::vector<bool> trained_;
  std::vector<Bucket> order_;
};

std::vector<Bucket> BetaOrder(uint32_t p, uint32_t capacity, uint64_t seed) {
  const uint32_t c = ClampCapacity(p, capacity);
  std::vector<uint32_t> perm(p);
  for (uint32_t i = 0; i < p; ++i) perm[i] = i;
  Rng rng(seed ^ kBetaSalt);
  rng.Shuffle(perm);

  // Groups of c-1 consecutive entries of perm; group g is [g*(c-1), ...).
  const uint32_t g_size = c - 1;
  const uint32_t num_groups = (p + g_size - 1) / g_size;
  auto group_begin = [&](uint32_t g) { return std::min(p, g * g_size); };

  BetaBuilder b(p, c);
  for (uint32_t g = 0; g < num_groups; ++g) {
    const uint32_t lo = group_begin(g), hi = group_begin(g + 1);
    auto in_group = [&](uint32_t x) {
      for (uint32_t i = lo; i < hi; ++i) {
        if (perm[i] == x) return true;
      }
      return false;
    };
    // Bring in the fixed group, evicting partitions of earlier groups (all
    // their buckets are trained). Members meet each other here.
    for (uint32_t i = lo; i < hi; ++i) {
      if (!b.Resident(perm[i])) b.Load(perm[i], in_group);
    }
    // Cycle every later partition through the remaining slot: groups g+2..
    // first, group g+1 last, so that the partition left resident belongs to
    // the next fixed group.
    const uint32_t next_lo = hi, next_hi = group_begin(g + 2);
    for (uint32_t i = next_hi; i < p; ++i) b.Load(perm[i], in_group);
    for (uint32_t i = next_lo; i < next_hi; ++i) b.Load(perm[i], in_group);
  }
  return std::move(b).Finish();
}

std::vector<Bucket> RandomOrder(uint32_t p, uint64_t seed) {
  std::vector<Bucket> order = SequentialOrder(p);
  Rng rng(seed ^ kRandomSalt);
  rng.Shuffle(order);
  return order;
}

}  // namespace

std::vector<Bucket> BucketOrder(BucketOrderKind kind, uint32_t num_partitions,
                                uint32_t buffer_capacity, uint64_t seed) {
  switch (kind) {
    case BucketOrderKind::kInsideOut:
      return InsideOutOrder(num_partitions, seed);
    case BucketOrderKind::kBeta:
      return BetaOrder(num_partitions, buffer_capacity, seed);
    case BucketOrderKind::kSequential:
      return SequentialOrder(num_partitions);
    case BucketOrderKind::kRandom:
      return RandomOrder(num_partitions, seed);
  }
  return {};
}

uint64_t CountPartitionLoads(std::span<const Bucket> order, uint32_t num_partitions,
                             uint32_t capacity) {
  const size_t cap = std::max<uint32_t>(capacity, 2);
  const size_t n = order.size();
  constexpr size_t kNever = std::numeric_limits<size_t>::max();
  // next_use[t]: for bucket t's src and dst, the next position > t using them.
  std::vector<size_t> next_src(n), next_dst(n);
  std::vector<size_t> upcoming(num_partitions, kNever);
  for (size_t t = n; t-- > 0;) {
    next_src[t] = upcoming[order[t].src];
    next_dst[t] = upcoming[order[t].dst];
    upcoming[order[t].src] = t;
    upcoming[order[t].dst] = t;
  }
  // next[x]: next use of resident x after the current position.
  std::vector<size_t> next(num_partitions, kNever);
  std::vector<uint32_t> resident;
  resident.reserve(cap);
  uint64_t loads = 0;
  for (size_t t = 0; t < n; ++t) {
    const uint32_t a = order[t].src, b = order[t].dst;
    for (uint32_t x : {a, b}) {
      if (std::find(resident.begin(), resident.end(), x) != resident.end()) continue;
      ++loads;
      if (resident.size() < cap) {
        resident.push_back(x);
        continue;
      }
      size_t victim = resident.size();
      for (size_t i = 0; i < resident.size(); ++i) {
        const uint32_t r = resident[i];
        if (r == a || r == b) continue;
        if (victim == resident.size() || next[r] > next[resident[victim]]) victim = i;
      }
      resident[victim] = x;
    }
    next[a] = next_src[t];
    next[b] = next_dst[t];
  }
  return loads;
}

uint64_t PartitionLoadLowerBound(uint32_t num_partitions, uint32_t capacity) {
  const uint64_t p = num_partitions;
  const uint64_t c = ClampCapacity(num_partitions, capacity);
  if (p <= c) return p;
  const uint64_t pairs_left = p * (p - 1) / 2 - c * (c - 1) / 2;
  return c + (pairs_left + (c - 2)) / (c - 1);
}

uint32_t RoundLookahead(uint32_t num_partitions, bool all_resident) {
  if (!all_resident) return kOutOfCoreLookahead;
  const uint64_t buckets = uint64_t{num_partitions} * num_partitions;
  return static_cast<uint32_t>(
      std::clamp<uint64_t>(buckets, kOutOfCoreLookahead, std::numeric_limits<uint32_t>::max()));
}

std::vector<std::vector<Bucket>> FormRounds(std::span<const Bucket> order,
                                            uint32_t num_trainers, uint32_t lookahead) {
  const size_t trainers = std::max<uint32_t>(num_trainers, 1);
  const size_t window = std::max<uint32_t>(lookahead, 1);
  const size_t n = order.size();
  // The remaining buckets as a singly linked list over positions in `order`
  // (position n is the end), so a round costs O(window), not O(n).
  std::vector<size_t> next(n + 1);
  for (size_t i = 0; i <= n; ++i) next[i] = i + 1;
  size_t head = 0;  // first remaining position; n when none remain
  std::vector<std::vector<Bucket>> rounds;
  std::vector<uint32_t> used;  // partitions taken by the current round
  while (head < n) {
    std::vector<Bucket> round;
    used.clear();
    size_t prev = n;  // the remaining position before `cur`; n: none
    size_t cur = head;
    for (size_t scanned = 0; cur < n && scanned < window && round.size() < trainers;
         ++scanned) {
      const Bucket& bucket = order[cur];
      const size_t after = next[cur];
      if (std::find(used.begin(), used.end(), bucket.src) == used.end() &&
          std::find(used.begin(), used.end(), bucket.dst) == used.end()) {
        round.push_back(bucket);
        used.push_back(bucket.src);
        used.push_back(bucket.dst);
        if (prev == n) {
          head = after;
        } else {
          next[prev] = after;
        }
      } else {
        prev = cur;
      }
      cur = after;
    }
    rounds.push_back(std::move(round));
  }
  return rounds;
}

std::vector<Bucket> WithoutEmptyBuckets(std::vector<Bucket> order,
                                        std::span<const uint64_t> bucket_edges,
                                        uint32_t num_partitions) {
  std::erase_if(order, [&](const Bucket& b) {
    return bucket_edges[uint64_t{b.src} * num_partitions + b.dst] == 0;
  });
  return order;
}

}  // namespace ember
