#!/usr/bin/python3
"""End-to-end checks of the modelc CLI on whole models (run by ctest; see CMakeLists.txt).

    check_models.py reference --modelc BIN --model M.onnx --input M.input.npy --expected M.output.npy --work DIR
        runs `modelc run-reference M.onnx --input NAME=M.input.npy -o DIR` and requires the relative
        L2 error of DIR/<output>.npy against torch's output to be <= --max-rel-l2 (1e-4). With
        --expected M.outputs.npz every output is compared, by name (integer outputs exactly).
        With --fp16 it runs `modelc run-reference --fp16` (the FP16 simulation: the precision pass,
        every FP16 op's output rounded to float16) and the limit is the issue's 1e-2; with --bf16
        the BF16 simulation, limit 5e-2 (verify --bf16's); the output must be finite either way.
        With --ort PKG (the onnxruntime-node package folder; the ctests pass it) the model also runs in
        onnxruntime (scripts/ort_run.js under node) on the same input, and each output of
        run-reference must agree with onnxruntime's: relative L2 <= 1e-4, or every element within
        1e-5 x the output's range (a near-zero output); integer outputs exactly. A disagreement
        fails naming the model.
    check_models.py inspect --modelc BIN M1.onnx M2.onnx ...
        runs `modelc inspect` on each model and requires exit status 0 (no unsupported node).
    check_models.py tensor-cores --modelc BIN --model M.onnx --work DIR [--max-kernels N] [--arch A] [--bf16]
                                 [--no-kernel-for Concat,BatchNormalization]
        compiles `modelc M.onnx --fp16 --arch A` (--bf16: --bf16) into DIR and reads report.json: every convolution
        and matrix product (the conv and gemm families) runs on tensor cores, except the depthwise
        ones, whose fallback reason must say so; at most --max-kernels kernels in all. With
        --no-kernel-for, no kernel's main node (its first in "nodes", a fused op's producer too) is of
        one of those op types: each such node is elided or runs inside another kernel (a Concat's
        inputs writing their slices; a BatchNormalization in a convolution's or pool's operand
        prologue), and the model must have at least one node of each (else the check proves nothing).
    check_models.py arena --modelc BIN --work DIR [--max-ratio 1.05] [--reemit] M1.onnx M2.onnx ...
        compiles each model in FP32 and with --fp16 --arch sm_90 and reads report.json's memory
        section: the max-live lower bound recomputed from the buffers' live intervals (the most
        aligned bytes live at one kernel) must equal the reported one, no two buffers live at once
        may share a byte, and the arena must be at most --max-ratio times the bound (the memory plan
        does not depend on --arch). With --reemit the FP16 compile (the one with more stages: the
        precision pass, the tensor-core tactics) runs a second time into another folder, and the two
        must hold the same files byte for byte (the first difference is named); scripts/emit_corpus.py
        compares every model and flag set with a saved corpus.
    check_models.py folded --modelc BIN --model M.onnx --work DIR --ops Mod,ScatterND,...
        compiles `modelc M.onnx` (FP32) into DIR and reads report.json: no kernel runs a node of the
        listed ops (they compute shapes and masks from constants, so they must have been folded at
        compile time), and the model has at least one such node (else the check proves nothing).
    check_models.py row-maps --modelc BIN --model M.onnx --work DIR --arch A --kernels N --families F=N,...
                              [--row-table-engines E=N,...]
        compiles `modelc M.onnx --fp16 --arch A` into DIR and reads report.json: every attention
        kernel has a product before it that gathers A's rows through a table and one after it that
        scatters Y's rows (the fold_row_maps stage), no Pad, Transpose, Slice or Concat kernel runs a
        node of an attention block (a node name with '/attn/'), the model has N kernels and each
        listed family exactly its count (F=N; families not listed are not checked), and of the products
        with row tables each listed engine exactly its count (E=N: tensor_core, small_m).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx


def sanitize(name):
    """The file name modelc gives an output: characters other than [A-Za-z0-9_.-] become '_'."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def graph_io(model_path):
    """Names of the graph inputs the caller feeds (initializers excluded) and of the outputs."""
    m = onnx.load(model_path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in inits], [o.name for o in m.graph.output]


