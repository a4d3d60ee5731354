// Small, fast, counter-seeded random number generators for the synthetic
// graph generators (`ember gen`). Not cryptographic.
//
// Determinism contract: every stream is a pure function of (seed, stream id,
// chunk index), so a chunk's content never depends on which thread runs it
// or in what order chunks are generated.
#ifndef EMBER_TOOLS_GEN_GEN_RANDOM_H_
#define EMBER_TOOLS_GEN_GEN_RANDOM_H_

#include <cstdint>

namespace ember::tools::gen {

// SplitMix64 finaliser: a bijective 64-bit mixer.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Hashes (seed, stream, index) to a 64-bit key; distinct streams (e.g. R-MAT
// edges vs. the id scrambler) use distinct `stream` tags.
inline uint64_t StreamKey(uint64_t seed, uint64_t stream, uint64_t index) {
  return Mix64(Mix64(Mix64(seed) ^ stream) + index);
}

// xoshiro256** (Blackman & Vigna), seeded from one 64-bit key via SplitMix64
// so that the state is never all zero.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t key) {
    for (uint64_t& w : s_) {
      key += 0x9e3779b97f4a7c15ULL;
      uint64_t z = key;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // A value in [0, n) (Lemire's multiply-shift; bias below n / 2^64).
  // REQUIRES: n > 0.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >>
                                 64);
  }

  // A double in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace ember::tools::gen

#endif  // EMBER_TOOLS_GEN_GEN_RANDOM_H_
