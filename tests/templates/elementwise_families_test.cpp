// The emit functions of the elementwise and data-movement families (codegen/families/): every op
// they run gives a launch of the right template with the right compile-time shapes and strides,
// attributes and constant inputs read at emit time, and unsupported input a modelc::Error. The
// emitted code itself is compiled and run by the e2e tests (modelc verify --emulate).
#include "schedule/families.h"
#include "schedule/tactics.h"
#include "codegen/family.h"
#include "ops/registry.h"
#include "tests/codegen/launch_text.h"
#include "tests/templates/elementwise_harness.h"

using namespace ew_test;
using modelc::test::launch_text;

namespace {

// Pointers as `P(value)`, so tests can see which view went where.
struct FakeContext : EmitContext {
  std::string ptr(const TensorView& v, bool is_const) const override {
    return (is_const ? "CP(" : "P(") + v.value + ")";
  }
  std::string ctype(DType t) const override { return dtype_name(t); }
};

TensorView dense_view(const Value& v) {
  TensorView t;
  t.value = v.name();
  t.dtype = v.dtype();
  t.shape = v.shape();
  t.strides = strides_of(v.shape());
  return t;
}

// Lowers the one node of `c` to a Kernel of its first listed family, with dense views, and emits it.
KernelLaunches emit(OneNode& c, const std::string& family = "") {
  ops::infer_graph(c.g);
  Kernel k;
  k.id = "k0";
  k.source.node = c.n;
  k.op = {c.n->name(), c.n->op(), c.n->domain(), c.n->opset()};
  k.family = &family_facts(family.empty() ? ops::OpRegistry::instance().find(c.n->op(), c.n->opset())->kernels.at(0) : family);
  TensorView absent;
  absent.dtype = DType::undefined;
  for (const Value* v : c.n->inputs()) k.inputs.push_back(v ? dense_view(*v) : absent);
  for (const Value* v : c.n->outputs()) k.outputs.push_back(v ? dense_view(*v) : absent);
  const KernelFamily* f = FamilyRegistry::instance().find(k.family_name());
  REQUIRE(f != nullptr);
  plan_kernel(k);
  choose_tactic(k, {Target{}});
  return f->emit(k, FakeContext{});
}

bool has(const std::string& text, const std::string& part) {
  const bool found = text.find(part) != std::string::npos;
  if (!found) MESSAGE("'" << part << "' not in:\n" << text);
  return found;
}

Tensor f32s(const Shape& s) { return random_tensor(DType::float32, s, 1); }

}  // namespace

TEST_CASE("elementwise family: every op the registry gives it emits a launch") {
  for (const char* op : {"Neg", "Abs", "Sqrt", "Exp", "Log", "Reciprocal", "Floor", "Ceil", "Erf", "Relu", "Sigmoid",
                         "HardSwish", "Tanh", "LeakyRelu", "Elu", "Selu", "HardSigmoid", "Softplus", "Identity"}) {
    CAPTURE(op);
    OneNode c(op, 14, {f32s({2, 3})});
    const KernelLaunches e = emit(c, "elementwise");
    REQUIRE(e.launches.size() == 1);
    CHECK(has(launch_text(e), "mc::ew::Elementwise<mc::ew::" + std::string(op)));
    CHECK(has(launch_text(e),
              std::string(op) == "Identity" ? "mc::ew::Operand<uint32_t, mc::ix::Dims<1>>" : "mc::ix::Dims<6>"));
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                         "PRelu", "Max", "Min", "Sum", "Mean"}) {
    CAPTURE(op);
    OneNode c(op, 16, {f32s({2, 3, 4}), f32s({3, 1})});
    const KernelLaunches e = emit(c);
    CHECK(has(launch_text(e), "mc::ew::" + std::string(op) + ", mc::ix::Dims<2, 3, 4>"));
    CHECK(has(launch_text(e), "mc::ew::Operand<float, mc::ix::Dims<0, 1, 0>>"));
    CHECK(has(launch_text(e), "x[0] = CP(x0);\nx[1] = CP(x1);\n"));
  }
  for (const char* op : {"And", "Or", "Xor"}) {
    OneNode c(op, 7, {random_tensor(DType::boolean, {4}, 2), random_tensor(DType::boolean, {4}, 3)});
    CHECK(has(launch_text(emit(c)), "mc::ew::Operand<bool, mc::ix::Dims<1>>"));
  }
  OneNode n("Not", 1, {random_tensor(DType::boolean, {4}, 2)});
  CHECK(has(launch_text(emit(n)), "mc::ew::Not"));
}

