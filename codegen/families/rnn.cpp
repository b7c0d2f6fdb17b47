// codegen/families/rnn.cpp — the `rnn` family: LSTM, GRU and RNN, and their recurrence forms
// (passes/split_recurrence.cpp), as one launch of templates/rnn.cuh's mc::rnn::Recurrence: a block
// per (direction, batch item), the steps looped inside (schedule/rnn.h decides the block and the
// shared memory).
//
// Every operand is passed as its view's strides over the logical shape the template indexes
// (layout 0's); for layout 1 (batch-major) the strides are permuted here, so the template never
// sees the layout. An absent operand is Dims<>.
#include <fmt/format.h>

#include "codegen/families/elementwise_util.h"
#include "ops/rnn.h"
#include "schedule/reduction.h"
#include "schedule/rnn.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

using ops::RnnParams;

const TensorView* operand(const std::vector<TensorView>& views, int i) {
  if (i >= static_cast<int>(views.size()) || views[static_cast<std::size_t>(i)].dtype == DType::undefined) return nullptr;
  return &views[static_cast<std::size_t>(i)];
}

// The view's strides in the order `perm` of its dims ("Dims<>" when absent).
std::string strides(const TensorView* v, const std::vector<int>& perm = {}) {
  if (!v) return "mc::ix::Dims<>";
  const std::vector<int64_t> s = reduction::view_strides(*v);
  if (perm.empty()) return dims(s);
  std::vector<int64_t> p;
  for (int d : perm) p.push_back(s.at(static_cast<std::size_t>(d)));
  return dims(p);
}

std::string act_literal(const ops::RnnActivation& a) {
  return fmt::format("mc::rnn::Act{{{}, {}, {}}}", static_cast<int>(a.kind), float_literal(a.alpha), float_literal(a.beta));
}

KernelLaunches emit_rnn(const Kernel& k, const EmitContext& ctx) {
  const rnn::RnnKernel& rk = plan_of<rnn::RnnKernel>(k);
  const RnnParams& p = rk.p;
  const bool l1 = p.layout == 1;
  const TensorView* x = operand(k.inputs, RnnParams::kX);
  const TensorView* w = operand(k.inputs, RnnParams::kW);
  const TensorView* r = operand(k.inputs, RnnParams::kR);
  const TensorView* b = operand(k.inputs, RnnParams::kB);
  const TensorView* lens = operand(k.inputs, RnnParams::kSeqLens);
  const TensorView* h0 = operand(k.inputs, RnnParams::kInitialH);
  const TensorView* c0 = operand(k.inputs, RnnParams::kInitialC);
  const TensorView* peep = operand(k.inputs, RnnParams::kP);
  const TensorView* y = operand(k.outputs, 0);
  const TensorView* yh = operand(k.outputs, 1);
  const TensorView* yc = operand(k.outputs, 2);
  const DType t = x->dtype;
  for (const TensorView* v : {w, r, b, h0, c0, peep, y, yh, yc}) {
    if (v && v->dtype != t) {
      throw kernel_error(k, fmt::format("'{}' is {}, X is {}: the rnn template stores every float operand in one type",
                                        v->value, dtype_name(v->dtype), dtype_name(t)));
    }
  }
  const std::vector<int> state = l1 ? std::vector<int>{1, 0, 2} : std::vector<int>{};
  const std::string xs = p.projected ? strides(x, l1 ? std::vector<int>{0, 2, 1, 3} : std::vector<int>{})
                                     : strides(x, l1 ? std::vector<int>{1, 0, 2} : std::vector<int>{});
  const int flags = (p.input_forget ? 1 : 0) | (p.linear_before_reset ? 2 : 0) | (p.reverse ? 4 : 0);
  const int cell = p.cell == ops::RnnCell::lstm ? 0 : p.cell == ops::RnnCell::gru ? 1 : 2;
  Launch l;
  const char* name = cell == 0 ? "LSTM" : cell == 1 ? "GRU" : "RNN";
  l.comment = fmt::format("{} {}, {} steps, batch {}, hidden {}{}{}", name,
                          p.directions == 2 ? "bidirectional" : p.reverse ? "reverse" : "forward", p.seq, p.batch,
                          p.hidden, p.projected ? ", on the input projection XW" : ", input size " + std::to_string(p.input),
                          p.layout == 1 ? ", batch-major (layout 1)" : "");
  l.type = fmt::format(
      "mc::rnn::Recurrence<{}, {}, {}, {}, {},\n      {}, {}, {}, {}, {},\n      {}, {}, {}, {}, {}, {}>", cell,
      flags, rk.threads, elem_type(t), dims({p.directions, p.seq, p.batch, p.projected ? 0 : p.input, p.hidden}), xs,
      strides(w), strides(r), strides(b), strides(lens), strides(h0, state), strides(c0, state), strides(peep),
      strides(y, l1 ? std::vector<int>{1, 2, 0, 3} : std::vector<int>{}), strides(yh, state), strides(yc, state));
  auto add = [&](const char* field, const TensorView* v, bool is_const) {
    if (v) l.params.push_back({field, ctx.ptr(*v, is_const)});
  };
  add("x", x, true);
  add("w", w, true);
  add("r", r, true);
  add("b", b, true);
  add("sequence_lens", lens, true);
  add("initial_h", h0, true);
  add("initial_c", c0, true);
  add("p", peep, true);
  add("y", y, false);
  add("y_h", yh, false);
  add("y_c", yc, false);
  if (p.has_clip) l.params.push_back({"clip", float_literal(p.clip)});
  for (std::size_t d = 0; d < p.activations.size(); ++d) {
    for (std::size_t a = 0; a < p.activations[d].size(); ++a) {
      l.params.push_back({fmt::format("act[{}][{}]", d, a), act_literal(p.activations[d][a])});
    }
  }
  l.dynamic_smem = rk.smem_bytes;
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(rnn_family)(KernelFamily{"rnn", {"tensor_index.cuh", "rnn.cuh"}, emit_rnn});

}  // namespace modelc::codegen
