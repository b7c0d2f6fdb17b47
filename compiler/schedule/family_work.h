// compiler/schedule/family_work.h — each family's work for a tactic (FamilyFacts::work): what the
// cost model (schedule/cost_model.h) weighs, as the family's template runs it. A family without one
// gets default_work; the cost model itself names no family.
#pragma once

#include "schedule/cost_model.h"

namespace modelc::work {

// Each fills w (its bytes already set: kernel_bytes) for kernel k run with `tactic`: FLOPs, blocks,
// threads, shared memory, registers and K slices, from the kernel's plan where it has one.
void gemm(KernelWork& w, const Kernel& k, const Tactic& tactic);            ///< GEMM, GEMV, strided sum
void conv(KernelWork& w, const Kernel& k, const Tactic& tactic);            ///< implicit GEMM
void conv_int8(KernelWork& w, const Kernel& k, const Tactic& tactic);       ///< INT8 implicit GEMM
void gemm_int8(KernelWork& w, const Kernel& k, const Tactic& tactic);       ///< INT8 GEMM
void conv_depthwise(KernelWork& w, const Kernel& k, const Tactic& tactic);  ///< direct, 2 FLOPs per tap
void conv_transpose(KernelWork& w, const Kernel& k, const Tactic& tactic);  ///< gather form
void pool(KernelWork& w, const Kernel& k, const Tactic& tactic);            ///< a window, or a whole plane
void qlinear(KernelWork& w, const Kernel& k, const Tactic& tactic);         ///< the op's FLOPs, direct
void rnn(KernelWork& w, const Kernel& k, const Tactic& tactic);             ///< a block per sequence
void elementwise(KernelWork& w, const Kernel& k, const Tactic& tactic);     ///< one op per node and output
void softmax(KernelWork& w, const Kernel& k, const Tactic& tactic);         ///< rows of the softmax split
void layernorm(KernelWork& w, const Kernel& k, const Tactic& tactic);
void instancenorm(KernelWork& w, const Kernel& k, const Tactic& tactic);
void groupnorm(KernelWork& w, const Kernel& k, const Tactic& tactic);
void topk(KernelWork& w, const Kernel& k, const Tactic& tactic);

}  // namespace modelc::work
