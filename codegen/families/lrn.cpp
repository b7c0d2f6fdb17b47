// codegen/families/lrn.cpp — the `lrn` family: LRN, one thread per output element summing the
// squares of its channel window (templates/channel_norm.cuh, mc::norm::Lrn). X and Y are read and
// written through their views' strides (any layout).
#include <fmt/format.h>

#include "codegen/families/elementwise_util.h"
#include "ops/channel_norm.h"
#include "schedule/reduction.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

KernelLaunches emit_lrn(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  reduction::check_index_range(k);
  const ops::Lrn& p = plan_of<ops::Lrn>(k);
  Launch l;
  l.comment = fmt::format("size {} (channels c - {} .. c + {}), alpha {}, beta {}, bias {}", p.size, p.before, p.after,
                          p.alpha, p.beta, p.bias);
  l.type = fmt::format("mc::norm::Lrn<{}, {}, {}, {}, {}, {}, {}>", elem_type(x.dtype), elem_type(y.dtype), dims(x.shape),
                       dims(reduction::view_strides(x)), dims(reduction::view_strides(y)), p.before, p.after);
  l.params = {{"x", ctx.ptr(x, true)},
              {"y", ctx.ptr(y, false)},
              {"alpha_over_size", float_literal(p.alpha / static_cast<double>(p.size))},
              {"beta", float_literal(p.beta)},
              {"bias", float_literal(p.bias)}};
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(lrn_family)(KernelFamily{"lrn", {"tensor_index.cuh", "channel_norm.cuh"}, emit_lrn});

}  // namespace modelc::codegen
