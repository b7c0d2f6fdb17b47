// tests/codegen/test_families.h — a tiny template family for the product's own tests, so they do
// not depend on the real families: "test_elementwise" runs Identity (a copy of any dtype), Relu,
// Add, Sub and Mul on dense float32 tensors of one shape. Its kernel types are written in the
// emitted declarations (no templates/ header); its facts (schedule/families.h) give it a
// grid-stride tactic. Lowering uses it through
// LowerOptions::family_substitutes {"elementwise" -> "test_elementwise"}.
#pragma once

#include <string>

#include "codegen/family.h"
#include "schedule/families.h"
#include "support/error.h"

namespace modelc::test {

/// \brief The descriptor of that name, a bare one (no facts, plan or tactic) registered the first
/// time: for tests that hand a lowered kernel to a printer family of their own.
inline const FamilyFacts* bare_family(const std::string& name) {
  if (!find_family(name)) {
    FamilyFacts f;
    f.name = name;
    register_family(std::move(f));
  }
  return &family_facts(name);
}

inline void register_test_families() {
  if (FamilyRegistry::instance().find("test_elementwise")) return;
  FamilyFacts facts;
  facts.name = "test_elementwise";
  facts.choose_tactic = [](Kernel& k, const std::vector<Target>& targets) {
    k.tactic = GridStrideTactic{128, std::nullopt};
    k.note = "test family (sm_" + std::to_string(targets.front().sm) + ")";
  };
  register_family(std::move(facts));
  KernelFamily f;
  f.name = "test_elementwise";
  f.emit = [](const Kernel& k, const EmitContext& ctx) {
    const std::string op = k.source.node->op();
    const TensorView& y = k.outputs.at(0);
    KernelLaunches r;
    Launch l;
    l.comment = "test_elementwise: " + op;
    if (op == "Identity") {
      r.declarations =
          "// Copies kBytes bytes (the kernel contract of codegen/launch.h).\n"
          "template <int64_t kBytes>\n"
          "struct TestCopyBytes {\n"
          "  struct Params {\n"
          "    const unsigned char* x = nullptr;\n"
          "    unsigned char* y = nullptr;\n"
          "  };\n"
          "  static constexpr int kThreads = 128;\n"
          "  static dim3 grid() { return dim3(static_cast<unsigned>((kBytes + kThreads - 1) / kThreads)); }\n"
          "  static dim3 block() { return dim3(kThreads); }\n"
          "  static __device__ void run(const Params& p) {\n"
          "    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
          "    if (i < kBytes) p.y[i] = p.x[i];\n"
          "  }\n"
          "};\n";
      l.type = "TestCopyBytes<" + std::to_string(y.nbytes()) + ">";
      l.params = {{"x", "reinterpret_cast<const unsigned char*>(" + ctx.ptr(k.inputs.at(0), true) + ")"},
                  {"y", "reinterpret_cast<unsigned char*>(" + ctx.ptr(y, false) + ")"}};
      r.launches.push_back(l);
      return r;
    }
    int code = 0;
    if (op == "Relu") code = 1;
    if (op == "Add") code = 2;
    if (op == "Sub") code = 3;
    if (op == "Mul") code = 4;
    if (code == 0) throw k.source.node->error("the test family does not run " + op);
    for (const TensorView& v : k.inputs) {
      if (v.dtype != DType::float32 || v.shape != y.shape) throw k.source.node->error("test family: one float32 shape only");
    }
    r.declarations =
        "// y = OP(a, b) elementwise on kN floats (1 relu, 2 add, 3 sub, 4 mul).\n"
        "template <int OP, int64_t kN>\n"
        "struct TestElementwise {\n"
        "  struct Params {\n"
        "    const float* a = nullptr;\n"
        "    const float* b = nullptr;\n"
        "    float* y = nullptr;\n"
        "  };\n"
        "  static constexpr int kThreads = 128;\n"
        "  static dim3 grid() { return dim3(static_cast<unsigned>((kN + kThreads - 1) / kThreads)); }\n"
        "  static dim3 block() { return dim3(kThreads); }\n"
        "  static __device__ void run(const Params& p) {\n"
        "    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
        "    if (i >= kN) return;\n"
        "    if (OP == 1) p.y[i] = p.a[i] > 0.f ? p.a[i] : 0.f;\n"
        "    if (OP == 2) p.y[i] = p.a[i] + p.b[i];\n"
        "    if (OP == 3) p.y[i] = p.a[i] - p.b[i];\n"
        "    if (OP == 4) p.y[i] = p.a[i] * p.b[i];\n"
        "  }\n"
        "};\n";
    l.type = "TestElementwise<" + std::to_string(code) + ", " + std::to_string(y.numel()) + ">";
    l.params = {{"a", ctx.ptr(k.inputs.at(0), true)}};
    if (k.inputs.size() > 1) l.params.push_back({"b", ctx.ptr(k.inputs[1], true)});
    l.params.push_back({"y", ctx.ptr(y, false)});
    r.launches.push_back(l);
    return r;
  };
  FamilyRegistry::instance().add(std::move(f));
}

}  // namespace modelc::test
