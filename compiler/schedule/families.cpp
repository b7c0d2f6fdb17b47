// compiler/schedule/families.cpp — the families' facts: one table, read top to bottom.
#include "schedule/families.h"

#include <algorithm>
#include <deque>

#include "ops/registry.h"
#include "schedule/data_movement.h"
#include "schedule/elementwise.h"
#include "schedule/family_work.h"
#include "schedule/indexing.h"
#include "schedule/int8.h"
#include "schedule/linear_plans.h"
#include "schedule/reduction.h"
#include "schedule/tactics.h"
#include "support/error.h"

namespace modelc {
namespace {

// conv_depthwise: one input channel per group (W's dim 1 is 1) over more than one channel.
bool depthwise(const Node& n) {
  return n.has_input(0) && n.has_input(1) && n.input(1).rank() > 1 && n.input(1).shape()[1] == 1 &&
         n.input(0).rank() > 1 && n.input(0).shape()[1] > 1;
}

std::vector<FamilyFacts> make_table() {
  std::vector<FamilyFacts> t;
  auto add = [&](std::string name) -> FamilyFacts& {
    t.emplace_back();
    t.back().name = std::move(name);
    return t.back();
  };
  {
    FamilyFacts& f = add("elementwise");
    f.strided_operands = true;
    f.follows_layout = LayoutFollow::same_shape;
    f.converts_types = true;
    f.choose_tactic = elementwise_tactic;
    f.plan = [](const Kernel& k) { return make_plan("elementwise", elementwise_plan(k)); };
    f.work = work::elementwise;
  }
  {
    FamilyFacts& f = add("concat");
    f.strided_operands = true;
    f.follows_layout = LayoutFollow::same_rank;
    f.plan = concat_kernel_plan;
    f.choose_tactic = data_tactic("one strided copy per input");
  }
  {
    FamilyFacts& f = add("transpose");
    f.strided_operands = true;
    f.plan = transpose_kernel_plan;
    f.choose_tactic = transpose_tactic;
  }
  {
    FamilyFacts& f = add("depth_space");
    f.plan = depth_space_kernel_plan;
    f.choose_tactic = data_tactic("strided copy over six dims");
  }
  add("expand").choose_tactic = data_tactic("strided copy, zero strides on the broadcast dims");
  {
    FamilyFacts& f = add("gather");
    f.plan = gather_kernel_plan;
    f.choose_tactic = data_tactic("one thread per output element, indices read at run time");
  }
  {
    FamilyFacts& f = add("pad");
    f.plan = pad_kernel_plan;
    f.choose_tactic = data_tactic("one thread per output element, source index per dim by the mode");
  }
  {
    FamilyFacts& f = add("resize");
    // mc::dm::Resize reads X and writes Y through their strides: it runs on channels-last buffers
    // where its input is one (no layout conversion around it; its output can be a Concat's slice).
    f.strided_operands = true;
    f.follows_layout = LayoutFollow::same_rank;
    f.plan = resize_kernel_plan;
    f.choose_tactic = resize_tactic;
  }
  {
    FamilyFacts& f = add("slice");
    f.plan = slice_kernel_plan;
    f.choose_tactic = data_tactic("strided copy from an offset");
  }
  {
    FamilyFacts& f = add("split");
    f.plan = split_kernel_plan;
    f.choose_tactic = data_tactic("one strided copy per output");
  }
  add("tile").choose_tactic = data_tactic("strided copy over [repeat, length] dim pairs");
  {
    FamilyFacts& f = add("gemm");
    f.tensor_cores = true;
    f.plan = linear::gemm_plan;
    f.choose_tactic = linear::gemm_tactic;
    f.work = work::gemm;
  }
  {
    FamilyFacts& f = add("conv");
    f.channels_last = true;
    f.pitch = ChannelPitch::on_tensor_cores;
    f.writes_channel_slice = true;
    f.tensor_cores = true;
    f.plan = linear::conv_plan;
    f.choose_tactic = linear::conv_tactic;
    f.work = work::conv;
  }
  {
    FamilyFacts& f = add("conv_depthwise");
    f.channels_last = true;
    f.pitch = ChannelPitch::always;
    f.writes_channel_slice = true;
    f.accepts = depthwise;
    f.plan = linear::conv_depthwise_plan;
    f.choose_tactic = linear::conv_depthwise_tactic;
    f.work = work::conv_depthwise;
  }
  {
    FamilyFacts& f = add("conv_transpose");
    f.plan = linear::conv_transpose_plan;
    f.choose_tactic = linear::conv_transpose_tactic;
    f.work = work::conv_transpose;
  }
  {
    FamilyFacts& f = add("pool");
    f.channels_last = true;
    f.pitch = ChannelPitch::always;
    f.writes_channel_slice = true;
    f.plan = linear::pool_plan;
    f.choose_tactic = linear::pool_tactic;
    f.work = work::pool;
  }
  // Reduction-shaped families whose operands each keep their element type; each plans its split
  // (schedule/reduction.h).
  struct Reduction {
    const char* name;
    decltype(FamilyFacts::choose_tactic) rule;
    decltype(FamilyFacts::plan) plan;
    decltype(FamilyFacts::work) work;
  };
  for (const Reduction& r :
       {Reduction{"softmax", reduction::softmax_tactic,
                  [](const Kernel& k) { return make_plan("softmax", reduction::softmax_plan(k)); }, work::softmax},
        Reduction{"layernorm", reduction::layernorm_tactic,
                  [](const Kernel& k) { return make_plan("layernorm", reduction::layernorm_plan(k)); }, work::layernorm},
        Reduction{"instancenorm", reduction::instancenorm_tactic,
                  [](const Kernel& k) { return make_plan("instancenorm", reduction::instancenorm_plan(k)); },
                  work::instancenorm},
        Reduction{"reduce", reduction::reduce_tactic,
                  [](const Kernel& k) { return make_plan("reduce", reduction::reduce_layout(k)); }, nullptr}}) {
    FamilyFacts& f = add(r.name);
    f.converts_types = true;
    f.choose_tactic = r.rule;
    f.plan = r.plan;
    f.work = r.work;
  }
  {
    FamilyFacts& f = add("argminmax");
    f.plan = reduction::argminmax_plan;
    f.choose_tactic = reduction::argminmax_tactic;
  }
  {
    FamilyFacts& f = add("topk");
    f.plan = reduction::topk_plan;
    f.choose_tactic = reduction::topk_tactic;
    f.work = work::topk;
  }
  // Gathers, scatters and scans by index (ops/indexing.h; templates/gather_scatter.cuh, scan.cuh,
  // triangular.cuh); their plans: schedule/indexing.h.
  {
    FamilyFacts& f = add("gather_elements");
    f.plan = gather_elements_kernel_plan;
    f.choose_tactic = data_tactic("one thread per output element, indices read at run time");
  }
  {
    FamilyFacts& f = add("gather_nd");
    f.plan = gather_nd_kernel_plan;
    f.choose_tactic = data_tactic("one thread per output element, index tuples read at run time");
  }
  {
    FamilyFacts& f = add("scatter_elements");
    f.plan = scatter_elements_kernel_plan;
    f.choose_tactic = data_tactic(
        "the data copied, then one thread per line of updates along the axis, applied in order");
  }
  {
    FamilyFacts& f = add("scatter_nd");
    f.plan = scatter_nd_kernel_plan;
    f.choose_tactic = data_tactic(
        "the data copied, then one thread per update element (a reduction: per slice element, over the tuples in order)");
  }
  {
    FamilyFacts& f = add("onehot");
    f.plan = onehot_kernel_plan;
    f.choose_tactic = data_tactic("one thread per output element, indices read at run time");
  }
  {
    FamilyFacts& f = add("trilu");
    f.plan = trilu_kernel_plan;
    f.choose_tactic = data_tactic("one thread per output element, the triangle's test on its coordinates");
  }
  {
    FamilyFacts& f = add("cumsum");
    f.plan = cumsum_kernel_plan;
    f.choose_tactic = data_tactic("one thread per line along the axis, summed in order");
  }
  add("nonzero").choose_tactic = [](Kernel& k, const std::vector<Target>&) {
    k.tactic = GridStrideTactic{256, 1};  // templates/scan.cuh NonZero: one block
    k.note = "one block: chunk counts, their prefix sums, the coordinates written in order";
  };
  // INT8 (schedule/int8.h): QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear as strided
  // elementwise kernels; modelc.QConv / QMatMul on integer tensor cores; the ONNX integer products
  // the INT8 kernels do not take, direct.
  {
    FamilyFacts& f = add("quantize");
    // Strided in and out, but it does not pull its input channels-last: a model input's Cast to FP16
    // then folds into it, and it writes the padded NHWC INT8 buffer from the NCHW float input.
    f.strided_operands = true;
    f.converts_types = true;
    f.choose_tactic = quantize_tactic;
    f.plan = [](const Kernel& k) { return make_plan("quantize", quantize_plan(k)); };
  }
  {
    FamilyFacts& f = add("conv_int8");
    f.channels_last = true;
    f.pitch = ChannelPitch::on_tensor_cores;
    f.tensor_cores = true;
    f.plan = linear::conv_int8_plan;
    f.choose_tactic = linear::conv_int8_tactic;
    f.work = work::conv_int8;
  }
  {
    FamilyFacts& f = add("gemm_int8");
    f.tensor_cores = true;
    f.plan = linear::gemm_int8_plan;
    f.choose_tactic = linear::gemm_int8_tactic;
    f.work = work::gemm_int8;
  }
  {
    FamilyFacts& f = add("qlinear");
    f.plan = [](const Kernel& k) { return make_plan("qlinear", linear::qlinear_plan(k)); };
    f.choose_tactic = linear::qlinear_tactic;
    f.work = work::qlinear;
  }
  return t;
}

// The built-in families, then the registered ones (a deque: references stay valid as it grows).
std::deque<FamilyFacts>& table() {
  static std::deque<FamilyFacts> t = [] {
    std::vector<FamilyFacts> v = make_table();
    return std::deque<FamilyFacts>(v.begin(), v.end());
  }();
  return t;
}

}  // namespace

void register_family(FamilyFacts f) {
  if (find_family(f.name)) throw Error("internal: template family '" + f.name + "' registered twice");
  table().push_back(std::move(f));
}

const FamilyFacts* find_family(const std::string& name) {
  for (const FamilyFacts& f : table()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const FamilyFacts& family_facts(const std::string& name) {
  const FamilyFacts* f = find_family(name);
  if (!f) throw Error("internal: no template family '" + name + "' in the schedule's table (schedule/families.cpp)");
  return *f;
}

std::vector<const FamilyFacts*> all_families() {
  std::vector<const FamilyFacts*> r;
  for (const FamilyFacts& f : table()) r.push_back(&f);
  std::sort(r.begin(), r.end(), [](const FamilyFacts* a, const FamilyFacts* b) { return a->name < b->name; });
  return r;
}

std::string family_for(const Node& n) {
  const std::vector<std::string>& kernels = ops::lookup(n).kernels;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const FamilyFacts* f = find_family(kernels[i]);
    if (i + 1 == kernels.size() || !f || !f->accepts || f->accepts(n)) return kernels[i];
  }
  return "";
}

bool tensor_core_operands(const Node& n) {
  const ops::OpDef& def = ops::lookup(n);
  const int w = def.layout_roles.weight;
  if (w < 0 || !n.has_input(0) || !n.has_input(w)) return false;
  const Value& x = n.input(0);
  const Value& wt = n.input(w);
  // FP16 or BF16 X and W, or an 8-bit X and int8 W (the INT8 kernels: modelc.QConv).
  const bool half = (x.dtype() == DType::float16 || x.dtype() == DType::bfloat16) && wt.dtype() == x.dtype();
  const bool int8 = (x.dtype() == DType::int8 || x.dtype() == DType::uint8) && wt.dtype() == DType::int8;
  return (x.rank() == 4 || x.rank() == 5) && wt.rank() == x.rank() && (half || int8) && wt.shape()[1] == x.shape()[1];
}

}  // namespace modelc
