// codegen/families/linear.h — what the gemm, conv, conv_depthwise, conv_transpose and pool families
// compute from a Kernel before printing it: the GEMM lowering of Gemm / MatMul / Einsum, the
// convolution and pooling geometry (pads resolved), and the tile heuristic. The emit functions
// print these numbers as template arguments; tests/templates check them against hand-written
// instantiations.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/family.h"

namespace modelc::linear {

// ---- tiles -------------------------------------------------------------------------------------

/// \brief A block tile of the SIMT GEMM main loop (templates/gemm.cuh Tile<BM, BN, BK, TM, TN>).
struct TileConfig {
  int bm = 64, bn = 64, bk = 8, tm = 4, tn = 8;
  int threads() const { return (bm / tm) * (bn / tn); }
  std::string name() const;  ///< "128x64x8 t8x8"
};

/// \brief The tile heuristic for a GEMM of `batch` x (M x N) outputs (a convolution: groups x
/// (output channels of a group x output pixels)):
///   M <= 16: 16x64x16 t2x4 (skinny rows: a GEMV-like product, e.g. a batch-1 fully connected layer);
///   N <= 16: 64x16x16 t4x2 (skinny columns);
///   otherwise the largest of 128x64 / 64x128 (the long side of the tile along the long side of the
///   problem), 64x64, 32x32 whose block count reaches one block per SM (target.sm_count), so big
///   problems get the tile with the most reuse and small ones still spread over the GPU; 32x32
///   when none does.
/// Every configuration runs 128 threads. `why` receives a one-line reason.
TileConfig choose_tile(int64_t batch, int64_t M, int64_t N, const Target& target, std::string* why = nullptr);

/// Throws Error naming the node when the tile's row count exceeds the grid's y limit.
void check_grid(const Kernel& k, const TileConfig& t, int64_t M);
/// Throws Error naming k's node (or the kernel) with the message and hint.
[[noreturn]] void refuse_node(const Kernel& k, const std::string& message, const std::string& hint = {});

/// \brief k.tactic <-> TileConfig (BM, BN, BK, TM, TN).
void record_tile(Kernel& k, const TileConfig& t);
TileConfig tile_of(const Kernel& k);  ///< from k.tactic; throws an internal Error when missing

// ---- tensor-core tiles (templates/tensor_core.cuh) -------------------------------------------

/// \brief A tensor-core tactic: tc::Tile<BM, BN, BK, WarpsM, WarpsN, async>.
struct TcTile {
  int bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2;
  bool async = false;  ///< cp.async staging (sm_80 and newer), else through registers
  int threads() const { return 32 * warps_m * warps_n; }
  /// Static shared memory of a block (the larger of both staging orientations, or the epilogue
  /// scratch): what the heuristic holds against Target::smem_per_block.
  int smem_bytes(bool fp16_accumulate) const;
  std::string name() const;  ///< "128x64x32 w2x2 cp.async"
};

/// \brief The tensor-core tile heuristic for `batch` GEMMs of M x N (x K) on `target`. Candidates,
/// largest first: 128x128 (8 warps), 128x64, 64x128, 64x64, 32x64 (4 warps), all 32 deep; those
/// whose shared memory exceeds target.smem_per_block are skipped. Each gets the score
///   tile efficiency (useful / computed MACs: M x N over the tiles' rounded-up extent)
///   x occupancy (blocks / SMs below one wave; above, blocks / (waves x SMs): the last wave's idle SMs)
///   x reuse (the tile's MACs per loaded element, BM BN / (BM + BN), relative to 128x128's)
/// and the highest score wins (ties: the larger tile). Staging is cp.async on sm_80 and newer.
/// `why` receives a one-line reason.
TcTile choose_tc_tile(int64_t batch, int64_t M, int64_t N, const Target& target, std::string* why = nullptr);
/// k.tactic entries of a tensor-core tile (BM, BN, BK, warps_m, warps_n, async, threads).
std::map<std::string, int64_t> tc_tactic(const TcTile& t, bool fp16_accumulate);
/// The tile of a tactic map (k.tactic or an entry of k.arch_tactic); internal Error when incomplete.
TcTile tc_tile_of(const Kernel& k, const std::map<std::string, int64_t>& tactic);
/// Below this many MACs (M x N x K per product) a GEMM stays SIMT ("tiny GEMM"): a 32 x 32 x 32
/// product, one small block, where staging and fragment traffic outweigh the MMAs.
constexpr int64_t kTinyGemmMacs = 32 * 32 * 32;

/// \brief Plans a tensor-core kernel for every target: k.tactic = the first (oldest) target's
/// choice, k.arch_tactic = each target's where they differ; returns the first target's reason
/// (plus " (sm_90: ...)" for each arch that differs).
std::string plan_tc_archs(Kernel& k, const std::vector<Target>& targets, int64_t batch, int64_t M, int64_t N);

/// \brief The launches of a tensor-core kernel: one of decl(the tile of k.tactic); with
/// k.arch_tactic, an arch variant per planned arch (Launch::min_sm: the device runs the tactic of
/// the newest planned arch not above its own, the oldest's below them). Each comment is `comment`
/// and the tile. Nothing to run when the first output is empty.
KernelLaunches tc_launches(const Kernel& k, const std::string& comment,
                           const std::function<std::string(const TcTile&)>& decl, const std::vector<LaunchParam>& params);

/// \brief The channel pitch of a channels-last view of logical shape [N, C, spatial...] (strides
/// [S*Cp, 1, spatial C-order * Cp...]: schedule/layout.h channels_last_view), or 0
/// when the view is not channels-last.
int64_t channels_last_pitch(const TensorView& v);
/// A view's byte offset is a multiple of 16 (16-byte vector loads and stores; 256 in the arena).
bool aligned16(const TensorView& v);

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
  bool has_c = false;
  double alpha = 1.0, beta = 1.0;
  int a_input = 0, b_input = 1, c_input = 2;  ///< which node inputs are A, B, C
  // strided_sum: Y[o] = sum over r of X[out(o) + sum(r)], Y dense
  std::vector<int64_t> out_dims, out_strides, sum_dims, sum_strides;
  std::string what;  ///< one line: "[2x3x5] x [5x7] -> [2x3x7]" / "ij->i over [3x4]"

