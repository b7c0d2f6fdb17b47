// compiler/ops/control_flow.cpp — If and Loop in the op table.
//
// Neither runs as a kernel nor reaches shape inference: the frontend inlines them while it imports
// the model (frontend/control_flow.cpp): If's branch chosen by its condition, Loop's body unrolled
// once per iteration, both known at compile time. These entries say so in the op table (and
// docs/operators.md), and name the inputs that must be known at compile time (OpDef::const_inputs:
// a node test binds them as constants). A node that is left here (`modelc inspect` lists it) had a
// condition or trip count computed at run time.
#include "ops/registry.h"

namespace modelc::ops {
namespace {

void left_in_graph(Node& n) {
  throw n.error(n.op() + " is inlined when the model is imported, and this one was not: its " +
                    (n.op() == "If" ? "condition" : "trip count or condition") + " is computed at run time",
                "modelc compiles static graphs: give the value at compile time (a constant, or a model input fixed "
                "to a value)");
}

}  // namespace

MODELC_REGISTER_OP(If)
    .since(1)
    .attrs({"then_branch", "else_branch"})
    .inputs(1, 1)
    .outputs(1, -1)
    .infer(left_in_graph)
    .const_inputs({0})
    .kernel("none")
    .family("control")
    .doc("inlined at compile time: the branch its condition (known at compile time) selects replaces the node");

MODELC_REGISTER_OP(Loop)
    .since(1)
    .attrs({"body"})
    .inputs(2, -1)
    .outputs(1, -1)
    .infer(left_in_graph)
    .const_inputs({0, 1})
    .kernel("none")
    .family("control")
    .doc("unrolled at compile time (up to 4096 iterations): trip count and conditions known at compile time, "
         "the body inlined per iteration, scan outputs stacked");

}  // namespace modelc::ops