def run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    start = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout, time.time() - start


def reference(args):
    inputs, outputs = graph_io(args.model)
    # One output in a .npy file, or every output by name in a .npz file (NAME.outputs.npz).
    multi = args.expected.endswith(".npz")
    if len(inputs) != 1 or (len(outputs) != 1 and not multi):
        sys.exit(f"{args.model}: expected one input and one output (several with a .npz), found inputs {inputs}, "
                 f"outputs {outputs}")
    if os.path.isdir(args.work):
        shutil.rmtree(args.work)  # a stale output must not pass for a new one
    os.makedirs(args.work)
    rc, out, secs = run([args.modelc, "run-reference", args.model, "--input", f"{inputs[0]}={args.input}",
                         "-o", args.work] + (["--fp16"] if args.fp16 else []) + (["--bf16"] if args.bf16 else []))
    print(out, end="")
    if rc != 0:
        sys.exit(f"FAIL: modelc run-reference exited with {rc} after {secs:.1f} s")
    expected = np.load(args.expected)
    wants = {name: expected[name] for name in outputs} if multi else {outputs[0]: expected}
    failed = 0
    for name, want in wants.items():
        got_path = os.path.join(args.work, sanitize(name) + ".npy")
        if not os.path.exists(got_path):
            sys.exit(f"FAIL: {got_path} was not written (files: {sorted(os.listdir(args.work))})")
        got = np.load(got_path)
        if got.shape != want.shape or got.dtype != want.dtype:
            sys.exit(f"FAIL: output '{name}' {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
        if not np.all(np.isfinite(got)):
            sys.exit(f"FAIL: output '{name}' has {np.count_nonzero(~np.isfinite(got))} non-finite values")
        g, w = got.astype(np.float64), want.astype(np.float64)
        rel = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
        worst = int(np.argmax(np.abs(g - w))) if g.size else 0
        # Integer outputs (indices) must be equal.
        limit = 0.0 if np.issubdtype(want.dtype, np.integer) else args.max_rel_l2
        verdict = "ok" if rel <= limit else "FAIL"
        failed += verdict != "ok"
        what = " (FP16 simulation)" if args.fp16 else " (BF16 simulation)" if args.bf16 else ""
        print(f"{verdict}: {os.path.basename(args.model)} '{name}'{what}: relative L2 "
              f"error {rel:.3e} (limit {limit:.0e}), max abs err "
              f"{abs(g.flat[worst] - w.flat[worst]) if g.size else 0:.3e} at flat index {worst}, run-reference {secs:.1f} s")
    if args.ort:
        failed += onnxruntime_check(args, inputs[0], outputs)
    return 1 if failed else 0


def onnxruntime_check(args, input_name, outputs):
    """The model in onnxruntime on the same input, against run-reference's outputs; the failures."""
    pkg = args.ort
    if not os.path.isfile(os.path.join(pkg, "package.json")):
        sys.exit(f"FAIL: onnxruntime-node is not installed at {pkg} (scripts/setup.sh --tests installs it: "
                 f"npm install --ignore-scripts --prefix build/ort onnxruntime-node)")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "ort_run.js")
    out_dir = os.path.join(args.work, "onnxruntime")
    rc, out, secs = run(["node", script, "--ort", pkg, "--model", args.model, "--out", out_dir,
                         "--input", f"{input_name}={args.input}"])
    if rc != 0:
        print(out, end="")
        sys.exit(f"FAIL: onnxruntime could not run {os.path.basename(args.model)} (exit {rc})")
    import json
    with open(os.path.join(out_dir, "outputs.json")) as f:
        names = json.load(f)
    failed = 0
    for i, name in enumerate(names):
        if name not in outputs:
            continue
        want = np.load(os.path.join(out_dir, f"{i}.npy"))
        got = np.load(os.path.join(args.work, sanitize(name) + ".npy"))
        # An output modelc bounds statically (NonZero, NonMaxSuppression: docs/LIMITS.md "Supported
        # operators") holds onnxruntime's values first, then -1.
        if (got.shape != want.shape and got.ndim == want.ndim and np.issubdtype(got.dtype, np.integer)
                and all(a >= b for a, b in zip(got.shape, want.shape))):
            lead = tuple(slice(0, b) for b in want.shape)
            rest = np.ones(got.shape, dtype=bool)
            rest[lead] = False
            if np.all(got[rest] == -1):
                got = got[lead]
        if got.shape != want.shape:
            print(f"FAIL: {os.path.basename(args.model)} '{name}': the reference interpreter gives {list(got.shape)}, "
                  f"onnxruntime {list(want.shape)}")
            failed += 1
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        if np.issubdtype(want.dtype, np.integer) or want.dtype == np.bool_:
            ok, what = bool(np.array_equal(g, w)), "integers equal" if np.array_equal(g, w) else "integers differ"
        else:
            rel = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
            finite = w[np.isfinite(w)]
            span = float(finite.max() - finite.min()) if finite.size else 0.0
            worst = float(np.max(np.abs(g - w))) if g.size else 0.0
            by_range = bool(np.all(np.isfinite(g) == np.isfinite(w))) and worst <= 1e-5 * span
            ok = rel <= 1e-4 or by_range
            what = (f"relative L2 {rel:.3e} (limit 1e-4), max abs diff {worst:.3e}"
                    + (f" (within 1e-5 x the range {span:.3g})" if rel > 1e-4 and by_range else ""))
        failed += not ok
        print(f"{'ok' if ok else 'FAIL'}: {os.path.basename(args.model)} '{name}': the reference interpreter against "
              f"onnxruntime: {what}, onnxruntime {secs:.1f} s")
    if failed:
        print(f"FAIL: onnxruntime and modelc's reference interpreter disagree on {os.path.basename(args.model)}")
    return failed


