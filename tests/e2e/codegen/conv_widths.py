#!/usr/bin/python3
"""No channel count breaks a convolution (issue 30): randomized convolutions through every conv path
on the host emulation (run by ctest, see CMakeLists.txt beside).

    conv_widths.py --modelc BIN --work DIR [--paths fp16,bf16,int8,nchw,fp32] [--branches N] [--seed S]
                   [--jobs N]

A model (onnx.helper, opset 17) of --branches independent branches, each with its own input and
output, is one emulated build per path; every branch draws (from --seed) its channel counts from
1..72, its groups (1; depthwise, multiplier 1 or 2; or grouped: a divisor of the input channels,
and any count of outputs a group), kernel sizes 1..7,
strides 1..2, dilations 1..2 and pads, from one of:

    chain:   x [N, C0, H, W] -> Conv (C0 -> C1) [+ Relu] -> Conv (C1 -> C2) [+ residual Add] -> y
             (the middle buffer is channels-last, its pitch padded wherever a tensor-core reader
             wants it: the case the issue's repro broke)
    squeeze: x [1, C0, H, W] -> GlobalAveragePool -> Conv 1x1 (C0 -> C1) -> Relu -> Conv 1x1
             (C1 -> C2) -> Sigmoid -> y [1, C2, 1, 1]   (a squeeze-and-excite block's two FCs on
             one pixel: the issue's repro)

Paths (each a compile and `modelc verify --emulate`, which must pass at the precision's defaults):
  fp16   --fp16 --arch sm_80 (NHWC, tensor cores where the rules allow; every other conv SIMT);
         also judged against the reference's FP16 simulation (`run-reference --fp16` on the same
         inputs): each output's relative L2 error against FP32 at most 1.25x the simulation's + 1e-3
  bf16   --bf16 --arch sm_80 (BF16 tensor cores), likewise against `run-reference --bf16`
  int8   --int8 --calibrate random:2 --arch sm_80 (verify judges against the INT8 simulation)
  nchw   --layout nchw (FP32, every buffer dense)
  fp32   the default layout in FP32 (NHWC, unpadded)
A compile that fails (an internal error above all) fails the test, naming the branch's draw.

ctest runs a fixed seeded sample (codegen_conv_widths: 6 branches of seed 5, the FP16 path, with
--expect-new-kernels: its draws run ConvDepthwiseTiled and tc::ConvGrouped and the fallbacks of both; BF16 and INT8 run in
conv_blocks.py); codegen_conv_widths_sweep (label long) runs every path on 12 branches and 8
seeds:

    tests/e2e/codegen/conv_widths.py --modelc build/modelc --work /tmp/conv_widths_sweep \
        --paths fp16,bf16,int8,nchw,fp32 --branches 12 --seeds 1,2,3,4,5,6,7,8
"""

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fp16_islands import arguments, fail, run  # (beside this script)

