#include "partition/partitioner.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "storage/base/node_hash.h"

namespace ember {
namespace {

constexpr uint64_t kPartitionSalt = 0x5a17c0ffee5eed01ULL;
constexpr uint64_t kSplitSalt = 0x7e57da7a5b117000ULL;

// Maps a uniform 64-bit value to [0, n) without modulo bias worth noting.
uint32_t Reduce(uint64_t x, uint32_t n) {
  return static_cast<uint32_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}

}  // namespace

uint32_t HashPartition(uint64_t node_key, uint32_t num_partitions) {
  return Reduce(Mix64(node_key, kPartitionSalt), num_partitions);
}

DegreeBalancer::DegreeBalancer(uint32_t num_partitions)
    : loads_(num_partitions, 0) {
  for (uint32_t p = 0; p < num_partitions; ++p) heap_.push({0, p});
}

uint32_t DegreeBalancer::Assign(uint64_t degree) {
  auto [load, p] = heap_.top();
  heap_.pop();
  loads_[p] = load + degree;
  heap_.push({loads_[p], p});
  return p;
}

absl::StatusOr<SplitFractions> ParseSplitFractions(std::string_view text) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(text.data(), text.size()), ',');
  if (parts.empty() || parts.size() > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--split '", std::string(text), "': expected TRAIN[,VALID[,TEST]] fractions"));
  }
  SplitFractions f;
  f.fraction = {0, 0, 0};
  double sum = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    double v;
    if (!absl::SimpleAtod(parts[i], &v) || !(v >= 0) || v > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--split '", std::string(text), "': '", parts[i], "' is not a fraction in [0,1]"));
    }
    f.fraction[i] = v;
    sum += v;
  }
  if (std::abs(sum - 1.0) > 1e-6) {
    return absl::InvalidArgumentError(
        absl::StrCat("--split '", std::string(text), "': fractions sum to ", sum, ", not 1"));
  }
  return f;
}

Split SplitOfEdge(const SplitFractions& fractions, uint64_t seed,
                  uint64_t src_key, uint64_t rel_key, uint64_t dst_key) {
  if (fractions.fraction[0] >= 1.0) return Split::kTrain;
  uint64_t h = Mix64(Mix64(seed, kSplitSalt), Mix64(src_key, Mix64(rel_key, dst_key)));
  double u = static_cast<double>(h >> 11) * 0x1.0p-53;
  if (u < fractions.fraction[0]) return Split::kTrain;
  if (u < fractions.fraction[0] + fractions.fraction[1]) return Split::kValid;
  return Split::kTest;
}

}  // namespace ember
