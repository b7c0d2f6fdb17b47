// codegen/family.h — a template family's printer: how a Kernel of the Schedule is emitted (an
// instantiation of templates/<family>.cuh and its launch). What a family can do and how its
// tactic is chosen are the schedule's (compiler/schedule/families.h); codegen decides nothing.
//
// One file per family in codegen/families/, registered with MODELC_REGISTER_FAMILY.
#pragma once

#include <functional>
#include <string>
#include <vector>

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

/// \brief Code for one kernel. `declarations` go at namespace scope in the
/// generated .cu (identical text is emitted once: a kernel instantiated twice
/// with the same parameters appears once); `launch` is a block of statements in
/// the run function, where `stream` (cudaStream_t) is in scope and launches are
/// written `MC_LAUNCH(kernel_function, grid, block, dynamic_smem_bytes, args...);`
/// (runtime.h: checks the launch and returns the error from run).
struct Emitted {
  std::string declarations;
  std::string launch;
};

struct KernelFamily {
  std::string name;                   ///< "gemm", "elementwise", ...
  std::vector<std::string> headers;   ///< templates/ files the code includes (copied into kernels/)
  /// Prints the kernel as the schedule decided it (family, views, tactic): decides nothing.
  std::function<Emitted(const Kernel& k, const EmitContext& ctx)> emit;
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
