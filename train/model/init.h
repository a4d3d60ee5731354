// Deterministic embedding initialization.
#ifndef EMBER_TRAIN_MODEL_INIT_H_
#define EMBER_TRAIN_MODEL_INIT_H_

#include <cstdint>

namespace ember {

enum class InitDistribution : uint8_t {
  kNormal = 0,   // N(0, scale^2): PBG's randn(...) * init_scale.
  kUniform = 1,  // U(-scale, scale).
};

// PBG's default init_scale.
inline constexpr float kDefaultInitScale = 1e-3f;

// Fills `out` with rows [first_row, first_row + num_rows) of a table whose
// every row depends only on (seed, global row index): any split of a table
// into ranges (partitions, threads) yields the same values, on every
// platform (no std:: distributions, whose output is implementation-defined).
// Large tables are filled by parallel tasks over row ranges (oneTBB,
// through storage/base/parallel.h).
// REQUIRES: out holds num_rows × dim floats; first_row, num_rows >= 0;
// dim >= 1; scale >= 0.
void InitEmbeddings(InitDistribution dist, float scale, uint64_t seed,
                    int64_t first_row, int64_t num_rows, int dim, float* out);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_INIT_H_
