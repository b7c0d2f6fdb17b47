// codegen/family.h — a template family's printer: how a Kernel of the Schedule is emitted
// (instantiations of templates/<family>.cuh and their launches, described as codegen/launch.h's
// KernelLaunches; the emitter prints them). What a family can do and how its tactic is chosen are
// the schedule's (compiler/schedule/families.h); codegen decides nothing.
//
// One file per family in codegen/families/, registered with MODELC_REGISTER_FAMILY.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/launch.h"
#include "schedule/schedule.h"

namespace modelc {

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
  /// The kernel's launches as the schedule decided it (family, views, tactic; pointers through
  /// ctx): decides nothing; throws Error for what the templates cannot run.
  std::function<KernelLaunches(const Kernel& k, const EmitContext& ctx)> emit;
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
