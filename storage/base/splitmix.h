// SplitMix64 (Steele, Lea, Flood 2014): a tiny full-period generator whose
// outputs pass BigCrush. ember uses it wherever results must be the same on
// every platform and standard library (std:: distributions are not), seeded
// per stream (per batch, per bucket, per row) for determinism under threads.
#ifndef EMBER_STORAGE_BASE_SPLITMIX_H_
#define EMBER_STORAGE_BASE_SPLITMIX_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace ember {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), up to a bias of n / 2^64.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Uniform in (0, 1): 53 random bits, offset by half a step.
  double NextOpenUnit() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  // Fisher-Yates.
  template <typename T>
  void Shuffle(std::span<T> v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    Shuffle(std::span<T>(v));
  }

 private:
  uint64_t state_;
};

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_SPLITMIX_H_
