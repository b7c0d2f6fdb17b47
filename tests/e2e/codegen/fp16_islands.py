#!/usr/bin/python3
"""An FP16 model with FP32 islands in Cast pairs, as the usual FP16 converters leave one (issue 9,
"No kernel that changes nothing"; run by ctest, see CMakeLists.txt beside).

    fp16_islands.py --modelc BIN --work DIR [--jobs N]

The model (onnx.helper, opset 17), float16 throughout as a converter without keep_io_types leaves
it, with FP32 islands:

    x -> Conv -> Relu -> Cast32 -> Resize (linear, 2x) -> Cast16 -> Conv -> Cast32 -> Sigmoid
      -> Cast16 -> Identity -> Cast32 -> Softmax (channels) -> Cast16 -> y

Resize, Sigmoid and Softmax compute in FP32 on FP16 storage anyway (their policy fp32_compute), so
each Cast pair around them folds into the op (the fold_cast_pairs stage; Sigmoid then fuses into the
Conv before it): KERNELS_FOLDED kernels, LAYOUT_CONVERSIONS of them: the input to NHWC, and from
the NHWC convolution to the NCHW Softmax, where the Cast converted before (the Resize reads and
writes the NHWC buffers); with `--disable-pass fold_cast_pairs` KERNELS_UNFOLDED. With --fp16 the precision pass makes the islands FP16 itself; the Cast writing y
then converts float16 to float16 and is a view, not a kernel: KERNELS_FOLDED again. No compile has
a copy kernel (an Identity that is no layout conversion, or a Cast to the type it reads:
tests/e2e/kernel_counts.py counts them). `modelc verify --emulate` (the emitted program on the host
emulation against the reference interpreter) passes on the folded compiles, plain and --fp16.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from kernel_counts import counts  # noqa: E402  (tests/e2e/kernel_counts.py)

SEED = 20240612
# Conv + Relu, Resize, Conv + Sigmoid, Softmax and the layout conversions: the Cast pairs and the
# Identity gone.
LAYOUT_CONVERSIONS = 2
KERNELS_FOLDED = 4 + LAYOUT_CONVERSIONS
# The input's layout conversion, Conv + Relu, Resize, Conv, Sigmoid, Softmax and a Cast on each side
# of the three islands (the Casts convert between NCHW and NHWC too).
KERNELS_UNFOLDED = 1 + 5 + 6


def build(path):
    rng = np.random.default_rng(SEED)
    w1 = rng.normal(0, 0.3, (8, 4, 3, 3)).astype(np.float16)
    b1 = rng.normal(0, 0.1, (8,)).astype(np.float16)
    w2 = rng.normal(0, 0.2, (8, 8, 3, 3)).astype(np.float16)
    inits = [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(b1, "B1"), numpy_helper.from_array(w2, "W2"),
             numpy_helper.from_array(np.array([], np.float32), "roi"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("Cast", ["r1"], ["r1_32"], to=F32, name="resize_in_cast"),
        n("Resize", ["r1_32", "roi", "scales"], ["up32"], mode="linear", name="resize"),
        n("Cast", ["up32"], ["up"], to=F16, name="resize_out_cast"),
        n("Conv", ["up", "W2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        n("Cast", ["c2"], ["c2_32"], to=F32, name="sigmoid_in_cast"),
        n("Sigmoid", ["c2_32"], ["s32"], name="sigmoid"),
        n("Cast", ["s32"], ["s"], to=F16, name="sigmoid_out_cast"),
        n("Identity", ["s"], ["s_id"], name="identity"),
        n("Cast", ["s_id"], ["s_32"], to=F32, name="softmax_in_cast"),
        n("Softmax", ["s_32"], ["p32"], axis=1, name="softmax"),
        n("Cast", ["p32"], ["y"], to=F16, name="softmax_out_cast"),
    ]
    graph = helper.make_graph(nodes, "fp16_islands", [helper.make_tensor_value_info("x", F16, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", F16, [1, 8, 12, 12])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="fp16_islands.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(p.stdout)
    return p.returncode, p.stdout


def arguments(doc, add=None):
    """--modelc, --work (emptied and made here) and --jobs of a script whose docstring is `doc`;
    add(parser) adds the script's own."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    if add:
        add(ap)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)  # no earlier build passes for this one
    os.makedirs(a.work)
    return a


def verify(modelc, model, keep, jobs, flags, what):
    """`modelc verify MODEL --emulate FLAGS` (the build kept in `keep`) must pass."""
    rc, text = run([modelc, "verify", model, "--emulate", "-j", str(jobs), "--keep", keep] + flags)
    if rc != 0 or "\nPASS: " not in "\n" + text:
        fail(f"{what}: modelc verify --emulate {' '.join(flags)} exited with {rc}")


def main():
    a = arguments(__doc__)
    model = os.path.join(a.work, "fp16_islands.onnx")
    build(model)
    cases = [("folded", [], KERNELS_FOLDED), ("unfolded", ["--disable-pass", "fold_cast_pairs"], KERNELS_UNFOLDED),
             ("fp16", ["--fp16"], KERNELS_FOLDED)]
    for name, flags, want in cases:
        out = os.path.join(a.work, "out_" + name)
        rc, _ = run([a.modelc, model, "-o", out] + flags)
        if rc != 0:
            fail(f"modelc {' '.join(flags)} exited with {rc}")
        with open(os.path.join(out, "report.json")) as f:
            c = counts(json.load(f))
        print(f"{name}: {c}")
        if c["kernels"] != want:
            fail(f"{name}: {c['kernels']} kernels, expected {want}")
        if c["copies"]:
            fail(f"{name}: {c['copies']} copy kernels (Identity, or a Cast to its own type)")
        if name != "unfolded" and c["conversions"] != LAYOUT_CONVERSIONS:
            fail(f"{name}: {c['conversions']} layout conversions, expected {LAYOUT_CONVERSIONS}")
        if name == "unfolded":
            continue  # verify takes no --disable-pass: the folded compiles are the ones checked
        verify(a.modelc, model, os.path.join(a.work, "verify_" + name), a.jobs, flags, name)
    print("OK")


if __name__ == "__main__":
    main()