def inspect(args):
    bad = []
    for model in args.models:
        rc, out, secs = run([args.modelc, "inspect", model])
        if rc != 0:
            print(out, end="")
            bad.append(f"{os.path.basename(model)} (exit {rc})")
        print(f"{'ok' if rc == 0 else 'FAIL'}: {os.path.basename(model)}: inspect exit {rc} ({secs:.1f} s)", flush=True)
    if bad:
        print("modelc inspect failed for: " + ", ".join(bad))
        return 1
    print(f"all {len(args.models)} models inspect cleanly")
    return 0


def tensor_cores(args):
    import json
    shutil.rmtree(args.work, ignore_errors=True)
    precision = "--bf16" if args.bf16 else "--fp16"
    rc, out, secs = run([args.modelc, args.model, precision, "--arch", args.arch, "-o", args.work])
    print(out, end="")
    if rc != 0:
        print(f"FAIL: modelc exited {rc}")
        return 1
    with open(os.path.join(args.work, "report.json")) as f:
        report = json.load(f)
    kernels = report["kernels"]
    bad = []
    on_tc = on_gemv = 0
    for k in kernels:
        if k["family"] not in ("conv", "gemm"):
            continue
        engine, why = k.get("engine", ""), k.get("fallback_reason", "")
        nodes = " + ".join(k.get("nodes", []))
        if engine in ("tensor_core", "small_m", "hopper"):  # mma.sync tiles, the small-M products, wgmma
            on_tc += 1
        elif engine == "gemv" and why.startswith("at most 8 rows"):
            on_gemv += 1  # the FC layer at batch 1: memory bound on its weights, faster than a tile
        elif not why.startswith("depthwise"):
            bad.append(f"{k['id']} ({nodes}): {engine or 'no engine'}: {why or 'no reason'}")
    print(f"{os.path.basename(args.model)} {precision} --arch {args.arch}: {len(kernels)} kernels, "
          f"{on_tc} convolutions/matrix products on tensor cores, {on_gemv} on the GEMV ({secs:.1f} s)")
    for b in bad:
        print("FAIL: not on tensor cores: " + b)
    if args.max_kernels is not None and len(kernels) > args.max_kernels:
        print(f"FAIL: {len(kernels)} kernels, more than {args.max_kernels}")
        bad.append("kernel count")
    if on_tc == 0:
        print("FAIL: no kernel on tensor cores")
        bad.append("none on tensor cores")
    ops = [o for o in (args.no_kernel_for or "").split(",") if o]
    if ops:
        m = onnx.load(args.model, load_external_data=False)
        op_of = {n.name: n.op_type for n in m.graph.node}
        for op in ops:
            nodes = sum(1 for t in op_of.values() if t == op)
            own = [f"{k['id']} ({k['nodes'][0]}: {k.get('note', '')})" for k in kernels
                   if k.get("nodes") and op_of.get(k["nodes"][0]) == op]
            print(f"{op}: {nodes} node(s) in the model, {len(own)} kernel(s) of their own")
            if nodes == 0:
                print(f"FAIL: the model has no {op} node: --no-kernel-for {op} proves nothing")
                bad.append("no " + op)
            for o in own:
                print(f"FAIL: a {op} kernel: {o}")
                bad.append(o)
    return 1 if bad else 0


