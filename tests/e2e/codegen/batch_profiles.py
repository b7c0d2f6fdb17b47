#!/usr/bin/python3
"""Batch profiles on the host emulation (issue 13; run by ctest, see CMakeLists.txt beside).

    batch_profiles.py --modelc BIN --work DIR [--jobs N] [--case symbolic|fixed]

--case symbolic (the default): a convolutional model with a symbolic batch (onnx.helper, opset 17)

    x[N, 3, 8, 8] -> Conv 3x3 + Relu -> MaxPool 2x2 -> GlobalAveragePool -> Flatten -> feat[N, 8]
    feat -> Gemm (8 -> 5) -> Add(t[5], an input without the batch) -> Softmax -> y[N, 5]

compiled with `--batch 1,4` into one folder and built for the emulation (./m_emu), then:
  - report.json has the two profiles, their kernels' entry points m_b1_k*, m_b4_k*;
  - at batches 1, 2, 3 and 4 (./m_emu --batch B, seeded random inputs) every output matches
    `modelc run-reference --batch B` with the same seed; the program names the profile it ran
    (batch 1 on the batch-1 profile, 2 to 4 on the batch-4 one, padded below 4): the smallest that
    holds the batch;
  - input files of batch 3 (numpy) give the outputs of the reference at batch 3 on those files
    (the batch taken from the files), and the outputs hold 3 items (trimmed);
  - batch 5, by --batch or by a file, is a clear error (exit 1, the batches the model runs);
  - a C program linked with libm_emu.a reads the profiles through the C API (NAME_num_profiles,
    NAME_profile_batch, NAME_profile_for_batch, NAME_input_batched, NAME_output_batched), runs
    NAME_run_host_batch at batch 3 and gets the program's outputs, and gets error 2 at batch 5;
  - `modelc verify --batch 1,4 --emulate` passes (batches 1, 3 and 4).

--case fixed: models that fix their batch. models/tiny_cnn.onnx (batch 1; a Flatten keeps the
batch first) is re-batched: `modelc verify --batch 3 --emulate` and `--batch 1,4` pass against the
reference at those batches. models/tiny_transformer.onnx hard-codes it (Reshape to [1, 16, 4, 16]):
`modelc --batch 2` exits 1 naming the Reshape and writes nothing; so does a model that flattens the
batch into a Softmax's axis (Reshape to [1, -1]: it would mix the items).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240613
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "models")


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def run(cmd, cwd=None):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd)
    sys.stdout.write(p.stdout)
    return p.returncode, p.stdout


def must(cmd, what, cwd=None):
    rc, text = run(cmd, cwd)
    if rc != 0:
        fail(f"{what}: exit status {rc}")
    return text


def build_symbolic(path):
    rng = np.random.default_rng(SEED)
    w = rng.normal(0, 0.4, (8, 3, 3, 3)).astype(np.float32)
    b = rng.normal(0, 0.1, (8,)).astype(np.float32)
    g = rng.normal(0, 0.5, (5, 8)).astype(np.float32)
    gb = rng.normal(0, 0.1, (5,)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"), numpy_helper.from_array(g, "G"),
             numpy_helper.from_array(gb, "GB")]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        n("Relu", ["c"], ["r"], name="relu"),
        n("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        n("GlobalAveragePool", ["p"], ["gap"], name="gap"),
        n("Flatten", ["gap"], ["feat"], name="flatten"),
        n("Gemm", ["feat", "G", "GB"], ["logits"], transB=1, name="fc"),
        n("Add", ["logits", "t"], ["shifted"], name="shift"),
        n("Softmax", ["shifted"], ["y"], axis=1, name="softmax"),
    ]
    graph = helper.make_graph(
        nodes, "batch_profiles",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5]),
         helper.make_tensor_value_info("feat", TensorProto.FLOAT, ["N", 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="batch_profiles.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def build_flatten_softmax(path):
    """x[1, 3, 4] -> Reshape [1, -1] -> Softmax: a re-batch would put the batch in the Softmax's axis."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("Reshape", ["x", "shape"], ["f"], name="flatten_all"), n("Softmax", ["f"], ["y"], axis=-1, name="softmax")],
        "flatten_softmax", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12])],
        [numpy_helper.from_array(np.array([1, -1], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="batch_profiles.py")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def close(got, want, what, rtol=1e-3, atol=1e-5):
    if got.shape != want.shape:
        fail(f"{what}: shape {got.shape}, the reference's {want.shape}")
    bad = np.abs(got.astype(np.float64) - want) > atol + rtol * np.abs(want)
    if bad.any():
        fail(f"{what}: {int(bad.sum())} of {bad.size} elements differ from the reference (max abs "
             f"{float(np.abs(got - want).max()):.3g})")


def verify(modelc, model, keep, jobs, flags, what, want_batches):
    text = must([modelc, "verify", model, "--emulate", "-j", str(jobs), "--keep", keep] + flags, what)
    last = text.strip().splitlines()[-1]
    if not last.startswith("PASS: "):
        fail(f"{what}: verify did not pass: {last}")
    if want_batches and f"at batches {want_batches} " not in last:
        fail(f"{what}: verify checked other batches than {want_batches}: {last}")


CONSUMER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "m.h"

/* Reads `n` floats from `path`. */
static int read_floats(const char* path, float* p, size_t n) {
  FILE* f = fopen(path, "rb");
  if (!f) return 1;
  const size_t got = fread(p, sizeof(float), n, f);
  fclose(f);
  return got == n ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 4) return 9;
  printf("profiles %d:", m_num_profiles());
  for (int p = 0; p < m_num_profiles(); ++p) printf(" %lld", (long long)m_profile_batch(p));
  printf("\nprofile_batch(2) %lld\n", (long long)m_profile_batch(2));
  printf("for_batch 1 %d 2 %d 3 %d 4 %d 5 %d 0 %d\n", m_profile_for_batch(1), m_profile_for_batch(2),
         m_profile_for_batch(3), m_profile_for_batch(4), m_profile_for_batch(5), m_profile_for_batch(0));
  printf("batched inputs %d %d outputs %d %d, out of range %d\n", m_input_batched(0), m_input_batched(1),
         m_output_batched(0), m_output_batched(1), m_input_batched(2));
  float x[3 * 3 * 8 * 8], t[5], y[4 * 5], feat[4 * 8];
  for (int i = 0; i < 4 * 5; ++i) y[i] = -7.0f;
  if (read_floats(argv[1], x, 3 * 3 * 8 * 8) || read_floats(argv[2], t, 5)) return 8;
  m_ctx* ctx = NULL;
  if (m_create(&ctx, 0) != 0) {
    printf("create: %s\n", m_error(ctx));
    return 7;
  }
  const void* in[2] = {x, t};
  void* out[2] = {y, feat};
  int rc = m_run_host_batch(ctx, 3, in, out);
  printf("run_host_batch(3) %d\n", rc);
  if (rc) {
    printf("%s\n", m_error(ctx));
    return 6;
  }
  printf("y[15..19] untouched %d\n", y[15] == -7.0f && y[19] == -7.0f);
  FILE* f = fopen(argv[3], "wb");
  fwrite(y, sizeof(float), 15, f);
  fclose(f);
  rc = m_run_host_batch(ctx, 5, in, out);
  printf("run_host_batch(5) %d: %s\n", rc, m_error(ctx));
  m_destroy(ctx);
  return 0;
}
"""


def symbolic_case(a):
    model = os.path.join(a.work, "m.onnx")
    build_symbolic(model)
    out = os.path.join(a.work, "m")
    text = must([a.modelc, model, "--batch", "1,4", "-o", out, "--emulate", "-j", str(a.jobs)], "compile --batch 1,4")
    if "batch profiles 1, 4" not in text:
        fail("the compile does not list the batch profiles")
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    if report["batch_profiles"] != [1, 4] or [p["batch"] for p in report["profiles"]] != [1, 4]:
        fail(f"report.json's profiles: {report.get('batch_profiles')}")
    for p in report["profiles"]:
        for k in p["kernels"]:
            for s in k["launches"]:
                if not s.startswith(f"m_b{p['batch']}_k"):
                    fail(f"profile {p['batch']}: kernel {k['id']} launches {s}")
    if [t["batched"] for t in report["inputs"]] != [True, False] or [t["batched"] for t in report["outputs"]] != [True, True]:
        fail(f"report.json's batched flags: {report['inputs']}, {report['outputs']}")
    binary = os.path.join(out, "m_emu")

    # Every batch from 1 to 4 against the reference at that batch (the same seeded inputs).
    for b in range(1, 5):
        ref = os.path.join(a.work, f"ref{b}")
        must([a.modelc, "run-reference", model, "--batch", str(b), "--seed", str(SEED), "-o", ref], f"reference {b}")
        got = os.path.join(a.work, f"out{b}")
        text = must([binary, "--batch", str(b), "--seed", str(SEED), "--output-dir", got, "--compare-dir", ref],
                    f"m_emu --batch {b}")
        runs_on = 1 if b == 1 else 4
        m = re.search(r"^batch (\d+): profile (\d+) \(batch (\d+) of 1, 4\)(.*)$", text, re.M)
        if not m or int(m.group(1)) != b or int(m.group(3)) != runs_on:
            fail(f"batch {b}: the program does not say it ran the batch-{runs_on} profile")
        if ("padded" in m.group(4)) != (runs_on > b):
            fail(f"batch {b}: padded or not: '{m.group(4)}'")
        for name, items in (("y", 5), ("feat", 8)):
            out_arr = np.load(os.path.join(got, name + ".npy"))
            if out_arr.shape != (b, items):
                fail(f"batch {b}: output {name} is {out_arr.shape}, expected ({b}, {items}) (trimmed)")
        print(f"batch {b}: profile {runs_on}, PASS", flush=True)

    # Input files of batch 3: the batch comes from them.
    rng = np.random.default_rng(SEED + 1)
    x3 = rng.uniform(-1, 1, (3, 3, 8, 8)).astype(np.float32)
    t = rng.uniform(-1, 1, (5,)).astype(np.float32)
    np.save(os.path.join(a.work, "x3.npy"), x3)
    np.save(os.path.join(a.work, "t.npy"), t)
    ref3 = os.path.join(a.work, "ref_files3")
    inputs = ["--input", "x=" + os.path.join(a.work, "x3.npy"), "--input", "t=" + os.path.join(a.work, "t.npy")]
    must([a.modelc, "run-reference", model, "--batch", "3", "-o", ref3] + inputs, "reference on files")
    got3 = os.path.join(a.work, "out_files3")
    text = must([binary, "--output-dir", got3] + inputs, "m_emu on batch-3 files")
    if "batch 3: profile 1 (batch 4 of 1, 4), inputs padded and outputs trimmed" not in text:
        fail("batch-3 files: the program does not say it ran them padded on the batch-4 profile")
    for name in ("y", "feat"):
        close(np.load(os.path.join(got3, name + ".npy")), np.load(os.path.join(ref3, name + ".npy")), "files " + name)

    # Batch 5: no profile holds it.
    rc, text = run([binary, "--batch", "5", "--output-dir", os.path.join(a.work, "out5")])
    if rc != 1 or "--batch 5: the model runs batches 1 to 4 (batch profiles 1, 4)" not in text:
        fail(f"--batch 5: exit {rc}, not the usage error naming the batches")
    np.save(os.path.join(a.work, "x5.npy"), rng.uniform(-1, 1, (5, 3, 8, 8)).astype(np.float32))
    rc, text = run([binary, "--input", "x=" + os.path.join(a.work, "x5.npy"), "--output-dir", os.path.join(a.work, "out5")])
    if rc != 1 or "input 'x' expects float32[4x3x8x8] or the same with a first dim of 1 x B, B from 1 to 4" not in text:
        fail(f"a file of batch 5: exit {rc}, not the error naming the input and the batches")
    if os.path.exists(os.path.join(a.work, "out5")):
        fail("batch 5: an output folder was written")

    # A C program on the C API (libm_emu.a).
    must(["make", "-C", out, "-j", str(a.jobs), "emu-lib"], "make emu-lib")
    src = os.path.join(a.work, "consumer.c")
    with open(src, "w") as f:
        f.write(CONSUMER)
    exe = os.path.join(a.work, "consumer")
    must(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-DMODELC_HOST_EMULATION", "-I", out, "-c", src, "-o",
          exe + ".o"], "compile the C consumer")
    must(["g++", "-o", exe, exe + ".o", os.path.join(out, "libm_emu.a"), "-lboost_context", "-lpthread"],
         "link the C consumer")
    x3.tofile(os.path.join(a.work, "x3.bin"))
    t.tofile(os.path.join(a.work, "t.bin"))
    text = must([exe, os.path.join(a.work, "x3.bin"), os.path.join(a.work, "t.bin"), os.path.join(a.work, "y3.bin")],
                "the C consumer")
    for want in ("profiles 2: 1 4\n", "profile_batch(2) -1\n", "for_batch 1 0 2 1 3 1 4 1 5 -1 0 -1\n",
                 "batched inputs 1 0 outputs 1 1, out of range -1\n", "run_host_batch(3) 0\n", "y[15..19] untouched 1\n",
                 "run_host_batch(5) 2: batch 5 is outside the batch profiles of model m (1, 4): it runs batches 1 to 4"):
        if want not in text:
            fail(f"the C consumer did not print {want!r}")
    y3 = np.fromfile(os.path.join(a.work, "y3.bin"), dtype=np.float32).reshape(3, 5)
    close(y3, np.load(os.path.join(ref3, "y.npy")), "the C consumer's y")

    verify(a.modelc, model, os.path.join(a.work, "verify"), a.jobs, ["--batch", "1,4"], "verify --batch 1,4", "1, 3, 4")
    print("OK")


def fixed_case(a):
    cnn = os.path.join(MODELS, "tiny_cnn.onnx")
    if not os.path.isfile(cnn):
        fail(f"{cnn} is missing")
    verify(a.modelc, cnn, os.path.join(a.work, "cnn3"), a.jobs, ["--batch", "3"], "tiny_cnn --batch 3", None)
    verify(a.modelc, cnn, os.path.join(a.work, "cnn14"), a.jobs, ["--batch", "1,4"], "tiny_cnn --batch 1,4", "1, 3, 4")

    transformer = os.path.join(MODELS, "tiny_transformer.onnx")
    out = os.path.join(a.work, "transformer")
    rc, text = run([a.modelc, transformer, "--batch", "2", "-o", out])
    if rc != 1 or "--batch 2 (the model fixes batch 1)" not in text or "Reshape" not in text or "dynamic_axes" not in text:
        fail(f"tiny_transformer --batch 2: exit {rc}, not the error naming the Reshape that hard-codes the batch")
    if os.path.exists(out):
        fail("tiny_transformer --batch 2: a folder was written")

    flat = os.path.join(a.work, "flatten_softmax.onnx")
    build_flatten_softmax(flat)
    for flags in (["--batch", "4"], ["--batch", "1,4"]):
        rc, text = run([a.modelc, flat, "-o", os.path.join(a.work, "flat")] + flags)
        if rc != 1 or "node 'softmax' (Softmax" not in text or "works along axis -1" not in text or "would combine the items" not in text:
            fail(f"flatten_softmax {' '.join(flags)}: exit {rc}, not the error naming the Softmax")
    print("OK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--case", choices=["symbolic", "fixed"], default="symbolic")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    symbolic_case(a) if a.case == "symbolic" else fixed_case(a)


if __name__ == "__main__":
    main()
