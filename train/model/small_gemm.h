// Products of the chunk step's small matrices (tens to a few hundred rows,
// all in cache), on AVX-512 register tiles where the CPU has AVX-512F, else
// on the BLAS.
//
// Why not only the BLAS: at the chunk's shapes (50 × 100 × 100) OpenBLAS's
// Cooperlake kernels run at 40-63 % of the FMA peak, as they pack both
// operands for every call; these kernels read the operands where they lie
// and keep a 6 × 64 tile of C in registers (tools/bench/score_bench.cc
// measures both side by side).
//
// Layout: B and C are row-major with leading dimensions ldb and ldc; A is
// read through two strides, A(r, t) = a[r · a_row + t · a_depth], so that the
// one kernel serves A, Aᵀ and a transposed copy alike.
#ifndef EMBER_TRAIN_MODEL_SMALL_GEMM_H_
#define EMBER_TRAIN_MODEL_SMALL_GEMM_H_

#include <cstdint>

namespace ember {

// C (rows × cols) = A (rows × depth) · B (depth × cols), plus C's old values
// when `accumulate`. C may not overlap A or B. depth == 0 leaves C zero (or
// unchanged when accumulating).
// REQUIRES: rows, cols, depth >= 0; one of a_row, a_depth is 1 (the BLAS
// fallback needs a unit stride).
void SmallGemm(int rows, int cols, int depth, const float* a, int64_t a_row,
               int64_t a_depth, const float* b, int64_t ldb, float* c,
               int64_t ldc, bool accumulate);

// y (cols × rows, leading dimension ldy) = xᵀ, x rows × cols with ldx.
void Transpose(int rows, int cols, const float* x, int64_t ldx, float* y,
               int64_t ldy);

// Whether SmallGemm runs its own AVX-512 kernel on this CPU (else the BLAS).
bool SmallGemmUsesAvx512();

// Tests only: with `force`, SmallGemm and Transpose take the path of a CPU
// without AVX-512 (the BLAS, a scalar transpose) until called again with
// false. Not to be called while other threads multiply.
void ForceSmallGemmFallbackForTesting(bool force);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_SMALL_GEMM_H_
