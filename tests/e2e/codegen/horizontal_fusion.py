#!/usr/bin/python3
"""Horizontal fusion through the host emulation (issue 9; run by ctest, see CMakeLists.txt beside).

    horizontal_fusion.py --modelc BIN --work DIR [--jobs N]

The model (onnx.helper, opset 17), an Inception-like module whose sibling 1x1 convs differ in what
follows them and in their channel counts (none a multiple of 8 past the first):

    x [1, 16, 8, 8] -> conv a 1x1 (8) + Relu ------------------------------> Concat -> y
                    -> conv r1 1x1 (12) + Relu -> conv b 3x3 p1 (8) + Relu -> Concat
                    -> conv r2 1x1 (5, no bias, no activation) -> conv c 3x3 p1 (6) -> Concat
                    -> conv s 1x1 stride 2 (8) -> ys       (another stride: stays separate)
                    -> conv k 3x3 p1 (4) + Sigmoid -> yk   (another kernel: stays separate)

For every compile (FP32 and --fp16, default layout and --layout nchw), report.json must show ONE
kernel for a, r1 and r2 with the ranges [0, 8), [8, 20), [20, 25), KERNELS kernels in all (with
--disable-pass fuse_horizontal: 2 more), and `modelc verify --emulate` (the emitted program on the
host emulation against the reference interpreter) must pass: every range written where its reader
finds it (the Concat's slice, the buffers of the 3x3 convs, at their pitches), with its own
activation.
"""

import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fp16_islands import arguments, fail, run, verify  # (beside this script)

SEED = 20261124
RANGES = [("a", 0, 8), ("r1", 8, 20), ("r2", 20, 25)]


def build(path):
    rng = np.random.default_rng(SEED)
    inits = []

    def weight(name, shape, scale=0.3):
        inits.append(numpy_helper.from_array(rng.normal(0, scale, shape).astype(np.float32), name))
        return name

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
    F32 = TensorProto.FLOAT
    outputs = [helper.make_tensor_value_info("y", F32, [1, 22, 8, 8]),
               helper.make_tensor_value_info("ys", F32, [1, 8, 4, 4]),
               helper.make_tensor_value_info("yk", F32, [1, 4, 8, 8])]
    graph = helper.make_graph(nodes, "horizontal_fusion", [helper.make_tensor_value_info("x", F32, [1, 16, 8, 8])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="horizontal_fusion.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def compile_report(modelc, model, out, flags):
    rc, _ = run([modelc, model, "-o", out] + flags)
    if rc != 0:
        fail(f"modelc {' '.join(flags)} exited with {rc}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def main():
    a = arguments(__doc__)
    model = os.path.join(a.work, "horizontal_fusion.onnx")
    build(model)
    for name, flags in [("fp32", []), ("fp16", ["--fp16"]), ("nchw", ["--layout", "nchw"]),
                        ("fp16_nchw", ["--fp16", "--layout", "nchw"])]:
        report = compile_report(a.modelc, model, os.path.join(a.work, "out_" + name), flags)
        fused = [k for k in report["kernels"] if k.get("ranges")]
        if len(fused) != 1:
            fail(f"{name}: {len(fused)} horizontally fused kernels, expected 1")
        got = [(r["node"], r["begin"], r["end"]) for r in fused[0]["ranges"]]
        if got != RANGES:
            fail(f"{name}: ranges {got}, expected {RANGES}")
        for node in ("s", "k"):
            own = [k for k in report["kernels"] if k["nodes"][0] == node and not k.get("ranges")]
            if len(own) != 1:
                fail(f"{name}: conv {node} (another stride or kernel size) is not a kernel of its own")
        unfused = compile_report(a.modelc, model, os.path.join(a.work, "unfused_" + name),
                                 flags + ["--disable-pass", "fuse_horizontal"])
        if len(unfused["kernels"]) != len(report["kernels"]) + 2:
            fail(f"{name}: {len(report['kernels'])} kernels, {len(unfused['kernels'])} unfused: expected 2 fewer")
        print(f"{name}: {len(report['kernels'])} kernels ({len(unfused['kernels'])} without fuse_horizontal); "
              f"{fused[0]['note']}")
        verify(a.modelc, model, os.path.join(a.work, "verify_" + name), a.jobs, flags, name)
    print("OK")


if __name__ == "__main__":
    main()
