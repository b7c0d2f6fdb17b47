#!/usr/bin/python3
"""Concats without copies (issue 30; run by ctest, see CMakeLists.txt beside).

    concat_views.py --modelc BIN --work DIR [--jobs N]

One model (onnx.helper, opset 17) of two independent nets, so one emulated build covers both:

U-Net-style (input u [1, 8, 16, 16] -> yu): skip connections read twice, bilinear and nearest Resize
before the decoder's Concats:

    e1 = Relu(Conv 3x3 (16))(u)               skip 1, also read by the next conv (d1, stride 2)
    e2 = Relu(Conv 3x3 (32))(Relu(d1))         skip 2, also read by MaxPool 2x2
    b  = Relu(Conv 3x3 (32))(MaxPool(e2))
    c2 = Concat(Resize linear 2x (b), e2)      [1, 64, 8, 8]
    c1 = Concat(Resize nearest 2x (Relu(Conv 3x3 (16))(c2)), e1)   [1, 32, 16, 16]
    yu = Conv 1x1 (4)(c1)

Dense block (input d [1, 8, 8, 8] -> yd), DenseNet's nested Concats, each a prefix of the next:

    x0 = MaxPool 3x3 s1 p1 (Relu(Conv 3x3 (16))(d))
    y1 = Conv 3x3 (16)(Relu(Conv 1x1 (32)(Relu(BN(x0)))))
    c2 = Concat(x0, y1);       y2 = the same on c2 (BN + Relu first)
    c3 = Concat(x0, y1, y2);   y3 = Conv 3x3 (16)(Relu(Conv 1x1 (32)(c3)))   (a conv reads c3 as is)
    c4 = Concat(x0, y1, y2, y3)
    yd = AveragePool 2x2 (Conv 1x1 (32)(Relu(BN(c4))))

--fp16 --arch sm_80: no Concat kernel (report.json "concats": c2 and c1 elided, the skips written
once into their slices and read there by d1 and the MaxPool; c2 and c3 of the dense block
`prefix_of` c4, one buffer of 64 channels), no layout conversion kernel (the model's inputs and
outputs convert in their boundary Casts; the Resizes read and write the channels-last buffers, each
writing its slice of the decoder's Concat), and `modelc verify --emulate --fp16` passes. FP32 (no tensor cores, so the convs d1 and l3a take no channel slice): c1 and dc3 stay
kernels with that reason (dc3 copying from dc4's slices); the rest elided as above.
"""

import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fp16_islands import arguments, fail, run, verify  # (beside this script)

SEED = 20261128


