#!/usr/bin/python3
"""tests/frontend/check_hostile_models.py MODELC DIR — runs modelc on each model of DIR/manifest.json
(written by make_hostile_models.py) and checks what it must do with it.

For every model, three commands: `modelc inspect`, the compile (`modelc M -o OUT`) and
`modelc run-reference M -o OUT`. Each must end within 20 s, by exit, never by a signal, with at
most 300 MB of memory (the models are tiny: a size read from the file must not be allocated
before it is checked), and never with a message starting "internal". A model whose manifest
entry says exit 1 must fail with the entry's text in its output and leave no output folder; one that
says exit 0 must succeed, the compile's report.json must parse as JSON, and the model must build
for the CPU emulation (`--emulate`) and its program reproduce run-reference's outputs.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 20
MAX_RSS_KB = 300 * 1024
BUILD_TIMEOUT_S = 600  # the CPU emulation's build: g++ on the generated folder


def run(cmd, timeout_s=TIMEOUT_S):
    """(exit code or -signal, stdout + stderr, max RSS in KB, seconds); None for a run killed at the
    timeout. The output goes to a file, not a pipe, so a long one cannot stall the run."""
    start = time.monotonic()
    log = tempfile.TemporaryFile()
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = start + timeout_s
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            p.returncode = 0
            log.close()
            return None
        time.sleep(0.01)
    p.returncode = 0  # reaped above: keep Popen from waiting again
    log.seek(0)
    err = log.read().decode("utf-8", "replace")
    log.close()
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return code, err, usage.ru_maxrss, time.monotonic() - start


def emulate(modelc, model, name, out):
    """Builds the model's program for the CPU emulation and compares its outputs (random inputs,
    seed 0) with run-reference's in out_reference; the failures, as texts."""
    build = out + "_emulate"
    steps = [("emulate build", [modelc, model, "-o", build, "--emulate", "-j2"], BUILD_TIMEOUT_S),
             ("emulated run", [os.path.join(build, name + "_emu"), "--output-dir", os.path.join(build, "got"),
                               "--compare-dir", out + "_reference"], 60)]
    for what, cmd, timeout_s in steps:
        r = run(cmd, timeout_s)
        if r is None:
            return [f"{name}: {what}: still running after {timeout_s} s (killed)"]
        code, text, _, seconds = r
        print(f"{name}: {what}: exit {code}, {seconds:.2f} s")
        if code != 0:
            return [f"{name}: {what}: exit {code}: {text.strip()}"]
    return []


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_hostile_models.py MODELC DIR")
    modelc, folder = sys.argv[1], sys.argv[2]
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    if not manifest:
        sys.exit("check_hostile_models: the manifest lists no model")
    work = os.path.join(folder, "work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []
    runs = 0
    for name, want in sorted(manifest.items()):
        model = os.path.join(folder, name + ".onnx")
        out = os.path.join(work, name)
        commands = {
            "inspect": [modelc, "inspect", model],
            "compile": [modelc, model, "-o", out + "_compile"],
            "run-reference": [modelc, "run-reference", model, "-o", out + "_reference"],
        }
        for what, cmd in commands.items():
            runs += 1
            r = run(cmd)
            where = f"{name}: {what}"
            if r is None:
                failures.append(f"{where}: still running after {TIMEOUT_S} s (killed)")
                continue
            code, err, rss, seconds = r
            errors = [line for line in err.splitlines() if "error" in line or "node '" in line]
            first = errors[-1].strip() if errors else "(no error)"
            print(f"{where}: exit {code}, {rss // 1024} MB, {seconds:.2f} s: {first}")
            if code < 0:
                failures.append(f"{where}: killed by signal {signal.Signals(-code).name}")
                continue
            if "internal" in err:
                failures.append(f"{where}: an internal error: {err.strip()}")
            if rss > MAX_RSS_KB:
                failures.append(f"{where}: used {rss // 1024} MB of memory (at most {MAX_RSS_KB // 1024})")
            if want["exit"] != 0:
                if code != want["exit"]:
                    failures.append(f"{where}: exit {code}, expected {want['exit']}: {err.strip()}")
                elif want["error"] not in err:
                    failures.append(f"{where}: the error does not say \"{want['error']}\": {err.strip()}")
                for leftover in (out + "_compile", out + "_reference"):
                    if os.path.exists(leftover):
                        failures.append(f"{where}: a failed run left {leftover} behind")
                continue
            if code != 0:
                failures.append(f"{where}: exit {code}, expected 0: {err.strip()}")
            elif what == "compile":
                try:
                    with open(os.path.join(out + "_compile", "report.json"), "rb") as f:
                        json.loads(f.read().decode("utf-8"))
                except (OSError, ValueError) as e:
                    failures.append(f"{where}: report.json is not valid UTF-8 JSON: {e}")
        if want["exit"] == 0:
            failures += emulate(modelc, model, name, out)
    print(f"check_hostile_models: {len(manifest)} models, {runs} runs, {len(failures)} failures")
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
