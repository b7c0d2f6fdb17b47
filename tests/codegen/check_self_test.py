#!/usr/bin/env python3
"""tests/codegen/check_self_test.py — a generated program's self-test, taps and --max-rel-l2 (issue 28).

  check_self_test.py --folder DIR --binary DIR/NAME_emu --input NAME=FILE.npy
  check_self_test.py --layers --modelc build/modelc --model M.onnx --folder DIR   (DIR: verify --keep's)

Checks that:
  - `NAME --self-test` passes (exit 0, PASS): the weights' checksum and every output of the input
    compiled in against the reference's; with another flag it is a usage error (exit 1);
  - `NAME --taps T` writes T/taps.json (schema "modelc-taps/1") with a tap for every kernel of
    report.json, in its order, each file of the shape and dtype listed, and the tap of each model
    output equal to the output the program writes;
  - `--compare-dir --max-rel-l2 L` passes an output against itself and fails (exit 3) one scaled by
    1.1 at L = 1e-2; --max-rel-l2 without --compare-dir is a usage error;
  - a planted fault: a copy of the folder whose self-test data hold a wrong reference output (one
    element's sign flipped in NAME_self_test.h), rebuilt with `make emu`, fails its self-test (exit 4).
With --layers: a copy of DIR (kept by `modelc verify --emulate --keep DIR M.onnx`, default flags)
whose kernel k2 computes Tanh where the model has Sigmoid (tiny_mlp's third kernel) makes
`modelc verify --emulate --layers --folder COPY` fail (exit 1) naming k2 as the first kernel over the
tolerance, after k0 and k1 pass.
Exit 0 when all hold; 1 with the first failure.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, expect):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != expect:
        fail(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect}; output:\n{p.stdout}")
    return p.stdout


def layers(a):
    if not os.path.isfile(os.path.join(a.folder, "report.json")):
        fail(f"{a.folder} holds no emitted model (codegen_verify_tiny_mlp keeps it)")
    name = os.path.splitext(os.path.basename(a.model))[0]
    with tempfile.TemporaryDirectory(prefix="modelc_layers_") as tmp:
        copy = os.path.join(tmp, name)
        shutil.copytree(a.folder, copy, symlinks=True)
        source = os.path.join(copy, name + ".cu")
        with open(source) as f:
            text = f.read()
        at = text.find("// y = Sigmoid(x0)")
        op = text.find("mc::ew::Sigmoid,", at) if at >= 0 else -1
        if op < 0:
            fail(f"{source}: no Sigmoid kernel to plant the fault in")
        planted = text[:op] + "mc::ew::Tanh," + text[op + len("mc::ew::Sigmoid,"):]
        with open(source, "w") as f:
            f.write(planted)
        out = run([a.modelc, "verify", a.model, "--emulate", "--layers", "--folder", copy], 3)
        first = re.search(r"first kernel over the tolerance: (\S+)", out)
        if not first or first.group(1) != "k2":
            fail(f"verify --layers did not name k2 first:\n{out}")
        for k in ("k0", "k1"):
            if not re.search(rf"^  {k} \(.*PASS", out, re.M):
                fail(f"{k}, before the planted kernel, does not pass:\n{out}")
    print("OK: verify --layers names the planted kernel k2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", required=True)
    ap.add_argument("--binary")
    ap.add_argument("--input", help="NAME=FILE.npy")
    ap.add_argument("--layers", action="store_true")
    ap.add_argument("--modelc")
    ap.add_argument("--model")
    a = ap.parse_args()
    if a.layers:
        return layers(a)
    for path in (a.folder, a.binary, a.input.split("=", 1)[-1]):
        if not os.path.exists(path):
            fail(f"{path} is missing (the _emu test builds it)")
    name = os.path.basename(a.binary)[: -len("_emu")]
    with open(os.path.join(a.folder, "report.json")) as f:
        ids = [k["id"] for k in json.load(f)["kernels"]]
    if not ids:
        fail("report.json has no kernels")

    # 1. The self-test, as built.
    out = run([a.binary, "--self-test"], 0)
    lines = out.strip().splitlines()
    if lines[-1] != "PASS" or "as compiled" not in out or "outputs against the reference" not in out:
        fail(f"--self-test did not report the weights and the outputs passing:\n{out}")
    if " FAIL" in out:
        fail(f"--self-test has a failing line yet passed:\n{out}")
    run([a.binary, "--self-test", "--input", a.input], 1)

    with tempfile.TemporaryDirectory(prefix="modelc_self_test_") as tmp:
        # 2. Taps.
        taps, got = os.path.join(tmp, "taps"), os.path.join(tmp, "got")
        run([a.binary, "--input", a.input, "--taps", taps, "--output-dir", got], 0)
        with open(os.path.join(taps, "taps.json")) as f:
            index = json.load(f)
        if index.get("schema") != "modelc-taps/1" or index.get("model") != name:
            fail(f"taps.json: schema {index.get('schema')!r}, model {index.get('model')!r}")
        order = []
        for t in index["taps"]:
            for key in ("kernel", "family", "value", "dtype", "shape", "file"):
                if key not in t:
                    fail(f"taps.json: a tap without '{key}': {t}")
            if not order or order[-1] != t["kernel"]:
                order.append(t["kernel"])
            arr = np.load(os.path.join(taps, t["file"]))
            if list(arr.shape) != t["shape"] or str(arr.dtype) != t["dtype"].replace("bfloat16", "float32"):
                fail(f"{t['file']}: {arr.dtype}{list(arr.shape)}, taps.json says {t['dtype']}{t['shape']}")
        if order != ids:
            fail(f"the taps' kernels {order} are not report.json's {ids}, in order")
        outputs = [f for f in os.listdir(got) if f.endswith(".npy")]
        if not outputs:
            fail("the program wrote no output")
        for f in outputs:
            value = f[: -len(".npy")]
            tap = [t for t in index["taps"] if t["value"] == value]
            if not tap:
                fail(f"no tap of the model output '{value}'")
            if not np.array_equal(np.load(os.path.join(taps, tap[-1]["file"])), np.load(os.path.join(got, f))):
                fail(f"the tap of output '{value}' differs from the output the program writes")

        # 3. --max-rel-l2.
        run([a.binary, "--input", a.input, "--output-dir", os.path.join(tmp, "o2"), "--compare-dir", got,
             "--max-rel-l2", "1e-2"], 0)
        scaled = os.path.join(tmp, "scaled")
        os.makedirs(scaled)
        for f in outputs:
            x = np.load(os.path.join(got, f))
            np.save(os.path.join(scaled, f), (x * 1.1).astype(x.dtype))
        out = run([a.binary, "--input", a.input, "--output-dir", os.path.join(tmp, "o3"), "--compare-dir", scaled,
                   "--max-rel-l2", "1e-2"], 3)
        if "rel L2 <= 0.01" not in out:
            fail(f"--max-rel-l2 does not say its rule:\n{out}")
        run([a.binary, "--max-rel-l2", "1e-2"], 1)

        # 4. A planted fault in the self-test's data: one reference element's sign flipped.
        copy = os.path.join(tmp, "copy")
        shutil.copytree(a.folder, copy, symlinks=True)
        header = os.path.join(copy, name + "_self_test.h")
        with open(header) as f:
            text = f.read()
        m = re.search(r"const unsigned char kSelfTestOutput0\[\] = \{\s*((?:0x[0-9a-f]{2},\s*){4})", text)
        if not m:
            fail(f"{header} holds no reference output")
        data = m.group(1).split(",")
        data[3] = " 0x%02x" % (int(data[3], 16) ^ 0x80)  # the sign bit of a little-endian float32 (or float16's second)
        text = text[: m.start(1)] + ",".join(data) + text[m.end(1):]
        with open(header, "w") as f:
            f.write(text)
        p = subprocess.run(["make", "-C", copy, "emu", "-j2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            fail(f"make emu of the planted copy failed:\n{p.stdout[-3000:]}")
        out = run([os.path.join(copy, name + "_emu"), "--self-test"], 4)
        if out.strip().splitlines()[-1] != "FAIL" or "as compiled" not in out:
            fail(f"the planted self-test did not fail on its outputs alone:\n{out}")
    print("OK: --self-test passes and fails a planted reference; taps of every kernel; --max-rel-l2")


if __name__ == "__main__":
    main()
