#!/usr/bin/python3
"""Writes modelc's own ONNX node-test cases (tests/conformance/cases/<case>/): model.onnx and
test_data_set_0/{input,output}_N.pb, laid out as ONNX's backend test data, for the ops and forms
that ONNX 1.12's test data (libonnx-testdata) lacks. The conformance runners (tests/conformance,
tests/e2e/codegen) run them as the suite "modelc".

Expected outputs are computed here with numpy (float64, then float32), from the operator's
definition in the ONNX specification, independently of modelc; where onnx 1.12's own test
generators carry a numpy reference (LSTM_Helper, GRU_Helper, RNN_Helper), that is used.
Seeded: the same files each run. /usr/bin/python3 (onnx 1.12, numpy).

    /usr/bin/python3 tests/conformance/cases/make_cases.py [--out DIR] [--only NAME_SUBSTRING]
"""
import argparse
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def tensor_type(arr):
    return helper.np_dtype_to_tensor_dtype(arr.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype") else \
        onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype]


def write_case(out, name, nodes, inputs, outputs, opset, initializers=(), ir_version=8, value_info=()):
    """inputs / outputs: lists of (name, numpy array). Writes the model and one data set."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, tensor_type(a), list(a.shape)) for n, a in inputs],
        [helper.make_tensor_value_info(n, tensor_type(a), list(a.shape)) for n, a in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers],
        value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="modelc-cases")
    model.ir_version = ir_version
    d = os.path.join(out, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for kind, lst in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(lst):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def f32(a):
    return np.asarray(a, dtype=np.float32)


# ---- GroupNormalization (opset 18: scale and bias per group; 21: per channel) -------------------

def group_norm_ref(x, groups, scale, bias, eps, per_channel):
    x = x.astype(np.float64)
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    mean = g.mean(axis=2, keepdims=True)
    var = g.var(axis=2, keepdims=True)
    y = ((g - mean) / np.sqrt(var + eps)).reshape(x.shape)
    ones = (1,) * (x.ndim - 2)
    if per_channel:
        s, b = scale.reshape(c, *ones), bias.reshape(c, *ones)
    else:
        rep = c // groups
        s, b = np.repeat(scale, rep).reshape(c, *ones), np.repeat(bias, rep).reshape(c, *ones)
    return f32(y * s.astype(np.float64) + b.astype(np.float64))


def group_norm_case(out, name, opset, shape, groups, eps=None, seed=0):
    rng = np.random.default_rng(seed)
    x = f32(rng.standard_normal(shape) * 2 + 0.5)
    per_channel = opset >= 21
    count = shape[1] if per_channel else groups
    scale = f32(rng.standard_normal(count))
    bias = f32(rng.standard_normal(count))
    attrs = {"num_groups": groups}
    if eps is not None:
        attrs["epsilon"] = eps
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], **attrs)
    y = group_norm_ref(x, groups, scale, bias, 1e-5 if eps is None else eps, per_channel)
    write_case(out, name, [node], [("x", x), ("scale", scale), ("bias", bias)], [("y", y)], opset)


@case
def group_norm(out):
    group_norm_case(out, "test_group_normalization_example", 18, (3, 4, 2, 2), 2, seed=1)
    group_norm_case(out, "test_group_normalization_epsilon", 18, (3, 4, 2, 2), 2, eps=1e-2, seed=2)
    group_norm_case(out, "test_group_normalization_per_channel", 21, (2, 6, 3, 5), 3, seed=3)
    group_norm_case(out, "test_group_normalization_instance", 21, (2, 4, 7), 4, seed=4)
    group_norm_case(out, "test_group_normalization_one_group_5d", 21, (1, 3, 2, 3, 4), 1, eps=1e-3, seed=5)


# ---- LRN: an even window (before 1, after 2) and a rank-3 input ----------------------------------

def lrn_ref(x, size, alpha, beta, bias):
    x64 = x.astype(np.float64)
    c = x.shape[1]
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = np.zeros_like(x64)
    for ch in range(c):
        lo, hi = max(0, ch - before), min(c - 1, ch + after)
        sq[:, ch] = (x64[:, lo:hi + 1] ** 2).sum(axis=1)
    return f32(x64 / (bias + alpha / size * sq) ** beta)


@case
def lrn(out):
    rng = np.random.default_rng(11)
    x = f32(rng.standard_normal((2, 7, 3, 4)) * 3)
    y = lrn_ref(x, 4, 0.1, 0.6, 1.5)
    node = helper.make_node("LRN", ["x"], ["y"], size=4, alpha=0.1, beta=0.6, bias=1.5)
    write_case(out, "test_lrn_even_size", [node], [("x", x)], [("y", y)], 13)
    x = f32(rng.standard_normal((2, 5, 9)))
    y = lrn_ref(x, 3, 1e-4, 0.75, 1.0)
    node = helper.make_node("LRN", ["x"], ["y"], size=3)
    write_case(out, "test_lrn_rank3", [node], [("x", x)], [("y", y)], 13)


# ---- LSTM / GRU / RNN: directions, sequence_lens, initial states, peepholes, clip, activations -----

ACTS = {
    "Relu": lambda x, a, b: np.maximum(x, 0),
    "Tanh": lambda x, a, b: np.tanh(x),
    "Sigmoid": lambda x, a, b: 1 / (1 + np.exp(-x)),
    "Affine": lambda x, a, b: a * x + b,
    "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "ThresholdedRelu": lambda x, a, b: np.where(x > a, x, 0),
    "ScaledTanh": lambda x, a, b: a * np.tanh(b * x),
    "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1),
    "Elu": lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1)),
    "Softsign": lambda x, a, b: x / (1 + np.abs(x)),
    "Softplus": lambda x, a, b: np.log1p(np.exp(x)),
}
# (takes alpha, takes beta, default alpha, default beta), as ONNX's ops define them.
ACT_PARAMS = {"Affine": (1, 1, 1.0, 0.0), "LeakyRelu": (1, 0, 0.01, 0), "ThresholdedRelu": (1, 0, 1.0, 0),
              "ScaledTanh": (1, 1, 1.0, 1.0), "HardSigmoid": (1, 1, 0.2, 0.5), "Elu": (1, 0, 1.0, 0)}


def rnn_ref(cell, x, w, r, b=None, lens=None, h0=None, c0=None, p=None, direction="forward", layout=0,
            activations=None, alphas=(), betas=(), clip=None, input_forget=0, linear_before_reset=0):
    """The ONNX recurrent ops in float64 (the spec's equations; sequence_lens as ONNX Runtime: the
    steps past a sequence's length give zeros in Y, Y_h is the state after its last step)."""
    g = {"lstm": 4, "gru": 3, "rnn": 1}[cell]
    per = {"lstm": 3, "gru": 2, "rnn": 1}[cell]
    D = 2 if direction == "bidirectional" else 1
    x = x.astype(np.float64)
    if layout == 1:
        x = x.transpose(1, 0, 2)
    S, B, _ = x.shape
    H = r.shape[2]
    names = activations or ({"lstm": ["Sigmoid", "Tanh", "Tanh"], "gru": ["Sigmoid", "Tanh"], "rnn": ["Tanh"]}[cell] * D)
    ai, bi, acts = 0, 0, []
    for nm in names:
        ta, tb, da, db = ACT_PARAMS.get(nm, (0, 0, 0, 0))
        a_ = alphas[ai] if ta and ai < len(alphas) else da
        ai += 1 if ta and ai < len(alphas) else 0
        b_ = betas[bi] if tb and bi < len(betas) else db
        bi += 1 if tb and bi < len(betas) else 0
        acts.append(lambda v, f=ACTS[nm], a_=a_, b_=b_: f(v, a_, b_))
    b = np.zeros((D, 2 * g * H)) if b is None else b.astype(np.float64)
    lens = np.full(B, S) if lens is None else np.clip(lens, 0, S)
    st = lambda t: None if t is None else (t.transpose(1, 0, 2) if layout == 1 else t).astype(np.float64)
    h0 = np.zeros((D, B, H)) if h0 is None else st(h0)
    c0 = np.zeros((D, B, H)) if c0 is None else st(c0)
    p = np.zeros((D, 3 * H)) if p is None else p.astype(np.float64)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    Y = np.zeros((S, D, B, H))
    YH = np.zeros((D, B, H))
    YC = np.zeros((D, B, H))
    for d in range(D):
        f_, g_, h_ = (acts[d * per:(d + 1) * per] + [None, None])[:3]
        rev = direction == "reverse" or d == 1
        W, R, Wb, Rb = w[d].astype(np.float64), r[d].astype(np.float64), b[d, :g * H], b[d, g * H:]
        for n in range(B):
            h, c = h0[d, n].copy(), c0[d, n].copy()
            L = int(lens[n])
            for step in range(L):
                t = L - 1 - step if rev else step
                xt = x[t, n]
                if cell == "lstm":
                    gates = W @ xt + R @ h + Wb + Rb
                    i, o, f, cc = np.split(gates, 4)
                    pi, po, pf = np.split(p[d], 3)
                    i = f_(cl(i + pi * c))
                    f = 1 - i if input_forget else f_(cl(f + pf * c))
                    cc = g_(cl(cc))
                    c = f * c + i * cc
                    o = f_(cl(o + po * c))
                    h = o * h_(c)
                elif cell == "gru":
                    z = f_(cl(W[:H] @ xt + R[:H] @ h + Wb[:H] + Rb[:H]))
                    rr = f_(cl(W[H:2 * H] @ xt + R[H:2 * H] @ h + Wb[H:2 * H] + Rb[H:2 * H]))
                    if linear_before_reset:
                        hh = g_(cl(W[2 * H:] @ xt + rr * (R[2 * H:] @ h + Rb[2 * H:]) + Wb[2 * H:]))
                    else:
                        hh = g_(cl(W[2 * H:] @ xt + R[2 * H:] @ (rr * h) + Rb[2 * H:] + Wb[2 * H:]))
                    h = (1 - z) * hh + z * h
                else:
                    h = f_(cl(W @ xt + R @ h + Wb + Rb))
                Y[t, d, n] = h
            YH[d, n], YC[d, n] = h, c
    if layout == 1:
        Y, YH, YC = Y.transpose(2, 0, 1, 3), YH.transpose(1, 0, 2), YC.transpose(1, 0, 2)
    return f32(Y), f32(YH), f32(YC)


def rnn_case(out, name, cell, S, B, I, H, opset=14, direction="forward", layout=0, with_b=True, with_lens=False,
             with_h0=False, with_c0=False, with_p=False, outputs=("Y", "Y_h"), seed=0, scale=0.5, **attrs):
    rng = np.random.default_rng(seed)
    g = {"lstm": 4, "gru": 3, "rnn": 1}[cell]
    D = 2 if direction == "bidirectional" else 1
    x = f32(rng.standard_normal((B, S, I) if layout else (S, B, I)))
    w = f32(rng.standard_normal((D, g * H, I)) * scale)
    r = f32(rng.standard_normal((D, g * H, H)) * scale)
    ins = [("X", x), ("W", w), ("R", r)]
    kw = {}
    names = ["X", "W", "R"]

    def opt(flag, nm, arr, key):
        if flag:
            ins.append((nm, arr))
            names.append(nm)
            kw[key] = arr
        else:
            names.append("")

    opt(with_b, "B", f32(rng.standard_normal((D, 2 * g * H)) * scale), "b")
    lens = np.array([max(1, S - (k % S)) for k in range(B)], dtype=np.int32)
    opt(with_lens, "sequence_lens", lens, "lens")
    st = (B, D, H) if layout else (D, B, H)
    opt(with_h0, "initial_h", f32(rng.standard_normal(st)), "h0")
    if cell == "lstm":
        opt(with_c0, "initial_c", f32(rng.standard_normal(st)), "c0")
        opt(with_p, "P", f32(rng.standard_normal((D, 3 * H)) * scale), "p")
    while names and names[-1] == "":
        names.pop()
    ref_attrs = dict(attrs)
    Y, YH, YC = rnn_ref(cell, x, w, r, direction=direction, layout=layout,
                        activations=ref_attrs.pop("activations", None), alphas=ref_attrs.pop("activation_alpha", ()),
                        betas=ref_attrs.pop("activation_beta", ()), **ref_attrs, **kw)
    all_outs = {"Y": Y, "Y_h": YH, "Y_c": YC}
    out_names = [o if o in outputs else "" for o in (["Y", "Y_h", "Y_c"] if cell == "lstm" else ["Y", "Y_h"])]
    while out_names and out_names[-1] == "":
        out_names.pop()
    node_attrs = dict(attrs, hidden_size=H)
    if direction != "forward":
        node_attrs["direction"] = direction
    if layout:
        node_attrs["layout"] = layout
    node = helper.make_node(cell.upper(), names, out_names, **node_attrs)
    write_case(out, name, [node], ins, [(o, all_outs[o]) for o in out_names if o], opset)


@case
def recurrent(out):
    rnn_case(out, "test_lstm_bidirectional_all_inputs", "lstm", 5, 3, 4, 6, direction="bidirectional",
             with_lens=True, with_h0=True, with_c0=True, with_p=True, outputs=("Y", "Y_h", "Y_c"), seed=21)
    rnn_case(out, "test_lstm_reverse_input_forget_clip", "lstm", 4, 2, 3, 5, direction="reverse", clip=0.7,
             input_forget=1, with_h0=True, with_c0=True, outputs=("Y", "Y_c"), seed=22, scale=1.5)
    rnn_case(out, "test_lstm_activations_batchwise", "lstm", 3, 2, 4, 3, layout=1, direction="bidirectional",
             activations=["HardSigmoid", "LeakyRelu", "Softsign", "Sigmoid", "ScaledTanh", "Affine"],
             activation_alpha=[0.3, 0.1, 0.8, 0.9], activation_beta=[0.4, 1.2, 0.1],
             with_lens=True, outputs=("Y", "Y_h", "Y_c"), seed=23)
    rnn_case(out, "test_lstm_opset7_hidden_32", "lstm", 6, 2, 8, 32, opset=7, with_h0=True, seed=24, scale=0.3)
    rnn_case(out, "test_gru_bidirectional_seq_lens", "gru", 5, 3, 4, 6, direction="bidirectional", with_lens=True,
             with_h0=True, seed=25)
    rnn_case(out, "test_gru_linear_before_reset_reverse", "gru", 4, 2, 3, 5, direction="reverse",
             linear_before_reset=1, with_h0=True, seed=26)
    rnn_case(out, "test_gru_activations_clip_batchwise", "gru", 4, 3, 2, 4, layout=1, linear_before_reset=1,
             activations=["Sigmoid", "Elu"], activation_alpha=[0.5], clip=1.0, seed=27, scale=1.5)
    rnn_case(out, "test_rnn_bidirectional_relu_seq_lens", "rnn", 5, 3, 4, 6, direction="bidirectional",
             activations=["Relu", "Tanh"], with_lens=True, with_h0=True, seed=28)
    rnn_case(out, "test_rnn_reverse_softplus_batchwise", "rnn", 3, 2, 4, 5, direction="reverse", layout=1,
             activations=["Softplus"], outputs=("Y_h",), seed=29)
    rnn_case(out, "test_rnn_thresholded_relu_no_bias", "rnn", 4, 2, 3, 4, with_b=False, opset=7,
             activations=["ThresholdedRelu"], activation_alpha=[0.2], seed=30)


# ---- If / Loop decided at compile time -----------------------------------------------------------

def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const_node(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


@case
def control_flow(out):
    rng = np.random.default_rng(41)
    F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    # If on a condition computed from a shape: X has 2 rows, so the then branch (X + 1) runs.
    x = f32(rng.standard_normal((2, 3)))
    then_g = helper.make_graph([const_node("one", f32([1.0])), helper.make_node("Add", ["x", "one"], ["t"])],
                               "then", [], [vi("t", F, [2, 3])])
    else_g = helper.make_graph([const_node("two", f32([2.0])), helper.make_node("Mul", ["x", "two"], ["e"])],
                               "else", [], [vi("e", F, [2, 3])])
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             const_node("zero", np.array(0, dtype=np.int64)), const_node("rows", np.array(2, dtype=np.int64)),
             helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
             helper.make_node("Equal", ["n", "rows"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    write_case(out, "test_if_shape_condition", nodes, [("x", x)], [("y", f32(x + 1))], 13)

    # If whose condition is an initializer (false): the else branch reads the outer X and its own
    # initializer; two outputs.
    w = f32(rng.standard_normal((3,)))
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])],
                               "then", [], [vi("a", F, [2, 3]), vi("b", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["d"])],
                               "else", [], [vi("c", F, [2, 3]), vi("d", F, [2, 3])],
                               initializer=[numpy_helper.from_array(w, "w")])
    nodes = [helper.make_node("If", ["flag"], ["y0", "y1"], then_branch=then_g, else_branch=else_g)]
    write_case(out, "test_if_else_outer_scope", nodes, [("x", x)],
               [("y0", f32(x + w)), ("y1", f32(np.maximum(x + w, 0)))], 13,
               initializers=[("flag", np.array(False))])

    # Loop with a constant trip count (3), no condition, a carried value, a scan output, and an If
    # on the iteration number in its body: y -> y * 2 on iteration 1, y + 1 otherwise.
    y0 = f32(rng.standard_normal((2,)))
    then_g = helper.make_graph([const_node("k2", f32([2.0])), helper.make_node("Mul", ["y_in", "k2"], ["t"])],
                               "then", [], [vi("t", F, [2])])
    else_g = helper.make_graph([const_node("k1", f32([1.0])), helper.make_node("Add", ["y_in", "k1"], ["e"])],
                               "else", [], [vi("e", F, [2])])
    body = helper.make_graph(
        [const_node("one_i", np.array(1, dtype=np.int64)),
         helper.make_node("Equal", ["i", "one_i"], ["is_one"]),
         helper.make_node("If", ["is_one"], ["y_out"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["y_out"], ["scan"])],
        "body", [vi("i", I64, []), vi("cond_in", BOOL, []), vi("y_in", F, [2])],
        [vi("cond_out", BOOL, []), vi("y_out", F, [2]), vi("scan", F, [2])])
    nodes = [helper.make_node("Loop", ["trip", "", "y"], ["y_final", "ys"], body=body)]
    ys, cur = [], y0.astype(np.float64)
    for i in range(3):
        cur = cur * 2 if i == 1 else cur + 1
        ys.append(cur)
    write_case(out, "test_loop_if_in_body", nodes, [("y", y0)], [("y_final", f32(cur)), ("ys", f32(np.stack(ys)))], 13,
               initializers=[("trip", np.array(3, dtype=np.int64))])

    # A while loop: no trip count; the body counts and stops when the count reaches 4; it reads the
    # outer X; scan output of rank 2.
    xs = f32(rng.standard_normal((2, 3)))
    body = helper.make_graph(
        [const_node("step", np.array(1, dtype=np.int64)), const_node("limit", np.array(4, dtype=np.int64)),
         helper.make_node("Add", ["n_in", "step"], ["n_out"]),
         helper.make_node("Less", ["n_out", "limit"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Mul", ["acc_out", "acc_out"], ["sq"])],
        "body", [vi("i", I64, []), vi("cond_in", BOOL, []), vi("n_in", I64, []), vi("acc_in", F, [2, 3])],
        [vi("cond_out", BOOL, []), vi("n_out", I64, []), vi("acc_out", F, [2, 3]), vi("sq", F, [2, 3])])
    nodes = [helper.make_node("Loop", ["", "go", "n0", "acc0"], ["n", "acc", "squares"], body=body)]
    acc, sq = np.zeros((2, 3)), []
    for _ in range(4):
        acc = acc + xs.astype(np.float64)
        sq.append(acc * acc)
    write_case(out, "test_loop_while_condition", nodes, [("x", xs)],
               [("n", np.array(4, dtype=np.int64)), ("acc", f32(acc)), ("squares", f32(np.stack(sq)))], 13,
               initializers=[("go", np.array(True)), ("n0", np.array(0, dtype=np.int64)),
                             ("acc0", np.zeros((2, 3), dtype=np.float32))])

    # A Loop of no iteration: the carried value passes through.
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Neg", ["v_in"], ["v_out"])],
                             "body", [vi("i", I64, []), vi("cond_in", BOOL, []), vi("v_in", F, [2, 3])],
                             [vi("cond_out", BOOL, []), vi("v_out", F, [2, 3])])
    nodes = [helper.make_node("Loop", ["zero_trips", "", "x"], ["v"], body=body)]
    write_case(out, "test_loop_zero_iterations", nodes, [("x", x)], [("v", x)], 13,
               initializers=[("zero_trips", np.array(0, dtype=np.int64))])


# ---- GridSample, RoiAlign, NonMaxSuppression ---------------------------------------------------------

@case
def grid_sample(out):
    import torch
    rng = np.random.default_rng(51)
    modes16 = {"bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic"}
    for name, mode, pad, ac, opset in [
            ("test_gridsample_bicubic_border_align_corners", "bicubic", "border", 1, 16),
            ("test_gridsample_bicubic_reflection", "bicubic", "reflection", 0, 16),
            ("test_gridsample_nearest_reflection_align_corners", "nearest", "reflection", 1, 16),
            ("test_gridsample_bilinear_reflection_align_corners", "bilinear", "reflection", 1, 16),
            ("test_gridsample_bilinear_border_batch", "bilinear", "border", 0, 16),
            ("test_gridsample_opset20_linear_zeros", "linear", "zeros", 0, 20),
            ("test_gridsample_opset20_cubic_border", "cubic", "border", 1, 20)]:
        x = f32(rng.standard_normal((2, 3, 5, 6)))
        g = f32(rng.uniform(-1.4, 1.4, (2, 4, 7, 2)))  # some points outside [-1, 1]
        tmode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
        y = torch.nn.functional.grid_sample(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(g.astype(np.float64)),
                                            mode=tmode, padding_mode=pad, align_corners=bool(ac)).numpy()
        node = helper.make_node("GridSample", ["X", "Grid"], ["Y"], mode=mode, padding_mode=pad, align_corners=ac)
        write_case(out, name, [node], [("X", x), ("Grid", g)], [("Y", f32(y))], opset)


def roi_align_ref(x, rois, batch, oh, ow, ratio, scale, half_pixel, max_mode):
    """RoiAlign as ONNX Runtime computes it (avg: torchvision's roi_align), float64."""
    N, C, H, W = x.shape
    R = rois.shape[0]
    y = np.zeros((R, C, oh, ow))
    off = 0.5 if half_pixel else 0.0
    for k in range(R):
        x1, y1, x2, y2 = (rois[k].astype(np.float64) * scale) - off
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else int(np.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(np.ceil(rw / ow))
        for c in range(C):
            plane = x[batch[k], c].astype(np.float64)
            for ph in range(oh):
                for pw in range(ow):
                    vals = []
                    for iy in range(gh):
                        sy = y1 + ph * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            sx = x1 + pw * bw + (ix + 0.5) * bw / gw
                            if sy < -1 or sy > H or sx < -1 or sx > W:
                                vals.append(0.0)
                                continue
                            yy, xx = max(sy, 0.0), max(sx, 0.0)
                            y0, x0 = int(yy), int(xx)
                            y1_, x1_ = y0 + 1, x0 + 1
                            if y0 >= H - 1:
                                y0 = y1_ = H - 1
                                yy = float(y0)
                            if x0 >= W - 1:
                                x0 = x1_ = W - 1
                                xx = float(x0)
                            ly, lx = yy - y0, xx - x0
                            t = [(1 - ly) * (1 - lx) * plane[y0, x0], (1 - ly) * lx * plane[y0, x1_],
                                 ly * (1 - lx) * plane[y1_, x0], ly * lx * plane[y1_, x1_]]
                            vals.append(max(t) if max_mode else sum(t))
                    y[k, c, ph, pw] = max(vals) if max_mode else sum(vals) / max(gh * gw, 1)
    return f32(y)


@case
def roi_align(out):
    rng = np.random.default_rng(61)
    x = f32(rng.standard_normal((2, 3, 12, 10)))
    rois = f32([[0.5, 1.0, 7.3, 9.5], [2.0, 2.0, 3.0, 2.5], [-1.5, 4.0, 11.5, 13.0], [1.0, 0.0, 9.0, 6.0]])
    batch = np.array([0, 1, 1, 0], dtype=np.int64)
    for name, opset, attrs in [
            ("test_roialign_adaptive_half_pixel", 16, dict(output_height=3, output_width=4, spatial_scale=1.0)),
            ("test_roialign_max_mode", 16, dict(mode="max", output_height=2, output_width=3, sampling_ratio=2,
                                                 spatial_scale=0.8)),
            ("test_roialign_opset10_adaptive", 10, dict(output_height=3, output_width=2, spatial_scale=0.5)),
            ("test_roialign_output_half_pixel_scale", 16, dict(coordinate_transformation_mode="output_half_pixel",
                                                                output_height=4, output_width=4, sampling_ratio=3,
                                                                spatial_scale=1.25))]:
        half = opset >= 16 and attrs.get("coordinate_transformation_mode", "half_pixel") == "half_pixel"
        y = roi_align_ref(x, rois, batch, attrs["output_height"], attrs["output_width"], attrs.get("sampling_ratio", 0),
                          attrs.get("spatial_scale", 1.0), half, attrs.get("mode", "avg") == "max")
        node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], **attrs)
        write_case(out, name, [node], [("X", x), ("rois", rois), ("batch_indices", batch)], [("Y", y)], opset)


def nms_ref(boxes, scores, max_out, iou, score_min, center):
    """Greedy per (batch, class), decreasing score (the lower index first among equal scores)."""
    def corners(b):
        if center:
            return (b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2)
        return (min(b[1], b[3]), min(b[0], b[2]), max(b[1], b[3]), max(b[0], b[2]))

    def suppresses(a, b):
        ix1, iy1, ix2, iy2 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
        if ix2 <= ix1 or iy2 <= iy1:
            return False
        inter = (ix2 - ix1) * (iy2 - iy1)
        aa, ab = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
        return inter / (aa + ab - inter) > iou
    out = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            sc = scores[b, c]
            order = sorted([i for i in range(len(sc)) if score_min is None or sc[i] > score_min], key=lambda i: (-sc[i], i))
            kept = []
            for i in order:
                if len(kept) >= max_out:
                    break
                box = corners(boxes[b, i].astype(np.float64))
                if any(suppresses(k, box) for k in kept):
                    continue
                kept.append(box)
                out.append([b, c, i])
    return np.array(out, dtype=np.int64).reshape(-1, 3)


@case
def nms(out):
    rng = np.random.default_rng(71)
    for name, center, with_thresholds in [("test_nonmaxsuppression_center_batches_classes", 1, True),
                                          ("test_nonmaxsuppression_defaults_corners", 0, False)]:
        B, C, N = 2, 3, 9
        xy = rng.uniform(0, 4, (B, N, 2))
        wh = rng.uniform(0.5, 2.5, (B, N, 2))
        if center:
            boxes = f32(np.concatenate([xy, wh], axis=2))
        else:
            boxes = f32(np.concatenate([xy[..., ::-1], (xy + wh)[..., ::-1]], axis=2))
            boxes[:, ::2] = boxes[:, ::2][..., [2, 3, 0, 1]]  # some corners given in the other order
        scores = f32(np.round(rng.uniform(0, 1, (B, C, N)), 1))  # ties
        max_out = np.array([4], dtype=np.int64)
        ins = [("boxes", boxes), ("scores", scores), ("max_output_boxes_per_class", max_out)]
        names = ["boxes", "scores", "max_output_boxes_per_class"]
        iou, smin = 0.0, None
        if with_thresholds:
            iou, smin = 0.3, 0.25
            ins += [("iou_threshold", f32([iou])), ("score_threshold", f32([smin]))]
            names += ["iou_threshold", "score_threshold"]
        sel = nms_ref(boxes, scores, 4, np.float32(iou), None if smin is None else np.float32(smin), center)
        node = helper.make_node("NonMaxSuppression", names, ["selected_indices"], center_point_box=center)
        write_case(out, name, [node], ins, [("selected_indices", sel)], 11)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    for fn in CASES:
        if a.only in fn.__name__:
            fn(a.out)


if __name__ == "__main__":
    main()
