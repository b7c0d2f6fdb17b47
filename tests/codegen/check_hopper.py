#!/usr/bin/env python3
"""tests/codegen/check_hopper.py — a model compiled for --arch sm_90a runs its matrix products and
convolutions on the Hopper engine (issue 32; schedule/hopper.h, codegen/families/hopper.cpp, docs/hopper.md).

  check_hopper.py ptx --modelc build/modelc --model M.onnx [--model M2.onnx] --work DIR --nvcc NVCC --ptxas PTXAS
  check_hopper.py verify --modelc build/modelc --model M.onnx [--model M2.onnx] --work DIR

Each model in turn, compiled with --flags (default --fp16; e.g. "--int8 --calibrate random:4"):
ptx: compiles the model (FLAGS --arch sm_90a) into DIR/NAME; report.json names at least one
kernel with engine "hopper", each with a Hopper tactic ("hopper": 1); nvcc compiles NAME.cu (and NAME_partN.cu) to PTX for
sm_90a (as the folder's Makefile includes it); every Hopper kernel's entry issues wgmma.mma_async and
loads with cp.async.bulk.tensor, no other entry issues wgmma; ptxas -v for sm_90a reports no stack
frame and no spills in any function.
verify: `modelc verify --emulate FLAGS --arch sm_90a --keep DIR/NAME` passes on the host
emulation (outputs against the reference), and the folder it ran holds Hopper kernels (so the
engine is what ran).
Exit 0 when all hold; 1 with the first failure.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def hopper_kernels(folder, launches=None):
    """The ids of report.json's kernels on the Hopper engine; `launches` (a dict), if given, gets
    each one's entry points (report.json "launches": a kernel instantiated like an earlier one runs
    that one's entry)."""
    with open(os.path.join(folder, "report.json")) as f:
        report = json.load(f)
    ids = []
    for k in report["kernels"]:
        if k.get("engine") == "hopper":
            if k.get("tactic", {}).get("hopper") != 1:
                fail("kernel %s: engine hopper without a Hopper tactic: %s" % (k["id"], k.get("tactic")))
            if not k.get("launches"):
                fail("kernel %s: engine hopper without a launch" % k["id"])
            ids.append(k["id"])
            if launches is not None:
                launches[k["id"]] = set(k["launches"])
    if not ids:
        engines = sorted({k.get("engine", "") for k in report["kernels"]})
        fail("no kernel on the Hopper engine in %s/report.json (engines: %s)" % (folder, engines))
    return report["name"] if "name" in report else None, ids


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        print(r.stdout[-6000:])
        fail("exit %d: %s" % (r.returncode, " ".join(cmd)))
    return r.stdout


def model_name(model):
    return os.path.splitext(os.path.basename(model))[0]


def ptx_entries(ptx, entries=None):
    """The PTX file's entry points: name -> the text after its .entry line (to the next entry),
    added to `entries` if given."""
    entries = {} if entries is None else entries
    current = None
    with open(ptx) as f:
        for line in f:
            m = re.match(r"\.visible \.entry (\w+)\(", line)
            if m:
                current = m.group(1)
                entries[current] = ""
            elif current:
                entries[current] += line
    return entries


def check_ptx(a, model):
    folder = os.path.join(a.work, model_name(model))
    shutil.rmtree(folder, ignore_errors=True)
    run([a.modelc, model] + a.flags.split() + ["--arch", "sm_90a", "-o", folder])
    launched = {}
    _, ids = hopper_kernels(folder, launched)
    # Large models split their kernels over NAME.cu and NAME_partN.cu (each its own nvcc run, as the
    # folder's Makefile builds them); kernels are named NAME_kID in every part.
    name = os.path.basename(folder)
    sources = sorted(f for f in os.listdir(folder) if f.endswith(".cu") and not f.endswith("_main.cu"))
    if name + ".cu" not in sources:
        fail("no kernel source %s.cu in %s (found %s)" % (name, folder, sources))
    entries = {}
    logs = []
    for source in sources:
        ptx = os.path.join(a.work, source[:-3] + ".ptx")
        run([a.nvcc, "-std=c++17", "--gpu-architecture=compute_90a", "-I.", "-Iruntime", "-Ikernels",
             "-DMODELC_ARCHS=90a", "-DMODELC_PTX_ARCH=0", "-ptx", source, "-o", ptx], cwd=folder)
        ptx_entries(ptx, entries)
        log = subprocess.run([a.ptxas, "-arch=sm_90a", "-v", ptx, "-o", ptx + ".cubin"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        if log.returncode != 0:
            print(log.stdout[-6000:])
            fail("ptxas failed on %s" % source)
        logs.append(log.stdout)
    # A kernel identical to an earlier one launches the earlier one's entry (report.json's "launches").
    hopper_entries = set()
    for kid in ids:
        roots = launched[kid]
        mine = [e for e in entries if any(e == r or e.startswith(r + "_") for r in roots)]
        if not mine:
            fail("no entry point for Hopper kernel %s (launching %s) in the PTX (entries: %s)"
                 % (kid, sorted(roots), sorted(entries)))
        for e in mine:
            for instr in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait"):
                if instr not in entries[e]:
                    fail("%s (Hopper kernel %s) has no %s" % (e, kid, instr))
        hopper_entries.update(mine)
    for e, body in entries.items():
        if e not in hopper_entries and "wgmma.mma_async" in body:
            fail("%s is not a Hopper kernel in report.json but issues wgmma" % e)
    log = subprocess.CompletedProcess([], 0, "\n".join(logs))
    bad = [l for l in log.stdout.splitlines() if re.search(r"[1-9][0-9]* bytes (stack frame|spill)", l)]
    if bad:
        fail("ptxas reports a stack frame or spills:\n" + "\n".join(bad))
    functions = log.stdout.count("bytes stack frame")
    print("%s: %d Hopper kernels (%s) with wgmma.mma_async, cp.async.bulk.tensor, mbarrier.try_wait; "
          "ptxas sm_90a over %d source(s): %d functions, 0 bytes stack, 0 spills"
          % (model_name(model), len(ids), ", ".join(ids), len(sources), functions))


def check_verify(a, model):
    keep = os.path.join(a.work, model_name(model))
    shutil.rmtree(keep, ignore_errors=True)
    out = run([a.modelc, "verify", model, "--emulate"] + a.flags.split() + ["--arch", "sm_90a", "--keep", keep])
    if "PASS" not in out:
        print(out[-4000:])
        fail("verify printed no PASS")
    _, ids = hopper_kernels(keep)
    print(out.strip().splitlines()[-1])
    print("%s: verified on the emulation with %d Hopper kernels (%s)" % (model_name(model), len(ids), ", ".join(ids)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["ptx", "verify"])
    p.add_argument("--modelc", required=True)
    p.add_argument("--model", required=True, action="append")
    p.add_argument("--work", required=True)
    p.add_argument("--nvcc")
    p.add_argument("--ptxas")
    p.add_argument("--flags", default="--fp16", help="modelc's precision flags (default --fp16)")
    a = p.parse_args()
    for m in a.model:
        if not os.path.isfile(m):
            fail("model %s not found" % m)
    os.makedirs(a.work, exist_ok=True)
    if a.mode == "ptx" and (not a.nvcc or not a.ptxas):
        fail("ptx needs --nvcc and --ptxas")
    for m in a.model:
        check_ptx(a, m) if a.mode == "ptx" else check_verify(a, m)


if __name__ == "__main__":
    main()