TEST_CASE("elementwise family: attributes, constant bounds and types reach the code") {
  SUBCASE("LeakyRelu alpha as the nearest float") {
    OneNode c("LeakyRelu", 16, {f32s({4})});
    c.n->set_attr_float("alpha", 0.1);
    CHECK(has(launch_text(emit(c)), "mc::ew::LeakyRelu{0.1f}"));
  }
  SUBCASE("Clip 6 attributes, Clip 13 constant integer bounds, Clip 13 run-time bounds") {
    OneNode c6("Clip", 6, {f32s({4})});
    c6.n->set_attr_float("max", 6.0);
    CHECK(has(launch_text(emit(c6)), "mc::ew::Clip<float, false, true>{0.0f, 6.0f}"));
    OneNode c13("Clip", 13, {i64({4}, {1, 2, 3, 4}), i64({}, {INT64_MIN}), i64({}, {3})}, {1, 2});
    CHECK(has(launch_text(emit(c13)), "mc::ew::Clip<int64_t, true, true>{INT64_MIN, 3}"));
    OneNode cr("Clip", 13, {f32s({4}), Tensor(), f32({}, {1})});
    const KernelLaunches e = emit(cr);
    CHECK(has(launch_text(e), "mc::ew::Elementwise<mc::ew::ClipInputs<false, true>"));
    CHECK(has(launch_text(e), "mc::ew::Operand<float, mc::ix::Dims<0>>"));
  }
  SUBCASE("Cast converts in the store; Cast to the same type copies bits") {
    OneNode c("Cast", 13, {f32s({4})});
    c.n->set_attr_int("to", 10);
    const KernelLaunches e = emit(c);
    CHECK(has(launch_text(e), "mc::ew::Operand<__half, mc::ix::Dims<1>>"));
    CHECK(has(launch_text(e), "mc::ew::Operand<float, mc::ix::Dims<1>>"));
    OneNode same("Cast", 13, {random_tensor(DType::bfloat16, {4}, 1)});
    same.n->set_attr_int("to", 16);
    CHECK(has(launch_text(emit(same)), "mc::ew::Operand<uint16_t"));
    OneNode like("CastLike", 15, {f32s({4}), random_tensor(DType::bfloat16, {1}, 1)});
    const KernelLaunches l = emit(like);
    CHECK(has(launch_text(l), "mc::ew::Operand<mc::ix::bf16, mc::ix::Dims<1>>"));
    CHECK(has(launch_text(l), "x[0] = CP(x0);\n"));
  }
  SUBCASE("Where: bool condition, values as bits") {
    OneNode c("Where", 16, {random_tensor(DType::boolean, {2, 1}, 1), i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({}, {0})});
    const KernelLaunches e = emit(c);
    CHECK(has(launch_text(e), "mc::ew::Operand<bool, mc::ix::Dims<1, 0>>"));
    CHECK(has(launch_text(e), "mc::ew::Operand<uint64_t, mc::ix::Dims<0, 0>>"));
  }
  SUBCASE("BatchNormalization parameters align with the channel dim") {
    OneNode c("BatchNormalization", 15, {f32s({2, 3, 4, 5}), f32s({3}), f32s({3}), f32s({3}), f32s({3})}, {1, 2, 3, 4});
    c.n->set_attr_float("epsilon", 1e-3);
    const KernelLaunches e = emit(c);
    CHECK(has(launch_text(e), "mc::ew::BatchNorm, mc::ix::Dims<2, 3, 20>"));
    CHECK(has(launch_text(e), "mc::ew::Operand<float, mc::ix::Dims<0, 1, 0>>"));
    CHECK(has(launch_text(e), "mc::ew::BatchNorm{0.001f}"));
  }
  SUBCASE("legacy broadcast (Add 6 with axis) and PRelu 6 per channel") {
    OneNode c("Add", 6, {f32s({2, 3, 4, 5}), f32s({3, 4})});
    c.n->set_attr_int("broadcast", 1);
    c.n->set_attr_int("axis", 1);
    CHECK(has(launch_text(emit(c)), "mc::ew::Operand<float, mc::ix::Dims<0, 1, 0>>"));  // as 2 x 12 x 5
    OneNode p("PRelu", 6, {f32s({2, 3, 4}), f32s({3})});
    CHECK(has(launch_text(emit(p)), "mc::ew::Operand<float, mc::ix::Dims<0, 1, 0>>"));
  }
  SUBCASE("an empty output launches nothing") {
    OneNode c("Relu", 14, {f32s({0, 3})});
    const KernelLaunches e = emit(c);
    CHECK(e.launches.empty());
    CHECK(has(e.nothing_to_run, "the output is empty"));
  }
}

