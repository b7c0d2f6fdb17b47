#!/usr/bin/python3
"""Writes node test cases that ONNX 1.12's test data (libonnx-testdata) lacks, in its format.

    /usr/bin/python3 tests/conformance/extra_cases.py --out DIR

DIR/node/test_<name>/model.onnx and DIR/node/test_<name>/test_data_set_0/{input,output}_<i>.pb,
the layout of the ONNX backend test data, so `conformance --data DIR --suites node` and
`codegen_conformance --data DIR --suites node` run them like the shipped cases; and
DIR/models/NAME.onnx with NAME.input.npy and NAME.output.npy (the e2e tests' layout) for the
models that must not have their input bound as a constant. Expected outputs are computed here
with numpy in float64 from the ONNX spec's formulas (never by modelc).

The cases: ops newer than ONNX 1.12 (Gelu 20 in both forms, Mish 18, IsInf 20 on float16,
ScatterElements / ScatterND 18 with max and min), types and attributes the shipped cases do not
cover (float16 trigonometry and CumSum, int32 GatherElements indices, GatherND batch_dims 2,
OneHot with int64 values), and the smooth activations fused into a producer's epilogue (MatMul +
Gelu, Conv + Mish, MatMul + Celu, Add + Softsign) or an elementwise op. The models: NonZero
computed at run time (modelc's static bound: [rank, input elements], -1 after the count;
ops/indexing.h).
Deterministic: the same files every run (seeded inputs); DIR/node and DIR/models are emptied first.
"""

import argparse
import math
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(20240614)

NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
              np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
              np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.int8): TensorProto.INT8,
              np.dtype(np.uint8): TensorProto.UINT8}


def vinfo(name, a):
    return helper.make_tensor_value_info(name, NP_TO_ONNX[a.dtype], list(a.shape))


def write_case(out, name, nodes, inputs, outputs, opset, initializers=()):
    """inputs / outputs: lists of (name, numpy array); initializers: (name, array) constants."""
    graph = helper.make_graph(nodes, name, [vinfo(n, a) for n, a in inputs], [vinfo(n, a) for n, a in outputs],
                              initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="modelc-extra")
    model.ir_version = 8
    d = os.path.join(out, "node", "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for kind, items in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(items):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def write_model(out, name, nodes, x, y, opset, initializers=()):
    """DIR/models/NAME.onnx with one input 'input' and one output 'output', and NAME.input.npy,
    NAME.output.npy (numpy's output): the layout of the e2e models; NAME.inputs/input.npy too."""
    graph = helper.make_graph(nodes, name, [vinfo("input", x)], [vinfo("output", y)],
                              initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="modelc-extra")
    model.ir_version = 8
    onnx.checker.check_model(model)
    d = os.path.join(out, "models")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())
    np.save(os.path.join(d, name + ".input.npy"), x)
    np.save(os.path.join(d, name + ".output.npy"), y)
    os.makedirs(os.path.join(d, name + ".inputs"), exist_ok=True)  # for `modelc verify --inputs DIR`
    np.save(os.path.join(d, name + ".inputs", "input.npy"), x)


def rand(shape, lo=-3.0, hi=3.0, dtype=np.float32):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


# ---- the functions, in float64 ------------------------------------------------------------------

def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def mish(x):
    return x * np.tanh(np.logaddexp(0, x))


def celu(x, alpha):
    return np.maximum(0, x) + np.minimum(0, alpha * np.expm1(x / alpha))


def softsign(x):
    return x / (1 + np.abs(x))


