// schedule/families: the table of template families the schedule reads (which family runs a node,
// the layout facts, the tactic rules), and that codegen prints exactly these families.
#include <doctest/doctest.h>

#include <cmath>

#include "codegen/family.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "schedule/families.h"
#include "support/error.h"

using namespace modelc;

namespace {

// One Conv node x [1, C, 6, 6] * W [M, C / group, 3, 3] of dtype t.
struct ConvGraph {
  Graph g;
  Node* conv = nullptr;
  ConvGraph(int64_t C, int64_t M, int64_t group, DType t) {
    g.set_opset(17);
    Value* x = g.add_value("x");
    x->set_type(t, {1, C, 6, 6});
    g.add_input(x);
    const Shape ws{M, C / group, 3, 3};
    std::vector<double> d(static_cast<std::size_t>(num_elements(ws)));
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = std::cos(0.1 * static_cast<double>(i));
    Value* w = g.add_constant("W", Tensor::from_f64(t, ws, d), true);
    Value* y = g.add_value("y");
    conv = g.add_node("Conv", "conv", {x, w}, {y});
    conv->set_attr_int("group", group);
    g.add_output(y);
    ops::infer_graph(g);
  }
};

}  // namespace

TEST_CASE("families: every family the schedule knows has a printer in codegen, and no other") {
  std::vector<std::string> schedule, codegen;
  for (const FamilyFacts* f : all_families()) {
    if (f->name.rfind("test_", 0) != 0) schedule.push_back(f->name);  // tests register their own
  }
  for (const KernelFamily* f : FamilyRegistry::instance().all()) {
    if (f->name.rfind("test_", 0) != 0) codegen.push_back(f->name);
  }
  CHECK(schedule == codegen);
  CHECK(schedule.size() >= 20);
}

TEST_CASE("families: every family an op lists is in the table") {
  for (const std::string domain : {"", ops::kModelcDomain}) {
    for (const ops::OpDef* d : ops::OpRegistry::instance().all(domain)) {
      for (const std::string& k : d->kernels) {
        if (k == "view" || k == "none") continue;
        INFO(d->name << " lists " << k);
        CHECK(find_family(k) != nullptr);
      }
    }
  }
}

TEST_CASE("families: family_for picks the first family that accepts the node") {
  SUBCASE("one input channel per group: conv_depthwise") {
    ConvGraph c(8, 8, 8, DType::float32);
    CHECK(family_for(*c.conv) == "conv_depthwise");
  }
  SUBCASE("channel multiplier 2 is still depthwise") {
    ConvGraph c(4, 8, 4, DType::float32);
    CHECK(family_for(*c.conv) == "conv_depthwise");
  }
  SUBCASE("several channels per group, or one group: conv") {
    ConvGraph grouped(8, 8, 2, DType::float32);
    CHECK(family_for(*grouped.conv) == "conv");
    ConvGraph one(8, 16, 1, DType::float32);
    CHECK(family_for(*one.conv) == "conv");
    ConvGraph single_channel(1, 4, 1, DType::float32);  // C = 1 = one channel per group, one group
    CHECK(family_for(*single_channel.conv) == "conv");
  }
}

TEST_CASE("families: tensor_core_operands reads dtypes, rank and groups from the op's roles") {
  CHECK(tensor_core_operands(*ConvGraph(8, 16, 1, DType::float16).conv));
  CHECK_FALSE(tensor_core_operands(*ConvGraph(8, 16, 1, DType::float32).conv));
  CHECK_FALSE(tensor_core_operands(*ConvGraph(8, 16, 2, DType::float16).conv));
  Graph g;
  g.set_opset(17);
  Value* x = g.add_value("x");
  x->set_type(DType::float16, {1, 8, 6, 6});
  g.add_input(x);
  Value* y = g.add_value("y");
  Node* relu = g.add_node("Relu", "relu", {x}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  CHECK_FALSE(tensor_core_operands(*relu));  // no weight role
}

TEST_CASE("families: the layout facts of the families the layout stage relies on") {
  CHECK(family_facts("elementwise").strided_operands);
  CHECK(family_facts("elementwise").follows_layout == LayoutFollow::same_shape);
  CHECK(family_facts("elementwise").converts_types);
  CHECK(family_facts("concat").follows_layout == LayoutFollow::same_rank);
  CHECK(family_facts("transpose").strided_operands);
  CHECK(family_facts("transpose").follows_layout == LayoutFollow::never);
  CHECK(family_facts("conv").channels_last);
  CHECK(family_facts("conv").pitch == ChannelPitch::on_tensor_cores);
  CHECK(family_facts("conv_depthwise").pitch == ChannelPitch::always);
  CHECK(family_facts("pool").pitch == ChannelPitch::always);
  CHECK_FALSE(family_facts("conv_transpose").channels_last);
  CHECK(family_facts("gemm").tensor_cores);
  CHECK_FALSE(family_facts("gather").converts_types);
}

TEST_CASE("families: registering a name twice is refused; unknown names are an internal error") {
  FamilyFacts f;
  f.name = "elementwise";
  CHECK_THROWS_WITH_AS(register_family(f), doctest::Contains("registered twice"), Error);
  CHECK(find_family("no_such_family") == nullptr);
  CHECK_THROWS_WITH_AS(family_facts("no_such_family"), doctest::Contains("no template family 'no_such_family'"), Error);
}