TEST_CASE("data families: each op emits its template with the planned index math") {
  SUBCASE("Transpose") {
    OneNode c("Transpose", 13, {f32s({2, 3, 4})});
    c.n->set_attr_ints("perm", {0, 2, 1});
    const KernelLaunches e = emit(c);
    CHECK(
        has(launch_text(e), "mc::dm::Copy<uint32_t, mc::ix::Dims<2, 4, 3>, mc::ix::Dims<12, 3, 1>, mc::ix::Dims<12, 1, 4>>"));
  }
  SUBCASE("Transpose of long inner dims goes through shared-memory tiles") {
    OneNode c("Transpose", 13, {f32s({2, 16, 24})});
    c.n->set_attr_ints("perm", {0, 2, 1});
    CHECK(has(launch_text(emit(c)),
              "mc::dm::TiledCopy<uint32_t, mc::ix::Dims<2>, mc::ix::Dims<384>, mc::ix::Dims<384>,\n      24, 16, 16, "
              "1, 1, 24>"));
  }
  SUBCASE("Slice backward starts at an offset pointer") {
    OneNode c("Slice", 13, {f32s({5, 6}), i64({1}, {-1}), i64({1}, {-100}), i64({1}, {1}), i64({1}, {-2})},
              {1, 2, 3, 4});
    const KernelLaunches e = emit(c);
    CHECK(has(launch_text(e), "mc::dm::Copy<uint32_t, mc::ix::Dims<5, 3>, mc::ix::Dims<3, 1>, mc::ix::Dims<6, -2>>"));
    CHECK(has(launch_text(e), "(CP(x0)) + 5"));
  }
  SUBCASE("Concat: one copy per input at its offset") {
    OneNode c("Concat", 13, {f32s({2, 3}), f32s({2, 1})});
    c.n->set_attr_int("axis", 1);
    const KernelLaunches e = emit(c);
    CHECK(has(launch_text(e), "(P(y0)) + 3"));
    CHECK(has(launch_text(e), "mc::dm::Copy<uint32_t, mc::ix::Dims<2, 3>, mc::ix::Dims<4, 1>, mc::ix::Dims<3, 1>>"));
  }
  SUBCASE("Split: one copy per output from its offset") {
    OneNode c("Split", 13, {random_tensor(DType::float16, {4, 2}, 1), i64({2}, {1, 3})}, {1}, 2);
    const KernelLaunches e = emit(c);
    CHECK(has(launch_text(e), "(CP(x0)) + 2"));
    CHECK(has(launch_text(e), "mc::dm::Copy<uint16_t, mc::ix::Dims<6>"));
  }
  SUBCASE("Expand, Tile, DepthToSpace") {
    OneNode x("Expand", 13, {f32s({3, 1}), i64({2}, {3, 4})}, {1});
    CHECK(has(launch_text(emit(x)), "mc::dm::Copy<uint32_t, mc::ix::Dims<3, 4>, mc::ix::Dims<4, 1>, mc::ix::Dims<1, 0>>"));
    OneNode t("Tile", 13, {f32s({2, 3}), i64({2}, {1, 2})}, {1});
    CHECK(has(launch_text(emit(t)),
              "mc::dm::Copy<uint32_t, mc::ix::Dims<2, 2, 3>, mc::ix::Dims<6, 3, 1>, mc::ix::Dims<3, 0, 1>>"));
    OneNode d("DepthToSpace", 13, {f32s({1, 8, 2, 2})});
    d.n->set_attr_int("blocksize", 2);
    CHECK(has(launch_text(emit(d)),
              "mc::dm::Copy<uint32_t, mc::ix::Dims<4, 2, 2, 2>, mc::ix::Dims<8, 4, 2, 1>, mc::ix::Dims<2, 16, 1, 8>>"));
  }
  SUBCASE("Pad: mode, kept ranges and the fill bits") {
    OneNode c("Pad", 19, {f32s({3, 4}), i64({4}, {1, -1, 0, 2}), f32({}, {1.0f})}, {1, 2});
    c.n->set_attr_string("mode", "constant");
    const KernelLaunches e = emit(c);
    CHECK(has(launch_text(e), "mc::dm::Pad<uint32_t, mc::dm::PadMode::constant, mc::ix::Dims<4, 5>"));
    CHECK(has(launch_text(e), "mc::ix::Dims<0, 1>, mc::ix::Dims<3, 3>, mc::ix::Dims<1, -1>>"));
    CHECK(has(launch_text(e), "fill_bits = 0x3f800000u;"));
    OneNode r("Pad", 11, {f32s({3, 4}), i64({4}, {1, 1, 1, 1}), f32({}, {1.0f})}, {1});
    CHECK(has(launch_text(emit(r)), "fill = CP(x2);"));
  }
  SUBCASE("Gather") {
    OneNode c("Gather", 13, {f32s({2, 5, 3}), Tensor::from_i64(DType::int32, {2}, {1, -1})});
    c.n->set_attr_int("axis", 1);
    CHECK(has(launch_text(emit(c)),
              "mc::dm::Gather<uint32_t, int32_t,\n      mc::ix::Dims<2>, mc::ix::Dims<15>, 5, 3, mc::ix::Dims<3>"));
  }
  SUBCASE("Resize: a tap table in the declarations") {
    OneNode c("Resize", 13, {f32s({1, 1, 2, 2}), Tensor(), f32({4}, {1, 1, 2, 2})}, {2});
    c.n->set_attr_string("mode", "linear");
    const KernelLaunches e = emit(c);
    CHECK(has(e.declarations, "__device__ const mc::dm::Tap<float> k0_resize_taps[] = {"));
    CHECK(has(e.declarations, "{0, 0.75f}, {1, 0.25f},"));
    CHECK(has(launch_text(e), "mc::dm::Resize<float, float, k0_resize_taps_table, mc::ix::Dims<1, 1, 4, 4>"));
  }
}

