// compiler/schedule/linear.h — a convolution, pool or matrix product of the Schedule as its
// templates see it: the batched strided GEMM of a Gemm / MatMul / Einsum kernel (strides from its
// views), and the window geometry of a Conv / ConvTranspose / pool kernel (ops/window.h, checked
// against the views). The tactics stage reads these to choose tiles and engines; the gemm, conv,
// pool, conv_depthwise and conv_transpose families print them as template arguments.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/window.h"
#include "schedule/schedule.h"

namespace modelc::linear {

// ---- GEMM lowering -----------------------------------------------------------------------------

/// \brief Element strides of a matrix operand (templates/gemm.cuh Strides<>): per batch dim, then
/// row and column.
struct MatrixStrides {
  std::array<int64_t, 3> batch{0, 0, 0};
  int64_t row = 0, col = 0;
  bool operator==(const MatrixStrides& o) const { return batch == o.batch && row == o.row && col == o.col; }
};

/// \brief A Gemm / MatMul / Einsum node as a batched strided GEMM, or (one-operand Einsum) as a
/// strided sum.
struct GemmLowering {
  enum class Kind { gemm, strided_sum } kind = Kind::gemm;
  // gemm: Y[b, m, n] = alpha * sum_k A[b, m, k] * B[b, k, n] + beta * C[b, m, n]
  std::array<int64_t, 3> batch{1, 1, 1};  ///< batch dims, outermost first (unused: 1)
  int64_t M = 1, N = 1, K = 1;
  MatrixStrides a, b, y, c;  ///< A: rows m, cols k; B: rows k, cols n; Y and C: rows m, cols n
  /// A horizontally fused product (Kernel::ranges): each range's output (rows m, columns n - its
  /// begin; at most the innermost batch dim left), and y all zeros (no Y of its own).
  std::vector<MatrixStrides> range_y;
  bool has_c = false;
  double alpha = 1.0, beta = 1.0;
  int a_input = 0, b_input = 1, c_input = 2;  ///< which node inputs are A, B, C
  // strided_sum: Y[o] = sum over r of X[out(o) + sum(r)], Y dense
  std::vector<int64_t> out_dims, out_strides, sum_dims, sum_strides;
  std::string what;  ///< one line: "[2x3x5] x [5x7] -> [2x3x7]" / "ij->i over [3x4]"

  int64_t batch_count() const { return batch[0] * batch[1] * batch[2]; }
};

/// \brief Lowers k (Gemm, MatMul or Einsum, or their fused forms; its views give the strides);
/// with k.batch_as_rows, the batch dims B broadcasts over that continue A's and Y's rows are rows.
/// A horizontally fused product (k.ranges; B the siblings' B's side by side) writes each range's
/// output (range_y).
/// Throws Error naming the node for what the templates do not run (an Einsum that is not a batched
/// matmul up to transposes, more than 3 batch dims that do not merge, 32-bit index overflow).
GemmLowering lower_gemm(const Kernel& k);

// ---- convolution and pooling geometry ----------------------------------------------------------

/// \brief Window geometry padded to 3 spatial dims, as conv.cuh's Shape (ops/window.h).
using ConvGeometry = ops::Window3;

/// Conv / FusedConv (ops::conv_geometry of k's node), checked against Y's view.
ConvGeometry conv_geometry(const Kernel& k);
/// ConvTranspose (ops::conv_transpose_geometry), checked against Y's view.
ConvGeometry conv_transpose_geometry(const Kernel& k);
/// MaxPool / AveragePool (ops::pool_geometry: C = M = channels), checked against Y's view.
ConvGeometry pool_geometry(const Kernel& k);

// ---- checks and facts of views ------------------------------------------------------------------

/// Throws Error naming the node when a view has 2^31 elements or more (32-bit indexing).
void check_size(const Kernel& k);
/// Throws an internal Error when a view is strided other than in its unit dims (layout.h
/// dense_view: the conv and pool templates' NCHW forms take dense tensors).
void require_dense(const Kernel& k);
/// Throws Error naming k's node (or the kernel) with the message and hint.
[[noreturn]] void refuse_node(const Kernel& k, const std::string& message, const std::string& hint = {});

/// \brief The channel pitch of a channels-last view of logical shape [N, C, spatial...] (strides
/// [S*Cp, 1, spatial C-order * Cp...]: schedule/layout.h channels_last_view), or 0 when the view is
/// not channels-last.
int64_t channels_last_pitch(const TensorView& v);
/// A view's byte offset is a multiple of 16 (16-byte vector loads and stores; 256 in the arena).
bool aligned16(const TensorView& v);
/// True when the epilogue's operands (inputs 2..: bias / C, residual) do not share one element
/// type: the tensor-core epilogues (and the grouped and tiled depthwise ones) read them as one.
bool mixed_epilogue_types(const Kernel& k);

/// \brief The GEMM depth of a channels-last convolution on the tensor-core template: taps x X's
/// channel pitch, or in the compact form (W stored compact: schedule/layout.h WeightStorage) taps x
/// C, with W's rows `row` long (K rounded up to 8).
struct TcConvDepth {
  int64_t K = 0, taps = 0, pitch = 0, row = 0;
  bool compact = false;
};
TcConvDepth tc_conv_depth(const Kernel& k);

/// \brief True for FusedConv / FusedGemm / FusedMatMul (a producer with a fused epilogue).
bool is_fused(const Node& n);
/// \brief The op a kernel's node computes before any epilogue: "Conv" for FusedConv, ...
std::string producer_op(const Node& n);
/// "[1x3x32x32]".
std::string shape_text(const Shape& s);

}  // namespace modelc::linear
