#!/usr/bin/python3
"""Horizontal fusion through the host emulation (issue 9; run by ctest, see CMakeLists.txt beside).

    horizontal_fusion.py --modelc BIN --work DIR --case conv|matmul [--jobs N]

conv: an Inception-like module (onnx.helper, opset 17) whose sibling 1x1 convs differ in what
follows them and in their channel counts (none a multiple of 8 past the first):

    x [1, 16, 8, 8] -> conv a 1x1 (8) + Relu ------------------------------> Concat -> y
                    -> conv r1 1x1 (12) + Relu -> conv b 3x3 p1 (8) + Relu -> Concat
                    -> conv r2 1x1 (5, no bias, no activation) -> conv c 3x3 p1 (6) -> Concat
                    -> conv s 1x1 stride 2 (8) -> ys       (another stride: stays separate)
                    -> conv k 3x3 p1 (4) + Sigmoid -> yk   (another kernel: stays separate)

For every compile (FP32 and --fp16, default layout and --layout nchw), report.json must show ONE
kernel for a, r1 and r2 with the ranges [0, 8), [8, 20), [20, 25), and `modelc verify --emulate`
(the emitted program on the host emulation against the reference interpreter) must pass: every
range written where its reader finds it (the Concat's slice, the buffers of the 3x3 convs, at
their pitches), with its own activation.

matmul: attention-like projections, sibling MatMuls on one A of two batches, column counts not
all multiples of 8 (so the tensor-core store writes whole 16-byte runs for some ranges only):

    x [2, 8, 128] -> MatMul q (Wq [128, 16]) + Add bias ----------------------> yq
                  -> MatMul k (Wk [128, 20]) + Add bias + Relu ---------------> yk
                  -> MatMul v (Wv [128, 12]) ---------------------------------> yv
                  -> MatMul m (x by x^T squared: a non-constant B) -----------> ym   (stays separate)
                  -> MatMul t (Wt [128, 8]) -> Transpose (0, 2, 1) -> Neg ----> ytt  (writes through the
                                                                                    Transpose: stays separate)
    xr = Relu(x)  -> MatMul p (Wp [128, 16]) -> Transpose (0, 2, 1) -> Neg ---> ypt
                  -> MatMul r (Wr [128, 24]) + Add bias + Sigmoid -> Transpose -> Neg -> yrt

q, k and v: one kernel, ranges [0, 16), [16, 36), [36, 48), the batch folded into 16 rows; p and
r (both written through their Transposes, so the batch stays a batch: each range's batch stride):
one kernel, ranges [0, 16), [16, 40). FP32 and --fp16 (on tensor cores); verify --emulate passes.
Also models/tiny_transformer.onnx (FP32 and --fp16): its Q, K and V projections are one kernel of
three ranges (codegen_verify[_fp16]_tiny_transformer run it through the emulation).

Each compile with --disable-pass fuse_horizontal has a kernel more per range past each kernel's
first.
"""

import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fp16_islands import arguments, fail, run, verify  # (beside this script)

SEED = 20261124
HERE = os.path.dirname(os.path.abspath(__file__))
TINY_TRANSFORMER = os.path.join(HERE, "..", "..", "..", "models", "tiny_transformer.onnx")


def build_conv(path, weight):
    n = helper.make_node
    nodes = [
        n("Conv", ["x", weight("Wa", (8, 16, 1, 1)), weight("Ba", (8,), 0.1)], ["a"], name="a"),
        n("Relu", ["a"], ["ar"], name="a_relu"),
        n("Conv", ["x", weight("Wr1", (12, 16, 1, 1)), weight("Br1", (12,), 0.1)], ["r1"], name="r1"),
        n("Relu", ["r1"], ["r1r"], name="r1_relu"),
        n("Conv", ["x", weight("Wr2", (5, 16, 1, 1))], ["r2"], name="r2"),
        n("Conv", ["r1r", weight("Wb", (8, 12, 3, 3)), weight("Bb", (8,), 0.1)], ["b"], pads=[1, 1, 1, 1], name="b"),
        n("Relu", ["b"], ["br"], name="b_relu"),
        n("Conv", ["r2", weight("Wc", (6, 5, 3, 3))], ["c"], pads=[1, 1, 1, 1], name="c"),
        n("Concat", ["ar", "br", "c"], ["y"], axis=1, name="concat"),
        n("Conv", ["x", weight("Ws", (8, 16, 1, 1))], ["ys"], strides=[2, 2], name="s"),
        n("Conv", ["x", weight("Wk", (4, 16, 3, 3))], ["k"], pads=[1, 1, 1, 1], name="k"),
        n("Sigmoid", ["k"], ["yk"], name="k_sigmoid"),
    ]
    outputs = {"y": [1, 22, 8, 8], "ys": [1, 8, 4, 4], "yk": [1, 4, 8, 8]}
    return nodes, [1, 16, 8, 8], outputs


