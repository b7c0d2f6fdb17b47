#!/usr/bin/python3
"""Concurrent branches through the host emulation (issue 9; run by ctest, see CMakeLists.txt beside).

    streams.py --modelc BIN --model M.onnx --work DIR [--fp16] [--seeds 1,2,3] [--min-streams N]
               [--drop-event] [--jobs N]

`modelc verify M --emulate` (the emitted program on the emulation against the reference
interpreter) in issue order, then again with MODELC_EMU_INTERLEAVE=SEED for each seed: the graph
replay runs the streams in a seeded random interleaving that respects only the recorded events
(runtime_stub/host/runtime_api.h). report.json must give the model at least --min-streams streams.

--drop-event: then deletes the first wait on a kernel's event from the emitted code (an edge where
a branch joins another stream), rebuilds, and runs the program on the same inputs with each seed:
at least one run must fail its comparison, or the interleaving would not catch a missing event.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys


def run(cmd, env=None):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def with_seed(seed):
    env = dict(os.environ)
    env["MODELC_EMU_INTERLEAVE"] = str(seed)
    return env


def drop_first_join(folder, kernel_events):
    """Deletes the first `cudaStreamWaitEvent(..., mc_bindings.events[E], 0)` with E a kernel's
    event (not the fork's or a join's); returns the line removed."""
    wait = re.compile(r"^\s*MC_CHECK\(cudaStreamWaitEvent\([^,]+, mc_bindings\.events\[(\d+)\], 0\)\);\s*$")
    for path in sorted(glob.glob(os.path.join(folder, "*.cu"))):
        with open(path) as f:
            lines = f.readlines()
        for i, line in enumerate(lines):
            m = wait.match(line)
            if m and int(m.group(1)) < kernel_events:
                with open(path, "w") as f:
                    f.writelines(lines[:i] + lines[i + 1:])
                return os.path.basename(path) + ": " + line.strip()
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--fp16", action="store_true")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--min-streams", type=int, default=2)
    ap.add_argument("--drop-event", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if not os.path.isfile(args.model):
        print(f"FAIL: no model {args.model}")
        return 1
    name = re.sub(r"\W", "_", os.path.splitext(os.path.basename(args.model))[0])
    work = os.path.join(args.work, name + ("_fp16" if args.fp16 else ""))
    shutil.rmtree(work, ignore_errors=True)
    folder = os.path.join(work, "run")
    verify = [args.modelc, "verify", args.model, "--emulate", "--keep", folder, "-j", str(args.jobs)]
    verify += ["--fp16"] if args.fp16 else []
    bad = []
    seeds = [int(s) for s in args.seeds.split(",")]
    for seed in [None] + seeds:
        r = run(verify, env=None if seed is None else with_seed(seed))
        print(r.stdout, end="")
        if r.returncode != 0:
            bad.append(f"verify {'in issue order' if seed is None else f'with MODELC_EMU_INTERLEAVE={seed}'} "
                       f"exited {r.returncode}")
    with open(os.path.join(folder, "report.json")) as f:
        streams = json.load(f)["streams"]
    print(f"{name}: {streams['count']} streams, {streams['events']} events, critical path "
          f"{streams['critical_path_kernels']} kernels")
    if streams["count"] < args.min_streams:
        bad.append(f"{streams['count']} streams, expected at least {args.min_streams}")

    if args.drop_event and not bad:
        dropped = drop_first_join(folder, streams["events"] - streams["count"])
        if not dropped:
            bad.append("no wait on a kernel's event to drop")
        else:
            print(f"dropped {dropped}")
            r = run(["make", "-C", folder, "-j", str(args.jobs), "--no-print-directory", "emu"])
            if r.returncode != 0:
                print(r.stdout, end="")
                bad.append("the program without the event does not build")
            else:
                inputs = []
                for p in sorted(glob.glob(os.path.join(folder, "verify", "inputs", "*.npy"))):
                    inputs += ["--input", os.path.splitext(os.path.basename(p))[0] + "=" + p]
                caught = 0
                for seed in range(1, 9):
                    r = run([os.path.join(folder, name + "_emu")] + inputs +
                            ["--output-dir", os.path.join(work, "dropped", str(seed)),
                             "--compare-dir", os.path.join(folder, "verify", "reference")], env=with_seed(seed))
                    print(r.stdout[-600:], end="")
                    caught += r.returncode != 0
                print(f"without the event: {caught} of 8 seeds fail")
                if caught == 0:
                    bad.append("a dropped event went unnoticed under every seed")
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