def folded(args):
    import json
    ops = set(o for o in args.ops.split(",") if o)
    m = onnx.load(args.model, load_external_data=False)
    op_of = {n.name: n.op_type for n in m.graph.node}
    present = {}
    for n in m.graph.node:
        if n.op_type in ops:
            present[n.op_type] = present.get(n.op_type, 0) + 1
    if not present:
        print(f"FAIL: {args.model} has no node of {', '.join(sorted(ops))}: nothing to fold")
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    rc, out, secs = run([args.modelc, args.model, "-o", args.work])
    print(out, end="")
    if rc != 0:
        print(f"FAIL: modelc exited {rc}")
        return 1
    with open(os.path.join(args.work, "report.json")) as f:
        report = json.load(f)
    bad = []
    for k in report["kernels"]:
        for name in k.get("nodes", []):
            if op_of.get(name) in ops:
                bad.append(f"{k['id']} runs {op_of[name]} node '{name}'")
    counts = ", ".join(f"{n} {op}" for op, n in sorted(present.items()))
    print(f"{os.path.basename(args.model)}: {len(report['kernels'])} kernels; {counts} node(s) of the model, "
          f"{len(bad)} of them in a kernel ({secs:.1f} s)")
    for b in bad:
        print("FAIL: not folded: " + b)
    return 1 if bad else 0


def arena_check(report):
    """(arena, bound, problems) of one report.json: the bound recomputed from the buffers."""
    mem = report["memory"]
    align, bufs, kernels = mem["arena_alignment"], mem["arena_buffers"], len(report["kernels"])
    size = lambda b: (b["bytes"] + align - 1) // align * align
    problems = []
    live = [0] * (kernels + 1)
    for b in bufs:
        if not 0 <= b["first"] <= b["last"] < kernels:
            problems.append(f"buffer {b['value']!r}: live #{b['first']}..#{b['last']} outside {kernels} kernels")
            continue
        if b["bytes"] and (b["offset"] % align or b["offset"] + b["bytes"] > mem["arena_bytes"]):
            problems.append(f"buffer {b['value']!r} at {b['offset']} is unaligned or outside the arena")
        for t in range(b["first"], b["last"] + 1):
            live[t] += size(b)
    bound = max(live)
    for i, a in enumerate(bufs):
        for b in bufs[i + 1:]:
            if a["bytes"] and b["bytes"] and a["first"] <= b["last"] and b["first"] <= a["last"] and \
                    a["offset"] < b["offset"] + b["bytes"] and b["offset"] < a["offset"] + a["bytes"]:
                problems.append(f"buffers {a['value']!r} and {b['value']!r} are live at once and overlap")
    if bound != mem["arena_max_live_bytes"]:
        problems.append(f"report says the bound is {mem['arena_max_live_bytes']}, the buffers give {bound}")
    return mem["arena_bytes"], bound, problems


def first_difference(a, b):
    """None when folders a and b hold the same files byte for byte; else the first difference, in
    the order of the sorted relative paths: a file in only one of them, or a file and byte offset."""
    def files(d):
        return sorted(os.path.relpath(os.path.join(r, f), d) for r, _, names in os.walk(d) for f in names)
    in_a, in_b = files(a), files(b)
    if in_a != in_b:
        only = sorted(set(in_a) ^ set(in_b))
        return f"{only[0]} is only in {a if only[0] in in_a else b} (files in only one folder: {len(only)})"
    for rel in in_a:
        with open(os.path.join(a, rel), "rb") as fa, open(os.path.join(b, rel), "rb") as fb:
            offset = 0
            while True:
                x, y = fa.read(1 << 20), fb.read(1 << 20)
                if x != y:
                    at = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
                    return f"{rel} differs at byte {offset + at}"
                if not x:
                    break
                offset += len(x)
    return None


