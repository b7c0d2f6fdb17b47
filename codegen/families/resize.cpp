// codegen/families/resize.cpp — the "resize" family: Resize (opsets 10, 11, 13, 18, 19) and
// Upsample (7, 9) through tap tables (templates/resize.cuh).
//
// The taps are the reference's own (ops::resize_sampling, compiler/ops/resize.h; the kernel's plan:
// schedule/data_movement.h ResizePlan), so the kernel
// reads the same input elements with the same weights. The dims the reference leaves unchanged (an
// identity mapping) are copied, as it skips them.
#include "codegen/families/elementwise_util.h"
#include "schedule/data_movement.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_resize(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const ResizePlan& p = plan_of<ResizePlan>(k);
  const std::string comment = node_str(k) + ": " + view_str(x) + " -> " + view_str(y) + ", " + p.summary;
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to write");
  // Integer data accumulates in double so that the result truncates as the reference's does.
  const bool exact = !is_float(x.dtype);
  const std::string acc = exact ? "double" : "float";
  const std::string table = k.id + "_resize_taps";
  std::string decl;
  if (!p.table.empty()) {
    decl = "// " + comment + ": interpolation taps (input index, weight) per output coordinate\n";
    decl += "__device__ const mc::dm::Tap<" + acc + "> " + table + "[] = {";
    for (std::size_t i = 0; i < p.table.size(); ++i) {
      decl += std::string(i % 8 == 0 ? "\n    " : " ") + "{" + std::to_string(p.table[i].first) + ", " +
              (exact ? double_literal(p.table[i].second) : float_literal(p.table[i].second)) + "},";
    }
    decl += "\n};\n";
    decl += "struct " + table + "_table {\n  static __device__ const mc::dm::Tap<" + acc + ">* taps() { return " +
            table + "; }\n};\n";
  } else {
    decl = "struct " + table + "_table {  // " + comment +
           ": no dim is resampled\n  static __device__ const mc::dm::Tap<" + acc +
           ">* taps() { return nullptr; }\n};\n";
  }
  KernelLaunches r;
  r.declarations = decl;
  Launch l;
  l.comment = p.summary + (exact ? ", accumulated in double (integer data)" : "");
  l.type = "mc::dm::Resize<" + elem_type(x.dtype) + ", " + acc + ", " + table + "_table, " + dims(y.shape) +
           ",\n      " + dims(y.strides) + ", " + dims(x.strides) + ", " + dims(p.taps) + ", " + dims(p.start) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}};
  if (p.extrapolation != 0.0) {
    l.params.push_back({"extrapolation", exact ? double_literal(p.extrapolation) : float_literal(p.extrapolation)});
  }
  r.launches.push_back(std::move(l));
  return r;
}

}  // namespace

MODELC_REGISTER_FAMILY(resize_family)
(KernelFamily{"resize", {"tensor_index.cuh", "resize.cuh"}, emit_resize});

}  // namespace modelc::codegen
