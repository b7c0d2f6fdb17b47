#!/usr/bin/python3
"""Kernel counts of compiled models, from report.json: a table for notes and comparisons.

    kernel_counts.py --modelc BIN [--baseline BIN] [--work DIR] [--modes fp32,fp16] M1.onnx|report.json ...

For each model (an .onnx file, compiled here; or a report.json, read as it is) and mode (fp32: the
plain compile; fp16: `--fp16 --arch sm_90`) it prints one row: kernels in all, Concat kernels, copy
kernels (Identity kernels: the copies of graph outputs that claim_outputs adds; and Casts to the type
they read), layout conversions (Identity kernels the layout stage adds between NCHW and NHWC) and
Casts that convert. With --baseline, a second modelc (e.g. one built at the branch point) compiles the same
models and each cell reads `before -> after`. A compile that fails shows as `failed` (its first
error line goes to stderr). Extra modelc flags for every compile: --flags "--layout nchw".

    counts(report) -> dict   the same counts of one loaded report.json, for other scripts
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

MODES = {"fp32": [], "fp16": ["--fp16", "--arch", "sm_90"]}
COLUMNS = [("kernels", "kernels"), ("concat", "Concat"), ("copies", "copies"), ("conversions", "layout conversions"),
           ("casts", "Casts")]


def counts(report):
    """kernels, concat, copies, conversions, casts of one report.json (see the module's docstring)."""
    c = {"kernels": 0, "concat": 0, "copies": 0, "conversions": 0, "casts": 0}
    for k in report["kernels"]:
        c["kernels"] += 1
        op = k.get("op", "")
        if op == "Concat":
            c["concat"] += 1
        elif op == "Identity":
            c["conversions" if k.get("note", "").startswith("layout conversion") else "copies"] += 1
        elif op == "Cast":
            same = k["inputs"][0].get("dtype") == k["outputs"][0].get("dtype")
            c["copies" if same else "casts"] += 1
    return c


def compile_counts(modelc, model, flags, work):
    """counts() of `modelc MODEL FLAGS`, or None when the compile fails."""
    if model.endswith(".json"):
        with open(model) as f:
            return counts(json.load(f))
    out = os.path.join(work, "out")
    p = subprocess.run([modelc, model, "-o", out] + flags, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        first = next((line for line in p.stdout.splitlines() if line.startswith("error")), p.stdout.strip())
        print(f"{os.path.basename(model)} {' '.join(flags)}: {first}", file=sys.stderr)
        return None
    with open(os.path.join(out, "report.json")) as f:
        return counts(json.load(f))


def cell(before, after, key, compare):
    text = lambda c: "failed" if c is None else str(c[key])
    return f"{text(before)} -> {text(after)}" if compare else text(after)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modelc", required=True, help="the modelc binary")
    ap.add_argument("--baseline", help="a second modelc: cells read 'baseline -> modelc'")
    ap.add_argument("--modes", default="fp32,fp16", help="comma-separated subset of " + ",".join(MODES))
    ap.add_argument("--flags", default="", help="extra modelc flags for every compile (one string)")
    ap.add_argument("--work", help="scratch folder (default: a temporary one, removed after)")
    ap.add_argument("models", nargs="+", help=".onnx models, or report.json files")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode '{m}' (known: {', '.join(MODES)})")
    for m in args.models:
        if not os.path.isfile(m):
            sys.exit(f"{m}: no such file")
        if args.baseline and m.endswith(".json"):
            sys.exit(f"{m}: a report.json has no baseline; --baseline needs .onnx models")
    extra = shlex.split(args.flags)
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        print("| model | mode | " + " | ".join(title for _, title in COLUMNS) + " |")
        print("|---|---|" + "---|" * len(COLUMNS))
        for model in args.models:
            for mode in modes if not model.endswith(".json") else ["report"]:
                flags = MODES.get(mode, []) + extra
                after = compile_counts(args.modelc, model, flags, work)
                before = compile_counts(args.baseline, model, flags, work) if args.baseline else None
                name = os.path.basename(model)
                name = name[: -len(".onnx")] if name.endswith(".onnx") else name
                print(f"| {name} | {mode} | " +
                      " | ".join(cell(before, after, key, bool(args.baseline)) for key, _ in COLUMNS) + " |",
                      flush=True)


if __name__ == "__main__":
    main()
