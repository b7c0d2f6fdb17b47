#!/usr/bin/python3
"""bench/fit_cost_model.py [KERNELS_TSV] — fit the cost model's per-kernel time to measured kernel times.

KERNELS_TSV: a per-kernel measurement table (../shared/measurements/*/kernels.tsv, its README says the
columns), default ../shared/measurements/h200-2026-11-27/kernels.tsv from the repository root.

The model (bench/COST_MODEL.md): a kernel's time is a sum of a few terms, each a quantity the compiler
already knows (bytes, FLOPs, blocks, K slices, outputs) divided by a rate of the target table, times a
fitted non-negative coefficient per kernel group:
  us = c_launch * launches + c_mem * bytes / DRAM rate + c_flop * busiest SM's FLOPs / its rate
       + c_chain * rounds * K slices + c_out * outputs per SM + c_wave * rounds
(which terms a group has: GROUP_TERMS). The fit minimises the squared log error (the error factor the
issue measures) with coefficients kept >= 0: an exact small NNLS on the relative error for a start,
then Gauss-Newton in log space. A group with too few training kernels (a family only one network has,
when that network is the one left out) falls back on its class's model (memory-bound or compute).

Prints, for each network left out of the fit and overall: the per-kernel error factor
max(pred / meas, meas / pred), median and p90, of today's model (the est_us column) and of the fitted
one; the same per family; the coefficients fitted on all networks as a C++ table. numpy only;
deterministic (no randomness, fixed order).
"""
import csv
import json
import math
import os
import sys

import numpy as np

# The sm_90 row of compiler/schedule/target.cpp (the target the measured programs were compiled
# for): the rates each term divides by, so a fitted coefficient is the inverse of an efficiency
# against the table (the data came from an H200, whose DRAM rate is 4.8 TB/s against the row's 3.35).
SMS = 132
DRAM_GBPS = 3350.0
TC_FP16_TFLOPS = 989.0
FP32_TFLOPS = 67.0
MAX_BLOCKS_PER_SM, MAX_THREADS_PER_SM, REGS_PER_SM, SMEM_PER_SM = 32, 2048, 65536, 228 * 1024
RESERVED_SMEM_PER_BLOCK = 1024  # cost_model.cpp kReservedSmemPerBlock
TC_BASE_REGISTERS, SIMT_BASE_REGISTERS, PLAIN_REGISTERS = 64, 32, 32  # cost_model.cpp

COLUMNS = ["net", "kernel", "family", "op", "engine", "tactic", "epilogue", "in_shapes", "out_shapes", "dtype",
           "flops", "est_bytes", "est_blocks", "est_us", "est_bound", "launches", "measured_us"]

# The terms, in the order of the C++ table.
TERMS = ["launch", "mem", "flop", "chain", "out", "wave"]
TERM_MEANING = {
    "launch": "us per launch (fixed cost, ncu's floor included)",
    "mem": "x bytes / DRAM rate (1 / efficiency of the table's bandwidth)",
    "flop": "x busiest SM's FLOPs / its share of the engine's rate (1 / efficiency)",
    "chain": "us per K slice on the critical path (rounds x slices)",
    "out": "ns per output per SM (epilogue and stores, per-element index math)",
    "wave": "us per round of resident blocks",
}

# Kernel groups and their terms. Families of the same template share a group; every group belongs to a
# class whose model stands in when the group has too few training kernels.
GROUP_TERMS = {
    "tc": ["launch", "mem", "flop", "chain", "out"],
    "simt_conv": ["launch", "mem", "flop", "chain", "out"],
    "gemv": ["launch", "mem", "wave"],
    "elementwise": ["launch", "mem", "out", "wave"],
    "data_movement": ["launch", "mem", "out", "wave"],
    "reduction": ["launch", "mem", "out", "wave"],
}
CLASS_TERMS = {
    "compute": ["launch", "mem", "flop", "chain", "out"],
    "memory": ["launch", "mem", "out", "wave"],
}
MIN_GROUP_KERNELS = 8  # fewer training kernels than this: the class's model
WORST = 12  # the held-out fit's worst kernels listed