PATHS = {
    "fp16": ["--fp16", "--arch", "sm_80"],
    "bf16": ["--bf16", "--arch", "sm_80"],
    "int8": ["--int8", "--calibrate", "random:2", "--arch", "sm_80"],
    "nchw": ["--layout", "nchw"],
    "fp32": [],
}
SIMULATED = {"fp16": "--fp16", "bf16": "--bf16"}  # paths also judged against the reference's simulation
MAX_CHANNELS = 72


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def draw_channels(rng, cin):
    """(output channels, groups): one group (45%), depthwise (groups = C, multiplier 1 or 2: 25%),
    or grouped (a divisor of C above 1 where there is one, and 1..72 / groups outputs a group)."""
    r = rng.random()
    if r < 0.45:
        return int(rng.integers(1, MAX_CHANNELS + 1)), 1
    if r < 0.7:
        mult = 2 if rng.random() < 0.25 and 2 * cin <= MAX_CHANNELS else 1
        return mult * cin, cin
    groups = int(rng.choice([d for d in divisors(cin) if d > 1] or [1]))
    return groups * int(rng.integers(1, MAX_CHANNELS // groups + 1)), groups


def draw_conv(rng, cin, size):
    """A conv on [*, cin, size[0], size[1]]: its attributes and output channel count and size."""
    k = int(rng.choice([1, 1, 2, 3, 3, 5, 7]))
    stride = int(rng.choice([1, 1, 2]))
    dilation = int(rng.choice([1, 1, 1, 2])) if k > 1 else 1
    span = (k - 1) * dilation + 1
    pads = [int(rng.integers(0, k)) if k > 1 else 0 for _ in range(4)]
    out = [(size[i] + pads[i] + pads[i + 2] - span) // stride + 1 for i in range(2)]
    if min(out) < 1:  # too small a plane for the window: pad it out
        pads = [span - 1] * 4
        out = [(size[i] + 2 * (span - 1) - span) // stride + 1 for i in range(2)]
    cout, groups = draw_channels(rng, cin)
    attrs = dict(kernel_shape=[k, k], strides=[stride, stride], dilations=[dilation, dilation], pads=pads,
                 group=groups)
    return attrs, cout, out


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.inputs, self.outputs, self.draws = [], [], [], [], []

    def weight(self, name, shape, scale):
        a = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(a, name))
        return name

    def conv(self, b, tag, x, cin, attrs, cout, bias):
        kh, kw = attrs["kernel_shape"]
        cg = cin // attrs["group"]
        fan_in = cg * kh * kw
        ins = [x, self.weight(f"w{b}{tag}", (cout, cg, kh, kw), 1.0 / np.sqrt(fan_in))]
        if bias:
            ins.append(self.weight(f"b{b}{tag}", (cout,), 0.1))
        y = f"c{b}{tag}"
        self.nodes.append(helper.make_node("Conv", ins, [y], name=f"conv{b}{tag}", **attrs))
        return y

    def chain(self, b):
        rng = self.rng
        n = int(rng.choice([1, 1, 2]))
        c0 = int(rng.integers(1, MAX_CHANNELS + 1))
        size = [int(rng.integers(1, 10)), int(rng.integers(1, 10))]
        a, c1, s1 = draw_conv(rng, c0, size)
        c, c2, s2 = draw_conv(rng, c1, s1)
        x = f"x{b}"
        self.inputs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, c0] + size))
        h = self.conv(b, "a", x, c0, a, c1, rng.random() < 0.7)
        if rng.random() < 0.5:
            self.nodes.append(helper.make_node("Relu", [h], [h + "r"], name=f"relu{b}"))
            h += "r"
        y = self.conv(b, "b", h, c1, c, c2, rng.random() < 0.7)
        residual = c2 == c1 and s2 == s1 and rng.random() < 0.5
        if residual:
            self.nodes.append(helper.make_node("Add", [y, h], [y + "s"], name=f"add{b}"))
            y += "s"
        self.finish(b, y, [n, c2] + s2)
        self.draws.append(f"branch {b}: chain x [{n}, {c0}, {size[0]}, {size[1]}] -> conv a {c1} {a} -> conv b {c2} "
                          f"{c}{' + residual' if residual else ''}")

    def squeeze(self, b):
        rng = self.rng
        c0 = int(rng.integers(1, MAX_CHANNELS + 1))
        c1 = int(rng.integers(1, MAX_CHANNELS + 1))
        c2 = int(rng.integers(1, MAX_CHANNELS + 1))
        size = [int(rng.integers(1, 6)), int(rng.integers(1, 6))]
        x = f"x{b}"
        self.inputs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c0] + size))
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], [f"p{b}"], name=f"pool{b}"))
        one = dict(kernel_shape=[1, 1], group=1)
        h = self.conv(b, "a", f"p{b}", c0, one, c1, True)
        self.nodes.append(helper.make_node("Relu", [h], [h + "r"], name=f"relu{b}"))
        y = self.conv(b, "b", h + "r", c1, one, c2, True)
        self.nodes.append(helper.make_node("Sigmoid", [y], [y + "g"], name=f"sigmoid{b}"))
        self.finish(b, y + "g", [1, c2, 1, 1])
        self.draws.append(f"branch {b}: squeeze x [1, {c0}, {size[0]}, {size[1]}] -> {c1} -> {c2}")

    def finish(self, b, y, shape):
        self.nodes.append(helper.make_node("Identity", [y], [f"y{b}"], name=f"out{b}"))
        self.outputs.append(helper.make_tensor_value_info(f"y{b}", TensorProto.FLOAT, shape))

    def save(self, path):
        graph = helper.make_graph(self.nodes, "conv_widths", self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="conv_widths.py")
        onnx.checker.check_model(model)
        onnx.save(model, path)


def build(path, seed, branches):
    b = Builder(seed)
    for i in range(branches):
        (b.squeeze if b.rng.random() < 0.25 else b.chain)(i)
    b.save(path)
    return b.draws


def rel_l2(got, want):
    d = np.linalg.norm((got.astype(np.float64) - want.astype(np.float64)).ravel())
    n = np.linalg.norm(want.astype(np.float64).ravel())
    return d / n if n > 0 else d


