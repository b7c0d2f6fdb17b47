#!/usr/bin/python3
"""The FP16 stress test of issue 4 (run by ctest; see CMakeLists.txt beside).

    fp16_stress.py --modelc BIN --work DIR --case layernorm|softmax|reducesum|reducesum_large [--jobs N]

Builds a small ONNX model with onnx.helper and its inputs (.npy), runs
`modelc verify M.onnx --emulate --fp16 --inputs DIR --keep DIR/case` and requires: exit 0 with a
PASS line, and, checked here again on the files verify keeps, no NaN or Inf in the program's
outputs where the FP32 reference is finite and a relative L2 error within the case's limit.

The cases are the values FP16 storage holds but FP16 arithmetic does not (the precision policy
computes these ops in FP32 on FP16 storage; an FP16 sum, sum of squares or exp would overflow):
  layernorm  LayerNormalization over rows of hidden size 1024 with |x| >= 1e4: rows of either sign
             with |x| in [1e4, 3e4], and rows offset to [2e4, 4e4] (mean 3e4, std 5.8e3). In FP16
             the row sum (~3e7) and the sum of squares (~1e12) overflow 65504.
  softmax    Softmax over 1000 logits of +-1e4: uniform in [-1e4, 1e4], rows of +1e4 and -1e4 only
             (several equal maxima), a row that is -1e4 everywhere (uniform 1/1000), and a row at
             unit scale. exp(1e4) overflows in any precision without the max subtracted.
  reducesum  ReduceSum over 1e6 elements (a [3, 1000000] input, axis 1): uniform in [0, 0.12)
             (sum ~6e4, just below FP16's 65504: an FP16 accumulator stalls once its spacing
             exceeds the addends, at 256 for addends of 0.06), uniform in [-1, 1) (sum ~+-600),
             and 0.0625 everywhere (62500 exactly).
  reducesum_large  ReduceSum over 1e6 elements uniform in [0, 1): the sum, ~5e5, is finite in FP32
             but beyond FP16's range. The reduce kernel accumulates in FP32 and, with the output
             Cast folded into it (lower, --fp16), writes the FP32 sum itself; stored in FP16 first
             it would be Inf.

The inputs are FP16-representable values (rounded to float16 and stored as float32), so the
boundary Cast is exact and the error measured is the computation's, not the input rounding's.

Tolerance (relative L2 against the FP32 reference): 1e-2, the issue's, for every case. What is
left once the inputs are exact is the rounding of the FP16 outputs (relative 2^-11 = 4.9e-4 per
element, smaller in L2) and FP32 arithmetic (~1e-7 relative): a limit of 1e-2 leaves a margin of
20x over what a correct program shows, while an FP16 accumulation or an overflow lands far beyond
it (a stalled FP16 sum is off by more than 50%; an overflow is Inf or NaN).
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LIMIT = 1e-2
SEED = 20240611


def half_exact(a):
    """float32 values that float16 holds exactly."""
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)


def layernorm_case(rng):
    rows, hidden = 8, 1024
    x = np.empty((rows, hidden), np.float32)
    for r in range(rows):
        mag = rng.uniform(1e4, 3e4, hidden)
        if r < 4:  # both signs, |x| in [1e4, 3e4]
            x[r] = mag * rng.choice([-1.0, 1.0], hidden)
        else:  # offset rows in [2e4, 4e4] (negated for the odd ones)
            x[r] = (mag + 1e4) * (1.0 if r % 2 == 0 else -1.0)
    x = half_exact(x)
    assert np.all(np.abs(x) >= 1e4)
    scale = rng.uniform(0.5, 1.5, hidden).astype(np.float32)
    bias = rng.normal(0.0, 0.1, hidden).astype(np.float32)
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1, epsilon=1e-5,
                            name="layernorm")
    graph = helper.make_graph([node], "fp16_stress_layernorm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, hidden])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, hidden])],
                              [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(bias, "bias")])
    return graph, 17, {"x": x}


def softmax_case(rng):
    rows, n = 6, 1000
    x = np.empty((rows, n), np.float32)
    x[0] = rng.uniform(-1e4, 1e4, n)
    x[1] = rng.uniform(-1e4, 1e4, n)
    x[1, rng.choice(n, 2, replace=False)] = 1e4   # the extremes themselves
    x[1, rng.choice(n, 2, replace=False)] = -1e4
    x[2] = rng.choice([-1e4, 1e4], n)              # many equal maxima: 1/k each
    x[3] = -1e4                                    # all equal: 1/n each
    x[4] = 1e4 - 8.0 * rng.integers(0, 4, n)       # near +1e4, steps of FP16's spacing there (8)
    x[5] = rng.normal(0.0, 3.0, n)                 # unit scale, for contrast
    x = half_exact(x)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=-1, name="softmax")
    graph = helper.make_graph([node], "fp16_stress_softmax",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])])
    return graph, 13, {"x": x}


def reducesum_case(rng):
    n = 1_000_000
    x = np.empty((3, n), np.float32)
    x[0] = rng.uniform(0.0, 0.12, n)
    x[1] = rng.uniform(-1.0, 1.0, n)
    x[2] = 0.0625
    x = half_exact(x)
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0, name="reducesum")
    graph = helper.make_graph([node], "fp16_stress_reducesum",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], [axes])
    return graph, 13, {"x": x}


def reducesum_large_case(rng):
    n = 1_000_000
    x = half_exact(rng.uniform(0.0, 1.0, (1, n)))
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0, name="reducesum")
    graph = helper.make_graph([node], "fp16_stress_reducesum_large",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [axes])
    return graph, 13, {"x": x}


CASES = {"layernorm": layernorm_case, "softmax": softmax_case, "reducesum": reducesum_case,
         "reducesum_large": reducesum_large_case}


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()

    rng = np.random.default_rng(SEED)
    graph, opset, inputs = CASES[a.case](rng)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="fp16_stress")
    model.ir_version = 8
    onnx.checker.check_model(model)
    work = os.path.abspath(os.path.join(a.work, a.case))
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, f"stress_{a.case}.onnx")
    onnx.save(model, path)
    in_dir = os.path.join(work, "inputs")
    os.makedirs(in_dir, exist_ok=True)
    for name, x in inputs.items():
        np.save(os.path.join(in_dir, name + ".npy"), x)

    keep = os.path.join(work, "build")
    cmd = [os.path.abspath(a.modelc), "verify", path, "--emulate", "--fp16", "--inputs", in_dir, "--keep", keep,
           "-j", str(a.jobs)]
    print("+ " + " ".join(cmd), flush=True)
    start = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout, end="")
    print(f"verify took {time.time() - start:.1f} s")

    # Our own look at the files verify kept (whatever verify's verdict was).
    problems = []
    for name in [o.name for o in graph.output]:
        got_path = os.path.join(keep, "verify", "outputs", name + ".npy")
        want_path = os.path.join(keep, "verify", "reference", name + ".npy")
        if not (os.path.exists(got_path) and os.path.exists(want_path)):
            problems.append(f"{name}: {got_path} or {want_path} missing")
            continue
        got = np.load(got_path).astype(np.float64)
        want = np.load(want_path).astype(np.float64)
        finite = np.isfinite(want)
        if not np.all(finite):
            problems.append(f"{name}: the FP32 reference itself has {np.count_nonzero(~finite)} NaN/Inf")
        bad = finite & ~np.isfinite(got)
        ok = finite & np.isfinite(got)
        rel = np.linalg.norm((got - want)[ok]) / max(np.linalg.norm(want[ok]), 1e-30)
        max_abs = float(np.max(np.abs(got - want)[ok])) if np.any(ok) else float("nan")
        rows = ""
        if got.ndim >= 1 and got.shape[0] <= 8:
            per_row = []
            for r in range(got.shape[0]):
                g, w = got[r].ravel(), want[r].ravel()
                m = np.isfinite(w) & np.isfinite(g)
                per_row.append(f"{np.linalg.norm((g - w)[m]) / max(np.linalg.norm(w[m]), 1e-30):.2e}")
            rows = "; per row " + " ".join(per_row)
        print(f"{a.case} {name}: relative L2 {rel:.3e} (limit {LIMIT:.0e}), max abs {max_abs:.3e}, "
              f"NaN/Inf where the reference is finite: {int(np.count_nonzero(bad))}{rows}")
        if np.count_nonzero(bad):
            problems.append(f"{name}: {int(np.count_nonzero(bad))} NaN/Inf where the FP32 reference is finite")
        if not rel <= LIMIT:
            problems.append(f"{name}: relative L2 {rel:.3e} > {LIMIT:.0e}")
    if p.returncode != 0:
        problems.append(f"modelc verify exited with {p.returncode}")
    elif "\nPASS: " not in "\n" + p.stdout:
        problems.append("no PASS line in modelc verify's output")
    if problems:
        fail("; ".join(problems))
    print("OK")


if __name__ == "__main__":
    main()