def unary_case(out, name, op, fn, x, opset, **attrs):
    y = fn(x.astype(np.float64)).astype(x.dtype)
    write_case(out, name, [helper.make_node(op, ["x"], ["y"], **attrs)], [("x", x)], [("y", y)], opset)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    for sub in ("node", "models"):  # cases an older version of this script wrote must not linger
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)

    x = rand((3, 4, 5))
    # Gelu (opset 20), both forms, float32 and float16.
    unary_case(out, "gelu_default", "Gelu", gelu, x, 20)
    unary_case(out, "gelu_tanh", "Gelu", gelu_tanh, x, 20, approximate="tanh")
    unary_case(out, "gelu_default_float16", "Gelu", gelu, x.astype(np.float16), 20)
    unary_case(out, "gelu_tanh_float16", "Gelu", gelu_tanh, x.astype(np.float16), 20, approximate="tanh")
    # Mish (opset 18).
    unary_case(out, "mish", "Mish", mish, rand((2, 3, 8), -20, 20), 18)
    unary_case(out, "mish_float16", "Mish", mish, x.astype(np.float16), 18)
    # IsInf on float16 (opset 20).
    h = np.array([np.inf, -np.inf, np.nan, 1.0, -65504.0, 0.0], dtype=np.float16)
    write_case(out, "isinf_float16", [helper.make_node("IsInf", ["x"], ["y"])], [("x", h)],
               [("y", np.isinf(h))], 20)
    write_case(out, "isinf_float16_positive", [helper.make_node("IsInf", ["x"], ["y"], detect_negative=0)],
               [("x", h)], [("y", np.isposinf(h))], 20)
    # Trigonometry and rounding in float16.
    for op, fn, lo, hi in (("Sin", np.sin, -6, 6), ("Cos", np.cos, -6, 6), ("Tan", np.tan, -1.2, 1.2),
                           ("Atan", np.arctan, -5, 5), ("Sinh", np.sinh, -3, 3)):
        unary_case(out, op.lower() + "_float16", op, fn, rand((4, 6), lo, hi, np.float16), 9)
    r = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -3.51], dtype=np.float16)
    unary_case(out, "round_float16", "Round", np.round, r, 11)  # numpy rounds halves to even
    # Sign on integers.
    si = np.array([-5, 0, 7, -128, 127], dtype=np.int8)
    write_case(out, "sign_int8", [helper.make_node("Sign", ["x"], ["y"])], [("x", si)], [("y", np.sign(si))], 13)

    # CumSum: float16 (opset 14), int32 exclusive + reverse along axis 0.
    c16 = rand((3, 5), -2, 2, np.float16)
    write_case(out, "cumsum_float16", [helper.make_node("CumSum", ["x", "axis"], ["y"])],
               [("x", c16)], [("y", np.cumsum(c16.astype(np.float64), axis=1).astype(np.float16))], 14,
               initializers=[("axis", np.array(1, dtype=np.int64))])
    ci = RNG.integers(-50, 50, size=(4, 3)).astype(np.int32)
    ex = np.flip(np.cumsum(np.flip(ci, 0), axis=0), 0) - ci  # reverse, exclusive
    write_case(out, "cumsum_int32_exclusive_reverse",
               [helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=1, reverse=1)],
               [("x", ci)], [("y", ex.astype(np.int32))], 14, initializers=[("axis", np.array(0, dtype=np.int32))])

    # CumSum in float32 (the shipped cases are float64): each axis, exclusive, reverse, negative axis.
    c32 = rand((3, 4, 5))
    for name, axis, excl, rev in (("cumsum_float32_axis0", 0, 0, 0), ("cumsum_float32_axis1_exclusive", 1, 1, 0),
                                  ("cumsum_float32_reverse_negative_axis", -1, 0, 1)):
        v = c32.astype(np.float64)
        if rev:
            v = np.flip(v, axis)
        r = np.cumsum(v, axis=axis)
        if excl:
            r = r - v
        if rev:
            r = np.flip(r, axis)
        attrs = {k: v for k, v in (("exclusive", excl), ("reverse", rev)) if v}
        write_case(out, name, [helper.make_node("CumSum", ["x", "axis"], ["y"], **attrs)], [("x", c32)],
                   [("y", r.astype(np.float32))], 11, initializers=[("axis", np.array(axis, dtype=np.int64))])

    # GatherElements with int32 indices, axis -1, negative indices.
    data = rand((3, 4))
    gi = RNG.integers(-4, 4, size=(3, 6)).astype(np.int32)
    write_case(out, "gather_elements_int32_axis_last", [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=-1)],
               [("x", data), ("i", gi)], [("y", np.take_along_axis(data, np.where(gi < 0, gi + 4, gi), axis=-1))], 13)
    # GatherND with batch_dims 2.
    d4 = rand((2, 3, 4, 5))
    nd = RNG.integers(0, 4, size=(2, 3, 2, 1)).astype(np.int64)
    gnd = np.stack([np.stack([d4[b, c][nd[b, c, :, 0]] for c in range(3)]) for b in range(2)])
    write_case(out, "gathernd_batch_dims_2", [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=2)],
               [("x", d4), ("i", nd)], [("y", gnd)], 13)

    # ScatterElements and ScatterND with max / min (opset 18), duplicates applied in order.
    sdata = rand((2, 5))
    sidx = np.array([[1, 1, 4], [0, 3, 3]], dtype=np.int64)
    supd = rand((2, 3))
    for red, f in (("max", np.maximum), ("min", np.minimum)):
        y = sdata.copy()
        for i in range(2):
            for j in range(3):
                y[i, sidx[i, j]] = f(y[i, sidx[i, j]], supd[i, j])
        write_case(out, "scatter_elements_" + red, [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1,
                                                                     reduction=red)],
                   [("x", sdata), ("i", sidx), ("u", supd)], [("y", y)], 18)
    ndata = rand((4, 3))
    nidx = np.array([[2], [0], [2]], dtype=np.int64)
    nupd = rand((3, 3))
    for red, f in (("max", np.maximum), ("min", np.minimum), ("add", np.add)):
        y = ndata.copy()
        for i in range(3):
            y[nidx[i, 0]] = f(y[nidx[i, 0]], nupd[i])
        write_case(out, "scatternd_" + red, [helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=red)],
                   [("x", ndata), ("i", nidx), ("u", nupd)], [("y", y.astype(np.float32))], 18)

    # OneHot with int64 values and a middle axis.
    oi = np.array([[0, 2, -1], [5, 1, -4]], dtype=np.int64)
    depth = 4
    oh = np.zeros((2, depth, 3), dtype=np.int64) + 3
    for a in range(2):
        for b in range(3):
            k = oi[a, b] + depth if oi[a, b] < 0 else oi[a, b]
            if 0 <= k < depth:
                oh[a, k, b] = 9
    write_case(out, "onehot_int64_values_axis1", [helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=1)],
               [("i", oi)], [("y", oh)], 11,
               initializers=[("depth", np.array(depth, dtype=np.int64)), ("v", np.array([3, 9], dtype=np.int64))])

    # NonZero computed at run time (from Greater, Neg): modelc's bound, [rank, elements], -1 after the
    # count. Not node cases: the runners bind a graph input that reaches NonZero's input as a constant
    # (the shape it decides), which would fold these; DIR/models/ holds them as models with an input
    # and numpy's output instead (e2e_reference_nonzero_bounded*, codegen_verify_nonzero_bounded*).
    nzx = rand((3, 4))
    mask = nzx > 0.5
    coords = np.array(np.nonzero(mask), dtype=np.int64)
    bounded = np.full((2, mask.size), -1, dtype=np.int64)
    bounded[:, :coords.shape[1]] = coords
    write_model(out, "nonzero_bounded", [helper.make_node("Greater", ["input", "half"], ["m"]),
                                         helper.make_node("NonZero", ["m"], ["output"])],
                nzx, bounded, 13, initializers=[("half", np.array(0.5, dtype=np.float32))])
    fx = RNG.uniform(-1, 1, size=(4, 5, 6)).astype(np.float32)
    fx[np.abs(fx) < 0.6] = 0
    fx[1, 2, 3] = np.nan  # NaN is non-zero
    fcoords = np.array(np.nonzero(fx), dtype=np.int64)
    fb = np.full((3, fx.size), -1, dtype=np.int64)
    fb[:, :fcoords.shape[1]] = fcoords
    write_model(out, "nonzero_bounded_float", [helper.make_node("Neg", ["input"], ["r"]),
                                               helper.make_node("NonZero", ["r"], ["output"])], fx, fb, 13)

    # Trilu computed at run time on a causal-mask-like score matrix, k from a constant.
    tx = rand((2, 5, 5))
    write_case(out, "trilu_lower_batch_k1", [helper.make_node("Trilu", ["x", "k"], ["y"], upper=0)],
               [("x", tx)], [("y", np.tril(tx, 1))], 14, initializers=[("k", np.array(1, dtype=np.int64))])

    # The smooth activations fused into a producer's epilogue or an elementwise op.
    a = rand((4, 8), -1, 1)
    w = rand((8, 6), -1, 1)
    bias = rand((6,), -1, 1)
    prod = a.astype(np.float64) @ w.astype(np.float64) + bias
    for name, op, fn, opset, attrs in (("matmul_add_gelu", "Gelu", gelu, 20, {}),
                                       ("matmul_add_gelu_tanh", "Gelu", gelu_tanh, 20, {"approximate": "tanh"}),
                                       ("matmul_add_celu", "Celu", lambda v: celu(v, 0.7), 12, {"alpha": 0.7}),
                                       ("matmul_add_mish", "Mish", mish, 18, {})):
        write_case(out, name, [helper.make_node("MatMul", ["a", "w"], ["p"]), helper.make_node("Add", ["p", "b"], ["q"]),
                               helper.make_node(op, ["q"], ["y"], **attrs)],
                   [("a", a)], [("y", fn(prod).astype(np.float32))], opset, initializers=[("w", w), ("b", bias)])
    cx = rand((1, 3, 6, 6), -1, 1)
    cw = rand((4, 3, 3, 3), -0.5, 0.5)
    conv = np.zeros((1, 4, 4, 4))
    for m in range(4):
        for i in range(4):
            for j in range(4):
                conv[0, m, i, j] = np.sum(cx[0, :, i:i + 3, j:j + 3].astype(np.float64) * cw[m])
    write_case(out, "conv_mish", [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Mish", ["c"], ["y"])],
               [("x", cx)], [("y", mish(conv).astype(np.float32))], 18, initializers=[("w", cw)])
    write_case(out, "conv_softsign", [helper.make_node("Conv", ["x", "w"], ["c"]),
                                      helper.make_node("Softsign", ["c"], ["y"])],
               [("x", cx)], [("y", softsign(conv).astype(np.float32))], 13, initializers=[("w", cw)])
    ea, eb = rand((2, 3, 4)), rand((3, 4))
    write_case(out, "add_softsign", [helper.make_node("Add", ["a", "b"], ["s"]),
                                     helper.make_node("Softsign", ["s"], ["y"])],
               [("a", ea), ("b", eb)], [("y", softsign(ea.astype(np.float64) + eb).astype(np.float32))], 13)
    write_case(out, "mul_gelu", [helper.make_node("Mul", ["a", "b"], ["s"]), helper.make_node("Gelu", ["s"], ["y"])],
               [("a", ea), ("b", eb)], [("y", gelu(ea.astype(np.float64) * eb).astype(np.float32))], 20)


if __name__ == "__main__":
    main()
