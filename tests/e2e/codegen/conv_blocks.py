#!/usr/bin/python3
"""The convolutional blocks of the nets people deploy now (issue 30) through the host emulation, in
FP16, BF16 and INT8 (run by ctest, see CMakeLists.txt beside).

    conv_blocks.py --modelc BIN --work DIR [--precisions fp16,bf16,int8] [--jobs N]

One model (onnx.helper, opset 17, small shapes), x [1, 16, 12, 12] through, in order:

    se:      the issue's repro at a small width: Conv 3x3 (16 -> 40) -> GlobalAveragePool -> Conv 1x1
             (40 -> 10) -> Relu -> Conv 1x1 (10 -> 40) -> Sigmoid -> Mul (a squeezed width of 10: above 8,
             not a multiple of 8, the case that stopped the FP16 compile)
    convnext: depthwise 7x7 (40), 1x1 (40 -> 80) + Relu, 1x1 (80 -> 40), residual Add
    resnext: 1x1 (40 -> 64) + BN + Relu, grouped 3x3 (16 groups of 4: two merged a tensor-core
             super-group) + BN + Relu, 1x1 (64 -> 40) + BN, residual Add, Relu
    mbconv:  EfficientNet's: expand 1x1 (40 -> 96) + BatchNormalization + SiLU (x * Sigmoid(x)),
             depthwise 3x3 + BN + SiLU, squeeze-and-excite (96 -> 10 -> 96, SiLU, Sigmoid), project
             1x1 (96 -> 40) + BN, residual Add
    mbconv3: MobileNetV3's: expand 1x1 (40 -> 120) + HardSwish, depthwise 5x5 stride 2 + HardSwish,
             squeeze-and-excite with HardSigmoid (120 -> 20 -> 120: in INT8 a one-pixel buffer of 20
             channels, unpadded, which the INT8 convolution reads in its compact K form), project
             1x1 (120 -> 48)
    regnety: RegNetY's: 1x1 (48 -> 72) + BN + Relu, grouped 3x3 stride 2 (group width 24: 3 groups)
             + BN + Relu, squeeze-and-excite (72 -> 12 -> 72), 1x1 (72 -> 72) + BN, shortcut 1x1
             stride 2 (48 -> 72) + BN, Add, Relu
    dense:   DenseNet's: two dense layers (BN + Relu -> 1x1 (-> 32) -> BN + Relu -> 3x3 (32 -> 16),
             Concat onto their input: 72 -> 88 -> 104), then a transition (BN + Relu -> 1x1 (104 -> 40))

First the issue's repro itself, x [1, 3, 8, 8] -> Conv (3 -> 240) -> GlobalAveragePool -> Conv (240 -> 10)
-> Relu -> Conv (10 -> 240) -> Sigmoid -> Mul, must compile with --fp16 --arch sm_90, --bf16 --arch
sm_80, --fp16 --arch sm_75 and --int8 (compile only; in FP16 and BF16 its gate is one se_gate kernel:
report.json's se_gates lists the pool fused). Then each precision compiles the blocks
(`--arch sm_80`) and runs `modelc verify --emulate`, which must pass at
the precision's defaults (INT8: against the INT8 simulation, --calibrate random:4); FP16 and BF16
are also judged against the reference's simulation of the same precision (`run-reference --fp16`
/ `--bf16` on the same inputs): relative L2 error against FP32 at most 1.25x the simulation's +
1e-3 (conv_widths.against_simulation). In FP16 and BF16 no depthwise or grouped convolution may run on
the old kernels (report.json: engine depthwise_tiled, templates/conv_depthwise.cuh ConvDepthwiseTiled;
tensor_core, tc::ConvGrouped), each of the four squeeze-and-excite gates runs as one se_gate kernel
(templates/se_gate.cuh: pool, FC, activation, FC, gate; no pool kernel left, report.json se_gates all fused),
and no BatchNormalization or squeeze-and-excite Mul runs as a kernel of its own in front of a 1x1
convolution (the dense block's pre-activation BN + ReLU and the SE blocks' channel scales: the
convolution's operand prologue, schedule/fuse_prologue.cpp); INT8 keeps them.
"""

