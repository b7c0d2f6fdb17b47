#!/usr/bin/env python3
"""bench/kernel_times.py REPORT_JSON NCU_CSV — the cost model's per-kernel estimates against measured times.

NCU_CSV: `ncu --csv --print-units base --print-kernel-base function --metrics gpu__time_duration.sum`
over one run of the generated program (bench/models_run.sh). Each report.json kernel's launches (its
`launches` names: the kernel and, for split-K, its reduction) are summed, and set beside the kernel's
`estimate` (us, bound). Prints a markdown table per kernel and a summary: total estimated vs measured,
and the error as the median and 90th percentile of max(est/meas, meas/est) over the kernels.
Standard library only (it runs on the GPU machine and here).
"""
import csv
import json
import math
import sys


def main():
    report = json.load(open(sys.argv[1]))
    # The profile's launches in order (ncu's ID); the program launches the report's kernels in the
    # report's order, so they are matched in sequence: one kernel function can serve several kernels
    # of the same shape, and a name alone would not say which.
    launches = []
    lines = [l for l in open(sys.argv[2]) if l.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit, 1e-3)
        launches.append((int(row["ID"]), row["Kernel Name"], value * scale))
    launches.sort()
    pos = 0
    measured = {}
    for k in report["kernels"]:
        times = []
        for name in k.get("launches", []):
            while pos < len(launches) and launches[pos][1] != name:
                pos += 1  # a launch the report does not list (input/output conversions are kernels too)
            if pos == len(launches):
                break
            times.append(launches[pos][2])
            pos += 1
        if times and len(times) == len(k.get("launches", [])):
            measured[k["id"]] = sum(times)
    print(f"| kernel | family | engine | tactic | estimate us | bound | measured us | measured / estimate |")
    print("|---|---|---|---|---:|---|---:|---:|")
    est_total = meas_total = 0.0
    ratios = []
    for k in report["kernels"]:
        e = k.get("estimate")
        if not e or k["id"] not in measured:
            continue
        m = measured[k["id"]]
        t = k.get("tactic", {})
        tactic = f"{t['BM']}x{t['BN']}x{t['BK']} s{t.get('stages', '')} k{t.get('split_k', '')}" if "BM" in t else ""
        est_total += e["us"]
        meas_total += m
        ratios.append(m / e["us"] if e["us"] > 0 else float("inf"))
        print(f"| {k['id']} | {k['family']} | {k.get('engine', '')} | {tactic} | {e['us']:.2f} | {e['bound']} | {m:.2f} | {m / e['us']:.2f} |")
    total = sum(t for _, _, t in launches)
    errs = sorted(max(r, 1 / r) for r in ratios if r > 0 and math.isfinite(r))
    print()
    if not errs:
        print("no kernel of the report was found in the profile")
        sys.exit(1)
    print(f"kernels matched: {len(errs)}; estimated total {est_total:.1f} us, measured total {meas_total:.1f} us "
          f"(measured / estimated {meas_total / est_total:.2f}); per-kernel error factor median "
          f"{errs[len(errs) // 2]:.2f}, p90 {errs[(len(errs) * 9) // 10]:.2f}, max {errs[-1]:.2f}; "
          f"report.json's model estimate {report.get('estimate_us', 0):.1f} us")
    print(f"profiled launches: {len(launches)}, {total:.1f} us in all (a program's run may launch the model "
          f"more than once; the first pass is matched)")


if __name__ == "__main__":
    main()