def arena(args):
    import json
    bad = []
    for model in args.models:
        for flags in ([], ["--fp16", "--arch", "sm_90"]):
            work = os.path.join(args.work, os.path.basename(model) + "".join(flags))
            shutil.rmtree(work, ignore_errors=True)
            rc, out, secs = run([args.modelc, model, "-o", work] + flags)
            what = os.path.basename(model) + (" " + " ".join(flags) if flags else "")
            if rc != 0:
                print(out, end="")
                bad.append(f"{what}: modelc exited {rc}")
                continue
            if args.reemit and flags:
                again = work + ".again"
                shutil.rmtree(again, ignore_errors=True)
                rc, out, secs = run([args.modelc, model, "-o", again] + flags)
                if rc != 0:
                    print(out, end="")
                    bad.append(f"{what}: modelc exited {rc} the second time")
                    continue
                diff = first_difference(work, again)
                print(f"{what}: {'re-emitted byte for byte' if diff is None else 'FAIL: re-emission differs: ' + diff}")
                if diff is not None:
                    bad.append(f"{what}: compiled twice, {work} and {again} differ: {diff}")
                else:
                    shutil.rmtree(again)
            with open(os.path.join(work, "report.json")) as f:
                size, bound, problems = arena_check(json.load(f))
            ratio = size / bound if bound else 1.0
            print(f"{what}: arena {size} bytes, max live {bound}, ratio {ratio:.3f}")
            bad += [f"{what}: {p}" for p in problems]
            if ratio > args.max_ratio:
                bad.append(f"{what}: arena {size} is {ratio:.3f}x its lower bound {bound} (limit {args.max_ratio})")
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