import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from conv_widths import SIMULATED, against_simulation  # (beside this script)
from fp16_islands import arguments, fail, run

SEED = 20261127
FLAGS = {
    "fp16": ["--fp16", "--arch", "sm_80"],
    "bf16": ["--bf16", "--arch", "sm_80"],
    "int8": ["--int8", "--calibrate", "random:4", "--arch", "sm_80"],
}


class Model:
    def __init__(self):
        self.rng = np.random.default_rng(SEED)
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, prefix, a):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(a.astype(np.float32), n))
        return n

    def node(self, op, ins, prefix, **attrs):
        out = self.name(prefix)
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k=1, stride=1, group=1, bias=True, prefix="conv"):
        w = self.rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin // group * k * k)
        ins = [x, self.const(prefix + "_w", w)]
        if bias:
            ins.append(self.const(prefix + "_b", self.rng.standard_normal(cout) * 0.1))
        return self.node("Conv", ins, prefix, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4,
                         group=group)

    def bn(self, x, c):
        scale = self.const("bn_s", 1.0 + 0.2 * self.rng.standard_normal(c))
        shift = self.const("bn_b", 0.1 * self.rng.standard_normal(c))
        mean = self.const("bn_m", 0.1 * self.rng.standard_normal(c))
        var = self.const("bn_v", 0.5 + self.rng.random(c))
        return self.node("BatchNormalization", [x, scale, shift, mean, var], "bn", epsilon=1e-5)

    def silu(self, x):
        return self.node("Mul", [x, self.node("Sigmoid", [x], "sig")], "silu")

    def se(self, x, c, squeezed, act, gate):
        p = self.node("GlobalAveragePool", [x], "gap")
        s = act(self.conv(p, c, squeezed, prefix="se_fc1"))
        e = gate(self.conv(s, squeezed, c, prefix="se_fc2"))
        return self.node("Mul", [x, e], "se_scale")

    def relu(self, x):
        return self.node("Relu", [x], "relu")

    def hswish(self, x):
        return self.node("HardSwish", [x], "hswish")

    def hsigmoid(self, x):
        return self.node("HardSigmoid", [x], "hsig", alpha=1.0 / 6, beta=0.5)

    def sigmoid(self, x):
        return self.node("Sigmoid", [x], "sigmoid")


