#!/usr/bin/python3
"""codegen_tune_tiny_cnn: `modelc tune` end to end on the host emulation.

  modelc tune MODEL --fp16 --arch sm_80 --candidates 4 -o WORK/tune
      the tuning folder: tuning.json lists every tensor-core kernel signature of the model's
      report.json once, each with its candidates, the cost model's choice first
  a planted wrong candidate: signature 0's candidate 1 has its ReLU dropped (an edit of its
      instantiation in NAME_tune_s0.cu, as a template bug would be)
  make run-emu: the driver runs; times.json has every candidate, the planted one "rejected" with
      the element that differs, every other one "ok" with a time
  modelc tune --collect times.json -o cache.json: the cache has every signature, never the rejected
      tactic; a compile with the cache says "tuned" for every tensor-core kernel, and two compiles
      with it are byte-identical
Exits non-zero (with the reason) at the first check that fails.
"""
import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    print(r.stdout, end="", flush=True)
    return r


def same_tree(a, b):
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modelc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if not os.path.isfile(a.model):
        fail("the model " + a.model + " is missing")
    name = os.path.splitext(os.path.basename(a.model))[0]
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    folder = os.path.join(a.work, "tune")
    flags = ["--fp16", "--arch", "sm_80"]

    r = run([a.modelc, "tune", a.model] + flags + ["--candidates", "4", "-o", folder])
    if r.returncode != 0:
        fail("modelc tune exited with %d" % r.returncode)
    manifest = json.load(open(os.path.join(folder, "tuning.json")))
    if manifest.get("generator") != "modelc" or manifest.get("arch") != "sm_80":
        fail("tuning.json: not modelc's, or not for sm_80: %r" % manifest)
    signatures = [s["signature"] for s in manifest["signatures"]]
    if len(signatures) != len(set(signatures)) or not signatures:
        fail("tuning.json lists no signature, or one twice: %r" % signatures)

    # The signatures are the model's tensor-core kernels' (a compile with the same flags).
    plain = os.path.join(a.work, "plain")
    r = run([a.modelc, a.model] + flags + ["-o", plain])
    if r.returncode != 0:
        fail("the plain compile failed")
    report = json.load(open(os.path.join(plain, "report.json")))
    model_sigs = {k["tuning_signature"] for k in report["kernels"] if k.get("tuning_signature")}
    if model_sigs != set(signatures):
        fail("tuning.json's signatures %r are not report.json's %r" % (sorted(signatures), sorted(model_sigs)))
    by_sig = {k["tuning_signature"]: k for k in report["kernels"] if k.get("tuning_signature")}
    for s in manifest["signatures"]:
        cands = s["candidates"]
        if not 1 <= len(cands) <= 4:
            fail("%s: %d candidates (1 to 4 asked)" % (s["signature"], len(cands)))
        tactics = [c["tactic"] for c in cands]
        if len(set(tactics)) != len(tactics):
            fail("%s: a candidate listed twice: %r" % (s["signature"], tactics))
        # Candidate 0 is the tactic the plain compile chose (its note names it).
        if tactics[0] not in by_sig[s["signature"]]["note"]:
            fail("%s: candidate 0 (%s) is not the compile's choice: %s" % (s["signature"], tactics[0],
                                                                             by_sig[s["signature"]]["note"]))
    if len(manifest["signatures"][0]["candidates"]) < 2:
        fail("signature 0 has one candidate: nothing to plant")

    # Plant a wrong candidate: signature 0's candidate 1 without its ReLU.
    src = os.path.join(folder, name + "_tune_s0.cu")
    text = open(src).read()
    planted = 0

    def drop_relu(m):
        nonlocal planted
        planted += m.group(0).count("Act::relu")
        return m.group(0).replace("Act::relu", "Act::none")

    text = re.sub(r"using %s_s0_c1(_\d+)?_t =.*?;\n" % name, drop_relu, text, flags=re.S)
    if planted == 0:
        fail("signature 0's candidate 1 has no ReLU to drop (the test expects tiny_cnn's stem conv + ReLU first)")
    open(src, "w").write(text)
    print("planted: candidate 1 of signature 0 without its ReLU (%d instantiation(s))" % planted)

    r = run(["make", "-C", folder, "-j2", "--no-print-directory", "EMU_CXXFLAGS=-O1", "run-emu"])
    if r.returncode != 0:
        fail("make run-emu exited with %d" % r.returncode)
    if "REJECTED" not in r.stdout or "1 candidate rejected" not in r.stdout:
        fail("the driver did not report the planted candidate as rejected")
    times = json.load(open(os.path.join(folder, "times.json")))
    if times.get("modelc_tuning_times") != 1 or not times["device"]["emulation"]:
        fail("times.json: not the driver's, or not marked as the emulation's: %r" % times.get("device"))
    rejected = None
    for i, k in enumerate(times["kernels"]):
        want = [c["tactic"] for c in manifest["signatures"][i]["candidates"]]
        got = [c["tactic"] for c in k["candidates"]]
        if k["signature"] != signatures[i] or got != want:
            fail("times.json kernel %d: %s %r, not tuning.json's %s %r" % (i, k["signature"], got, signatures[i], want))
        for j, c in enumerate(k["candidates"]):
            if i == 0 and j == 1:
                if c["status"] != "rejected" or "element" not in c.get("error", "") or "us" in c:
                    fail("the planted candidate was not rejected (or was timed): %r" % c)
                rejected = c["tactic"]
            elif c["status"] != "ok" or not c.get("us", 0) > 0:
                fail("%s candidate %s: %r (every candidate but the planted one must agree and be timed)" %
                     (k["signature"], c["tactic"], c))
    print("the planted candidate (%s) was rejected; every other one agreed and was timed" % rejected)

    # The driver refuses bad arguments.
    r = run([os.path.join(folder, name + "_tune_emu"), "--runs", "0"])
    if r.returncode != 2 or "--runs" not in r.stdout:
        fail("--runs 0 was not a usage error (exit %d)" % r.returncode)

    cache = os.path.join(a.work, "cache.json")
    r = run([a.modelc, "tune", "--collect", os.path.join(folder, "times.json"), "-o", cache])
    if r.returncode != 0:
        fail("modelc tune --collect exited with %d" % r.returncode)
    c = json.load(open(cache))
    if c.get("modelc_tuning") != 1 or {k["signature"] for k in c["kernels"]} != set(signatures):
        fail("the cache does not hold every signature: %r" % [k["signature"] for k in c["kernels"]])
    for k in c["kernels"]:
        if k["signature"] == signatures[0] and any(x["tactic"] == rejected for x in k["candidates"]):
            fail("the cache lists the rejected candidate")
        if k["tactic"] != k["candidates"][0]["tactic"]:
            fail("%s: the winner is not the fastest candidate" % k["signature"])

    outs = []
    for n in (1, 2):
        out = os.path.join(a.work, "tuned%d" % n)
        r = run([a.modelc, a.model] + flags + ["--tuning-cache", cache, "-o", out])
        if r.returncode != 0:
            fail("the compile with the cache failed")
        outs.append(out)
    tuned = json.load(open(os.path.join(outs[0], "report.json")))
    for k in tuned["kernels"]:
        if k.get("tuning_signature") and "tuned" not in k["note"]:
            fail("kernel %s (%s) does not take the cache's winner: %s" % (k["id"], k["tuning_signature"], k["note"]))
    if not same_tree(outs[0], outs[1]):
        fail("two compiles with the same cache differ")
    print("PASS: %d signatures tuned on the emulation; the planted candidate rejected; the cache's compiles "
          "byte-identical" % len(signatures))


if __name__ == "__main__":
    main()