def build(path):
    rng = np.random.default_rng(SEED)
    inits = []
    nodes = []

    def constant(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def weight(name, shape, scale=0.3):
        return constant(name, rng.normal(0, scale, shape))

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def conv(x, name, m, c, k, stride=1, relu=True):
        y = node("Conv", [x, weight("W" + name, (m, c, k, k), (2.0 / (c * k * k)) ** 0.5), weight("B" + name, (m,), 0.1)],
                 name, pads=[k // 2] * 4, strides=[stride, stride])
        return node("Relu", [y], name + "_relu") if relu else y

    def bn_relu(x, name, c):
        scale = constant(name + "_s", rng.uniform(0.5, 1.5, c))
        bias = weight(name + "_b", (c,), 0.1)
        mean = weight(name + "_m", (c,), 0.1)
        var = constant(name + "_v", rng.uniform(0.5, 1.5, c))
        return node("Relu", [node("BatchNormalization", [x, scale, bias, mean, var], name)], name + "_relu")

    def resize(x, name, mode):
        return node("Resize", [x, "", constant(name + "_scales", [1, 1, 2, 2])], name, mode=mode)

    # U-Net-style.
    e1 = conv("u", "e1", 16, 8, 3)
    d1 = conv(e1, "d1", 32, 16, 3, stride=2)
    e2 = conv(d1, "e2", 32, 32, 3)
    p2 = node("MaxPool", [e2], "p2", kernel_shape=[2, 2], strides=[2, 2])
    b = conv(p2, "b", 32, 32, 3)
    c2 = node("Concat", [resize(b, "u2", "linear"), e2], "c2", axis=1)
    f2 = conv(c2, "f2", 16, 64, 3)
    c1 = node("Concat", [resize(f2, "u1", "nearest"), e1], "c1", axis=1)
    node("Conv", [c1, weight("Wy", (4, 32, 1, 1), 0.2)], "yu")

    # Dense block.
    x0 = node("MaxPool", [conv("d", "stem", 16, 8, 3)], "x0", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y1 = conv(conv(bn_relu(x0, "bn1", 16), "l1a", 32, 16, 1), "y1", 16, 32, 3, relu=False)
    dc2 = node("Concat", [x0, y1], "dc2", axis=1)
    y2 = conv(conv(bn_relu(dc2, "bn2", 32), "l2a", 32, 32, 1), "y2", 16, 32, 3, relu=False)
    dc3 = node("Concat", [x0, y1, y2], "dc3", axis=1)
    y3 = conv(conv(dc3, "l3a", 32, 48, 1), "y3", 16, 32, 3, relu=False)
    dc4 = node("Concat", [x0, y1, y2, y3], "dc4", axis=1)
    t = conv(bn_relu(dc4, "bn4", 64), "t", 32, 64, 1, relu=False)
    node("AveragePool", [t], "yd", kernel_shape=[2, 2], strides=[2, 2])

    F32 = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "concat_views",
                              [helper.make_tensor_value_info("u", F32, [1, 8, 16, 16]),
                               helper.make_tensor_value_info("d", F32, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info("yu", F32, [1, 4, 16, 16]),
                               helper.make_tensor_value_info("yd", F32, [1, 32, 4, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="concat_views.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def compile_report(modelc, model, out, flags):
    rc, _ = run([modelc, model, "-o", out] + flags)
    if rc != 0:
        fail(f"modelc {' '.join(flags)} exited with {rc}")
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def check(report, what, kept):
    """Every Concat elided but those of `kept` (name -> a word its reason must hold); the dense
    block's c2 and c3 prefixes of c4; no Concat kernel but the kept ones."""
    concats = {c["node"]: c for c in report.get("concats", [])}
    if sorted(concats) != ["c1", "c2", "dc2", "dc3", "dc4"]:
        fail(f"{what}: report.json lists the Concats {sorted(concats)}")
    for name, c in sorted(concats.items()):
        reasons = [c.get("kept_because", "")] + [i.get("kept_because", "") for i in c["inputs"]]
        print(f"{what}: {name} {'elided' if c['elided'] else 'kept: ' + '; '.join(r for r in reasons if r)}")
        if name in kept:
            if c["elided"] or not any(kept[name] in r for r in reasons):
                fail(f"{what}: {name} should stay a kernel, its reason naming '{kept[name]}': {c}")
        elif not c["elided"]:
            fail(f"{what}: {name} kept: {c}")
    for name in ("dc2", "dc3"):
        if concats[name].get("prefix_of") != "dc4":
            fail(f"{what}: {name} is not a prefix of dc4: {concats[name]}")
    kernels = [k for k in report["kernels"] if k["family"] == "concat"]
    if len(kernels) != len(kept):
        fail(f"{what}: {len(kernels)} Concat kernels, expected {len(kept)}")


def main():
    a = arguments(__doc__)
    model = os.path.join(a.work, "concat_views.onnx")
    build(model)
    fp16 = ["--fp16", "--arch", "sm_80"]
    report = compile_report(a.modelc, model, os.path.join(a.work, "out_fp16"), fp16)
    check(report, "fp16", {})
    conversions = [k for k in report["kernels"] if "layout conversion" in k.get("note", "")]
    for k in conversions:
        print(f"  {k['id']}: {k['note']}")
    # The model's inputs and outputs change layout in their boundary Casts (fold_boundary_casts); the
    # Resizes read and write the channels-last buffers: no conversion kernel anywhere.
    if conversions:
        fail(f"fp16: {len(conversions)} layout conversions, expected none")
    for k in report["kernels"]:
        if k["family"] == "resize" and "(Concat '" not in k["note"]:
            fail(f"fp16: the Resize {k['nodes'][0]} does not write its slice of the decoder's Concat: {k['note']}")
    check(compile_report(a.modelc, model, os.path.join(a.work, "out_fp32"), []), "fp32",
          {"c1": "16-bit tensor-core", "dc3": "16-bit tensor-core"})
    verify(a.modelc, model, os.path.join(a.work, "verify_fp16"), a.jobs, fp16, "fp16")
    print("OK")


if __name__ == "__main__":
    main()
