// codegen/families/scan.cpp — the cumsum and nonzero families (templates/scan.cuh; the ops'
// rules: ops/indexing.h) and trilu (templates/triangular.cuh).
#include <string>
#include <vector>

#include "codegen/families/elementwise_util.h"
#include "schedule/indexing.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

std::string num(int64_t v) { return std::to_string(v); }
std::string flag(bool b) { return b ? "true" : "false"; }

KernelLaunches emit_cumsum(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  const ops::CumSumParams& cp = plan_of<ops::CumSumParams>(k);
  const auto a = static_cast<std::ptrdiff_t>(cp.axis);
  Shape outer(x.shape.begin(), x.shape.begin() + a), inner(x.shape.begin() + a + 1, x.shape.end());
  Strides xo(x.strides.begin(), x.strides.begin() + a), yo(y.strides.begin(), y.strides.begin() + a);
  Strides xi(x.strides.begin() + a + 1, x.strides.end()), yi(y.strides.begin() + a + 1, y.strides.end());
  collapse(outer, {&xo, &yo});
  collapse(inner, {&xi, &yi});
  Launch l;
  l.comment = "axis " + num(cp.axis) + (cp.exclusive ? ", exclusive" : "") + (cp.reverse ? ", reversed" : "") +
              ": a thread per line of " + num(x.shape[static_cast<std::size_t>(a)]) + ", " +
              (is_float(x.dtype) ? "FP32 sums" : "int64 sums");
  l.type = "mc::scan::CumSum<" + elem_type(x.dtype) + ", " + flag(cp.exclusive) + ", " + flag(cp.reverse) + ",\n      " +
           dims(outer) + ", " + dims(xo) + ", " + dims(yo) + ", " + num(x.shape[static_cast<std::size_t>(a)]) + ", " +
           num(x.strides[static_cast<std::size_t>(a)]) + ", " + num(y.strides[static_cast<std::size_t>(a)]) + ",\n      " +
           dims(inner) + ", " + dims(xi) + ", " + dims(yi) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}};
  return single_launch(std::move(l));
}

// NonZero computed at run time: the bounded form (ops::nonzero_bounded). A NonZero of a constant
// folds at compile time and runs no kernel.
KernelLaunches emit_nonzero(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  if (y.shape.size() != 2 || y.shape[1] != x.numel()) {
    throw kernel_error(k, "internal: a NonZero computed at run time has " + std::to_string(x.numel()) +
                              " columns (its bound), the output is " + shape_str(y.shape));
  }
  Launch l;
  l.comment = "the coordinates of the non-zero elements of " + view_str(x) + " in row-major order, -1 in the " +
              num(x.numel()) + " columns after the count (one block)";
  l.type = "mc::scan::NonZero<" + elem_type(x.dtype) + ", " + dims(x.shape) + ", " + dims(x.strides) + ", " +
           num(y.strides[0]) + ", " + num(y.strides[1]) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}};
  return single_launch(std::move(l));
}

KernelLaunches emit_trilu(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  const TriluPlan& p = plan_of<TriluPlan>(k);
  const bool upper = p.upper;
  const std::optional<int64_t>& kval = p.k;
  Launch l;
  l.comment = std::string(upper ? "upper" : "lower") + " triangle of the last two dims from diagonal " +
              (kval ? num(*kval) : std::string("k (read at run time)")) + ", zeros elsewhere";
  l.type = "mc::tri::Trilu<" + bits_type(x.dtype) + ", " + flag(upper) + ", " + dims(y.shape) + ", " + dims(y.strides) +
           ", " + dims(x.strides) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}};
  if (kval) {
    if (*kval != 0) l.params.push_back({"k", int_literal(*kval)});
  } else {
    l.params.push_back({"k_input", ctx.ptr(k.inputs.at(1), true)});
  }
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(cumsum_family)
(KernelFamily{"cumsum", {"tensor_index.cuh", "scan.cuh"}, emit_cumsum});
MODELC_REGISTER_FAMILY(nonzero_family)
(KernelFamily{"nonzero", {"tensor_index.cuh", "scan.cuh"}, emit_nonzero});
MODELC_REGISTER_FAMILY(trilu_family)
(KernelFamily{"trilu", {"tensor_index.cuh", "triangular.cuh"}, emit_trilu});

}  // namespace modelc::codegen
