// codegen/family.h — a template family: how a Kernel of the Schedule is planned
// (tactic) and emitted (instantiations of templates/<family>.cuh and their launches, described
// as codegen/launch.h's KernelLaunches; the emitter prints them).
//
// One file per family in codegen/families/, registered with MODELC_REGISTER_FAMILY.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/launch.h"
#include "schedule/schedule.h"

namespace modelc {

/// The target of a plan: one --arch (a fat binary has a plan per arch where they differ).
struct Target {
  int sm = 75;          ///< 75, 80, 86, 89, 90, ...
  int sm_count = 80;    ///< assumed SM count for wave heuristics (documented per arch)
  int smem_per_block = 48 * 1024;
  /// --fp16-accumulate (PassOptions::fp16_accumulate): FP16 accumulators where the family offers them.
  bool fp16_accumulate = false;
};

/// What an emit function can ask of the emitter.
class EmitContext {
 public:
  virtual ~EmitContext() = default;
  /// A C++ expression for the typed device pointer of a view, e.g.
  /// `reinterpret_cast<const float*>(arena + 4096)` (const for inputs).
  virtual std::string ptr(const TensorView& v, bool is_const) const = 0;
  /// C++ element type of a dtype: "float", "__half", "int64_t", "int32_t", "int8_t", "uint8_t", "bool".
  virtual std::string ctype(DType t) const = 0;
};

struct KernelFamily {
  std::string name;                   ///< "gemm", "elementwise", ...
  std::vector<std::string> headers;   ///< templates/ files the code includes (copied into kernels/)
  /// Optional: picks the tactic (k.tactic, k.note) for the target; may change
  /// k.family (e.g. conv -> conv_depthwise).
  std::function<void(Kernel& k, const Target& t)> plan;
  /// The kernel's launches (pointers through ctx); throws Error for what the templates cannot run.
  std::function<KernelLaunches(const Kernel& k, const EmitContext& ctx)> emit;
  /// Optional, used instead of `plan` when set: plans for every --arch target at once (ascending
  /// SM numbers; never empty), recording a tactic per arch in k.arch_tactic where they differ.
  std::function<void(Kernel& k, const std::vector<Target>& targets)> plan_archs = {};
};

class FamilyRegistry {
 public:
  static FamilyRegistry& instance();
  void add(KernelFamily f);
  const KernelFamily* find(const std::string& name) const;
  std::vector<const KernelFamily*> all() const;

 private:
  std::vector<KernelFamily> families_;
};

struct FamilyRegistration {
  FamilyRegistration(KernelFamily f) { FamilyRegistry::instance().add(std::move(f)); }  // NOLINT: implicit
};

#define MODELC_REGISTER_FAMILY(VAR) static const ::modelc::FamilyRegistration VAR

}  // namespace modelc