def row_maps(args):
    import json
    shutil.rmtree(args.work, ignore_errors=True)
    rc, out, secs = run([args.modelc, args.model, "--fp16", "--arch", args.arch, "-o", args.work])
    print(out, end="")
    if rc != 0:
        print(f"FAIL: modelc exited {rc}")
        return 1
    with open(os.path.join(args.work, "report.json")) as f:
        report = json.load(f)
    kernels = report["kernels"]
    bad = []
    attention = [i for i, k in enumerate(kernels) if k["family"] == "attention"]
    if not attention:
        bad.append("no attention kernel: nothing to check")
    for i in attention:
        before, after = kernels[i - 1] if i > 0 else None, kernels[i + 1] if i + 1 < len(kernels) else None
        if not before or before["family"] != "gemm" or "A's rows gathered" not in before["note"]:
            bad.append(f"{kernels[i]['id']}: the kernel before it does not gather its A's rows through a table")
        if not after or after["family"] != "gemm" or "Y's rows scattered" not in after["note"]:
            bad.append(f"{kernels[i]['id']}: the kernel after it does not scatter its Y's rows through a table")
    for k in kernels:
        if k["family"] in ("pad", "transpose", "slice", "concat") and any("/attn/" in n for n in k["nodes"]):
            bad.append(f"{k['id']} ({k['family']}) runs {k['nodes'][0]} of an attention block")
    counts = {}
    for k in kernels:
        counts[k["family"]] = counts.get(k["family"], 0) + 1
    if args.kernels is not None and len(kernels) != args.kernels:
        bad.append(f"{len(kernels)} kernels, expected {args.kernels}")
    for item in (args.families.split(",") if args.families else []):
        fam, n = item.split("=")
        if counts.get(fam, 0) != int(n):
            bad.append(f"{counts.get(fam, 0)} {fam} kernels, expected {n}")
    engines = {}
    for k in kernels:
        if "through row tables" in k["note"]:
            engines[k.get("engine", "")] = engines.get(k.get("engine", ""), 0) + 1
    for item in (args.row_table_engines.split(",") if args.row_table_engines else []):
        eng, n = item.split("=")
        if engines.get(eng, 0) != int(n):
            bad.append(f"{engines.get(eng, 0)} products with row tables on the {eng} engine, expected {n}")
    print(f"{os.path.basename(args.model)}: {len(kernels)} kernels ({', '.join(f'{f} {n}' for f, n in sorted(counts.items()))}); "
          f"{len(attention)} attention kernels; products with row tables by engine: "
          f"{', '.join(f'{e} {n}' for e, n in sorted(engines.items()))}; arena {report['memory']['arena_bytes']} bytes "
          f"({secs:.1f} s)")
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference", help="run-reference against torch's output")
    r.add_argument("--modelc", required=True)
    r.add_argument("--model", required=True)
    r.add_argument("--input", required=True)
    r.add_argument("--expected", required=True)
    r.add_argument("--work", required=True, help="output folder for run-reference (emptied first)")
    r.add_argument("--fp16", action="store_true", help="run-reference --fp16 (default limit 1e-2)")
    r.add_argument("--bf16", action="store_true", help="run-reference --bf16 (default limit 5e-2)")
    r.add_argument("--max-rel-l2", type=float, default=None,
                   help="limit (default 1e-4; 1e-2 with --fp16, 5e-2 with --bf16)")
    r.add_argument("--ort", help="the onnxruntime-node package folder: run the model in onnxruntime too")
    i = sub.add_parser("inspect", help="modelc inspect exits 0 on every model")
    i.add_argument("--modelc", required=True)
    i.add_argument("models", nargs="+")
    t = sub.add_parser("tensor-cores", help="--fp16 puts every conv and matmul on tensor cores (report.json)")
    t.add_argument("--modelc", required=True)
    t.add_argument("--model", required=True)
    t.add_argument("--work", required=True, help="output folder (emptied first)")
    t.add_argument("--arch", default="sm_75")
    t.add_argument("--bf16", action="store_true", help="compile with --bf16 instead of --fp16")
    t.add_argument("--max-kernels", type=int, default=None)
    t.add_argument("--no-kernel-for", help="comma-separated op types no kernel may run as its main node")
    a = sub.add_parser("arena", help="the arena is within --max-ratio of its max-live bound (report.json); "
                                     "with --reemit, a second FP16 compile gives the same files")
    a.add_argument("--modelc", required=True)
    a.add_argument("--work", required=True, help="output folder (emptied first)")
    a.add_argument("--max-ratio", type=float, default=1.05)
    a.add_argument("--reemit", action="store_true", help="compile each a second time: the files must be the same")
    a.add_argument("models", nargs="+")
    f = sub.add_parser("folded", help="no kernel runs a node of --ops (folded at compile time; report.json)")
    f.add_argument("--modelc", required=True)
    f.add_argument("--model", required=True)
    f.add_argument("--work", required=True, help="output folder (emptied first)")
    f.add_argument("--ops", required=True, help="comma-separated op types")
    m = sub.add_parser("row-maps", help="--fp16: no data-movement kernel around any attention (fold_row_maps)")
    m.add_argument("--modelc", required=True)
    m.add_argument("--model", required=True)
    m.add_argument("--work", required=True, help="output folder (emptied first)")
    m.add_argument("--arch", default="sm_90")
    m.add_argument("--kernels", type=int, default=None, help="the model's kernel count")
    m.add_argument("--families", default="", help="F=N,...: kernels of family F")
    m.add_argument("--row-table-engines", default="", help="E=N,...: products with row tables on engine E")
    args = ap.parse_args()
    if args.cmd == "reference" and args.max_rel_l2 is None:
        args.max_rel_l2 = 1e-2 if args.fp16 else 5e-2 if args.bf16 else 1e-4
    paths = {"reference": lambda: [args.model, args.input, args.expected], "inspect": lambda: args.models,
             "tensor-cores": lambda: [args.model], "arena": lambda: args.models,
             "folded": lambda: [args.model], "row-maps": lambda: [args.model]}[args.cmd]()
    for path in [args.modelc] + paths:
        if not os.path.exists(path):
            sys.exit(f"FAIL: {path} does not exist")
    return {"reference": reference, "inspect": inspect, "tensor-cores": tensor_cores, "arena": arena,
            "folded": folded, "row-maps": row_maps}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
