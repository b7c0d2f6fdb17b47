#!/usr/bin/python3
"""Times `modelc run-reference` against onnxruntime-node (CPU) on the same models and inputs, and
prints the ratios (issue 31: the reference within 3x of onnxruntime's wall time).

    /usr/bin/python3 bench/reference_speed.py [--modelc build/modelc] [--models DIR] [--only a,b]
                                              [--repeat 3] [--check]

Both sides are timed as whole processes, wall clock, model load included: `modelc run-reference
MODEL --input NAME=FILE -o TMP` against `node bench/ort_run.js MODEL NAME=FILE` (session creation and
one run). Each model runs --repeat times on each side, interleaved, and the fastest of each is
kept (the machine is shared: the fastest run is the one least disturbed). ort_run.js also reports its
session creation and run apart; they are printed beside the totals.

Models: the e2e exports in --models (build/models: the e2e_export* ctests, or models/
export_torchvision.py) with their saved inputs (NAME.input.npy), the small models shipped in models/,
and the ISNet background-removal nets when models/fetch_isnet_models.py has fetched them into
--models (isnet: 1x3x1024x1024 FP32; isnet_quint8: its dynamically quantized twin, ConvInteger).
A model whose file is missing is listed as skipped, never silently dropped.

onnxruntime-node comes from npm: `npm install --ignore-scripts --prefix build/ort onnxruntime-node`
(the folder is $MODELC_ORT_DIR when set). --check also compares the two sides' outputs (relative L2).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (name, file stem, folder key): "exported" models live in --models, "shipped" ones in models/.
MODELS = [
    ("resnet50", "resnet50", "exported"),
    ("resnet18", "resnet18", "exported"),
    ("mobilenet_v2", "mobilenet_v2", "exported"),
    ("googlenet", "googlenet", "exported"),
    ("vit_b_16", "vit_b_16", "exported"),
    ("bert", "bert", "exported"),
    ("resnet50_64", "resnet50_64", "exported"),
    ("densenet121_64", "densenet121_64", "exported"),
    ("inception_v3_80", "inception_v3_80", "exported"),
    ("swin_t_64", "swin_t_64", "exported"),
    ("gpt2_block", "gpt2_block", "exported"),
    ("tiny_cnn", "tiny_cnn", "shipped"),
    ("tiny_transformer", "tiny_transformer", "shipped"),
    ("isnet", "isnet", "exported"),
    ("isnet_quint8", "isnet_quint8", "exported"),
]


def ort_dir():
    return os.environ.get("MODELC_ORT_DIR", os.path.join(ROOT, "build", "ort"))


def input_files(model_path, stem_dir, stem, work):
    """NAME=FILE pairs for every input: the saved NAME.input.npy where the model has one input and
    the file exists, otherwise seeded random data of the input's shape (written to `work`)."""
    import onnx

    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    inputs = [i for i in m.graph.input if i.name not in inits]
    saved = os.path.join(stem_dir, stem + ".input.npy")
    pairs = []
    rng = np.random.default_rng(31)
    types = {1: np.float32, 11: np.float64, 7: np.int64, 6: np.int32, 2: np.uint8, 3: np.int8, 9: np.bool_}
    for i in inputs:
        if len(inputs) == 1 and os.path.isfile(saved):
            pairs.append("%s=%s" % (i.name, saved))
            continue
        t = i.type.tensor_type
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dt = types.get(t.elem_type)
        if dt is None:
            raise SystemExit("%s: input %s has element type %d, which this script cannot make" % (model_path, i.name, t.elem_type))
        if np.issubdtype(dt, np.floating):
            a = rng.uniform(0.0, 1.0, dims).astype(dt)
        else:
            a = rng.integers(0, 2, dims).astype(dt)
        f = os.path.join(work, "%s.%s.npy" % (stem, "".join(c if c.isalnum() else "_" for c in i.name)))
        np.save(f, a)
        pairs.append("%s=%s" % (i.name, f))
    return pairs


