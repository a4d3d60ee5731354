// bf16 products for the chunk step (--precision bf16): operands rounded to
// bfloat16 (round to nearest even), products summed in fp32, on AVX512-BF16's
// VDPBF16PS, which does 32 multiply-adds where an AVX-512 FMA does 16
// (measured on 2 Zen 5 cores: 422-429 against 229-230 GFLOP/s per core).
//
// Operands are "pair matrices": each uint32 entry holds the bf16 values of
// two consecutive depth indices, t = 2p in its low half and t = 2p + 1 in
// its high half (the layout VDPBF16PS multiplies); where the depth is odd,
// the last pair's high half is zero. A product over `depth` then runs over
// PairCount(depth) pairs.
#ifndef EMBER_TRAIN_MODEL_BF16_GEMM_H_
#define EMBER_TRAIN_MODEL_BF16_GEMM_H_

#include <cstdint>

namespace ember {

// Whether this CPU has AVX-512F, AVX-512BW and AVX512-BF16, which every
// function below requires (every CPU with AVX512-BF16 has the other two).
bool Bf16GemmAvailable();

// Pairs covering `depth` values.
inline int PairCount(int depth) { return (depth + 1) / 2; }

// out(r, p) = pair(x(r, 2p), x(r, 2p + 1)) for r < rows, p < PairCount(depth):
// the rows of x (rows × depth, row stride ldx) as pair rows (row stride ldo
// uint32s).
void PackPairsAlongRows(int rows, int depth, const float* x, int64_t ldx, uint32_t* out,
                        int64_t ldo);

// out(p, j) = pair(x(2p, j), x(2p + 1, j)) for p < PairCount(depth), j < cols:
// x (depth × cols, row stride ldx) paired down its columns (row stride ldo).
void PackPairsAcrossRows(int depth, int cols, const float* x, int64_t ldx, uint32_t* out,
                         int64_t ldo);

// out(p, j) = pair(x(j, 2p), x(j, 2p + 1)) for p < PairCount(depth), j < cols:
// xᵀ, x being cols × depth (row stride ldx), as pair rows (row stride ldo):
// the B operand of X' · xᵀ.
void PackPairsTransposed(int cols, int depth, const float* x, int64_t ldx, uint32_t* out,
                         int64_t ldo);

// C (rows × cols, row stride ldc) = A · B over `pairs` pairs, plus C's old
// values when `accumulate`: A(r, p) = a[r · a_row + p · a_depth] and
// B(p, j) = b[p · ldb + j], both pair matrices. pairs == 0 leaves C zero (or
// unchanged when accumulating). C may not overlap A or B.
// REQUIRES: Bf16GemmAvailable(); rows, cols, pairs >= 0.
void Bf16Gemm(int rows, int cols, int pairs, const uint32_t* a, int64_t a_row, int64_t a_depth,
              const uint32_t* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);

// The bf16 value nearest x (ties to even) as bits, as the packing rounds:
// for tests and scalar references.
uint16_t ToBf16(float x);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_BF16_GEMM_H_
