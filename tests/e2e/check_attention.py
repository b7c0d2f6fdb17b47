#!/usr/bin/env python3
"""tests/e2e/check_attention.py — a transformer's attention as one fused kernel per layer (report.json).

  check_attention.py --modelc build/modelc --model models/tiny_transformer.onnx --layers 1 --work DIR
                     [--max-kernels-per-layer N]

1. Compiles the model with --fp16 (--arch sm_75,sm_90) and reads report.json: exactly --layers
   kernels of the "attention" family, one per fused candidate of report.json's "attention" (every
   candidate fused, the kernel covering the nodes the candidate lists: its MatMuls and Softmax among
   them); no softmax kernel and no data-movement kernel (transpose, slice, concat, expand, an output
   copy) anywhere in the program, and every kernel that writes an attention kernel's Q, K or V, or
   reads its O, a matrix product (gemm): the views are read and written in place.
   With --max-kernels-per-layer N: at most N x layers kernels besides the Casts at the model's
   boundary (issue 27: the BERT-like encoder at most 6 a layer; the LayerNorms run in the products'
   launches, fuse_row_norm).
2. Compiles it FP32: no attention kernel (the fuse_attention stage runs with --fp16 / --bf16 only).
The fused kernel's numbers are codegen_verify_fp16_<model>'s and codegen_verify_bf16_<model>'s
(tests/e2e/codegen: `modelc verify --emulate` on the same models, the kernel on the host emulation).
Exit 1 naming what failed.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

DATA_MOVEMENT = {"transpose", "slice", "concat", "expand", "tile", "split", "gather", "depth_space"}


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-4000:]}")
    return p.stdout


def report(modelc, model, out, flags):
    run([modelc, model, "-o", str(out), *flags])
    return json.loads((out / "report.json").read_text())


def check_fused(r, layers):
    kernels = r["kernels"]
    att = [k for k in kernels if k["family"] == "attention"]
    if len(att) != layers:
        sys.exit(f"FAIL: {len(att)} attention kernels, expected {layers} (one per layer): "
                 f"{[(k['id'], k['family'], k['op']) for k in kernels]}")
    cands = r.get("attention", [])
    if len(cands) != layers or not all(c["fused"] for c in cands):
        sys.exit(f"FAIL: report.json's attention candidates are not all fused: {cands}")
    by_id = {k["id"]: k for k in att}
    for c in cands:
        k = by_id.get(c["kernel"])
        if not k:
            sys.exit(f"FAIL: candidate {c['softmax']} names kernel {c['kernel']}, not an attention kernel")
        if k["nodes"] != c["covers"] or c["softmax"] not in k["nodes"]:
            sys.exit(f"FAIL: kernel {k['id']} covers {k['nodes']}, the candidate {c['covers']}")
    for k in kernels:
        if k["family"] in DATA_MOVEMENT or k["family"] == "softmax" or k["op"] == "Identity":
            sys.exit(f"FAIL: kernel {k['id']} ({k['family']}, {k['op']} {k['nodes']}) runs beside the fused attention")
    writers = {o["value"]: k for k in kernels for o in k["outputs"]}
    for k in att:
        for v in k["inputs"][:3]:
            w = writers.get(v["value"]) if v else None
            if w is not None and w["family"] != "gemm":
                sys.exit(f"FAIL: {k['id']} reads '{v['value']}' from {w['id']} ({w['family']}), not a product")
        o = k["outputs"][0]["value"]
        readers = [x for x in kernels if any(i and i.get("value") == o for i in x["inputs"])]
        if not readers or any(x["family"] != "gemm" for x in readers):
            sys.exit(f"FAIL: {k['id']}'s output '{o}' is read by {[(x['id'], x['family']) for x in readers]}")
    return att


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--layers", type=int, required=True, help="attention layers of the model")
    ap.add_argument("--work", required=True)
    ap.add_argument("--max-kernels-per-layer", type=int, default=0)
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    if not Path(a.model).exists():
        sys.exit(f"FAIL: {a.model} is missing")

    r = report(a.modelc, a.model, work / "fp16", ["--fp16", "--arch", "sm_75,sm_90"])
    att = check_fused(r, a.layers)
    print(f"--fp16: {len(att)} attention kernel(s): " + ", ".join(f"{k['id']} covers {len(k['nodes'])} nodes" for k in att))
    if a.max_kernels_per_layer:
        inner = [k for k in r["kernels"] if not (k["family"] == "elementwise" and k["op"] == "Cast")]
        if len(inner) > a.max_kernels_per_layer * a.layers:
            sys.exit(f"FAIL: {len(inner)} kernels besides the boundary Casts, more than {a.max_kernels_per_layer} a layer "
                     f"x {a.layers}: {[(k['id'], k['family'], k['op']) for k in inner]}")
        print(f"--fp16: {len(inner)} kernels besides the boundary Casts ({len(inner) / a.layers:.2f} a layer, "
              f"at most {a.max_kernels_per_layer})")

    r = report(a.modelc, a.model, work / "fp32", ["--arch", "sm_75"])
    if any(k["family"] == "attention" for k in r["kernels"]) or "attention" in r:
        sys.exit("FAIL: an FP32 compile has an attention kernel or candidates (the stage runs with --fp16 / --bf16)")
    print("FP32: unfused")

    print("OK")


if __name__ == "__main__":
    main()