def timed(cmd, cwd=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return dt, p.stdout


def rel_l2(a, b):
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    d = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (d if d > 0 else 1.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modelc", default=os.path.join(ROOT, "build", "modelc"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "models"), help="folder of the exported models")
    ap.add_argument("--only", default="", help="comma list of model names (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per side and model; the fastest counts")
    ap.add_argument("--check", action="store_true", help="also compare the outputs (relative L2)")
    a = ap.parse_args()

    ort = ort_dir()
    if not os.path.isdir(os.path.join(ort, "node_modules", "onnxruntime-node")):
        print("error: onnxruntime-node is not installed in %s\n"
              "install it with: npm install --ignore-scripts --prefix %s onnxruntime-node\n"
              "(or point MODELC_ORT_DIR at a folder that has node_modules/onnxruntime-node)" % (ort, ort), file=sys.stderr)
        return 2
    if not shutil.which("node"):
        print("error: node is not installed (Debian: apt-get install nodejs)", file=sys.stderr)
        return 2
    if not os.access(a.modelc, os.X_OK):
        print("error: %s is not an executable; build modelc first (scripts/build.sh)" % a.modelc, file=sys.stderr)
        return 2
    only = [s for s in a.only.split(",") if s]
    known = {m[0] for m in MODELS}
    for s in only:
        if s not in known:
            print("error: unknown model '%s' (known: %s)" % (s, ", ".join(m[0] for m in MODELS)), file=sys.stderr)
            return 2

    print("modelc run-reference against onnxruntime-node %s (CPU), wall time of the whole process with model load, "
          "fastest of %d; %d cores" % (ort_version(ort), a.repeat, os.cpu_count() or 0))
    hdr = "%-18s %10s %10s %8s   %s" % ("model", "modelc s", "ort s", "ratio", "ort: load + run s")
    print(hdr + ("   rel_l2" if a.check else ""))
    failed = False
    with tempfile.TemporaryDirectory(prefix="reference_speed.") as work:
        for name, stem, where in MODELS:
            if only and name not in only:
                continue
            folder = a.models if where == "exported" else os.path.join(ROOT, "models")
            path = os.path.join(folder, stem + ".onnx")
            if not os.path.isfile(path):
                how = ("models/fetch_isnet_models.py --out " + a.models) if name.startswith("isnet") else \
                      "the e2e_export ctests or models/export_torchvision.py --out " + a.models
                print("%-18s skipped: %s is missing (%s)" % (name, path, how))
                continue
            pairs = input_files(path, folder, stem, work)
            mc_out = os.path.join(work, name + ".modelc")
            ort_out = os.path.join(work, name + ".ort")
            mc_cmd = [a.modelc, "run-reference", path, "-o", mc_out] + [x for p in pairs for x in ("--input", p)]
            ort_cmd = ["node", os.path.join(HERE, "ort_run.js"), path, "--ort", ort] + pairs
            if a.check:
                ort_cmd += ["-o", ort_out]
            mc_best = ort_best = None
            ort_split = None
            try:
                for _ in range(max(1, a.repeat)):
                    t, _ = timed(mc_cmd)
                    mc_best = t if mc_best is None else min(mc_best, t)
                    t, out = timed(ort_cmd)
                    if ort_best is None or t < ort_best:
                        ort_best = t
                        ort_split = json.loads(out.strip().splitlines()[-1])
            except RuntimeError as e:
                print("%-18s error: %s" % (name, e))
                failed = True
                continue
            line = "%-18s %10.2f %10.2f %7.2fx   %.2f + %.2f" % (name, mc_best, ort_best, mc_best / ort_best,
                                                                  ort_split["load_s"], ort_split["run_s"])
            if a.check:
                errs = []
                for f in sorted(os.listdir(ort_out)):
                    mine = os.path.join(mc_out, f)
                    if os.path.isfile(mine):
                        errs.append(rel_l2(np.load(mine), np.load(os.path.join(ort_out, f))))
                line += "   %s" % (" ".join("%.1e" % e for e in errs) if errs else "(no output names in common)")
            print(line, flush=True)
    return 1 if failed else 0


def ort_version(ort):
    try:
        with open(os.path.join(ort, "node_modules", "onnxruntime-node", "package.json")) as f:
            return json.load(f).get("version", "?")
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
