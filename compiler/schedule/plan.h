// compiler/schedule/plan.h — a kernel's plan: what its family's printer needs beyond the kernel's
// views and tactic (geometry, epilogue, operator parameters, strides), decided once by the schedule.
//
// The plan_kernels stage (schedule/stages.h) asks each kernel's family for it (FamilyFacts::plan,
// schedule/families.h), reading the node's attributes and the kernel's views there and only there;
// from then on the printer (codegen/families/), the cost model and the report read the plan, never
// the graph. A plan is a typed value of its family's (linear::GemmLowering, ConvPlan, PadPlan,
// ops::Lrn, ...). The set of families is open (tests and plugins register their own), so a kernel
// holds its plan behind KernelPlan and plan_of<T> (schedule.h) gets the typed value back: asking
// for the wrong type is an internal error naming the kernel, not a wrong read.
#pragma once

#include <memory>
#include <string>
#include <utility>

namespace modelc {

/// \brief A kernel's plan, whatever its type: what --print-after prints of it.
struct KernelPlan {
  virtual ~KernelPlan() = default;
  /// The plan's kind ("gemm", "pad", ...): one word for --print-after and errors.
  virtual const char* kind() const = 0;
};

/// \brief A plan holding a value of type T (the family's own struct).
template <class T>
struct PlanOf final : KernelPlan {
  PlanOf(const char* k, T v) : value(std::move(v)), kind_(k) {}
  const char* kind() const override { return kind_; }
  T value;

 private:
  const char* kind_;
};

/// \brief A plan of kind `kind` (a string literal) holding v.
template <class T>
std::shared_ptr<const KernelPlan> make_plan(const char* kind, T v) {
  return std::make_shared<const PlanOf<T>>(kind, std::move(v));
}

}  // namespace modelc
