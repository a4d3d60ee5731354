#include "train/model/init.h"

#include <cmath>
#include <numbers>

#include "storage/base/splitmix.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {


}  // namespace

void InitEmbeddings(InitDistribution dist, float scale, uint64_t seed,
                    int64_t first_row, int64_t num_rows, int dim, float* out) {
  EMBER_CHECK(first_row >= 0 && num_rows >= 0 && dim >= 1 && scale >= 0.0f);
  const uint64_t seed_key = SplitMix64(seed).Next();
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint64_t row = static_cast<uint64_t>(first_row + r);
    SplitMix64 rng(seed_key ^ SplitMix64(row).Next());
    float* o = out + r * dim;
    if (dist == InitDistribution::kUniform) {
      for (int k = 0; k < dim; ++k) {
        o[k] = static_cast<float>((2.0 * rng.NextOpenUnit() - 1.0) * scale);
      }
      continue;
    }
    // Box-Muller, two normals per pair of uniforms.
    for (int k = 0; k < dim; k += 2) {
      const double radius = std::sqrt(-2.0 * std::log(rng.NextOpenUnit()));
      const double angle = 2.0 * std::numbers::pi * rng.NextOpenUnit();
      o[k] = static_cast<float>(radius * std::cos(angle) * scale);
      if (k + 1 < dim)
        o[k + 1] = static_cast<float>(radius * std::sin(angle) * scale);
    }
  }
}

}  // namespace ember
