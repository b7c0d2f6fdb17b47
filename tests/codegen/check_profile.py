#!/usr/bin/env python3
"""tests/codegen/check_profile.py — a generated program's per-kernel profile, end to end (issue 26).

  check_profile.py --folder DIR --binary DIR/NAME_emu --modelc build/modelc

Runs `NAME --profile 2 --export-times T.json` and checks that:
  - the table prints a row for every kernel id of report.json, in report.json's order, with the
    family report.json gives it, and a total;
  - T.json holds schema "modelc-times/1" exactly (every key of runtime_stub/profile.h's schema with
    its type, the same kernels in order, share summing to 1, ratio = measured / estimate, the flag
    rule: above 5 us at under 20% of the roofline bound);
  - `modelc report` folds it into a copy of report.json and report.md: a "measured" per kernel, the
    "## Measured times" section after the roofline with the estimate and the measured time side by
    side for every kernel, and only one such section when folded twice.
Exit 0 when all hold; 1 with the first failure.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


SCHEMA_TOP = {"schema": str, "model": str, "batch": int, "profile": int, "runs": int, "device": dict,
              "estimate_arch": (str, type(None)), "estimate_part": (str, type(None)), "timing": str,
              "total_us": (int, float), "estimate_total_us": (int, float), "kernels": list}
SCHEMA_DEVICE = {"name": str, "sm": int, "sm_count": int, "driver": int, "runtime": int, "emulation": bool}
SCHEMA_KERNEL = {"id": str, "family": str, "tactic": str, "engine": str, "measured_us": (int, float),
                 "estimate_us": (int, float), "ratio": (int, float, type(None)), "share": (int, float),
                 "flops": (int, float), "bytes": (int, float), "roofline_us": (int, float),
                 "roofline_fraction": (int, float, type(None)), "flagged": bool}


def check_schema(obj, schema, where):
    if set(obj) != set(schema):
        fail(f"{where}: keys {sorted(obj)}, the schema's {sorted(schema)}")
    for k, t in schema.items():
        v = obj[k]
        if isinstance(v, bool) and t is not bool and bool not in (t if isinstance(t, tuple) else (t,)):
            fail(f"{where}: {k} is a boolean")
        if not isinstance(v, t):
            fail(f"{where}: {k} is {v!r}, not {t}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", required=True)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--modelc", required=True)
    a = ap.parse_args()
    with open(os.path.join(a.folder, "report.json")) as f:
        report = json.load(f)
    kernels = report["kernels"]
    ids = [k["id"] for k in kernels]
    if not ids:
        fail("report.json has no kernels")
    work = tempfile.mkdtemp(prefix="check_profile_")
    try:
        times = os.path.join(work, "times.json")
        p = subprocess.run([a.binary, "--profile", "2", "--export-times", times, "--output-dir", os.path.join(work, "out")],
                           capture_output=True, text=True)
        print(p.stdout + p.stderr)
        if p.returncode != 0:
            fail(f"{a.binary} --profile exited with {p.returncode}")
        lines = p.stdout.splitlines()
        head = next((i for i, l in enumerate(lines) if l.startswith("profile  2 runs outside the CUDA graph")), None)
        if head is None:
            fail("no profile table")
        if "host emulation: host times" not in lines[head]:
            fail("the emulation's times are not said to be host times")
        rows = [l.split() for l in lines[head + 3:head + 3 + len(ids)]]
        if [r[0] for r in rows] != ids:
            fail(f"the table's kernels {[r[0] for r in rows]} are not report.json's {ids}")
        for r, k in zip(rows, kernels):
            if r[1] != k["family"]:
                fail(f"{k['id']}: family {r[1]} in the table, {k['family']} in report.json")
        if not lines[head + 3 + len(ids)].split()[0] == "total":
            fail("no total row after the kernels")
        if not any(l.startswith("  flagged (above 5 us at under 20% of the roofline bound): ") for l in lines):
            fail("no line of flagged kernels")

        with open(times) as f:
            t = json.load(f)
        check_schema(t, SCHEMA_TOP, "times.json")
        check_schema(t["device"], SCHEMA_DEVICE, "times.json device")
        if t["schema"] != "modelc-times/1" or t["model"] != report["model"] or t["runs"] != 2:
            fail(f"times.json: schema {t['schema']}, model {t['model']}, runs {t['runs']}")
        if not t["device"]["emulation"]:
            fail("times.json: the emulation's device is not marked emulation")
        if t["estimate_arch"] not in report["archs"]:
            fail(f"times.json: estimates for {t['estimate_arch']}, not one of the compile's --arch {report['archs']}")
        if [k["id"] for k in t["kernels"]] != ids:
            fail("times.json's kernels are not report.json's, in order")
        total = 0.0
        for k, r in zip(t["kernels"], kernels):
            check_schema(k, SCHEMA_KERNEL, "times.json kernel " + k["id"])
            if k["family"] != r["family"]:
                fail(f"{k['id']}: family {k['family']}, report.json {r['family']}")
            if t["estimate_arch"] == report["archs"][0] and not math.isclose(k["estimate_us"], r["estimate"]["us"],
                                                                             abs_tol=1e-3):  # report.json: 3 decimals
                fail(f"{k['id']}: estimate {k['estimate_us']} us, report.json's {r['estimate']['us']}")
            if k["measured_us"] > 0 and k["estimate_us"] > 0:
                if not math.isclose(k["ratio"], k["measured_us"] / k["estimate_us"], rel_tol=1e-5):
                    fail(f"{k['id']}: ratio {k['ratio']}")
            if k["roofline_fraction"] is not None:
                if not math.isclose(k["roofline_fraction"], k["roofline_us"] / k["measured_us"], rel_tol=1e-5):
                    fail(f"{k['id']}: roofline_fraction {k['roofline_fraction']}")
                want = k["measured_us"] > 5 and k["roofline_fraction"] < 0.2
                if k["flagged"] != want:
                    fail(f"{k['id']}: flagged {k['flagged']}, the rule says {want}")
            total += k["measured_us"]
        if not math.isclose(total, t["total_us"], rel_tol=1e-5):
            fail(f"total_us {t['total_us']}, the kernels sum to {total}")
        if not math.isclose(sum(k["share"] for k in t["kernels"]), 1.0, rel_tol=1e-5):
            fail("the shares do not sum to 1")

        # modelc report --times, on a copy of the report (the folder is other tests' too).
        copy = os.path.join(work, "folder")
        os.makedirs(copy)
        for f in ("report.json", "report.md"):
            shutil.copy(os.path.join(a.folder, f), copy)
        for _ in range(2):
            q = subprocess.run([a.modelc, "report", copy, "--times", times], capture_output=True, text=True)
            print(q.stdout + q.stderr)
            if q.returncode != 0:
                fail(f"modelc report exited with {q.returncode}")
        with open(os.path.join(copy, "report.json")) as f:
            merged = json.load(f)
        if merged["measured"]["runs"] != 2 or any("measured" not in k for k in merged["kernels"]):
            fail("report.json has no measured times per kernel")
        with open(os.path.join(copy, "report.md")) as f:
            md = f.read()
        if md.count("## Measured times") != 1:
            fail(f"report.md has {md.count('## Measured times')} measured-times sections")
        if not md.index("## Roofline") < md.index("## Measured times"):
            fail("the measured times are not after the roofline")
        section = md[md.index("## Measured times"):]
        if "| kernel | family | estimate us | measured us | measured / estimate |" not in section:
            fail("no estimate and measured columns side by side")
        for k in t["kernels"]:
            row = f"| {k['id']} | {k['family']} | {k['estimate_us']:.2f} | {k['measured_us']:.2f} |"
            if row not in section:
                fail(f"report.md: no row {row}")
        print(f"OK: {len(ids)} kernels profiled, exported and folded into the report")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
