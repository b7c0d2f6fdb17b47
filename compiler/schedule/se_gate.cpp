// compiler/schedule/se_gate.cpp — the "se_gate" family's descriptor: facts, plan, tactic and work
// (see se_gate.h), registered beside families.cpp's table.
#include "schedule/se_gate.h"

#include <fmt/format.h>

#include <algorithm>

#include "schedule/cost_model.h"
#include "schedule/families.h"
#include "support/error.h"

namespace modelc::se_gate {

namespace {

void se_gate_tactic(Kernel& k, const std::vector<Target>&) {
  const SeGatePlan& p = plan_of<SeGatePlan>(k);
  const ops::SeGateSpec& s = p.spec;
  const int threads = se_gate_threads(p);
  k.tactic = DirectTactic{threads};
  k.note = fmt::format(
      "squeeze-and-excite gate in one kernel: a block of {} threads per image pools {} x {} pixels ({}), then FC "
      "{} -> {} + {}, FC {} -> {} + {} out of shared memory (FP32), writing the {} gate",
      threads, s.c, s.hw, p.x_channel == 1 && s.c > 1 ? "channels-last" : "NCHW", s.c, s.s,
      ops::activation_name(s.act.kind), s.s, s.c, ops::activation_name(s.gate.kind), dtype_name(p.type));
}

void se_gate_work(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const SeGatePlan& p = plan_of<SeGatePlan>(k);
  const DirectTactic* t = std::get_if<DirectTactic>(&tactic);
  if (!t) throw k.error("internal: a squeeze-and-excite gate kernel's tactic is not a DirectTactic");
  const ops::SeGateSpec& s = p.spec;
  w.engine = Engine::simt;
  // The pool's adds, the two FCs' multiply-adds (W1 and W2 read once per image: from L2 after the
  // first), the activations.
  w.flops = static_cast<double>(s.n) * static_cast<double>(s.c * s.hw + 4 * s.c * s.s + 4 * (s.c + s.s));
  w.blocks = s.n;
  w.threads = t->threads;
  w.smem_bytes = 4 * static_cast<int>(s.c + s.s + t->threads);
  w.regs_per_thread = 32;
}

FamilyFacts se_gate_facts() {
  FamilyFacts f;
  f.name = "se_gate";
  f.channels_last = true;
  f.pitch = ChannelPitch::always;
  f.plan = [](const Kernel& k) { return make_plan("se_gate", se_gate_plan(k)); };
  f.choose_tactic = se_gate_tactic;
  f.work = se_gate_work;
  return f;
}

const FamilyFactsRegistration se_gate_registration{se_gate_facts()};

}  // namespace

SeGatePlan se_gate_plan(const Kernel& k) {
  const Node& n = node_to_plan(k);
  SeGatePlan p;
  p.spec = ops::se_gate_spec(n);
  const ops::SeGateSpec& s = p.spec;
  const TensorView& x = k.inputs.at(ops::kSeGateX);
  const TensorView& y = k.outputs.at(0);
  p.type = x.dtype;
  if (x.shape.size() != 4 || y.shape.size() != 4) throw n.error("internal: the gate kernel's X or Y is not of rank 4");
  // The H x W pixels one stride apart: W's stride (H's where W is 1), H's W times it.
  const int64_t H = x.shape[2], W = x.shape[3];
  p.x_pixel = W > 1 ? x.strides[3] : x.strides[2];
  if (H > 1 && W > 1 && x.strides[2] != W * x.strides[3]) {
    throw n.error(fmt::format("internal: the gate kernel's X ('{}') has row stride {}, not {} x its pixel stride {}",
                              x.value, x.strides[2], W, x.strides[3]));
  }
  // One pixel: its stride is never stepped; the channel count keeps the template's pitch check.
  if (s.hw == 1) p.x_pixel = s.c;
  p.x_channel = s.c > 1 ? x.strides[1] : 1;
  p.x_image = s.n > 1 ? x.strides[0] : s.c * s.hw;
  if (s.c > 1 && y.strides[1] != 1) {
    throw n.error(fmt::format("internal: the gate kernel's Y ('{}') has channel stride {}", y.value, y.strides[1]));
  }
  p.y_image = s.n > 1 ? y.strides[0] : s.c;
  for (int i = ops::kSeGateW1; i <= ops::kSeGateB2; ++i) {
    const TensorView& v = k.inputs.at(static_cast<std::size_t>(i));
    if (!v.dense()) throw n.error(fmt::format("internal: the gate kernel's weight '{}' is not a dense buffer", v.value));
  }
  return p;
}

int se_gate_threads(const SeGatePlan& p) { return p.spec.c * p.spec.hw >= 8192 ? 256 : 128; }

}  // namespace modelc::se_gate
