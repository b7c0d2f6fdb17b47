#!/usr/bin/env python3
"""tests/codegen/make_ffn_norm.py OUT.onnx — a transformer's feed-forward block at batch 1, 128 tokens:
x [1, 128, 768] -> MatMul (768 x 3072) + bias -> Relu -> MatMul (3072 x 768) + bias + x ->
LayerNormalization over the 768 channels (opset 17), random weights (seed 0, scaled so the
activations stay near 1): BERT-base's shapes. Its second product, long in K (3072) and short in N
(768), runs on sm_80 and sm_90 on the small-M engine with its K split across blocks, and the
LayerNorm in that product's launch (fuse_row_norm): the case `check_small_m.py verify
--min-split-norms 1` runs on the emulation.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_ffn_norm.py OUT.onnx")
    rng = np.random.default_rng(0)
    T, C, F = 128, 768, 3072
    w = {
        "w1": rng.standard_normal((C, F)).astype(np.float32) / np.sqrt(C),
        "b1": 0.1 * rng.standard_normal(F).astype(np.float32),
        "w2": rng.standard_normal((F, C)).astype(np.float32) / np.sqrt(F),
        "b2": 0.1 * rng.standard_normal(C).astype(np.float32),
        "gamma": (1 + 0.1 * rng.standard_normal(C)).astype(np.float32),
        "beta": 0.1 * rng.standard_normal(C).astype(np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="up"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="up_bias"),
        helper.make_node("Relu", ["h1"], ["h2"], name="act"),
        helper.make_node("MatMul", ["h2", "w2"], ["d0"], name="down"),
        helper.make_node("Add", ["d0", "b2"], ["d1"], name="down_bias"),
        helper.make_node("Add", ["d1", "x"], ["d2"], name="residual"),
        helper.make_node("LayerNormalization", ["d2", "gamma", "beta"], ["y"], name="norm", axis=-1, epsilon=1e-5),
    ]
    graph = helper.make_graph(nodes, "ffn_norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, C])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, T, C])],
                              [numpy_helper.from_array(v, k) for k, v in w.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="modelc tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
