#include "train/model/init.h"

#include <cmath>

#include "storage/base/parallel.h"
#include "storage/base/splitmix.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

// Rows per parallel task: about 400 KB of output at dim 100, enough that a
// task's cost dwarfs scheduling it (a smaller table is one task).
constexpr int64_t kRowsPerTask = 1024;

// 24 random bits to (-1, 1): (bits - 2^23 + 0.5) / 2^23.
inline float SignedUnit(int32_t bits24) {
  return (static_cast<float>(bits24 - (1 << 23)) + 0.5f) * 0x1.0p-23f;
}

void InitRows(InitDistribution dist, float scale, uint64_t seed_key, int64_t first_row,
              int64_t begin, int64_t end, int dim, float* out) {
  for (int64_t r = begin; r < end; ++r) {
    SplitMix64 rng(seed_key ^ SplitMix64(static_cast<uint64_t>(first_row + r)).Next());
    float* o = out + r * dim;
    if (dist == InitDistribution::kUniform) {
      for (int k = 0; k < dim; ++k) {
        o[k] = static_cast<float>((2.0 * rng.NextOpenUnit() - 1.0) * scale);
      }
      continue;
    }
    // Marsaglia's polar method in float: two normals per point accepted in
    // the unit disc (with probability pi/4), one log and no trigonometry;
    // both coordinates from one draw: 24 bits each, centred and offset by
    // half a step, exact in float and never 0 (so s > 0).
    for (int k = 0; k < dim; k += 2) {
      float u, v, s;
      do {
        const uint64_t bits = rng.Next();
        u = SignedUnit(static_cast<int32_t>(bits >> 40));
        v = SignedUnit(static_cast<int32_t>((bits >> 8) & 0xffffff));
        s = u * u + v * v;
      } while (s >= 1.0f);
      const float factor = std::sqrt(-2.0f * std::log(s) / s) * scale;
      o[k] = u * factor;
      if (k + 1 < dim) o[k + 1] = v * factor;
    }
  }
}

}  // namespace

void InitEmbeddings(InitDistribution dist, float scale, uint64_t seed,
                    int64_t first_row, int64_t num_rows, int dim, float* out) {
  EMBER_CHECK(first_row >= 0 && num_rows >= 0 && dim >= 1 && scale >= 0.0f);
  const uint64_t seed_key = SplitMix64(seed).Next();
  ParallelForRanges(0, static_cast<size_t>(num_rows), kRowsPerTask, [&](size_t begin, size_t end) {
    InitRows(dist, scale, seed_key, first_row, static_cast<int64_t>(begin),
             static_cast<int64_t>(end), dim, out);
  });
}

}  // namespace ember
