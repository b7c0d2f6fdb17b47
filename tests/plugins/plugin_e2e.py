#!/usr/bin/python3
"""Custom operators through the modelc command (docs/PLUGINS.md; run by ctest, see CMakeLists.txt).

    plugin_e2e.py --modelc BIN --plugin DIR --work DIR --case example|errors [--jobs N]

--case example: the worked example of docs/PLUGINS.md, examples/plugins/example_ops (ScaledSoftplus,
an elementwise op with float attributes; RowMedian, an op with a workspace and a shape rule that
drops the last dim), in a model built here with onnx.helper:

    c  (constant) -> ScaledSoftplus (default attributes)             -> bias   (folded at compile time)
    Conv 1x1 (x) + bias -> ScaledSoftplus (alpha 1.5, beta 2)         -> soft   (an output)
    soft -> RowMedian                                                -> median (an output, via Relu)
    median -> ScaledSoftplus (alpha 0.5)                             -> soft2  (an output)

It compiles the model with --plugin (the plugin's headers in kernels/plugins/example_ops/, three
plugin kernels in report.json with engine "plugin", RowMedian's workspace, the report.md rows; the
folder compiled with nvcc for sm_75 where nvcc is installed),
runs `modelc verify --emulate` (the emitted program against the reference, which for a plugin op is
the plugin's kernel run on the emulation) plain and with --fp16, and compares both the emitted
program's outputs and the reference's with an independent numpy computation of the model, so a
plugin whose kernel and reference agree on a wrong answer fails. A float16 model (x float16 ->
ScaledSoftplus -> RowMedian) checks the half path the same way.

--case errors: what goes wrong, each a clear error naming the plugin (and the node where there is
one), exit 1 (2 for a usage error) and no output folder: a missing plugin, a manifest that is not
JSON, an op that clashes with a built-in one, a model whose node breaks the op's check and one whose
shape rule fails, a header that does not compile (verify and run-reference: the message names the
header file), a kernel that faults on the emulation, a model using the op without --plugin, and
--plugin without its folder.
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

SEED = 1313
X_SHAPE = (2, 3, 4, 9)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, expect=0, timeout=1800):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    if expect is not None and p.returncode != expect:
        fail("exit status %d, expected %d: %s" % (p.returncode, expect, " ".join(cmd)))
    return p


# ---- numpy: the model's meaning, independent of modelc ---------------------------------------------


def softplus(z):
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


def scaled_softplus(x, alpha=1.0, beta=1.0):
    return alpha * softplus(beta * x) / beta


def row_median(x):
    n = x.shape[-1]
    return np.sort(x, axis=-1)[..., (n - 1) // 2]


# ---- the models ------------------------------------------------------------------------------------


def opsets():
    return [helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]


def example_model(path, rng):
    c = rng.uniform(-2, 2, X_SHAPE[-1:]).astype(np.float32)
    w = rng.uniform(-1, 1, (X_SHAPE[1], X_SHAPE[1], 1, 1)).astype(np.float32)
    n = helper.make_node
    nodes = [
        n("ScaledSoftplus", ["c"], ["bias"], domain="com.example", name="bias_softplus"),
        # A convolution: the network runs channels-last, and the plugin op still reads dense NCHW.
        n("Conv", ["x", "w"], ["xc"], name="conv"),
        n("Add", ["xc", "bias"], ["a"], name="add"),
        n("ScaledSoftplus", ["a"], ["soft"], domain="com.example", alpha=1.5, beta=2.0, name="softplus"),
        n("RowMedian", ["soft"], ["m"], domain="com.example", name="median_rows"),
        n("Relu", ["m"], ["median"], name="relu"),
        n("ScaledSoftplus", ["median"], ["soft2"], domain="com.example", alpha=0.5, name="softplus2"),
    ]
    f32 = TensorProto.FLOAT
    g = helper.make_graph(nodes, "plugin_example", [helper.make_tensor_value_info("x", f32, X_SHAPE)],
                          [helper.make_tensor_value_info("soft", f32, X_SHAPE),
                           helper.make_tensor_value_info("median", f32, X_SHAPE[:-1]),
                           helper.make_tensor_value_info("soft2", f32, X_SHAPE[:-1])],
                          [numpy_helper.from_array(c, "c"), numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(g, opset_imports=opsets()), path)

    def expected(x):
        xc = np.einsum("oc,nchw->nohw", w[:, :, 0, 0].astype(np.float64), x.astype(np.float64))
        soft = scaled_softplus(xc + scaled_softplus(c.astype(np.float64)), 1.5, 2.0)
        median = np.maximum(row_median(soft), 0)
        return {"soft": soft, "median": median, "soft2": scaled_softplus(median, 0.5)}

    return expected


def half_model(path):
    n = helper.make_node
    nodes = [n("ScaledSoftplus", ["x"], ["s"], domain="com.example", alpha=0.5, beta=3.0, name="softplus"),
             n("RowMedian", ["s"], ["y"], domain="com.example", name="median_rows")]
    f16 = TensorProto.FLOAT16
    g = helper.make_graph(nodes, "plugin_half", [helper.make_tensor_value_info("x", f16, (3, 17))],
                          [helper.make_tensor_value_info("y", f16, (3,))])
    onnx.save(helper.make_model(g, opset_imports=opsets()), path)


def compare(what, got, want, rtol, atol):
    got = np.asarray(got, np.float64)
    if got.shape != want.shape:
        fail("%s: shape %s, numpy's %s" % (what, got.shape, want.shape))
    err = np.abs(got - want)
    bad = err > atol + rtol * np.abs(want)
    print("  %-40s max_abs %.3g, mismatches %d of %d" % (what, float(err.max()) if err.size else 0.0, int(bad.sum()),
                                                        bad.size))
    if bad.any() or not np.isfinite(got).all():
        fail("%s differs from numpy's computation" % what)


def check_outputs(folder, expected, rtol, atol):
    """The emitted program's outputs (verify/outputs) and the reference's (verify/reference)."""
    for kind in ("outputs", "reference"):
        for name, want in expected.items():
            path = os.path.join(folder, "verify", kind, name + ".npy")
            if not os.path.isfile(path):
                fail("missing " + path)
            compare("%s %s" % (kind, name), np.load(path), want, rtol, atol)


def case_example(a):
    rng = np.random.default_rng(SEED)
    model = os.path.join(a.work, "plugin_example.onnx")
    expected = example_model(model, rng)
    x = rng.uniform(-3, 3, X_SHAPE).astype(np.float32)
    inputs = os.path.join(a.work, "inputs")
    os.makedirs(inputs)
    np.save(os.path.join(inputs, "x.npy"), x)
    want = expected(x)

    # 1. The compile: the folder, the headers, the report.
    out = os.path.join(a.work, "out")
    run([a.modelc, model, "--plugin", a.plugin, "-o", out])
    for h in ("scaled_softplus.cuh", "row_median.cuh"):
        copied = os.path.join(out, "kernels", "plugins", "example_ops", h)
        with open(copied, "rb") as f, open(os.path.join(a.plugin, h), "rb") as g:
            if f.read() != g.read():
                fail(copied + " is not a copy of the plugin's header")
    if not os.path.isfile(os.path.join(out, "kernels", "plugin.cuh")):
        fail("kernels/plugin.cuh is missing")
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    plugged = [k for k in report["kernels"] if k["family"] == "plugin"]
    ops = sorted(k["plugin"]["op"] for k in plugged)
    print("plugin kernels: %s" % ops)
    # The constant bias is folded at compile time (by the plugin's reference run): three kernels run.
    if ops != ["RowMedian", "ScaledSoftplus", "ScaledSoftplus"]:
        fail("expected the plugin kernels RowMedian and two ScaledSoftplus, got %s" % ops)
    for k in plugged:
        if k["engine"] != "plugin" or k["plugin"]["name"] != "example_ops" or k["plugin"]["domain"] != "com.example":
            fail("kernel %s: engine/plugin %s %s" % (k["id"], k["engine"], k["plugin"]))
    median = [k for k in plugged if k["plugin"]["op"] == "RowMedian"][0]
    if median["plugin"]["workspace_bytes"] < int(np.prod(X_SHAPE)) * 4:
        fail("RowMedian's workspace is %d bytes" % median["plugin"]["workspace_bytes"])
    if median["flops"] != int(np.prod(X_SHAPE)) * X_SHAPE[-1]:
        fail("RowMedian's FLOPs are %d (the manifest: numel(x) * x[-1])" % median["flops"])
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    for part in ("## Plugins", "| com.example.RowMedian | median_rows | example_ops | row_median.cuh | `example::RowMedian<",
                 "| plugin | RowMedian | median_rows |"):
        if part not in md:
            fail("report.md lacks %r" % part)

    # The plugin's headers compile with nvcc too, in the emitted folder (host warnings as errors),
    # where nvcc is installed (no GPU needed).
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
    if nvcc:
        run(["make", "-C", out, "-j", str(a.jobs), "objs", "ARCHS=75", "MODELC_WERROR=1", "NVCC=" + nvcc])
    else:
        print("note: nvcc not found: the emitted folder was not compiled for the GPU")

    # 2. verify --emulate: the program against the reference (the plugin run on the emulation), then
    # both against numpy.
    keep = os.path.join(a.work, "verify")
    p = run([a.modelc, "verify", model, "--emulate", "--plugin", a.plugin, "--inputs", inputs, "--keep", keep,
             "-j", str(a.jobs)])
    if "PASS: 3 of 3 outputs" not in p.stdout:
        fail("verify did not pass")
    check_outputs(keep, want, rtol=2e-5, atol=1e-6)

    # 3. run-reference with the plugin: the reference alone.
    ref = os.path.join(a.work, "reference")
    run([a.modelc, "run-reference", model, "--plugin", a.plugin, "--input", "x=" + os.path.join(inputs, "x.npy"), "-o", ref])
    for name, w in want.items():
        compare("run-reference " + name, np.load(os.path.join(ref, name + ".npy")), w, 2e-5, 1e-6)

    # 4. --fp16: the plugin ops stay FP32 between Casts; the rest in FP16.
    keep16 = os.path.join(a.work, "verify_fp16")
    p = run([a.modelc, "verify", model, "--emulate", "--fp16", "--plugin", a.plugin, "--inputs", inputs, "--keep", keep16,
             "-j", str(a.jobs)])
    if "PASS: 3 of 3 outputs" not in p.stdout:
        fail("verify --fp16 did not pass")
    for name, w in want.items():
        got = np.load(os.path.join(keep16, "verify", "outputs", name + ".npy")).astype(np.float64)
        rel = np.linalg.norm(got - w) / max(np.linalg.norm(w), 1e-30)
        print("  fp16 %-10s rel L2 %.3g" % (name, rel))
        if rel > 1e-2:
            fail("--fp16 output %s: relative L2 %.3g against numpy" % (name, rel))

    # 5. A float16 model: the kernels' __half path.
    model16 = os.path.join(a.work, "plugin_half.onnx")
    half_model(model16)
    x16 = rng.uniform(-2, 2, (3, 17)).astype(np.float16)
    inputs16 = os.path.join(a.work, "inputs16")
    os.makedirs(inputs16)
    np.save(os.path.join(inputs16, "x.npy"), x16)
    keeph = os.path.join(a.work, "verify_half")
    p = run([a.modelc, "verify", model16, "--emulate", "--plugin", a.plugin, "--inputs", inputs16, "--keep", keeph,
             "-j", str(a.jobs)])
    if "PASS: 1 of 1 outputs" not in p.stdout:
        fail("verify of the float16 model did not pass")
    s = scaled_softplus(x16.astype(np.float32), 0.5, 3.0).astype(np.float16)  # the kernel stores s in float16
    check_outputs(keeph, {"y": row_median(s.astype(np.float64))}, rtol=2e-3, atol=0)
    print("PASS")


# ---- errors ------------------------------------------------------------------------------------


def expect_error(a, args, parts, code=1, absent=None):
    p = run([a.modelc] + args, expect=code)
    text = p.stdout + p.stderr
    for part in parts:
        if part not in text:
            fail("the message lacks %r:\n%s" % (part, text))
    for bad in ("internal", "terminate", "Segmentation", "Aborted"):
        if bad in text:
            fail("the message says %r:\n%s" % (bad, text))
    if absent and os.path.exists(absent):
        fail(absent + " was written by a failed run")


def copy_plugin(a, name):
    d = os.path.join(a.work, name)
    shutil.copytree(a.plugin, d)
    return d


def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    if old not in text:
        fail("%r not in %s" % (old, path))
    with open(path, "w") as f:
        f.write(text.replace(old, new))


def case_errors(a):
    rng = np.random.default_rng(SEED)
    model = os.path.join(a.work, "plugin_example.onnx")
    example_model(model, rng)
    out = os.path.join(a.work, "out")

    # A missing plugin folder, a manifest that is not JSON, an op that clashes with a built-in one.
    missing = os.path.join(a.work, "no_such_plugin")
    expect_error(a, [model, "--plugin", missing, "-o", out], [missing, "the plugin does not exist"], absent=out)
    broken = copy_plugin(a, "broken_json")
    edit(os.path.join(broken, "plugin.json"), '"name": "example_ops",', '"name": "example_ops"')
    expect_error(a, [model, "--plugin", broken, "-o", out],
                 [os.path.join(broken, "plugin.json"), "the plugin's manifest is not valid JSON (line"], absent=out)
    clash = copy_plugin(a, "clash")
    edit(os.path.join(clash, "plugin.json"), '"op": "RowMedian",\n      "domain": "com.example",', '"op": "Relu",')
    expect_error(a, [model, "--plugin", clash, "-o", out],
                 [os.path.join(clash, "plugin.json"), "ops[1] (Relu)", "the op Relu is built into modelc"], absent=out)
    expect_error(a, [model, "--plugin", clash, "--plugin", a.plugin, "-o", out], ["built into modelc"], absent=out)

    # The op used without its plugin.
    expect_error(a, [model, "-o", out], ["node 'bias_softplus'", "operator domain 'com.example' is not supported",
                                          "--plugin DIR"], absent=out)

    # A node that breaks the op's check (RowMedian of a scalar), and a shape rule that fails.
    n = helper.make_node
    f32 = TensorProto.FLOAT
    scalar = os.path.join(a.work, "scalar_median.onnx")
    g = helper.make_graph([n("RowMedian", ["x"], ["y"], domain="com.example", name="scalar_median")], "g",
                          [helper.make_tensor_value_info("x", f32, ())], [helper.make_tensor_value_info("y", f32, ())])
    onnx.save(helper.make_model(g, opset_imports=opsets()), scalar)
    expect_error(a, [scalar, "--plugin", a.plugin, "-o", out],
                 ["node 'scalar_median' (RowMedian", "plugin 'example_ops'", "check 'rank(x) >= 1 && x[-1] >= 1' fails",
                  "x needs a last axis"], absent=out)
    expect_error(a, ["run-reference", scalar, "--plugin", a.plugin, "-o", out], ["check 'rank(x) >= 1"], absent=out)
    shape = copy_plugin(a, "bad_shape")
    edit(os.path.join(shape, "plugin.json"), '"shape": ["x[:-1]"]', '"shape": ["x[0]", "x[4]"]')
    expect_error(a, [model, "--plugin", shape, "-o", out],
                 ["node 'median_rows' (RowMedian", "plugin 'example_ops'",
                  "the shape rule of output 'y', item 1 ('x[4]'): input 'x' has rank 4, no dim 4"], absent=out)

    # A header that does not compile: the compile itself does not build it (the folder is written);
    # verify's and run-reference's reference runs do, and say which header and what the compiler said.
    bad = copy_plugin(a, "bad_header")
    header = os.path.join(bad, "row_median.cuh")
    edit(header, "    __syncthreads();\n    for", "    __syncthreads()\n    for")
    keep = os.path.join(a.work, "bad_verify")
    expect_error(a, ["verify", model, "--emulate", "--plugin", bad, "--keep", keep],
                 ["node 'median_rows' (RowMedian", "plugin 'example_ops'", ", header " + header + ":",
                  "the kernel does not compile on the host emulation", header + ":"], absent=keep)
    expect_error(a, ["run-reference", model, "--plugin", bad, "-o", os.path.join(a.work, "bad_ref")],
                 ["does not compile", header + ":"], absent=os.path.join(a.work, "bad_ref"))

    # A kernel that faults on the emulation: threads of a block racing on shared memory.
    racy = copy_plugin(a, "racy")
    edit(os.path.join(racy, "scaled_softplus.cuh"), "  __device__ static void run(const Params& p) {\n",
         "  __device__ static void run(const Params& p) {\n    __shared__ float s;\n    mc::st_shared(&s, 1.0f);\n")
    expect_error(a, ["run-reference", model, "--plugin", racy, "-o", os.path.join(a.work, "racy_ref")],
                 ["node 'bias_softplus'", "scaled_softplus.cuh", "the kernel failed on the host emulation"],
                 absent=os.path.join(a.work, "racy_ref"))

    # Usage: --plugin without a folder.
    expect_error(a, [model, "-o", out, "--plugin"], ["--plugin"], code=2, absent=out)
    print("PASS")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--plugin", required=True, help="examples/plugins/example_ops")
    ap.add_argument("--work", required=True)
    ap.add_argument("--case", required=True, choices=["example", "errors"])
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    a.modelc = os.path.abspath(a.modelc)
    a.plugin = os.path.abspath(a.plugin)
    if not os.path.isfile(os.path.join(a.plugin, "plugin.json")):
        fail("no plugin.json in " + a.plugin)
    a.work = os.path.abspath(os.path.join(a.work, a.case))
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    {"example": case_example, "errors": case_errors}[a.case](a)


if __name__ == "__main__":
    main()