def build_matmul(path, weight):
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", weight("Wq", (128, 16), 0.1)], ["q"], name="q"),
        n("Add", ["q", weight("Bq", (16,), 0.1)], ["yq"], name="q_add"),
        n("MatMul", ["x", weight("Wk", (128, 20), 0.1)], ["k"], name="k"),
        n("Add", ["k", weight("Bk", (20,), 0.1)], ["kb"], name="k_add"),
        n("Relu", ["kb"], ["yk"], name="k_relu"),
        n("MatMul", ["x", weight("Wv", (128, 12), 0.1)], ["yv"], name="v"),
        n("Mul", ["x", "x"], ["xx"], name="square"),
        n("Transpose", ["xx"], ["xxt"], perm=[0, 2, 1], name="xx_transpose"),
        n("MatMul", ["x", "xxt"], ["ym"], name="m"),
        n("MatMul", ["x", weight("Wt", (128, 8), 0.1)], ["t"], name="t"),
        n("Transpose", ["t"], ["tt"], perm=[0, 2, 1], name="t_transpose"),
        n("Neg", ["tt"], ["ytt"], name="t_neg"),
        n("Relu", ["x"], ["xr"], name="x_relu"),
        n("MatMul", ["xr", weight("Wp", (128, 16), 0.1)], ["p"], name="p"),
        n("Transpose", ["p"], ["pt"], perm=[0, 2, 1], name="p_transpose"),
        n("Neg", ["pt"], ["ypt"], name="p_neg"),
        n("MatMul", ["xr", weight("Wr", (128, 24), 0.1)], ["r"], name="r"),
        n("Add", ["r", weight("Br", (24,), 0.1)], ["rb"], name="r_add"),
        n("Sigmoid", ["rb"], ["rs"], name="r_sigmoid"),
        n("Transpose", ["rs"], ["rt"], perm=[0, 2, 1], name="r_transpose"),
        n("Neg", ["rt"], ["yrt"], name="r_neg"),
    ]
    outputs = {"yq": [2, 8, 16], "yk": [2, 8, 20], "yv": [2, 8, 12], "ym": [2, 8, 8], "ytt": [2, 8, 8],
               "ypt": [2, 16, 8], "yrt": [2, 24, 8]}
    return nodes, [2, 8, 128], outputs


CASES = {
    # name: (build, each fused kernel's ranges, nodes that stay kernels of their own, compiles)
    "conv": (build_conv, [[("a", 0, 8), ("r1", 8, 20), ("r2", 20, 25)]], ["s", "k"],
             [("fp32", []), ("fp16", ["--fp16"]), ("nchw", ["--layout", "nchw"]),
              ("fp16_nchw", ["--fp16", "--layout", "nchw"])]),
    "matmul": (build_matmul, [[("q", 0, 16), ("k", 16, 36), ("v", 36, 48)], [("p", 0, 16), ("r", 16, 40)]],
               ["m", "t"], [("fp32", []), ("fp16", ["--fp16"])]),
}


def build(path, case):
    rng = np.random.default_rng(SEED)
    inits = []

    def weight(name, shape, scale=0.3):
        inits.append(numpy_helper.from_array(rng.normal(0, scale, shape).astype(np.float32), name))
        return name

    nodes, x_shape, outputs = CASES[case][0](path, weight)
    F32 = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "horizontal_fusion", [helper.make_tensor_value_info("x", F32, x_shape)],
                              [helper.make_tensor_value_info(k, F32, v) for k, v in outputs.items()], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="horizontal_fusion.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def compile_report(modelc, model, out, flags):
    rc, _ = run([modelc, model, "-o", out] + flags)
    if rc != 0:
        fail(f"modelc {' '.join(flags)} exited with {rc}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def check_fused(a, model, name, flags, ranges, separate):
    """Compiles `model` with and without fuse_horizontal: the fused kernels of `ranges` (per kernel,
    in order: (node, begin, end) each), the nodes `separate` kernels of their own, a kernel more
    unfused per range past each fused kernel's first."""
    report = compile_report(a.modelc, model, os.path.join(a.work, "out_" + name), flags)
    fused = [k for k in report["kernels"] if k.get("ranges")]
    got = [[(r["node"], r["begin"], r["end"]) for r in k["ranges"]] for k in fused]
    if got != ranges:
        fail(f"{name}: horizontally fused kernels of the ranges {got}, expected {ranges}")
    for node in separate:
        own = [k for k in report["kernels"] if k["nodes"][0] == node and not k.get("ranges")]
        if len(own) != 1:
            fail(f"{name}: {node} is not a kernel of its own")
    unfused = compile_report(a.modelc, model, os.path.join(a.work, "unfused_" + name),
                             flags + ["--disable-pass", "fuse_horizontal"])
    more = sum(len(r) - 1 for r in ranges)
    if len(unfused["kernels"]) != len(report["kernels"]) + more:
        fail(f"{name}: {len(report['kernels'])} kernels, {len(unfused['kernels'])} unfused: expected {more} fewer")
    print(f"{name}: {len(report['kernels'])} kernels ({len(unfused['kernels'])} without fuse_horizontal)")
    for k in fused:
        print(f"  {k.get('engine')}: {k['note']}")


def main():
    a = arguments(__doc__, lambda ap: ap.add_argument("--case", required=True, choices=sorted(CASES)))
    _, ranges, separate, compiles = CASES[a.case]
    model = os.path.join(a.work, f"horizontal_{a.case}.onnx")
    build(model, a.case)
    for name, flags in compiles:
        check_fused(a, model, name, flags, ranges, separate)
        verify(a.modelc, model, os.path.join(a.work, "verify_" + name), a.jobs, flags, name)
    if a.case == "matmul":
        if not os.path.isfile(TINY_TRANSFORMER):
            fail(f"{TINY_TRANSFORMER} is missing")
        qkv = [("/q/MatMul", 0, 64), ("/k/MatMul", 64, 128), ("/v/MatMul", 128, 192)]
        for name, flags in [("tiny_transformer", []), ("tiny_transformer_fp16", ["--fp16"])]:
            check_fused(a, TINY_TRANSFORMER, name, flags, [qkv], [])
    print("OK")


if __name__ == "__main__":
    main()
