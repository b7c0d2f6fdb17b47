// codegen/families/linear.h — what the gemm, conv, conv_depthwise, conv_transpose and pool
// families share to print a kernel: the instantiation and launch of a GEMM-shaped or direct
// template, the epilogues, and the spelling of shapes and geometry as template arguments. What
// they print was decided by the schedule (schedule/linear.h: the GEMM lowering and the window
// geometry; schedule/tactics.h: tiles and engines); tests/templates check it against hand-written
// instantiations.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/family.h"
#include "codegen/literals.h"
#include "schedule/linear.h"
#include "schedule/tactics.h"

namespace modelc::linear {

// ---- emitting ----------------------------------------------------------------------------------

/// \brief The code of one kernel: `// COMMENT` and `using TYPE = DECL;` as the declarations,
/// `MC_LAUNCH(mc::gemm::kernel<TYPE>, TYPE::grid(), TYPE::block(), 0, TYPE::Params{PARAMS...});` as
/// the launch (the emitter writes the kernel's comment above it). A kernel whose first output is
/// empty launches nothing.
Emitted emit_instance(const Kernel& k, const std::string& comment, const std::string& type, const std::string& decl,
                      const std::vector<std::string>& params);
/// The epilogue of a convolution: EpilogueBias when input 2 (B) is present, else EpilogueIdentity;
/// a FusedConv's EpilogueFused. *params receives its Params initializer, *what a comment fragment.
std::string bias_epilogue(const Kernel& k, const EmitContext& ctx, const std::string& T, std::string* params,
                          std::string* what);

/// \brief The epilogue of a fused node as `mc::gemm::EpilogueFused<T, bias strides, has bias, activation,
/// residual position>`; *params receives its Params initializer and *what a comment fragment
/// (" + relu + residual"). Input 3 (the residual) must have Y's layout.
std::string fused_epilogue(const Kernel& k, const EmitContext& ctx, const std::string& T, const MatrixStrides& bias,
                           bool has_bias, double alpha, double beta, std::string* params, std::string* what);

/// \brief The code of a tensor-core kernel: one `using` per distinct tactic (decl(tile) gives its
/// type), launched through mc::tc::kernel; with k.arch_tactic, the launch picks the tactic of the
/// newest planned arch not above the device's (mc_bindings.sm), the oldest's below that.
Emitted emit_tc_instance(const Kernel& k, const std::string& comment, const std::string& type,
                         const std::function<std::string(const TcTile&)>& decl, const std::vector<std::string>& params);

/// "Dims3<a, b, c>" (the namespace-qualified template of conv.cuh).
std::string dims3(const std::array<int64_t, 3>& d);
/// "mc::conv::Shape<N, C, M, G, In, Kernel, Out, Stride, Pad, Dilation>".
std::string conv_shape(const ConvGeometry& g);
/// The accumulator type for a storage dtype: "float" (floating), "int64_t" (integers).
std::string acc_type(DType t);

}  // namespace modelc::linear
