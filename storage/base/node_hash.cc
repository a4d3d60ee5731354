#include "storage/base/node_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ember {
namespace {

// splitmix64's finalizer and its inverse: both are bijections on 64 bits.
constexpr uint64_t kMul1 = 0xbf58476d1ce4e5b9ULL;
constexpr uint64_t kMul2 = 0x94d049bb133111ebULL;
constexpr uint64_t kInvMul1 = 0x96de1b173f119089ULL;  // kMul1^-1 mod 2^64
constexpr uint64_t kInvMul2 = 0x319642b2d24d8ec3ULL;  // kMul2^-1 mod 2^64

uint64_t Finalize(uint64_t x) {
  x ^= x >> 30;
  x *= kMul1;
  x ^= x >> 27;
  x *= kMul2;
  x ^= x >> 31;
  return x;
}

uint64_t UnshiftXor(uint64_t x, int shift) {
  uint64_t result = x;
  for (int i = shift; i < 64; i += shift) result = x ^ (result >> shift);
  return result;
}

uint64_t InverseFinalize(uint64_t x) {
  x = UnshiftXor(x, 31);
  x *= kInvMul2;
  x = UnshiftXor(x, 27);
  x *= kInvMul1;
  x = UnshiftXor(x, 30);
  return x;
}

}  // namespace

uint64_t StringNodeKey(std::string_view name) {
  return XXH3_64bits(name.data(), name.size());
}

uint64_t IntegerNodeKey(uint64_t id) { return Finalize(id); }

uint64_t IntegerFromNodeKey(uint64_t key) { return InverseFinalize(key); }

uint64_t Mix64(uint64_t a, uint64_t b) {
  return Finalize(a ^ Finalize(b + 0x9e3779b97f4a7c15ULL));
}

}  // namespace ember