def group_of(family, engine):
    if engine == "tensor_core":
        return "tc", "compute"
    if family in ("conv", "conv_depthwise"):
        return "simt_conv", "compute"
    if engine == "gemv":
        return "gemv", "memory"
    if family == "elementwise":
        return "elementwise", "memory"
    if family in ("transpose", "concat", "pool"):
        return "data_movement", "memory"
    return "reduction", "memory"  # layernorm, softmax and the other row reductions


def fail(path, msg):
    sys.stderr.write(f"fit_cost_model: {path}: {msg}\n")
    sys.exit(2)


def numel(shape):
    n = 1
    for d in shape.split("x"):
        n *= int(d)
    return n


def blocks_per_sm(threads, regs, smem):
    regs = (max(regs, 1) + 7) // 8 * 8
    n = min(MAX_BLOCKS_PER_SM, MAX_THREADS_PER_SM // max(threads, 1), REGS_PER_SM // (regs * max(threads, 1)))
    if smem > 0:
        n = min(n, SMEM_PER_SM // (smem + RESERVED_SMEM_PER_BLOCK))
    return max(n, 1)


def features(r):
    """The terms of one kernel (us at the table's rates, before the coefficients)."""
    t = json.loads(r["tactic"]) if r["tactic"] else {}
    flops, nbytes, blocks = float(r["flops"]), float(r["est_bytes"]), max(int(r["est_blocks"]), 1)
    launches = int(r["launches"])
    outs = sum(numel(s) for s in r["out_shapes"].split(";") if s)
    on_busiest = math.ceil(blocks / SMS)
    k_slices, executed, rate = 0, flops, FP32_TFLOPS
    if "warps_m" in t:  # tensor-core tile (TcTile): threads, registers and shared memory as tactic.cpp has them
        bm, bn, bk, st, split = t["BM"], t["BN"], t["BK"], t["stages"], t["split_k"]
        threads = t["threads"]
        acc = (bm // t["warps_m"]) * (bn // t["warps_n"]) // 32
        regs = min(255, TC_BASE_REGISTERS + (acc // 2 if t["fp16_accumulate"] else acc))
        stage = lambda x: max(x * (bk + 8), bk * (x + 8)) * 2
        smem = max(st * (stage(bm) + stage(bn)), t["warps_m"] * t["warps_n"] * 16 * (bn // t["warps_n"] + 4) * 4)
        depth = flops / (2.0 * outs)  # K of the implicit GEMM (2 FLOPs per multiply-add per output)
        k_slices = math.ceil(math.ceil(depth / bk) / split)
        executed = 2.0 * blocks * bm * bn * k_slices * bk
        rate = TC_FP16_TFLOPS
        nbytes += 2.0 * split * outs * 4 if split > 1 else 0.0  # split-K's FP32 partials, written and read
    elif "TM" in t:  # SIMT GEMM tile (TileConfig)
        bm, bn, bk = t["BM"], t["BN"], t["BK"]
        threads = t["threads"]
        regs = min(255, SIMT_BASE_REGISTERS + t["TM"] * t["TN"] + t["TM"] + t["TN"])
        smem = 2 * bk * (bm + bn) * 2
        depth = flops / (2.0 * outs)
        k_slices = math.ceil(depth / bk)
        executed = 2.0 * blocks * bm * bn * k_slices * bk
    else:
        threads = t.get("threads", t.get("block", 256))
        regs, smem = PLAIN_REGISTERS, 0
    rounds = math.ceil(blocks / (SMS * blocks_per_sm(threads, regs, smem)))
    return {
        "launch": float(launches),
        "mem": nbytes / (DRAM_GBPS * 1e3),
        "flop": on_busiest * (executed / blocks) / (rate * 1e6 / SMS),
        "chain": float(rounds * k_slices),
        "out": outs / SMS * 1e-3,
        "wave": float(rounds),
    }


def read(path):
    if not os.path.isfile(path):
        fail(path, "not a file (the measurements' README says where kernels.tsv comes from)")
    with open(path, newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            fail(path, f"not a kernels table: columns {', '.join(missing)} missing")
        rows = []
        for line, r in enumerate(reader, start=2):
            if None in r or any(r[c] is None for c in COLUMNS):
                fail(path, f"line {line}: not {len(reader.fieldnames)} tab-separated fields as the header has")
            try:
                r["measured"] = float(r["measured_us"])
                r["est"] = float(r["est_us"])
                if not (r["measured"] > 0 and r["est"] > 0):
                    raise ValueError("measured_us and est_us must be > 0")
                r["x"] = features(r)
            except (ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError) as e:
                fail(path, f"line {line} (kernel {r.get('net')}/{r.get('kernel')}): {e}")
            r["group"], r["class"] = group_of(r["family"], r["engine"])
            rows.append(r)
    if not rows:
        fail(path, "no kernels")
    return rows


def nnls_relative(A, y):
    """Exact NNLS of min sum(((A c - y) / y)^2), c >= 0, by trying every support (few columns)."""
    W = A / y[:, None]
    ones = np.ones(len(y))
    best, best_c = math.inf, np.zeros(A.shape[1])
    for mask in range(1, 1 << A.shape[1]):
        cols = [j for j in range(A.shape[1]) if mask >> j & 1]
        c, *_ = np.linalg.lstsq(W[:, cols], ones, rcond=None)
        if np.any(c < 0):
            continue
        res = float(np.sum((W[:, cols] @ c - 1) ** 2))
        if res < best - 1e-12:
            best, best_c = res, np.zeros(A.shape[1])
            best_c[cols] = c
    return best_c


def fit_log(A, y):
    """min sum((log(A c) - log y)^2) over c >= 0: Gauss-Newton with damping in log c on the terms NNLS
    kept (a term it dropped stays 0), from the NNLS start."""
    c0 = nnls_relative(A, y)
    keep = np.nonzero(c0 > 0)[0]
    th = np.log(c0[keep])
    B, ly = A[:, keep], np.log(y)

    def loss(th):
        return float(np.sum((np.log(B @ np.exp(th)) - ly) ** 2))

    cur, lam = loss(th), 1e-3
    for _ in range(200):
        c = np.exp(th)
        p = B @ c
        J = B * c[None, :] / p[:, None]  # d log p / d theta
        g = J.T @ (np.log(p) - ly)
        H = J.T @ J
        step = np.linalg.solve(H + lam * np.diag(np.diag(H) + 1e-12), -g)
        new = np.clip(th + step, -40, 10)
        nl = loss(new)
        if nl < cur:
            converged = cur - nl < 1e-12
            th, cur, lam = new, nl, max(lam / 3, 1e-9)
            if converged:
                break
        else:
            lam *= 10
            if lam > 1e8:
                break
    c = np.zeros(A.shape[1])
    c[keep] = np.exp(th)
    return c


def matrix(rows, terms):
    return np.array([[r["x"][t] for t in terms] for r in rows]), np.array([r["measured"] for r in rows])


def fit(rows):
    """Coefficients per group (those with enough kernels) and per class, fitted on rows."""
    model = {}
    for key, terms, pick in [(g, ts, "group") for g, ts in GROUP_TERMS.items()] + \
                            [(c, ts, "class") for c, ts in CLASS_TERMS.items()]:
        sel = [r for r in rows if r[pick] == key]
        if (pick == "group" and len(sel) < MIN_GROUP_KERNELS) or not sel:
            continue
        A, y = matrix(sel, terms)
        model[key] = (terms, fit_log(A, y), len(sel))
    return model


def predict(model, r, path):
    if r["group"] not in model and r["class"] not in model:
        fail(path, f"kernel {r['net']}/{r['kernel']} ({r['family']}): no kernel of its class "
                   f"({r['class']}) in the networks it is fitted on")
    terms, c, _ = model[r["group"]] if r["group"] in model else model[r["class"]]
    return float(sum(ci * r["x"][t] for t, ci in zip(terms, c)))


def errors(pred, meas):
    return sorted(max(p / m, m / p) for p, m in zip(pred, meas))


def summary(errs):
    # the median and p90 as bench/kernel_times.py takes them (today's figures in the measurements' README)
    return errs[len(errs) // 2], errs[(len(errs) * 9) // 10]


def default_path(root):
    """../shared/measurements/h200-2026-11-27/kernels.tsv beside the repository, or beside the main
    checkout when root is a git worktree elsewhere (its .git file names the main checkout's .git)."""
    rel = os.path.join("shared", "measurements", "h200-2026-11-27", "kernels.tsv")
    first = os.path.normpath(os.path.join(root, "..", rel))
    dotgit = os.path.join(root, ".git")
    if not os.path.isfile(first) and os.path.isfile(dotgit):
        with open(dotgit) as f:
            line = f.read().strip()
        if line.startswith("gitdir:"):  # <main>/.git/worktrees/NAME
            main_root = os.path.dirname(os.path.dirname(os.path.dirname(line[len("gitdir:"):].strip())))
            other = os.path.normpath(os.path.join(main_root, "..", rel))
            if os.path.isfile(other):
                return other
    return first


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = sys.argv[1] if len(sys.argv) > 1 else default_path(root)
    if len(sys.argv) > 2:
        sys.stderr.write("usage: bench/fit_cost_model.py [KERNELS_TSV]\n")
        sys.exit(2)
    rows = read(path)
    nets = sorted({r["net"] for r in rows})
    if len(nets) < 2:
        fail(path, "leave-one-network-out needs at least two networks")

    # Leave one network out: fit on the others, predict the one left out.
    loo = {}
    fallbacks = {}
    for net in nets:
        model = fit([r for r in rows if r["net"] != net])
        held = [r for r in rows if r["net"] == net]
        for r in held:
            loo[id(r)] = predict(model, r, path)
        fallbacks[net] = sorted({r["group"] for r in held if r["group"] not in model})

    print(f"# {os.path.relpath(os.path.abspath(path), root)}: {len(rows)} kernels, networks {', '.join(nets)}")
    print()
    print("Per-kernel error factor max(pred/meas, meas/pred); fitted: leave-one-network-out (fit on the other")
    print("networks, predict the one left out).")
    print()
    print("| held out | kernels | today median | today p90 | fitted median | fitted p90 | groups on their class's model |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for net in nets + ["all"]:
        sel = [r for r in rows if net == "all" or r["net"] == net]
        tm, tp = summary(errors([r["est"] for r in sel], [r["measured"] for r in sel]))
        fm, fp = summary(errors([loo[id(r)] for r in sel], [r["measured"] for r in sel]))
        fb = ", ".join(fallbacks[net]) if net in fallbacks else ""
        print(f"| {net} | {len(sel)} | {tm:.2f} | {tp:.2f} | {fm:.2f} | {fp:.2f} | {fb or '-'} |")
    print()
    print("By family (leave-one-network-out predictions, all networks):")
    print()
    print("| family | engine | nets | kernels | today median | today p90 | fitted median | fitted p90 | measured us | fitted us |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    fams = sorted({(r["family"], r["engine"]) for r in rows})
    for fam, eng in fams:
        sel = [r for r in rows if r["family"] == fam and r["engine"] == eng]
        tm, tp = summary(errors([r["est"] for r in sel], [r["measured"] for r in sel]))
        fm, fp = summary(errors([loo[id(r)] for r in sel], [r["measured"] for r in sel]))
        fn = "".join(sorted({r["net"][-1] for r in sel}))
        print(f"| {fam} | {eng or '-'} | {fn} | {len(sel)} | {tm:.2f} | {tp:.2f} | {fm:.2f} | {fp:.2f} | "
              f"{sum(r['measured'] for r in sel):.1f} | {sum(loo[id(r)] for r in sel):.1f} |")
    print()
    tot_m = sum(r["measured"] for r in rows)
    print(f"Sums: measured {tot_m:.1f} us, today's model {sum(r['est'] for r in rows):.1f} us, "
          f"fitted (held out) {sum(loo.values()):.1f} us.")
    print()
    print("The kernels the held-out fit misses most (what the model does not see in their work):")
    print()
    print("| net | kernel | family | engine | epilogue | in shapes | tactic | measured us | fitted us | today us |")
    print("|---|---|---|---|---|---|---|---:|---:|---:|")
    worst = sorted(rows, key=lambda r: (-max(loo[id(r)] / r["measured"], r["measured"] / loo[id(r)]), r["net"], r["kernel"]))
    for r in worst[:WORST]:
        t = json.loads(r["tactic"]) if r["tactic"] else {}
        tac = f"{t['BM']}x{t['BN']}x{t['BK']}" + (f" s{t['stages']} k{t['split_k']}" if "stages" in t else "") \
            if "BM" in t else ""
        print(f"| {r['net']} | {r['kernel']} | {r['family']} | {r['engine'] or '-'} | {r['epilogue'] or '-'} | "
              f"{r['in_shapes']} | {tac} | {r['measured']:.2f} | {loo[id(r)]:.2f} | {r['est']:.2f} |")
    print()

    model = fit(rows)
    full = [predict(model, r, path) for r in rows]
    fm, fp = summary(errors(full, [r["measured"] for r in rows]))
    print(f"Fitted on all {len(nets)} networks (in-sample): median {fm:.2f}, p90 {fp:.2f}.")
    print()
    print("// Fitted on " + os.path.relpath(os.path.abspath(path), root) + " by bench/fit_cost_model.py;")
    print(f"// terms divide by the sm_90 row of target.cpp ({DRAM_GBPS:.0f} GB/s, {TC_FP16_TFLOPS:.0f} TFLOPS tensor,")
    print(f"// {FP32_TFLOPS:.0f} TFLOPS FP32, {SMS} SMs). Columns: " + ", ".join(TERMS) + ".")
    for t in TERMS:
        print(f"//   {t}: {TERM_MEANING[t]}")
    print("struct FittedCost { const char* group; double launch_us, mem, flop, chain_us, out_ns, wave_us; };")
    print("constexpr FittedCost kFittedSm90[] = {")
    for key in list(GROUP_TERMS) + list(CLASS_TERMS):
        if key not in model:
            continue
        terms, c, n = model[key]
        vals = {t: 0.0 for t in TERMS}
        vals.update(dict(zip(terms, c)))
        print(f"    {{\"{key}\", " + ", ".join(f"{vals[t]:.4g}" for t in TERMS) + f"}},  // {n} kernels")
    print("};")
    print("// Read as rates (fitted on all networks):")
    for key in list(GROUP_TERMS) + list(CLASS_TERMS):
        if key not in model:
            continue
        vals = dict(zip(model[key][0], model[key][1]))
        parts = [f"{vals.get('launch', 0):.2f} us a launch"]
        if vals.get("mem", 0) > 0:
            parts.append(f"DRAM at {DRAM_GBPS / vals['mem']:.0f} GB/s")
        if vals.get("flop", 0) > 0:
            rate = FP32_TFLOPS if key == "simt_conv" else TC_FP16_TFLOPS
            parts.append(f"{rate / vals['flop']:.0f} TFLOPS ({100 / vals['flop']:.0f}% of the table's)")
        if vals.get("chain", 0) > 0:
            parts.append(f"{vals['chain'] * 1e3:.0f} ns a K slice")
        if vals.get("out", 0) > 0:
            parts.append(f"{vals['out']:.2f} ns an output per SM")
        if vals.get("wave", 0) > 0:
            parts.append(f"{vals['wave']:.2f} us a round of blocks")
        print(f"//   {key}: " + ", ".join(parts))


if __name__ == "__main__":
    main()
