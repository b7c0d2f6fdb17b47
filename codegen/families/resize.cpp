// codegen/families/resize.cpp — the "resize" family: Resize (opsets 10, 11, 13, 18, 19) and
// Upsample (7, 9) through tap tables (templates/resize.cuh).
//
// The taps are the reference's own (ops::resize_sampling, compiler/ops/resize.h), so the kernel
// reads the same input elements with the same weights. The dims the reference leaves unchanged (an
// identity mapping) are copied, as it skips them.
#include "codegen/families/data_movement.h"
#include "ops/resize.h"
#include "support/error.h"

namespace modelc::codegen {

ResizePlan resize_plan(const Node& n, const TensorView& x, const TensorView& y) {
  // The roi / scales / sizes inputs are constants by the time a kernel exists (lowering folds them).
  ops::TensorRefs in(n.inputs().size(), nullptr);
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (!n.has_input(static_cast<int>(i))) continue;
    if (!n.input(static_cast<int>(i)).is_constant())
      throw n.error("input " + std::to_string(i) + " must be a constant (it decides the sampling)");
    in[i] = &n.input(static_cast<int>(i)).constant();
  }
  const ops::ResizeSampling s = ops::resize_sampling(n, x.shape, in);
  if (s.out != y.shape)
    throw n.error("internal: the resize plan disagrees with the output shape " + shape_str(y.shape));
  ResizePlan r;
  r.extrapolation = s.extrapolation;
  r.summary = s.mode + ", " + s.coord + (s.mode == "nearest" ? ", " + s.nearest_mode : "");
  for (const std::vector<ops::ResizeTaps>& taps : s.axes) {
    if (taps.empty()) {  // the identity: the dim is copied
      r.taps.push_back(0);
      r.start.push_back(0);
      continue;
    }
    r.taps.push_back(s.width);
    r.start.push_back(static_cast<int64_t>(r.table.size()));
    for (const ops::ResizeTaps& t : taps) {
      for (int64_t k = 0; k < s.width; ++k) {
        if (t.extrapolate) {
          r.table.push_back({k == 0 ? -2 : -1, 0.0});
        } else if (k < static_cast<int64_t>(t.w.size())) {
          const auto& [index, weight] = t.w[static_cast<std::size_t>(k)];
          r.table.push_back({static_cast<int32_t>(index), weight});
        } else {
          r.table.push_back({-1, 0.0});
        }
      }
    }
  }
  return r;
}

namespace {

KernelLaunches emit_resize(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const ResizePlan p = resize_plan(*k.source.node, x, y);
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
