// compiler/ops/activation.cpp — unary activations: Relu, LeakyRelu, PRelu, Elu,
// Selu, Sigmoid, HardSigmoid, HardSwish, Tanh, Softplus.
#include <cmath>

#include "ops/common.h"

namespace modelc::ops {
namespace {

void require_float(const Node& n) { require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16}); }

}  // namespace

MODELC_REGISTER_OP(Relu)
    .since(6)
    .inputs(1, 1)
    .validate(require_float)
    .infer(infer_same_as_input)
    .eval([](const Node&, const TensorRefs& in) {
      return std::vector<Tensor>{map_unary(*in[0], [](double x) { return x > 0 ? x : 0.0; })};
    })
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("max(x, 0)");

}  // namespace modelc::ops