TEST_CASE("elementwise family: an op it has no kernel for is an Error naming the node") {
  OneNode c("Softmax", 13, {f32s({2, 3})});
  CHECK_THROWS_AS(emit(c, "elementwise"), modelc::Error);
}

TEST_CASE("the ops of ops/math.cpp, activation_smooth.cpp and indexing.h emit their templates") {
  for (const char* op : {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                         "Round", "Sign", "IsNaN", "Softsign"}) {
    CAPTURE(op);
    OneNode c(op, 13, {f32s({2, 3})});
    CHECK(has(launch_text(emit(c)), "mc::ew::Elementwise<mc::ew::" + std::string(op) + ", mc::ix::Dims<6>"));
  }
  OneNode isinf("IsInf", 10, {f32s({4})});
  isinf.n->set_attr_int("detect_negative", 0);
  CHECK(has(launch_text(emit(isinf)), "mc::ew::IsInf<false, true>, mc::ix::Dims<4>,\n      mc::ew::Operand<bool"));
  OneNode mod("Mod", 13, {i64({2, 2}, {1, 2, 3, 4}), i64({2}, {3, -3})});
  CHECK(has(launch_text(emit(mod)), "mc::ew::Mod<false>, mc::ix::Dims<2, 2>"));
  OneNode celu("Celu", 12, {f32s({4})});
  celu.n->set_attr_float("alpha", 0.5);
  CHECK(has(launch_text(emit(celu)), "mc::ew::Celu{0.5f}"));
  OneNode mish("Mish", 18, {f32s({4})});
  CHECK(has(launch_text(emit(mish)), "mc::ew::Elementwise<mc::ew::Mish,"));
  OneNode gelu("Gelu", 20, {f32s({4})});
  gelu.n->set_attr_string("approximate", "tanh");
  CHECK(has(launch_text(emit(gelu)), "mc::ew::Elementwise<mc::ew::GeluTanh,"));

  OneNode ge("GatherElements", 13, {f32s({3, 4}), i64({3, 2}, {0, 1, 2, 3, -1, 0})});
  ge.n->set_attr_int("axis", 1);
  CHECK(has(launch_text(emit(ge)), "mc::gs::GatherElements<uint32_t, int64_t, mc::ix::Dims<3, 2>,\n      "
                                   "mc::ix::Dims<2, 1>, mc::ix::Dims<2, 1>, mc::ix::Dims<4, 0>, 4, 1>"));
  OneNode nd("GatherND", 13, {f32s({2, 3, 4}), i64({5, 2}, {0, 0, 1, 2, 0, 1, 1, 1, 0, 2})});
  CHECK(has(launch_text(emit(nd)), "mc::gs::GatherND<uint32_t, mc::ix::Dims<5>, mc::ix::Dims<0>, mc::ix::Dims<2>,\n"
                                   "      2, 1, mc::ix::Dims<2, 3>, mc::ix::Dims<12, 4>,\n      mc::ix::Dims<4>"));
  // A scatter: the data copied into Y, then the updates.
  OneNode se("ScatterElements", 16, {f32s({3, 4}), i64({3, 2}, {0, 1, 2, 3, -1, 0}), f32s({3, 2})});
  se.n->set_attr_int("axis", 1);
  se.n->set_attr_string("reduction", "mul");
  const KernelLaunches sel = emit(se);
  REQUIRE(sel.launches.size() == 2);
  CHECK(has(sel.launches[0].type, "mc::dm::Copy<uint32_t"));
  CHECK(has(sel.launches[1].type, "mc::gs::ScatterElements<float, int64_t, mc::gs::Reduce::mul,\n      "
                                  "mc::ix::Dims<3>, mc::ix::Dims<2>, mc::ix::Dims<2>, mc::ix::Dims<4>,\n      2, 1, 1, 4, 1>"));
  OneNode sn("ScatterND", 13, {f32s({4, 3}), i64({2, 1}, {3, 0}), f32s({2, 3})});
  const KernelLaunches snl = emit(sn);
  REQUIRE(snl.launches.size() == 2);
  CHECK(has(snl.launches[1].type, "mc::gs::ScatterND<uint32_t, mc::gs::Reduce::none, mc::ix::Dims<2>"));
  OneNode oh("OneHot", 11, {i64({2, 3}, {0, 1, 2, 3, -1, 0}), i64({}, {4}), f32({2}, {0, 1})}, {1});
  oh.n->set_attr_int("axis", 1);
  CHECK(has(launch_text(emit(oh)), "mc::gs::OneHot<uint32_t, int64_t, 2, 4, 3,"));
  OneNode cs("CumSum", 14, {f32s({2, 3, 4}), i64({}, {1})}, {1});
  cs.n->set_attr_int("reverse", 1);
  CHECK(has(launch_text(emit(cs)), "mc::scan::CumSum<float, false, true,\n      mc::ix::Dims<2>, mc::ix::Dims<12>, "
                                   "mc::ix::Dims<12>, 3, 4, 4,\n      mc::ix::Dims<4>, mc::ix::Dims<1>, mc::ix::Dims<1>>"));
  OneNode nz("NonZero", 13, {f32s({2, 3})});
  const KernelLaunches nzl = emit(nz);
  CHECK(has(launch_text(nzl), "mc::scan::NonZero<float, mc::ix::Dims<2, 3>, mc::ix::Dims<3, 1>, 6, 1>"));
  OneNode tr("Trilu", 14, {f32s({2, 3, 4}), i64({}, {-1})}, {1});
  tr.n->set_attr_int("upper", 0);
  const std::string trl = launch_text(emit(tr));
  CHECK(has(trl, "mc::tri::Trilu<uint32_t, false, mc::ix::Dims<2, 3, 4>"));
  CHECK(has(trl, "k = -1;"));
  OneNode trk("Trilu", 14, {f32s({3, 3}), i64({}, {1})});  // k computed at run time
  CHECK(has(launch_text(emit(trk)), "k_input = CP(x1);"));
}
