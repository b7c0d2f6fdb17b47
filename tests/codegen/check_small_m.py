#!/usr/bin/env python3
"""tests/codegen/check_small_m.py — a model whose matrix products take the small-M tactic
(issue 27; schedule/small_m.h, templates/gemm_small_m.cuh) compiles, and runs right on the emulation.

  check_small_m.py ptx --modelc build/modelc --model M.onnx --arch sm_80 --work DIR --nvcc NVCC --ptxas PTXAS
  check_small_m.py verify --modelc build/modelc --model M.onnx --arch sm_80 --work DIR [--min-split-norms N]

ptx: compiles the model (--fp16 --arch ARCH) into DIR/NAME; report.json names at least one kernel
with engine "small_m", each with a small-M tactic ("small_m": 1); nvcc compiles NAME.cu to PTX for
ARCH; every small-M kernel's entry point (report.json's "launches": a kernel instantiated like an
earlier one runs that one's) issues mma.sync, ldmatrix and cp.async; ptxas -v reports no
stack frame and no spills in any function.
verify: `modelc verify --emulate --fp16 --arch ARCH --keep DIR/NAME` passes on the host emulation
(outputs against the reference; the emulation refuses a split whose ticket is not its own, so
tickets left non-zero fail), and the folder it ran holds small-M kernels (so they are what ran);
with --min-split-norms N, at least N of them split K across blocks and run a LayerNorm in their
launch (fuse_row_norm: the splits' ticketed adds, then the row panels' tail).
Exit 0 when all hold; 1 with the first failure.
"""

import argparse
import json
import os
import re
import shutil

from check_hopper import fail, model_name, ptx_entries, run


def no_stack_or_spills(ptxas, arch, ptx):
    """ptxas -v for arch on ptx: fails on an error, a stack frame or spills."""
    log = run([ptxas, "-arch=" + arch, "-v", ptx, "-o", ptx + ".cubin"])
    bad = [l for l in log.splitlines() if re.search(r"[1-9][0-9]* bytes (stack frame|spill)", l)]
    if bad:
        fail("ptxas reports a stack frame or spills:\n" + "\n".join(bad))


def small_m_kernels(folder):
    with open(os.path.join(folder, "report.json")) as f:
        report = json.load(f)
    ids, splits, split_norms, entries = [], 0, 0, set()
    for k in report["kernels"]:
        if k.get("engine") == "small_m":
            if k.get("tactic", {}).get("small_m") != 1:
                fail("kernel %s: engine small_m without a small-M tactic: %s" % (k["id"], k.get("tactic")))
            if not k.get("launches"):
                fail("kernel %s: engine small_m without a launch" % k["id"])
            ids.append(k["id"])
            entries.update(k["launches"])  # an instantiation of an earlier kernel runs its entry point
            splits += k["tactic"].get("split_k", 1) > 1
            split_norms += k["tactic"].get("split_k", 1) > 1 and "by the last block of each row panel" in k["note"]
    if not ids:
        engines = sorted({k.get("engine", "") for k in report["kernels"]})
        fail("no kernel on the small-M engine in %s/report.json (engines: %s)" % (folder, engines))
    return ids, splits, split_norms, sorted(entries)


def check_ptx(a):
    folder = os.path.join(a.work, model_name(a.model))
    shutil.rmtree(folder, ignore_errors=True)
    run([a.modelc, a.model, "--fp16", "--arch", a.arch, "-o", folder])
    ids, splits, _, launched = small_m_kernels(folder)
    sources = [f for f in os.listdir(folder) if f.endswith(".cu") and not f.endswith("_main.cu")]
    if len(sources) != 1:
        fail("expected one kernel source in %s, found %s" % (folder, sources))
    name = sources[0][:-3]
    sm = a.arch.split("_")[1]
    ptx = os.path.join(a.work, name + ".ptx")
    run([a.nvcc, "-std=c++17", "--gpu-architecture=compute_" + sm, "-I.", "-Iruntime", "-Ikernels",
         "-DMODELC_ARCHS=" + sm, "-DMODELC_PTX_ARCH=0", "-ptx", sources[0], "-o", ptx], cwd=folder)
    entries = ptx_entries(ptx)
    for e in launched:
        if e not in entries:
            fail("no entry point %s of a small-M kernel in the PTX (entries: %s)" % (e, sorted(entries)))
        for instr in ("mma.sync.aligned.m16n8k16", "ldmatrix", "cp.async"):
            if instr not in entries[e]:
                fail("%s (a small-M kernel's) has no %s" % (e, instr))
    no_stack_or_spills(a.ptxas, a.arch, ptx)
    print("%s: %d small-M kernels (%s; %d split-K) in %d entry points (%s) with mma.sync, ldmatrix, cp.async; "
          "ptxas %s: 0 bytes stack, 0 spills" % (model_name(a.model), len(ids), ", ".join(ids), splits, len(launched),
                                                 ", ".join(launched), a.arch))


def check_verify(a):
    keep = os.path.join(a.work, model_name(a.model))
    shutil.rmtree(keep, ignore_errors=True)
    out = run([a.modelc, "verify", a.model, "--emulate", "--fp16", "--arch", a.arch, "--keep", keep])
    if "PASS" not in out:
        print(out[-4000:])
        fail("verify printed no PASS")
    ids, splits, split_norms, _ = small_m_kernels(keep)
    print(out.strip().splitlines()[-1])
    print("%s: verified on the emulation with %d small-M kernels (%s; %d split-K, %d of them with a LayerNorm in "
          "their launch)" % (model_name(a.model), len(ids), ", ".join(ids), splits, split_norms))
    if split_norms < a.min_split_norms:
        fail("%d small-M kernels split K with a LayerNorm in their launch, expected at least %d" %
             (split_norms, a.min_split_norms))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["ptx", "verify"])
    p.add_argument("--modelc", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--arch", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--nvcc")
    p.add_argument("--ptxas")
    p.add_argument("--min-split-norms", type=int, default=0)
    a = p.parse_args()
    if not os.path.isfile(a.model):
        fail("model %s not found" % a.model)
    os.makedirs(a.work, exist_ok=True)
    if a.mode == "ptx" and (not a.nvcc or not a.ptxas):
        fail("ptx needs --nvcc and --ptxas")
    check_ptx(a) if a.mode == "ptx" else check_verify(a)


if __name__ == "__main__":
    main()