  int64_t batch_count() const { return batch[0] * batch[1] * batch[2]; }
};

/// \brief Lowers k (Gemm, MatMul or Einsum; its views give the strides). Throws Error naming the
/// node for what the templates do not run (an Einsum that is not a batched matmul up to
/// transposes, more than 3 batch dims that do not merge).
GemmLowering lower_gemm(const Kernel& k);

// ---- convolution and pooling geometry ----------------------------------------------------------

/// \brief Convolution geometry padded to 3 spatial dims (leading unit dims), as conv.cuh's Shape:
/// batch N, input channels C, output channels M, groups G; per dim input, kernel, output, stride,
/// begin pad, end pad, dilation.
struct ConvGeometry {
  int64_t N = 1, C = 1, M = 1, G = 1;
  int spatial = 2;  ///< the model's spatial rank (1 to 3)
  std::array<int64_t, 3> in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0},
      pad_end{0, 0, 0}, dilation{1, 1, 1};
  int64_t Cg() const { return C / G; }
  int64_t Mg() const { return M / G; }
  int64_t out_pixels() const { return out[0] * out[1] * out[2]; }
  std::string str() const;  ///< "k3x3 s1x1 p1x1 d1x1 g2" (the model's rank; no g when 1)
};

/// Conv (the node of k; X, W, Y from its views). Pads follow compiler/ops/conv.cpp (auto_pad).
ConvGeometry conv_geometry(const Kernel& k);
/// ConvTranspose: M = W dim 1 * group; pads from output_shape / output_padding / auto_pad.
ConvGeometry conv_transpose_geometry(const Kernel& k);
/// MaxPool / AveragePool (C = M = channels; kernel = the window); pads follow compiler/ops/pool.cpp.
ConvGeometry pool_geometry(const Kernel& k);

// ---- emitting ----------------------------------------------------------------------------------

/// \brief The one launch of a kernel: the instantiation `type` with `params`, commented `comment`
/// (the emitter writes the kernel's own comment above the launch). Nothing to run when the first
/// output is empty.
KernelLaunches linear_launch(const Kernel& k, const std::string& comment, const std::string& type,
                             std::vector<LaunchParam> params);
/// Throws Error naming the node when a view has 2^31 elements or more (32-bit indexing).
void check_size(const Kernel& k);
/// Throws an internal Error when a view is strided (the conv and pool templates take dense tensors).
void require_dense(const Kernel& k);
/// The epilogue of a convolution: EpilogueBias when input 2 (B) is present, else EpilogueIdentity;
/// a FusedConv's EpilogueFused. Its Params fields go to *params ("epilogue.bias", ...), a comment
/// fragment to *what.
std::string bias_epilogue(const Kernel& k, const EmitContext& ctx, const std::string& T, std::vector<LaunchParam>* params,
                          std::string* what);

/// \brief True for FusedConv / FusedGemm / FusedMatMul (a producer with a fused epilogue).
bool is_fused(const Node& n);
/// \brief The op a kernel's node computes before any epilogue: "Conv" for FusedConv, ...
std::string producer_op(const Node& n);
/// \brief The epilogue of a fused node as `mc::gemm::EpilogueFused<T, bias strides, has bias, activation,
/// residual position>`; the Params fields it needs go to *params (alpha and beta where not 1, the
/// bias, the residual, the parameters the activation uses: "epilogue.act.alpha", ...) and a
/// comment fragment to *what (" + relu + residual"). Input 3 (the residual) must have Y's layout.
std::string fused_epilogue(const Kernel& k, const EmitContext& ctx, const std::string& T, const MatrixStrides& bias,
                           bool has_bias, double alpha, double beta, std::vector<LaunchParam>* params, std::string* what);
/// A C++ float literal ("0.5f", "-INFINITY", "NAN").
std::string float_literal(double v);

/// "Dims3<a, b, c>" (the namespace-qualified template of conv.cuh).
std::string dims3(const std::array<int64_t, 3>& d);
/// "mc::conv::Shape<N, C, M, G, In, Kernel, Out, Stride, Pad, Dilation>".
std::string conv_shape(const ConvGeometry& g);
/// "[1x3x32x32]".
std::string shape_text(const Shape& s);
/// The accumulator type for a storage dtype: "float" (floating), "int64_t" (integers).
std::string acc_type(DType t);

}  // namespace modelc::linear