def against_simulation(modelc, model, keep, flag, outputs, what):
    """The program's outputs (verify/outputs) against the reference's simulation of the same precision
    on the same inputs: rel L2 to FP32 at most 1.25x the simulation's + 1e-3, per output."""
    vdir = os.path.join(keep, "verify")
    inputs = sorted(f for f in os.listdir(os.path.join(vdir, "inputs")) if f.endswith(".npy"))
    sim = os.path.join(keep, "simulation")
    cmd = [modelc, "run-reference", model, flag, "-o", sim]
    for f in inputs:
        cmd += ["--input", f"{f[:-4]}={os.path.join(vdir, 'inputs', f)}"]
    rc, _ = run(cmd)
    if rc != 0:
        fail(f"{what}: modelc run-reference {flag} exited with {rc}")
    for name in outputs:
        want = np.load(os.path.join(vdir, "reference", name + ".npy"))
        got = np.load(os.path.join(vdir, "outputs", name + ".npy"))
        simulated = np.load(os.path.join(sim, name + ".npy"))
        e_prog, e_sim = rel_l2(got, want), rel_l2(simulated, want)
        limit = 1.25 * e_sim + 1e-3
        print(f"  {name}: program rel L2 {e_prog:.3e}, simulation {e_sim:.3e}, limit {limit:.3e}")
        if not e_prog <= limit:
            fail(f"{what}: output {name}: rel L2 {e_prog:.3e} against FP32, above 1.25x the {flag} simulation's "
                 f"({e_sim:.3e}) + 1e-3")


def check_path(a, model, path, draws, outputs, seed):
    flags = PATHS[path]
    what = f"{path} (seed {seed})"
    out = os.path.join(a.work, f"out_{path}_{seed}")
    rc, text = run([a.modelc, model, "-o", out] + flags)
    if rc != 0:
        fail(f"{what}: modelc {' '.join(flags)} exited with {rc}; the draws:\n  " + "\n  ".join(draws))
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    engines = {}
    for k in report["kernels"]:
        if k.get("family", "").startswith("conv"):
            ins = k.get("inputs", [])
            grouped = k["family"] == "conv" and len(ins) > 1 and ins[1]["shape"][1] != ins[0]["shape"][1]
            key = f"{k['family']}{' grouped' if grouped else ''}/{k.get('engine') or 'direct'}"
            engines[key] = engines.get(key, 0) + 1
    print(f"{what}: conv kernels by family/engine: {engines}")
    if a.expect_new_kernels and path in SIMULATED:
        # The draws of the CI sample include both: the tiled depthwise and the grouped tensor-core kernels ran.
        for key in ("conv_depthwise/depthwise_tiled", "conv grouped/tensor_core"):
            if not engines.get(key):
                fail(f"{what}: no {key} kernel (the sample was chosen to draw one)")
    keep = os.path.join(a.work, f"verify_{path}_{seed}")
    rc, text = run([a.modelc, "verify", model, "--emulate", "-j", str(a.jobs), "--keep", keep] + flags)
    if rc != 0 or "\nPASS: " not in "\n" + text:
        fail(f"{what}: modelc verify --emulate exited with {rc}; the draws:\n  " + "\n  ".join(draws))
    if path in SIMULATED:
        against_simulation(a.modelc, model, keep, SIMULATED[path], outputs, what)


def main():
    def add(ap):
        ap.add_argument("--paths", default="fp16,bf16,int8,nchw,fp32")
        ap.add_argument("--branches", type=int, default=6)
        ap.add_argument("--seeds", default="1", help="comma list: one model per seed")
        ap.add_argument("--expect-new-kernels", action="store_true",
                        help="fp16 / bf16: fail unless a tiled depthwise and a grouped tensor-core kernel ran")
    a = arguments(__doc__, add)
    paths = a.paths.split(",")
    for p in paths:
        if p not in PATHS:
            fail(f"unknown path {p} (known: {', '.join(PATHS)})")
    for seed in [int(s) for s in a.seeds.split(",")]:
        model = os.path.join(a.work, f"conv_widths_{seed}.onnx")
        draws = build(model, seed, a.branches)
        print(f"seed {seed}:\n  " + "\n  ".join(draws), flush=True)
        outputs = [f"y{i}" for i in range(a.branches)]
        for p in paths:
            check_path(a, model, p, draws, outputs, seed)
    print("OK")


if __name__ == "__main__":
    main()
