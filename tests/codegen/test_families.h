// tests/codegen/test_families.h — a tiny template family for the product's own tests, so they do
// not depend on the real families: "test_elementwise" runs Identity (a copy of any dtype), Relu,
// Add, Sub and Mul on dense float32 tensors of one shape. Its kernel is written in the emitted
// declarations (no templates/ header); its facts (schedule/families.h) give it a grid-stride tactic.
// Lowering uses it through
// LowerOptions::family_substitutes {"elementwise" -> "test_elementwise"}.
#pragma once

#include <string>

#include "codegen/family.h"
#include "schedule/families.h"
#include "support/error.h"

namespace modelc::test {

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
    const std::string op = k.node->op();
    const TensorView& y = k.outputs.at(0);
    const std::string n = std::to_string(y.numel());
    Emitted e;
    if (op == "Identity") {
      e.declarations =
          "// Copies n bytes.\n"
          "__global__ void test_copy_bytes(const unsigned char* x, unsigned char* y, int64_t n) {\n"
          "  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
          "  if (i < n) y[i] = x[i];\n"
          "}\n";
      const std::string bytes = std::to_string(y.nbytes());
      e.launch = "MC_LAUNCH(test_copy_bytes, dim3((" + bytes + " + 127) / 128), dim3(128), 0, " +
                 "reinterpret_cast<const unsigned char*>(" + ctx.ptr(k.inputs.at(0), true) + "), " +
                 "reinterpret_cast<unsigned char*>(" + ctx.ptr(y, false) + "), int64_t{" + bytes + "});";
      return e;
    }
    int code = 0;
    if (op == "Relu") code = 1;
    if (op == "Add") code = 2;
    if (op == "Sub") code = 3;
    if (op == "Mul") code = 4;
    if (code == 0) throw k.node->error("the test family does not run " + op);
    for (const TensorView& v : k.inputs) {
      if (v.dtype != DType::float32 || v.shape != y.shape) throw k.node->error("test family: one float32 shape only");
    }
    e.declarations =
        "// y = OP(a, b) elementwise on n floats (1 relu, 2 add, 3 sub, 4 mul).\n"
        "template <int OP>\n"
        "__global__ void test_elementwise(const float* a, const float* b, float* y, int64_t n) {\n"
        "  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  if (OP == 1) y[i] = a[i] > 0.f ? a[i] : 0.f;\n"
        "  if (OP == 2) y[i] = a[i] + b[i];\n"
        "  if (OP == 3) y[i] = a[i] - b[i];\n"
        "  if (OP == 4) y[i] = a[i] * b[i];\n"
        "}\n";
    const std::string b = k.inputs.size() > 1 ? ctx.ptr(k.inputs[1], true) : "static_cast<const float*>(nullptr)";
    e.launch = "MC_LAUNCH(test_elementwise<" + std::to_string(code) + ">, dim3((" + n + " + 127) / 128), dim3(128), 0, " +
               ctx.ptr(k.inputs.at(0), true) + ", " + b + ", " + ctx.ptr(y, false) + ", int64_t{" + n + "});";
    return e;
  };
  FamilyRegistry::instance().add(std::move(f));
}

}  // namespace modelc::test