def build(path):
    m = Model()
    x = "x"
    # se: the repro, small.
    y = m.conv(x, 16, 40, k=3, prefix="stem")
    y = m.se(y, 40, 10, m.relu, m.sigmoid)
    # convnext: depthwise 7x7, 1x1 expand + Relu, 1x1 project, residual.
    h = m.conv(y, 40, 40, k=7, group=40, prefix="dw7")
    h = m.relu(m.conv(h, 40, 80, prefix="cn_expand"))
    y = m.node("Add", [y, m.conv(h, 80, 40, prefix="cn_project")], "cn_residual")
    # resnext: 1x1 + Relu, grouped 3x3 (16 groups of 4 channels) + Relu, 1x1, residual.
    h = m.relu(m.bn(m.conv(y, 40, 64, bias=False, prefix="rx_a"), 64))
    h = m.relu(m.bn(m.conv(h, 64, 64, k=3, group=16, bias=False, prefix="rx_b"), 64))
    y = m.relu(m.node("Add", [y, m.bn(m.conv(h, 64, 40, bias=False, prefix="rx_c"), 40)], "rx_add"))
    # mbconv: expand, depthwise 3x3, SE, project, residual.
    h = m.silu(m.bn(m.conv(y, 40, 96, bias=False, prefix="expand"), 96))
    h = m.silu(m.bn(m.conv(h, 96, 96, k=3, group=96, bias=False, prefix="dw3"), 96))
    h = m.se(h, 96, 10, m.silu, m.sigmoid)
    h = m.bn(m.conv(h, 96, 40, bias=False, prefix="project"), 40)
    y = m.node("Add", [y, h], "residual")
    # mbconv3: hard-swish, depthwise 5x5 stride 2, hard-sigmoid SE.
    h = m.hswish(m.conv(y, 40, 120, prefix="expand3"))
    h = m.hswish(m.conv(h, 120, 120, k=5, stride=2, group=120, prefix="dw5"))
    h = m.se(h, 120, 20, m.relu, m.hsigmoid)
    y = m.conv(h, 120, 48, prefix="project3")
    # regnety: 1x1, grouped 3x3 stride 2, SE, 1x1, shortcut, Add, Relu.
    h = m.relu(m.bn(m.conv(y, 48, 72, bias=False, prefix="ry_a"), 72))
    h = m.relu(m.bn(m.conv(h, 72, 72, k=3, stride=2, group=3, bias=False, prefix="ry_b"), 72))
    h = m.se(h, 72, 12, m.relu, m.sigmoid)
    h = m.bn(m.conv(h, 72, 72, bias=False, prefix="ry_c"), 72)
    s = m.bn(m.conv(y, 48, 72, stride=2, bias=False, prefix="ry_short"), 72)
    y = m.relu(m.node("Add", [h, s], "ry_add"))
    # dense: two dense layers (pre-activation BN + Relu before each 1x1), then a transition.
    c = 72
    for _ in range(2):
        h = m.conv(m.relu(m.bn(y, c)), c, 32, bias=False, prefix="dn_bottleneck")
        h = m.conv(m.relu(m.bn(h, 32)), 32, 16, k=3, bias=False, prefix="dn_conv")
        y = m.node("Concat", [y, h], "dn_concat", axis=1)
        c += 16
    y = m.conv(m.relu(m.bn(y, c)), c, 40, bias=False, prefix="dn_transition")
    m.nodes.append(helper.make_node("Identity", [y], ["y"], name="out"))
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40, 3, 3])
    graph = helper.make_graph(m.nodes, "conv_blocks", [x_info], [y_info], m.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="conv_blocks.py")
    onnx.checker.check_model(model)
    model = onnx.shape_inference.infer_shapes(model)
    onnx.save(model, path)


def prologue_kernels(report, model):
    """The elementwise kernels that run a BatchNormalization or a squeeze-and-excite Mul (node names
    bn*, se_scale*) whose output a 1x1 convolution reads: the ones fuse_prologue should have folded."""
    graph = {n.output[0]: n for n in model.graph.node}
    readers = {}
    for n in model.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    found = []
    for k in report["kernels"]:
        if k.get("family") != "elementwise":
            continue
        for name in k.get("nodes", []):
            if not (name.startswith("bn") or name.startswith("se_scale")):
                continue
            # Follow the ReLU fused after the BN to the value the convolutions read.
            out = graph[name].output[0]
            nxt = readers.get(out, [])
            if len(nxt) == 1 and nxt[0].op_type == "Relu":
                out = nxt[0].output[0]
            for r in readers.get(out, []):
                ks = next((a.ints for a in r.attribute if a.name == "kernel_shape"), None)
                if r.op_type == "Conv" and list(ks) == [1, 1]:
                    found.append(f"{k['id']} ({name} -> {r.name}: {k.get('note', '')})")
    return found


def grouped(kernel):
    """A depthwise or grouped convolution: W's dim 1 (channels a group) is not X's channel count."""
    ins = kernel.get("inputs", [])
    return len(ins) > 1 and len(ins[1]["shape"]) > 2 and ins[1]["shape"][1] != ins[0]["shape"][1]


