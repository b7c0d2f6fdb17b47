// codegen/families/se_gate.cpp — the `se_gate` family: modelc.SEGate (ops/se_gate.h) as one launch
// of templates/se_gate.cuh's mc::se::Gate, one block an image.
//
// X's strides (image, channel, pixel: NHWC 1 and the pitch, NCHW H x W and 1) and Y's image stride
// are the plan's (schedule/se_gate.h SeGatePlan); the activations mc::Act names with their
// parameters (activation.cuh ActParams) in Params::act and Params::gate; the block size the tactic's.
#include <fmt/format.h>

#include "codegen/family.h"
#include "codegen/literals.h"
#include "schedule/se_gate.h"
#include "support/error.h"

namespace modelc {
namespace {

KernelLaunches emit_se_gate(const Kernel& k, const EmitContext& ctx) {
  const se_gate::SeGatePlan& p = plan_of<se_gate::SeGatePlan>(k);
  const ops::SeGateSpec& s = p.spec;
  const DirectTactic* t = std::get_if<DirectTactic>(&k.tactic);
  if (!t) throw k.error("internal: the squeeze-and-excite gate kernel has no DirectTactic tactic");
  Launch l;
  l.type = fmt::format("mc::se::Gate<{}, {}, {}, {}, {}, {}, {}, {}, {}, mc::Act::{}, mc::Act::{}, {}>", ctx.ctype(p.type),
                       s.n, s.c, s.s, s.hw, int_literal(p.x_image), p.x_channel, p.x_pixel, p.y_image,
                       ops::activation_name(s.act.kind), ops::activation_name(s.gate.kind), t->threads);
  l.comment = fmt::format("{} '{}': squeeze-and-excite gate, {} x {} channels over {} pixels ({}) -> FC {} + {} -> FC {} + {}",
                          k.op.type, k.op.name, s.n, s.c, s.hw, p.x_channel == 1 && s.c > 1 ? "NHWC" : "NCHW", s.s,
                          ops::activation_name(s.act.kind), s.c, ops::activation_name(s.gate.kind));
  const char* fields[] = {"X", "W1", "B1", "W2", "B2"};
  for (std::size_t i = 0; i < 5; ++i) l.params.push_back({fields[i], ctx.ptr(k.inputs.at(i), true)});
  l.params.push_back({"Y", ctx.ptr(k.outputs.at(0), false)});
  activation_params(s.act, "act", &l.params);
  activation_params(s.gate, "gate", &l.params);
  return single_launch(std::move(l));
}

MODELC_REGISTER_FAMILY(se_gate_family)(KernelFamily{"se_gate", {"se_gate.cuh"}, emit_se_gate});

}  // namespace
}  // namespace modelc
