// compiler/schedule/families.h — what each template family can do, as data the schedule reads.
//
// A template family is a header of templates/ and its printer in codegen/families/. The schedule
// never asks codegen anything: the lowering picks a family from an op's OpDef::kernels (the first
// whose `accepts` takes the node), the layout stage reads the layout facts below, the boundary-cast
// fold reads `converts_types`, the plan_kernels stage calls `plan` (the kernel's typed plan,
// schedule/plan.h), the tactics stage `choose_tactic`, and the cost model `work`. The built-in families
// are one table in families.cpp; codegen's family registry (codegen/family.h) prints each of them
// (a unit test compares the two lists).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "schedule/cost_model.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc {

/// \brief How a family's kernels pull the buffers they touch into channels-last storage (read by
/// schedule/layout: a buffer is stored channels-last when such a kernel touches it beside one that
/// already is).
enum class LayoutFollow {
  never,       ///< they do not
  same_shape,  ///< an operand of the same shape is channels-last (elementwise ops)
  same_rank,   ///< an operand of the same rank is channels-last (Concat: shapes differ on its axis; Resize)
};

/// \brief Where a family's channels-last kernels accept a channel pitch above the channel count
/// (channels padded, e.g. to a multiple of 8 for tensor cores).
enum class ChannelPitch {
  none,             ///< never: pixels are exactly C channels apart
  always,           ///< X and Y take any pitch (pools, depthwise convolutions)
  on_tensor_cores,  ///< only where the kernel can run on tensor cores (tensor_core_operands)
};

/// \brief The facts of one family.
struct FamilyFacts {
  std::string name;
  /// Every operand is a strided view (broadcast, permuted or channels-last strides alike), so the
  /// buffers it reads and writes may be stored in any layout (elementwise, concat, transpose).
  bool strided_operands = false;
  LayoutFollow follows_layout = LayoutFollow::never;
  /// Runs channels-last (NHWC) for ops whose OpDef::layout is Layout::channels: X (input 0), Y
  /// (output 0) and the OpDef's layout roles (conv, conv_depthwise, pool).
  bool channels_last = false;
  ChannelPitch pitch = ChannelPitch::none;
  /// Its channels-last kernels write Y at any channel pitch and byte offset, so Y can be a channel
  /// slice of a wider channels-last buffer (read by the elide_concat stage; families with
  /// strided_operands write any view anyway).
  bool writes_channel_slice = false;
  /// Each operand is read and written in its own element type (the template converts at its
  /// edges), so a Cast at the model's boundary can fold into the kernel (elementwise, softmax,
  /// layernorm, instancenorm, reduce) — except for ops that only move data (OpDef::moves_data).
  bool converts_types = false;
  /// Has a tensor-core engine (FP16 operands); the tactic decides per kernel.
  bool tensor_cores = false;
  /// The family runs this node; null: every node of the ops that list it. An op's families are
  /// tried in OpDef::kernels order.
  std::function<bool(const Node&)> accepts;
  /// The plan_kernels stage: the kernel's plan (schedule/plan.h) from its node (k.source) and views,
  /// what its printer, the cost model and the report read instead of the node; null: the family
  /// plans nothing (its printer reads only the views and the tactic).
  std::function<std::shared_ptr<const KernelPlan>(const Kernel& k)> plan;
  /// The cost model (schedule/cost_model.h kernel_work): fills w (its bytes set) with the kernel's
  /// work run with `tactic` as its template runs it: FLOPs, blocks, threads, shared memory,
  /// registers, K slices (schedule/family_work.h). Null: default_work by the tactic's kind.
  std::function<void(KernelWork& w, const Kernel& k, const Tactic& tactic)> work;
  /// The tactics stage: sets k.tactic (and k.arch_tactic where the targets differ), k.note, and for
  /// convolutions and matrix products k.engine and k.fallback_reason. `targets`: every --arch,
  /// ascending, never empty.
  std::function<void(Kernel& k, const std::vector<Target>& targets)> choose_tactic;
};

/// \brief Adds a family beside the built-in ones (tests' own families; later, plugins). An internal
/// Error when the name is taken.
void register_family(FamilyFacts f);
/// \brief Registers a family when the program starts, from the family's own file (a static
/// `const FamilyFactsRegistration r{facts()};`, as schedule/rnn.cpp, vision.cpp and attention.cpp do).
struct FamilyFactsRegistration {
  explicit FamilyFactsRegistration(FamilyFacts f) { register_family(std::move(f)); }
};
/// The family of that name; null when none.
const FamilyFacts* find_family(const std::string& name);
/// The family of that name; an internal Error when none.
const FamilyFacts& family_facts(const std::string& name);
/// Every family, sorted by name.
std::vector<const FamilyFacts*> all_families();

/// \brief The family that runs `n`: the first of its OpDef::kernels whose facts accept it (the last
/// one listed otherwise); "view" or "none" where the op lists those; "" when it lists nothing.
std::string family_for(const Node& n);

/// \brief True when a channels-last convolution can take tensor cores on its operands: X (input 0)
/// and its OpDef's weight role are both float16 or both bfloat16 (or X int8 / uint8 and W int8:
/// modelc.QConv), of rank 4 or 5, in one group (W's dim 1 is X's channel count). The layout stage
/// pads such a convolution's input channels to a multiple of 8 (16-bit) or 16 (8-bit): layout.h
/// tensor_core_channels. (BF16 on an sm_75 target runs SIMT there, on the same layout:
/// tactics_linear.cpp.)
bool tensor_core_operands(const Node& n);

}  // namespace modelc