def check_se_gates(out, want, what):
    """`want` squeeze-and-excite gates fused into as many se_gate kernels, no pool kernel left."""
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    gates = [k for k in report["kernels"] if k.get("family") == "se_gate"]
    pools = [k for k in report["kernels"] if k.get("family") == "pool"]
    outcomes = report.get("se_gates", [])
    unfused = [o for o in outcomes if not o["fused"]]
    if len(gates) != want or pools or len(outcomes) != want or unfused:
        fail(f"{what}: {len(gates)} se_gate kernels (want {want}), {len(pools)} pool kernels, se_gates " +
             "; ".join(f"{o['pool']}: {o.get('reason', 'fused')}" for o in outcomes))


REPRO_FLAGS = [["--fp16", "--arch", "sm_90"], ["--bf16", "--arch", "sm_80"], ["--fp16", "--arch", "sm_75"],
               ["--int8", "--calibrate", "random:2", "--arch", "sm_90"]]


def build_repro(path):
    """Issue 30's squeeze-and-excite repro at its own widths."""
    m = Model()
    y = m.conv("x", 3, 240, k=3, prefix="c0")
    y = m.se(y, 240, 10, m.relu, m.sigmoid)
    m.nodes.append(helper.make_node("Identity", [y], ["y"], name="out"))
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 240, 8, 8])
    graph = helper.make_graph(m.nodes, "se_repro", [x_info], [y_info], m.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="conv_blocks.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    def add(ap):
        ap.add_argument("--precisions", default="fp16,bf16,int8")
    a = arguments(__doc__, add)
    repro = os.path.join(a.work, "se_repro.onnx")
    build_repro(repro)
    for i, flags in enumerate(REPRO_FLAGS):
        rc, _ = run([a.modelc, repro, "-o", os.path.join(a.work, f"repro_{i}")] + flags)
        if rc != 0:
            fail(f"the issue's repro: modelc {' '.join(flags)} exited with {rc}")
        if "--int8" not in flags:
            check_se_gates(os.path.join(a.work, f"repro_{i}"), 1, "the issue's repro " + " ".join(flags))
    model = os.path.join(a.work, "conv_blocks.onnx")
    build(model)
    for p in a.precisions.split(","):
        flags = FLAGS[p]
        out = os.path.join(a.work, "out_" + p)
        rc, _ = run([a.modelc, model, "-o", out] + flags)
        if rc != 0:
            fail(f"{p}: modelc {' '.join(flags)} exited with {rc}")
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        convs = [k for k in report["kernels"] if "conv" in k.get("family", "")]
        print(f"{p}: {len(report['kernels'])} kernels, {len(convs)} convolutions: " +
              ", ".join(f"{k['family']}/{k.get('engine') or '-'}" for k in convs))
        if p in ("fp16", "bf16"):
            check_se_gates(out, 4, p)
            old_kernels = [k for k in convs if grouped(k) and k.get("engine") not in ("depthwise_tiled", "tensor_core")]
            if old_kernels:
                fail(f"{p}: depthwise / grouped convolutions on the old kernels: " +
                     ", ".join(f"{k['id']} ({k['family']}/{k.get('engine')}: {k.get('fallback_reason')})"
                               for k in old_kernels))
            kept = prologue_kernels(report, onnx.load(model))
            if kept:
                fail(f"{p}: BatchNormalization / SE Mul kernels in front of 1x1 convolutions: " + "; ".join(kept))
        keep = os.path.join(a.work, "verify_" + p)
        rc, text = run([a.modelc, "verify", model, "--emulate", "-j", str(a.jobs), "--keep", keep] + flags)
        if rc != 0 or "\nPASS: " not in "\n" + text:
            fail(f"{p}: modelc verify --emulate exited with {rc}")
        if p in SIMULATED:
            against_simulation(a.modelc, model, keep, SIMULATED[p], ["y"], p)
    print("OK")


if __name__ == "__main__":
    main()
