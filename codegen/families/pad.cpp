// codegen/families/pad.cpp — the "pad" family: Pad in every form (pads as an attribute before opset
// 11, as an input from 11, with axes from 18, the wrap mode from 19), constant, edge, reflect and
// wrap modes, negative pads cropping first, as the reference (compiler/ops/pad.cpp); mc::dm::Pad.
#include "codegen/families/data_movement.h"
#include "support/error.h"

namespace modelc::codegen {

PadPlan pad_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const std::size_t rank = x.shape.size();
  PadPlan p;
  p.mode = n.attr_string("mode", "constant");
  std::vector<int64_t> pads;
  std::vector<int64_t> axes;
  if (n.opset() < 11) {
    pads = n.attr_ints("pads");
  } else {
    if (!n.has_input(1) || !n.input(1).is_constant()) throw n.error("input 'pads' must be a constant");
    pads = n.input(1).constant().to_i64();
    if (n.opset() >= 18 && n.has_input(3)) {
      if (!n.input(3).is_constant()) throw n.error("input 'axes' must be a constant");
      axes = n.input(3).constant().to_i64();
    }
  }
  if (axes.empty() && !(n.opset() >= 18 && n.has_input(3))) {
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  const std::size_t k = axes.size();
  if (pads.size() != 2 * k)
    throw n.error("'pads' has " + std::to_string(pads.size()) + " values for " + std::to_string(k) + " axes");
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (std::size_t i = 0; i < k; ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
    if (a < 0 || a >= static_cast<int64_t>(rank)) throw n.error("'axes' holds " + std::to_string(axes[i]));
    begin[static_cast<std::size_t>(a)] = pads[i];
    end[static_cast<std::size_t>(a)] = pads[k + i];
  }
  for (std::size_t d = 0; d < rank; ++d) {
    p.begin.push_back(begin[d]);
    p.lo.push_back(begin[d] < 0 ? -begin[d] : 0);
    p.kept.push_back(x.shape[d] - p.lo.back() - (end[d] < 0 ? -end[d] : 0));
    if (x.shape[d] + begin[d] + end[d] != y.shape[d])
      throw n.error("internal: the pads disagree with the output shape");
  }
  // The fill value of the constant mode, in x's type.
  if (n.opset() < 11) {
    p.fill = Tensor::from_f64(x.dtype, {}, {n.attr_float("value", 0.0)});
  } else if (n.has_input(2)) {
    if (n.input(2).is_constant()) {
      p.fill = n.input(2).constant().cast(x.dtype).reshaped({});
    } else {
      p.fill_input = 2;
    }
  } else {
    p.fill = Tensor(x.dtype, {});
  }
  return p;
}

namespace {

KernelLaunches emit_pad(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const PadPlan p = pad_plan(*k.node, x, y);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to write");
  const std::string comment =
      "mode " + p.mode +
      (p.mode == "constant"
           ? std::string(p.fill_input >= 0 ? ", the fill value from a tensor" : ", fill bits " + bits_literal(p.fill))
           : "");
  const std::string mode = p.mode == "constant"  ? "constant"
                           : p.mode == "edge"    ? "edge"
                           : p.mode == "reflect" ? "reflect"
                                                 : "wrap";
  if (mode != p.mode) throw kernel_error(k, "Pad mode '" + p.mode + "' has no kernel");
  const std::string T = bits_type(x.dtype);
  Launch l;
  l.comment = comment;
  l.type = "mc::dm::Pad<" + T + ", mc::dm::PadMode::" + mode + ", " + dims(y.shape) + ",\n      " + dims(y.strides) +
           ", " + dims(x.strides) + ",\n      " + dims(p.lo) + ", " + dims(p.kept) + ", " + dims(p.begin) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}};
  // The fill value: a tensor computed at run time, or its bits (constant mode; 0 is the default).
  if (p.fill_input >= 0) {
    l.params.push_back({"fill", ctx.ptr(k.inputs.at(static_cast<std::size_t>(p.fill_input)), true)});
  } else if (p.mode == "constant") {
    l.params.push_back({"fill_bits", bits_literal(p.fill)});
  }
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(pad_family)
(KernelFamily{"pad",
              {"tensor_index.cuh", "data_movement.cuh"},
              data_plan("one thread per output element, source index per dim by the mode"),
              emit_pad});

}  // namespace modelc::codegen
