// compiler/reference/kernels.h — the reference interpreter's products: convolutions and matrix
// products over a real BLAS (OpenBLAS's dgemm / sgemm), cut into tasks for reference/parallel.h.
//
// Accuracy. The float64 path (the default) accumulates every dot product in double, as the plain
// loops did: the reference matches torch in float64 to 1e-7 on deep nets, and `verify` and the tests
// read it. Only the order of the additions differs from those loops (BLAS blocks the sum), by a few
// units in the 16th digit, which the float32 result almost never sees. The float32 path
// (Accumulation::f32: sgemm, float accumulators) serves the precision simulations, whose values are
// rounded to 16 or 8 bits anyway: about twice as fast, and within float32's rounding (relative
// 1e-6 on a product) of the float64 path.
//
// Integer products (ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul, QConv, QMatMul) take
// the float64 path whatever the accumulation: every operand minus its zero point is an integer of at
// most 8 bits and a sign, every product at most 2^16 and every partial sum far below 2^53, so double
// arithmetic is exact in any order: the int32 accumulators come out exactly.
//
// Threads: each BLAS call runs on one thread (OpenBLAS's own threads are switched off); the tasks
// (output channels x output positions, or row x column blocks) are cut from the shapes alone, so
// every output element is computed the same way whatever the thread count.
#pragma once

#include <cstdint>

#include "ops/window.h"
#include "reference/accumulation.h"

namespace modelc::reference {

/// \brief C = alpha * op(A) * op(B) + beta * C, row-major (op: transposed when t_a / t_b), on the
/// calling thread. A is M x K as op(A) (stored K x M when t_a), B is K x N as op(B).
void gemm(bool t_a, bool t_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc);
void gemm(bool t_a, bool t_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

/// \brief A convolution (Conv, FusedConv's producer, the integer convolutions), NCHW padded to three
/// spatial dims as ops::Window3: Y[n, m, o] = bias[m] + sum over (c, k) of W[m, c, k] *
/// (X[n, g*Cg + c, o*s - p + k*d] - x_zero), the taps in the padding contributing nothing.
/// X is read as Src (float, double, uint8_t, int8_t), W is [M, Cg * k] of S (double: the float64
/// path; float: the float32 path), bias null or M values of S, Y [N, M, out] written as Dst (float,
/// double, int32_t, int64_t; an integer Dst takes the exact integer the double holds, wrapping to
/// int32 as the ONNX accumulators do). Threads over (n, output channels, output positions). Three
/// ways, by shape: stride 1 in 1 or 2 dims, one product per tap over a shifted view of the padded
/// input (no im2col matrix); few output channels per group (depthwise), taps streamed along the
/// rows; anything else, im2col tiles times the weights.
template <class S, class Src, class Dst>
void conv_forward(const ops::Window3& q, const Src* x, S x_zero, const S* w, const S* bias, Dst* y);

/// \brief ConvTranspose: Y[n, g*Mg + m, i*s - p + k*d] += X[n, g*Cg + c, i] * W[g*Cg + c, m, k],
/// Y starting at bias[m] (bias null: 0). X as Src, W [C, Mg * k] of S, Y [N, M, out] as Dst.
/// Threads over (n, output channels): a task owns its channels, so the scatter never races.
template <class S, class Src, class Dst>
void conv_transpose(const ops::Window3& q, const Src* x, const S* w, const S* bias, Dst* y);

/// \brief Batched matrix product Y[t] = op(A[a_index[t]]) * op(B[b_index[t]]) (M x K times K x N,
/// row-major, contiguous; op(A) stored K x M when t_a, op(B) stored N x K when t_b; the indexes count
/// whole matrices, so broadcast batches repeat one), as S. Threads over (batch, row blocks, column
/// blocks).
template <class S>
void matmul(int64_t batches, const int64_t* a_index, const int64_t* b_index, int64_t M, int64_t K, int64_t N,
            const S* A, bool t_a, const S* B, bool t_b, S* Y);

}  // namespace modelc::reference
