#!/usr/bin/python3
"""INT8 end to end (issue 11; run by ctest, see CMakeLists.txt beside).

    int8.py --case qdq|convinteger|cache|calibrated|resnet50 --modelc BIN --work DIR [--model M] [--jobs N]

qdq          a model quantized with Q/DQ nodes, made here with the onnx package as the quantization
             tools write one (per-tensor activations, per-channel weights, an int32 bias through
             DequantizeLinear; a residual Add, a MaxPool, a Gemm): compiled without --int8 (the
             model's own scales, explicit quantization), every Conv and the Gemm must run INT8 on
             tensor cores (report.json: conv_int8 / gemm_int8, INT8 activations between them), and
             `modelc verify --emulate` against the reference interpreter of the model as it is
             (relative L2 <= 1e-2: a product's float32 epilogue may round a value to the other
             side of a quantization step now and then).
convinteger  DynamicQuantizeLinear -> ConvInteger (uint8 weights, zero point 128) -> Cast -> Mul
             (scales) -> Relu, and DynamicQuantizeLinear -> MatMulInteger: the integer products run
             as INT8 tensor-core kernels with the run-time zero point (report.json), and verify
             --emulate passes (the integers exactly, the scales in float32: rtol 1e-3).
cache        the calibration cache round-trips: compiling MODEL with --int8 --calibrate random:4 writes
             NAME_calibration.json beside the output; compiling again with --calibration-cache that
             file gives byte-identical folders (twice), identical to the calibrated compile's.
calibrated   MODEL with --int8 --calibrate random:8: verify --emulate --int8 (relative L2 at most 1.25x
             the INT8 simulation's + 1e-3), at least one INT8 kernel in report.json.
resnet50     MODEL (resnet50 at 64x64 from models/export_torchvision.py) calibrated on 16 seeded random
             inputs: verify --emulate --int8 on another input (the issue's criterion); then
             run-reference --int8 for each calibration method (entropy, percentile, max), printing
             the simulation's error against FP32, and --layers (where the error grows).
"""

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240911


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def run(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    print(p.stdout, end="", flush=True)
    return p


def q_params(rng, name, scale, dtype=np.int8, zero=0):
    return [numpy_helper.from_array(np.array(scale, np.float32), name + "_scale"),
            numpy_helper.from_array(np.array(zero, dtype), name + "_zp")]


def build_qdq(path):
    """x [2, 3, 16, 16] -> Q/DQ -> Conv(per-channel W, int32 bias) -> Relu -> Q/DQ -> Conv -> Q/DQ
    -> Add(residual: the first conv's Q/DQ'd output) -> Relu -> Q/DQ -> MaxPool -> Q/DQ -> Conv 1x1
    -> Relu -> Q/DQ -> GlobalAveragePool -> Flatten -> Q/DQ -> Gemm(per-channel W) -> y."""
    rng = np.random.default_rng(SEED)
    inits, nodes = [], []
    n = helper.make_node

    def qdq(x, name, scale):
        inits.extend(q_params(rng, name, scale))
        nodes.append(n("QuantizeLinear", [x, name + "_scale", name + "_zp"], [name + "_q"], name=name + "_Q"))
        nodes.append(n("DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"], [name + "_dq"], name=name + "_DQ"))
        return name + "_dq"

    def weights(name, shape, x_scale, axis=0, with_bias=True):
        w = rng.normal(0, 0.1, shape).astype(np.float32)
        channels = shape[axis]
        amax = np.abs(np.moveaxis(w, axis, 0).reshape(channels, -1)).max(axis=1)
        ws = (amax / 127).astype(np.float32)
        shape_b = [1] * len(shape)
        shape_b[axis] = channels
        wq = np.clip(np.round(w / ws.reshape(shape_b)), -127, 127).astype(np.int8)
        inits.append(numpy_helper.from_array(wq, name + "_wq"))
        inits.append(numpy_helper.from_array(ws, name + "_ws"))
        inits.append(numpy_helper.from_array(np.zeros(channels, np.int8), name + "_wz"))
        nodes.append(n("DequantizeLinear", [name + "_wq", name + "_ws", name + "_wz"], [name + "_w"], axis=axis,
                       name=name + "_wDQ"))
        if not with_bias:
            return name + "_w", None
        b = rng.normal(0, 0.2, (channels,)).astype(np.float32)
        bs = (ws * np.float32(x_scale)).astype(np.float32)
        bq = np.round(b / bs).astype(np.int32)
        inits.append(numpy_helper.from_array(bq, name + "_bq"))
        inits.append(numpy_helper.from_array(bs, name + "_bs"))
        inits.append(numpy_helper.from_array(np.zeros(channels, np.int32), name + "_bz"))
        nodes.append(n("DequantizeLinear", [name + "_bq", name + "_bs", name + "_bz"], [name + "_b"], axis=0,
                       name=name + "_bDQ"))
        return name + "_w", name + "_b"

    x = qdq("x", "in", 0.02)
    w, b = weights("conv1", (16, 3, 3, 3), 0.02)
    nodes.append(n("Conv", [x, w, b], ["c1"], pads=[1, 1, 1, 1], name="conv1"))
    nodes.append(n("Relu", ["c1"], ["r1"], name="relu1"))
    r1 = qdq("r1", "a1", 0.03)
    w, b = weights("conv2", (16, 16, 3, 3), 0.03)
    nodes.append(n("Conv", [r1, w, b], ["c2"], pads=[1, 1, 1, 1], name="conv2"))
    c2 = qdq("c2", "a2", 0.05)
    nodes.append(n("Add", [c2, r1], ["s"], name="add"))
    nodes.append(n("Relu", ["s"], ["r2"], name="relu2"))
    r2 = qdq("r2", "a3", 0.04)
    nodes.append(n("MaxPool", [r2], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"))
    p = qdq("p", "a4", 0.04)
    w, b = weights("conv3", (32, 16, 1, 1), 0.04)
    nodes.append(n("Conv", [p, w, b], ["c3"], name="conv3"))
    nodes.append(n("Relu", ["c3"], ["r3"], name="relu3"))
    r3 = qdq("r3", "a5", 0.03)
    nodes.append(n("GlobalAveragePool", [r3], ["g"], name="gap"))
    nodes.append(n("Flatten", ["g"], ["f"], name="flatten"))
    f = qdq("f", "a6", 0.02)
    w, b = weights("fc", (32, 10), 0.02, axis=1)
    nodes.append(n("Gemm", [f, w, b], ["y"], name="fc"))
    graph = helper.make_graph(nodes, "qdq_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="int8.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def build_convinteger(path):
    """x [1, 8, 10, 10] -> DynamicQuantizeLinear -> ConvInteger(uint8 W, zero point 128) -> Cast ->
    Mul(x scale) -> Mul(W scale per channel) -> Relu -> c; c -> GlobalAveragePool -> Flatten -> f;
    f -> DynamicQuantizeLinear -> MatMulInteger(int8 B) -> Cast -> Mul -> Mul -> y."""
    rng = np.random.default_rng(SEED + 1)
    n = helper.make_node
    w = rng.integers(0, 256, (24, 8, 3, 3)).astype(np.uint8)
    ws = rng.uniform(0.002, 0.006, (1, 24, 1, 1)).astype(np.float32)
    b = rng.integers(-127, 128, (24, 12)).astype(np.int8)
    bs = rng.uniform(0.002, 0.006, (12,)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(128, np.uint8), "W_zp"),
             numpy_helper.from_array(ws, "W_scale"), numpy_helper.from_array(b, "B"),
             numpy_helper.from_array(bs, "B_scale")]
    nodes = [
        n("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dq1"),
        n("ConvInteger", ["xq", "W", "xz", "W_zp"], ["acc"], pads=[1, 1, 1, 1], name="convint"),
        n("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT, name="cast1"),
        n("Mul", ["accf", "xs"], ["m1"], name="mul_xs"),
        n("Mul", ["m1", "W_scale"], ["m2"], name="mul_ws"),
        n("Relu", ["m2"], ["c"], name="relu"),
        n("GlobalAveragePool", ["c"], ["g"], name="gap"),
        n("Flatten", ["g"], ["f"], name="flatten"),
        n("DynamicQuantizeLinear", ["f"], ["fq", "fs", "fz"], name="dq2"),
        n("MatMulInteger", ["fq", "B", "fz"], ["acc2"], name="matint"),
        n("Cast", ["acc2"], ["acc2f"], to=TensorProto.FLOAT, name="cast2"),
        n("Mul", ["acc2f", "fs"], ["m3"], name="mul_fs"),
        n("Mul", ["m3", "B_scale"], ["y"], name="mul_bs"),
    ]
    graph = helper.make_graph(nodes, "convinteger", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12]),
                               helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 24, 10, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="int8.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def report(folder):
    with open(os.path.join(folder, "report.json")) as f:
        return json.load(f)


def families(rep):
    out = {}
    for k in rep["kernels"]:
        out[k["family"]] = out.get(k["family"], 0) + 1
    return out


def verify(a, model, extra, keep=None):
    cmd = [a.modelc, "verify", model, "--emulate", "-j", str(a.jobs)] + extra
    if keep:
        cmd += ["--keep", keep]
    p = run(cmd)
    if p.returncode != 0:
        fail("verify failed: " + " ".join(cmd))
    return p.stdout


def case_qdq(a):
    model = os.path.join(a.work, "qdq_cnn.onnx")
    build_qdq(model)
    keep = os.path.join(a.work, "qdq_cnn")
    verify(a, model, ["--max-rel-l2", "1e-2"], keep)
    fam = families(report(keep))
    print("families: " + json.dumps(fam, sort_keys=True))
    if fam.get("conv_int8", 0) != 3 or fam.get("gemm_int8", 0) != 1:
        fail("expected the 3 Convs and the Gemm on the INT8 tensor-core families, got " + json.dumps(fam))
    if fam.get("conv", 0) or fam.get("gemm", 0):
        fail("a float convolution or product is left")


def case_convinteger(a):
    model = os.path.join(a.work, "convinteger.onnx")
    build_convinteger(model)
    keep = os.path.join(a.work, "convinteger")
    verify(a, model, [], keep)
    fam = families(report(keep))
    print("families: " + json.dumps(fam, sort_keys=True))
    if fam.get("conv_int8", 0) != 1 or fam.get("gemm_int8", 0) != 1 or fam.get("qlinear", 0):
        fail("expected ConvInteger and MatMulInteger on the INT8 tensor-core families, got " + json.dumps(fam))


def compile_model(a, model, out, extra):
    cmd = [a.modelc, model, "-o", out, "--arch", "sm_75,sm_90"] + extra
    p = run(cmd)
    if p.returncode != 0:
        fail("compile failed: " + " ".join(cmd))


def same_folders(x, y):
    cmp = filecmp.dircmp(x, y)
    def walk(c, rel):
        diff = [os.path.join(rel, f) for f in c.left_only + c.right_only + c.diff_files + c.funny_files]
        for f in c.common_files:
            if not filecmp.cmp(os.path.join(c.left, f), os.path.join(c.right, f), shallow=False):
                diff.append(os.path.join(rel, f))
        for d, sub in c.subdirs.items():
            diff += walk(sub, os.path.join(rel, d))
        return sorted(set(diff))
    return walk(cmp, "")


def case_cache(a):
    name = os.path.splitext(os.path.basename(a.model))[0]
    first = os.path.join(a.work, "cache_calibrate")
    compile_model(a, a.model, first, ["--int8", "--calibrate", "random:4", "--name", name])
    cache = os.path.join(first, name + "_calibration.json")
    if not os.path.isfile(cache):
        fail("no calibration cache beside the output: " + cache)
    with open(cache) as f:
        table = json.load(f)
    if table.get("samples") != 4 or not table.get("tensors"):
        fail("the cache does not hold 4 samples' tensors")
    copy = os.path.join(a.work, "cache.json")
    shutil.copyfile(cache, copy)
    outs = []
    for i in range(2):
        out = os.path.join(a.work, "cache_reuse%d" % i)
        compile_model(a, a.model, out, ["--int8", "--calibration-cache", copy, "--name", name])
        outs.append(out)
    for x, y in [(outs[0], outs[1]), (first, outs[0])]:
        diff = same_folders(x, y)
        if diff:
            fail("%s and %s differ: %s" % (x, y, ", ".join(diff[:10])))
    print("byte-identical: %s, %s, %s" % (first, outs[0], outs[1]))


def case_calibrated(a):
    keep = os.path.join(a.work, "calibrated")
    verify(a, a.model, ["--int8", "--calibrate", "random:8"], keep)
    rep = report(keep)
    n = sum(1 for k in rep["kernels"] if k.get("precision") == "INT8")
    if n == 0:
        fail("no INT8 kernel in report.json")
    print("%d INT8 kernels" % n)


def simulation_error(out):
    m = re.findall(r"^  \S+  rel_l2 ([0-9.e+-]+)", out, re.M)
    return float(m[-1]) if m else None


def case_resnet50(a):
    keep = os.path.join(a.work, "resnet50_int8")
    out = verify(a, a.model, ["--int8", "--calibrate", "random:16", "--calibration", "entropy"], keep)
    m = re.search(r"rel_l2 ([0-9.e+-]+).*INT8 simulation rel L2 ([0-9.e+-]+), limit 1.25 x \+ 1e-3 = ([0-9.e+-]+)", out)
    if not m:
        fail("verify printed no INT8 comparison")
    print("resnet50 INT8: emulated program rel L2 %s, simulation %s, limit %s" % m.groups())
    for method in ["entropy", "percentile", "max"]:
        p = run([a.modelc, "run-reference", a.model, "--int8", "--calibrate", "random:16", "--calibration", method,
                 "-o", os.path.join(a.work, "ref_" + method)] + (["--layers"] if method == "entropy" else []))
        if p.returncode != 0:
            fail("run-reference --int8 --calibration " + method)
        print("run-reference --int8 --calibration %s: rel L2 %s against FP32" % (method, simulation_error(p.stdout)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True, choices=["qdq", "convinteger", "cache", "calibrated", "resnet50"])
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    a.work = os.path.join(a.work, a.case)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    if a.case in ("cache", "calibrated", "resnet50") and (not a.model or not os.path.isfile(a.model)):
        fail("--model is missing: %s" % a.model)
    {"qdq": case_qdq, "convinteger": case_convinteger, "cache": case_cache, "calibrated": case_calibrated,
     "resnet50": case_resnet50}[a.case](a)
    print("PASS")


if __name__ == "__main__":
    main()
